// 2-D convolution, NCHW, with the fused epilogue (bias per output channel, activation,
// residual): direct (one thread per output), depthwise, and implicit GEMM (im2col on the fly
// into the shared tiled GEMM). FP32 and FP16 (f32 accumulation). im2col for the INT8 path.
#include "gemm_tile.cuh"
#include "conv_params.cuh"

template <typename T>
__device__ __forceinline__ void conv_direct(const T* x, const T* w, T* y, const ConvParams& p, const Epilogue& ep) {
  const i64 total = (i64)p.N * p.K * p.P * p.Q;
  const int cg = p.C / p.groups, kg = p.K / p.groups;
  GRID_STRIDE(i, total) {
    int q = (int)(i % p.Q);
    int pp = (int)((i / p.Q) % p.P);
    int k = (int)((i / ((i64)p.Q * p.P)) % p.K);
    int n = (int)(i / ((i64)p.Q * p.P * p.K));
    int g = k / kg;
    float acc = 0.f;
    for (int c = 0; c < cg; ++c) {
      const T* xc = x + ((i64)n * p.C + g * cg + c) * p.H * p.W;
      const T* wc = w + ((i64)k * cg + c) * p.R * p.S;
      for (int r = 0; r < p.R; ++r) {
        int ih = pp * p.stride_h - p.pad_h + r * p.dil_h;
        if (ih < 0 || ih >= p.H) continue;
        for (int s = 0; s < p.S; ++s) {
          int iw = q * p.stride_w - p.pad_w + s * p.dil_w;
          if (iw < 0 || iw >= p.W) continue;
          acc = fmaf(to_f(xc[(i64)ih * p.W + iw]), to_f(wc[r * p.S + s]), acc);
        }
      }
    }
    y[i] = from_f<T>(apply_epilogue(acc, ep, k, 0, i));
  }
}

extern "C" __global__ void edgert_conv_direct_f32(const float* x, const float* w, float* y, ConvParams p, Epilogue ep) {
  conv_direct<float>(x, w, y, p, ep);
}

extern "C" __global__ void edgert_conv_direct_f16(const __half* x, const __half* w, __half* y, ConvParams p, Epilogue ep) {
  conv_direct<__half>(x, w, y, p, ep);
}

// Depthwise: groups == C, K = C * multiplier; each output reads one input channel.
template <typename T>
__device__ __forceinline__ void conv_depthwise(const T* x, const T* w, T* y, const ConvParams& p, const Epilogue& ep) {
  const i64 total = (i64)p.N * p.K * p.P * p.Q;
  const int mult = p.K / p.C;
  GRID_STRIDE(i, total) {
    int q = (int)(i % p.Q);
    int pp = (int)((i / p.Q) % p.P);
    int k = (int)((i / ((i64)p.Q * p.P)) % p.K);
    int n = (int)(i / ((i64)p.Q * p.P * p.K));
    const T* xc = x + ((i64)n * p.C + k / mult) * p.H * p.W;
    const T* wk = w + (i64)k * p.R * p.S;
    float acc = 0.f;
    const int ih0 = pp * p.stride_h - p.pad_h, iw0 = q * p.stride_w - p.pad_w;
    for (int r = 0; r < p.R; ++r) {
      int ih = ih0 + r * p.dil_h;
      if (ih < 0 || ih >= p.H) continue;
      for (int s = 0; s < p.S; ++s) {
        int iw = iw0 + s * p.dil_w;
        if (iw < 0 || iw >= p.W) continue;
        acc = fmaf(to_f(xc[(i64)ih * p.W + iw]), to_f(wk[r * p.S + s]), acc);
      }
    }
    y[i] = from_f<T>(apply_epilogue(acc, ep, k, 0, i));
  }
}

extern "C" __global__ void edgert_conv_depthwise_f32(const float* x, const float* w, float* y, ConvParams p, Epilogue ep) {
  conv_depthwise<float>(x, w, y, p, ep);
}

extern "C" __global__ void edgert_conv_depthwise_f16(const __half* x, const __half* w, __half* y, ConvParams p, Epilogue ep) {
  conv_depthwise<__half>(x, w, y, p, ep);
}

