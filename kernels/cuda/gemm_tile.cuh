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

typedef float GemmTileA[GEMM_TK][GEMM_TM + 4];  // A's k x m slice of one K step
typedef float GemmTileB[GEMM_TK][GEMM_TN + 4];  // B's k x n slice

// The tile loop: `fill(k0, As, Bs)` loads the K step starting at k0 into shared memory
// (every thread takes part; zeros past the edges), then each thread accumulates its 4x4.
// Callers that can hoist per-thread index math out of the K loop (convolution) write their
// own `fill`; `gemm_tiles` below fills from element loaders.
template <typename FILL, typename ST>
__device__ __forceinline__ void gemm_tiles_filled(i64 M, i64 N, i64 K, i64 m0, i64 n0, FILL fill, ST store) {
  __shared__ GemmTileA As;
  __shared__ GemmTileB Bs;
  const int tid = threadIdx.x;
  const int tx = tid % 16, ty = tid / 16;
  float acc[4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.f;
  for (i64 k0 = 0; k0 < K; k0 += GEMM_TK) {
    fill(k0, As, Bs);
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

// Which elements of a K step thread `tid` loads, in `fill`: for j in 0..4, A's
// (m = tid / GEMM_TK + 16 j, k = tid % GEMM_TK) and B's (k = tid / GEMM_TN + 4 j,
// n = tid % GEMM_TN). Consecutive threads walk k in A (contiguous for row-major A and for
// weights) and n in B (contiguous for row-major B and for NCHW pixels). A thread's B column
// and A depth are the same in every K step.
#define GEMM_LOADS 4
static_assert(GEMM_TM * GEMM_TK == GEMM_LOADS * GEMM_THREADS, "A loads");
static_assert(GEMM_TN * GEMM_TK == GEMM_LOADS * GEMM_THREADS, "B loads");
static_assert(GEMM_THREADS % GEMM_TN == 0 && GEMM_THREADS % GEMM_TK == 0, "fixed columns");

template <typename LA, typename LB, typename ST>
__device__ __forceinline__ void gemm_tiles(i64 M, i64 N, i64 K, i64 m0, i64 n0, LA loadA, LB loadB, ST store) {
  gemm_tiles_filled(
      M, N, K, m0, n0,
      [&](i64 k0, GemmTileA& As, GemmTileB& Bs) {
        const int tid = threadIdx.x;
#pragma unroll
        for (int j = 0; j < GEMM_LOADS; ++j) {
          const int mm = tid / GEMM_TK + (GEMM_THREADS / GEMM_TK) * j, ka = tid % GEMM_TK;
          const i64 m = m0 + mm, k = k0 + ka;
          As[ka][mm] = (m < M && k < K) ? loadA(m, k) : 0.f;
          const int kb = tid / GEMM_TN + (GEMM_THREADS / GEMM_TN) * j, nn = tid % GEMM_TN;
          const i64 k2 = k0 + kb, n = n0 + nn;
          Bs[kb][nn] = (k2 < K && n < N) ? loadB(k2, n) : 0.f;
        }
      },
      store);
}
