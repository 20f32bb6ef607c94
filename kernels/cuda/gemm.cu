// Gemm / MatMul with the fused epilogue: FP32, FP16 (f32 accumulation; tensor cores through
// WMMA, in gemm_tc.cu) and INT8 (dp4a, int32 accumulation, requantized output).
#include "gemm_tile.cuh"
#include "gemm_params.cuh"

// Written out rather than through gemm_tiles' loader lambdas: with strided 64-bit loads in
// lambdas, NVRTC 12.6's optimizer ran for minutes (unbounded memory) on this file.
template <typename T>
__device__ __forceinline__ void gemm_impl(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ C,
                                          const GemmParams& p, const Epilogue& ep) {
  __shared__ float As[GEMM_TK][GEMM_TM + 4];
  __shared__ float Bs[GEMM_TK][GEMM_TN + 4];
  const i64 b = blockIdx.z;
  const T* a = A + b * p.a_sb;
  const T* bm = B + b * p.b_sb;
  T* c = C + b * p.c_sb;
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const i64 m0 = (i64)blockIdx.y * GEMM_TM, n0 = (i64)blockIdx.x * GEMM_TN;
  float acc[4][4] = {};
  for (i64 k0 = 0; k0 < p.K; k0 += GEMM_TK) {
    for (int l = tid; l < GEMM_TM * GEMM_TK; l += GEMM_THREADS) {
      const int mm = l / GEMM_TK, ka = l % GEMM_TK;
      const i64 m = m0 + mm, k = k0 + ka;
      As[ka][mm] = (m < p.M && k < p.K) ? to_f(a[m * p.a_sm + k * p.a_sk]) : 0.f;
      const int kb = l / GEMM_TN, nn = l % GEMM_TN;
      const i64 k2 = k0 + kb, n = n0 + nn;
      Bs[kb][nn] = (k2 < p.K && n < p.N) ? to_f(bm[k2 * p.b_sk + n * p.b_sn]) : 0.f;
    }
    __syncthreads();
    for (int kk = 0; kk < GEMM_TK; ++kk) {
      float av[4], bv[4];
      for (int i = 0; i < 4; ++i) av[i] = As[kk][ty + 16 * i];
      for (int j = 0; j < 4; ++j) bv[j] = Bs[kk][tx + 16 * j];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
    }
    __syncthreads();
  }
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      const i64 m = m0 + ty + 16 * i, n = n0 + tx + 16 * j;
      if (m < p.M && n < p.N) {
        const i64 o = m * p.ldc + n;
        c[o] = from_f<T>(apply_epilogue(acc[i][j], ep, m, n, b * p.c_sb + o));
      }
    }
}

extern "C" __global__ void __launch_bounds__(GEMM_THREADS)
    edgert_gemm_f32(const float* A, const float* B, float* C, GemmParams p, Epilogue ep) {
  gemm_impl<float>(A, B, C, p, ep);
}

extern "C" __global__ void __launch_bounds__(GEMM_THREADS)
    edgert_gemm_f16(const __half* A, const __half* B, __half* C, GemmParams p, Epilogue ep) {
  gemm_impl<__half>(A, B, C, p, ep);
}

// INT8 GEMM: A is M x K int8 (rows lda bytes apart), B is N x K int8 (rows ldb bytes apart:
// weights stored output-channel major), K padded with zeros to a multiple of 4 and rows
// 4-byte aligned. acc = sum A*B in int32; v = acc * scale_a * scale_b[n] (per-channel weight
// scales), then the epilogue (bias in f32 units); output f32, or int8 = round(v / scale_out).
struct QGemmParams {
  i64 M, N, K;
  i64 lda, ldb, ldc;
  const float* scale_b;
  float scale_a;
  float scale_out;
  int out_int8;
  int pad_;
};

extern "C" __global__ void __launch_bounds__(256)
    edgert_gemm_s8(const signed char* A, const signed char* B, void* C, QGemmParams p, Epilogue ep) {
  __shared__ int As[16][17];
  __shared__ int Bs[16][17];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const i64 m = (i64)blockIdx.y * 16 + ty;
  const i64 n = (i64)blockIdx.x * 16 + tx;
  const i64 kw = p.K / 4;  // words
  int acc = 0;
  for (i64 k0 = 0; k0 < kw; k0 += 16) {
    i64 ma = (i64)blockIdx.y * 16 + ty, ka = k0 + tx;
    As[ty][tx] = (ma < p.M && ka < kw) ? reinterpret_cast<const int*>(A + ma * p.lda)[ka] : 0;
    i64 nb = (i64)blockIdx.x * 16 + ty;
    Bs[ty][tx] = (nb < p.N && ka < kw) ? reinterpret_cast<const int*>(B + nb * p.ldb)[ka] : 0;
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < 16; ++kk) acc = dp4a_s8(As[ty][kk], Bs[tx][kk], acc);
    __syncthreads();
  }
  if (m < p.M && n < p.N) {
    float v = apply_epilogue((float)acc * p.scale_a * p.scale_b[n], ep, m, n, m * p.ldc + n);
    if (p.out_int8) reinterpret_cast<signed char*>(C)[m * p.ldc + n] = saturate_s8(v / p.scale_out);
    else reinterpret_cast<float*>(C)[m * p.ldc + n] = v;
  }
}

// Per-tensor symmetric quantization of f32 activations: q = round(x / scale), saturated.
extern "C" __global__ void edgert_quantize_s8(const float* x, signed char* q, i64 n, float scale) {
  GRID_STRIDE(i, n) { q[i] = saturate_s8(x[i] / scale); }
}

// Dequantization: x = q * scale.
extern "C" __global__ void edgert_dequantize_s8(const signed char* q, float* x, i64 n, float scale) {
  GRID_STRIDE(i, n) { x[i] = (float)q[i] * scale; }
}
