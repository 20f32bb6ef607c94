// Tensor-core implicit-GEMM convolution for FP16 engines: f32 activations in and out, f16
// weights (what `edgert build --precision fp16` stores), f32 accumulation. Each K step's
// im2col tile of activations is rounded to f16 as it enters shared memory (as TensorRT's
// FP16 does), so the products run on the FP16 tensor cores through WMMA (sm_70 and later);
// bias, residual and activation run on the f32 sums. A module of its own, like gemm_tc.cu:
// NVRTC 12.6 never finishes compiling <mma.h> together with the lambda-based tiles.
#include <mma.h>
#include "conv_params.cuh"

// GEMM view per group (blockIdx.z): rows = the group's output channels (A = weights,
// kg x Kd, row-major as ONNX stores them), columns = the N*P*Q output pixels (B = im2col of
// x, Kd x N*P*Q), depth Kd = (C/groups)*R*S. A block of 2*BM threads computes a BM x BM
// tile of the output in K steps of 32: BM = 128 (8 warps of 64x32, 4x2 WMMA 16x16
// fragments each) for large layers, BM = 64 (4 warps of 32x32) where 128-wide tiles would
// leave SMs idle or half of each tile empty (edgert_cuda::select picks). Every thread loads
// 16 weights of one row and 16 depths of one output pixel per step. Shared tiles are
// double-buffered: the next step's global loads are issued before this step's MMAs and land
// in the other buffer after them, so one barrier per step suffices.
#define TC_BK 32
#define TC_A_LD (TC_BK + 8)  // halves per A row in shared memory (+8: fewer bank conflicts)

template <int BM>
struct TcTiles {
  __half a[2][BM][TC_A_LD];
  __half b[2][TC_BK][BM + 8];
};

template <int BM>
__device__ __forceinline__ void conv_tc(const float* x, const __half* w, float* y, const ConvParams& p,
                                        const Epilogue& ep) {
  using namespace nvcuda;
  constexpr int BN = BM, THREADS = 2 * BM, WARPS = THREADS / 32;
  constexpr int WARPS_N = WARPS / 2, WTM = BM / 2, WTN = BN / WARPS_N;
  constexpr int FM = WTM / 16, FN = WTN / 16, B_LD = BN + 8;
  // After the K loop the tiles' memory holds each warp's 16x16 f32 epilogue scratch.
  static_assert(sizeof(TcTiles<BM>) >= WARPS * 256 * sizeof(float), "epilogue scratch fits");
  __shared__ __align__(128) unsigned char smem[sizeof(TcTiles<BM>)];
  __shared__ i64 col_base[BN];  // output offset of each tile column's pixel at channel 0
  TcTiles<BM>& t = *reinterpret_cast<TcTiles<BM>*>(smem);

  const int g = blockIdx.z;
  const int cg = p.C / p.groups, kg = p.K / p.groups;
  const int PQ = p.P * p.Q, rs = p.R * p.S, Kd = cg * rs;
  const i64 Ncols = (i64)p.N * PQ;
  const int m0 = blockIdx.y * BM;
  const i64 n0 = (i64)blockIdx.x * BN;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;

  // B loads: this thread's column (one output pixel) and its 16 consecutive depths of a step.
  const int b_col = tid % BN, b_k = (tid / BN) * 16;
  const i64 col = n0 + b_col;
  const bool col_ok = col < Ncols;
  int ih0 = 0, iw0 = 0;
  const float* xg = x;
  if (col_ok) {
    const i64 img = col / PQ;
    const int pq = (int)(col - img * PQ), pp = pq / p.Q, q = pq - pp * p.Q;
    ih0 = pp * p.stride_h - p.pad_h;
    iw0 = q * p.stride_w - p.pad_w;
    xg = x + (img * p.C + (i64)g * cg) * p.H * p.W;
    if (b_k == 0) col_base[b_col] = img * p.K * PQ + pq;
  }
  // A loads: 16 consecutive depths of one weight row; 16-byte vectors when rows allow.
  const int a_row = tid / 2, a_k = (tid % 2) * 16;
  const int m_load = m0 + a_row;
  const __half* wrow = w + ((i64)g * kg + (m_load < kg ? m_load : 0)) * Kd;
  const bool a_vec = (Kd % 8) == 0;
  const i64 HW = (i64)p.H * p.W;

  uint4 ra[2];
  __half2 rb[8];  // the 16 B values, already rounded to f16 (half the registers of f32)
  auto load = [&](int k0) {
    const int ka = k0 + a_k;
    if (a_vec && m_load < kg && ka + 16 <= Kd) {
      ra[0] = *reinterpret_cast<const uint4*>(wrow + ka);
      ra[1] = *reinterpret_cast<const uint4*>(wrow + ka + 8);
    } else {
      union {
        uint4 u[2];
        __half h[16];
      } v;
#pragma unroll
      for (int i = 0; i < 16; ++i) v.h[i] = (m_load < kg && ka + i < Kd) ? wrow[ka + i] : __float2half_rn(0.f);
      ra[0] = v.u[0];
      ra[1] = v.u[1];
    }
    // Depth k = (c, r, s): divide once, then step s, r, c with carries.
    const int kb = k0 + b_k;
    int c = kb / rs, rem = kb - c * rs, r = rem / p.S, s = rem - r * p.S;
    float prev = 0.f;
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      float v = 0.f;
      const int ih = ih0 + r * p.dil_h, iw = iw0 + s * p.dil_w;
      if (col_ok && kb + i < Kd && ih >= 0 && ih < p.H && iw >= 0 && iw < p.W) v = xg[c * HW + (i64)ih * p.W + iw];
      if (i % 2) rb[i / 2] = __floats2half2_rn(prev, v);
      prev = v;
      if (++s == p.S) {
        s = 0;
        if (++r == p.R) {
          r = 0;
          ++c;
        }
      }
    }
  };
  auto store = [&](int buf) {
    *reinterpret_cast<uint4*>(&t.a[buf][a_row][a_k]) = ra[0];
    *reinterpret_cast<uint4*>(&t.a[buf][a_row][a_k + 8]) = ra[1];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      t.b[buf][b_k + 2 * i][b_col] = __low2half(rb[i]);
      t.b[buf][b_k + 2 * i + 1][b_col] = __high2half(rb[i]);
    }
  };

  const int wm = (warp / WARPS_N) * WTM, wn = (warp % WARPS_N) * WTN;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[FM][FN];