// Implicit GEMM per group (blockIdx.z): rows = output channels of the group, columns =
// N*P*Q output pixels, depth = (C/groups)*R*S. Grid: (ceil(N*P*Q/64), ceil(K/groups/64), groups).
// Each thread's B column (one output pixel) is fixed for the whole K loop, so its image,
// input window origin and base pointer are computed once; a depth index splits into
// (c, r, s) with 32-bit divisions. (Per-element 64-bit divisions before: ResNet-50 b64 on an
// H200 took 65.8 ms on the GPU, 42.8 ms after; b1 18.7 -> 8.4 ms. tests/gpu/RESULTS.md.)
template <typename T>
__device__ __forceinline__ void conv_igemm(const T* x, const T* w, T* y, const ConvParams& p, const Epilogue& ep) {
  const int g = blockIdx.z;
  const int cg = p.C / p.groups, kg = p.K / p.groups;
  const int PQ = p.P * p.Q, rs = p.R * p.S, Kd = cg * rs;
  const i64 Ncols = (i64)p.N * PQ;
  const i64 m0 = (i64)blockIdx.y * GEMM_TM, n0 = (i64)blockIdx.x * GEMM_TN;
  const int tid = threadIdx.x;
  // This thread's B column.
  const i64 col = n0 + tid % GEMM_TN;
  const bool col_ok = col < Ncols;
  int ih0 = 0, iw0 = 0;
  const T* xg = x;
  if (col_ok) {
    const i64 img = col / PQ;
    const int pq = (int)(col - img * PQ), pp = pq / p.Q, q = pq - pp * p.Q;
    ih0 = pp * p.stride_h - p.pad_h;
    iw0 = q * p.stride_w - p.pad_w;
    xg = x + (img * p.C + (i64)g * cg) * p.H * p.W;
  }
  const T* wg = w + (i64)g * kg * Kd;
  gemm_tiles_filled(
      kg, Ncols, Kd, m0, n0,
      [&](i64 k0, GemmTileA& As, GemmTileB& Bs) {
#pragma unroll
        for (int j = 0; j < GEMM_LOADS; ++j) {
          const int mm = tid / GEMM_TK + (GEMM_THREADS / GEMM_TK) * j, ka = tid % GEMM_TK;
          const i64 m = m0 + mm;
          const int k = (int)k0 + ka;
          As[ka][mm] = (m < kg && k < Kd) ? to_f(wg[m * Kd + k]) : 0.f;
          const int kb = tid / GEMM_TN + (GEMM_THREADS / GEMM_TN) * j, k2 = (int)k0 + kb;
          float v = 0.f;
          if (col_ok && k2 < Kd) {
            const int c = k2 / rs, rem = k2 - c * rs, r = rem / p.S, s = rem - r * p.S;
            const int ih = ih0 + r * p.dil_h, iw = iw0 + s * p.dil_w;
            if (ih >= 0 && ih < p.H && iw >= 0 && iw < p.W) v = to_f(xg[((i64)c * p.H + ih) * p.W + iw]);
          }
          Bs[kb][tid % GEMM_TN] = v;
        }
      },
      [&](i64 m, i64 col, float v) {
        const i64 img = col / PQ, pq = col - img * PQ;
        const i64 k = (i64)g * kg + m;
        const i64 o = (img * p.K + k) * PQ + pq;
        y[o] = from_f<T>(apply_epilogue(v, ep, k, 0, o));
      });
}

extern "C" __global__ void __launch_bounds__(GEMM_THREADS)
    edgert_conv_igemm_f32(const float* x, const float* w, float* y, ConvParams p, Epilogue ep) {
  conv_igemm<float>(x, w, y, p, ep);
}

extern "C" __global__ void __launch_bounds__(GEMM_THREADS)
    edgert_conv_igemm_f16(const __half* x, const __half* w, __half* y, ConvParams p, Epilogue ep) {
  conv_igemm<__half>(x, w, y, p, ep);
}

// im2col for the INT8 path (groups == 1): cols is (N*P*Q) x Kpad int8, row-major, where
// Kpad = C*R*S rounded up to a multiple of 4 (zero filled) so edgert_gemm_s8 can read words.
extern "C" __global__ void edgert_im2col_s8(const signed char* x, signed char* cols, ConvParams p, i64 kpad) {
  const i64 kd = (i64)p.C * p.R * p.S;
  const i64 total = (i64)p.N * p.P * p.Q * kpad;
  const int rs = p.R * p.S;
  GRID_STRIDE(i, total) {
    i64 k = i % kpad, row = i / kpad;
    signed char v = 0;
    if (k < kd) {
      int c = (int)(k / rs), r = (int)((k % rs) / p.S), s = (int)(k % p.S);
      int q = (int)(row % p.Q), pp = (int)((row / p.Q) % p.P);
      i64 n = row / ((i64)p.P * p.Q);
      int ih = pp * p.stride_h - p.pad_h + r * p.dil_h;
      int iw = q * p.stride_w - p.pad_w + s * p.dil_w;
      if (ih >= 0 && ih < p.H && iw >= 0 && iw < p.W) v = x[((n * p.C + c) * p.H + ih) * p.W + iw];
    }
    cols[i] = v;
  }
}
