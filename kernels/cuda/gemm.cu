// Gemm / MatMul with the fused epilogue: FP32, FP16 (f32 accumulation; tensor cores through
// WMMA when the shape allows) and INT8 (dp4a, int32 accumulation, requantized output).
#include "gemm_tile.cuh"
#include <mma.h>

// C[b] (M x N, row stride ldc) = epilogue(A[b] (M x K) * B[b] (K x N)); any element strides,
// so transposed operands need no copy. Batch index is blockIdx.z.
struct GemmParams {
  i64 M, N, K;
  i64 a_sm, a_sk, b_sk, b_sn;
  i64 a_sb, b_sb, c_sb;
  i64 ldc;
};

template <typename T>
__device__ __forceinline__ void gemm_impl(const T* A, const T* B, T* C, const GemmParams& p, const Epilogue& ep) {
  const i64 b = blockIdx.z;
  const T* a = A + b * p.a_sb;
  const T* bm = B + b * p.b_sb;
  T* c = C + b * p.c_sb;
  gemm_tiles(
      p.M, p.N, p.K, (i64)blockIdx.y * GEMM_TM, (i64)blockIdx.x * GEMM_TN,
      [&](i64 m, i64 k) { return to_f(a[m * p.a_sm + k * p.a_sk]); },
      [&](i64 k, i64 n) { return to_f(bm[k * p.b_sk + n * p.b_sn]); },
      [&](i64 m, i64 n, float v) {
        i64 o = m * p.ldc + n;
        c[o] = from_f<T>(apply_epilogue(v, ep, m, n, b * p.c_sb + o));
      });
}

extern "C" __global__ void __launch_bounds__(GEMM_THREADS)
    edgert_gemm_f32(const float* A, const float* B, float* C, GemmParams p, Epilogue ep) {
  gemm_impl<float>(A, B, C, p, ep);
}

extern "C" __global__ void __launch_bounds__(GEMM_THREADS)
    edgert_gemm_f16(const __half* A, const __half* B, __half* C, GemmParams p, Epilogue ep) {
  gemm_impl<__half>(A, B, C, p, ep);
}

// Tensor-core FP16 GEMM for contiguous row-major A (M x K), B (K x N), C (M x N) with M, N, K
// multiples of 16: a block of 4 warps computes a 32x32 tile of C, each warp one 16x16
// fragment, accumulating in f32. The epilogue runs on the f32 accumulators via shared memory.
extern "C" __global__ void __launch_bounds__(128)
    edgert_gemm_f16_wmma(const __half* A, const __half* B, __half* C, GemmParams p, Epilogue ep) {
  using namespace nvcuda;
  __shared__ float tile[4][16 * 16];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const i64 b = blockIdx.z;
  const i64 m0 = (i64)blockIdx.y * 32 + (warp / 2) * 16;
  const i64 n0 = (i64)blockIdx.x * 32 + (warp % 2) * 16;
  if (m0 >= p.M || n0 >= p.N) return;
  const __half* a = A + b * p.a_sb;
  const __half* bm = B + b * p.b_sb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 0.f);
  for (i64 k = 0; k < p.K; k += 16) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> fb;
    wmma::load_matrix_sync(fa, a + m0 * p.a_sm + k, (unsigned)p.a_sm);
    wmma::load_matrix_sync(fb, bm + k * p.b_sk + n0, (unsigned)p.b_sk);
    wmma::mma_sync(acc, fa, fb, acc);
  }
  wmma::store_matrix_sync(tile[warp], acc, 16, wmma::mem_row_major);
  __syncwarp();
  for (int e = lane; e < 256; e += 32) {
    i64 m = m0 + e / 16, n = n0 + e % 16;
    i64 o = m * p.ldc + n;
    C[b * p.c_sb + o] = __float2half_rn(apply_epilogue(tile[warp][e], ep, m, n, b * p.c_sb + o));
  }
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