#pragma unroll
  for (int i = 0; i < FM; ++i)
#pragma unroll
    for (int j = 0; j < FN; ++j) wmma::fill_fragment(acc[i][j], 0.f);

  load(0);
  store(0);
  __syncthreads();
  int buf = 0;
  for (int k0 = 0; k0 < Kd; k0 += TC_BK) {
    const bool more = k0 + TC_BK < Kd;
    if (more) load(k0 + TC_BK);
#pragma unroll
    for (int kk = 0; kk < TC_BK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa[FM];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> fb[FN];
#pragma unroll
      for (int i = 0; i < FM; ++i) wmma::load_matrix_sync(fa[i], &t.a[buf][wm + i * 16][kk], TC_A_LD);
#pragma unroll
      for (int j = 0; j < FN; ++j) wmma::load_matrix_sync(fb[j], &t.b[buf][kk][wn + j * 16], B_LD);
#pragma unroll
      for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
    }
    if (more) store(buf ^ 1);
    __syncthreads();
    buf ^= 1;
  }

  // Epilogue: each fragment through this warp's scratch; each lane's 8 elements load their
  // bias and residual first, then compute and store (see EpilogueLoads).
  float* scratch = reinterpret_cast<float*>(smem) + warp * 256;
#pragma unroll
  for (int i = 0; i < FM; ++i)
#pragma unroll
    for (int j = 0; j < FN; ++j) {
      wmma::store_matrix_sync(scratch, acc[i][j], 16, wmma::mem_row_major);
      __syncwarp();
      EpilogueLoads in[8];
      i64 out[8];
#pragma unroll
      for (int u = 0; u < 8; ++u) {
        const int e = lane + 32 * u;
        const int m = m0 + wm + i * 16 + e / 16, cn = wn + j * 16 + e % 16;
        out[u] = -1;
        if (m < kg && n0 + cn < Ncols) {
          const i64 k = (i64)g * kg + m;
          out[u] = col_base[cn] + k * PQ;
          in[u] = epilogue_loads(ep, k, 0, out[u]);
        }
      }
#pragma unroll
      for (int u = 0; u < 8; ++u)
        if (out[u] >= 0) y[out[u]] = epilogue_apply(scratch[lane + 32 * u], ep, in[u]);
      __syncwarp();
    }
}

extern "C" __global__ void __launch_bounds__(256, 2)
    edgert_conv_tc128_f16w(const float* x, const __half* w, float* y, ConvParams p, Epilogue ep) {
  conv_tc<128>(x, w, y, p, ep);
}

extern "C" __global__ void __launch_bounds__(128, 4)
    edgert_conv_tc64_f16w(const float* x, const __half* w, float* y, ConvParams p, Epilogue ep) {
  conv_tc<64>(x, w, y, p, ep);
}
