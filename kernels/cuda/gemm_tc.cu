// Tensor-core FP16 GEMM through WMMA (sm_70 and later). A module of its own: NVRTC 12.6
// never finishes compiling <mma.h> together with the lambda-based tiles of gemm.cu.
#include <mma.h>
#include "gemm_params.cuh"

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

