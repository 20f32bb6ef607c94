// The tiled GEMM core shared by Gemm/MatMul and implicit-GEMM convolution: a 64x64 tile of C
// per 256-thread block, 4x4 outputs per thread, K in steps of 16 through shared memory.
// Operands come from loader functors (plain strided loads for Gemm, im2col on the fly for
// Conv) and results leave through a store functor that applies the epilogue.
#pragma once
#include "common.cuh"

#define GEMM_TM 64
#define GEMM_TN 64
#define GEMM_TK 16
#define GEMM_THREADS 256

template <typename LA, typename LB, typename ST>
__device__ __forceinline__ void gemm_tiles(i64 M, i64 N, i64 K, i64 m0, i64 n0, LA loadA, LB loadB, ST store) {
  __shared__ float As[GEMM_TK][GEMM_TM + 4];
  __shared__ float Bs[GEMM_TK][GEMM_TN + 4];
  const int tid = threadIdx.x;
  const int tx = tid % 16, ty = tid / 16;
  float acc[4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.f;
  for (i64 k0 = 0; k0 < K; k0 += GEMM_TK) {
    for (int l = tid; l < GEMM_TM * GEMM_TK; l += GEMM_THREADS) {
      // A: consecutive threads walk k (contiguous for row-major A and for weights).
      int mm = l / GEMM_TK, ka = l % GEMM_TK;
      i64 m = m0 + mm, k = k0 + ka;
      As[ka][mm] = (m < M && k < K) ? loadA(m, k) : 0.f;
      // B: consecutive threads walk n (contiguous for row-major B and for NCHW pixels).
      int kb = l / GEMM_TN, nn = l % GEMM_TN;
      i64 k2 = k0 + kb, n = n0 + nn;
      Bs[kb][nn] = (k2 < K && n < N) ? loadB(k2, n) : 0.f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < GEMM_TK; ++kk) {
      float a[4], b[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) a[i] = As[kk][ty + 16 * i];
#pragma unroll
      for (int j = 0; j < 4; ++j) b[j] = Bs[kk][tx + 16 * j];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      i64 m = m0 + ty + 16 * i, n = n0 + tx + 16 * j;
      if (m < M && n < N) store(m, n, acc[i][j]);
    }
}
