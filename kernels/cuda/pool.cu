// Pooling, NCHW: max and average (ONNX MaxPool/AveragePool with pads, strides, dilations,
// count_include_pad) and global average. FP32 and FP16.
#include "common.cuh"

struct PoolParams {
  int N, C, H, W;
  int P, Q;
  int R, S;
  int stride_h, stride_w;
  int pad_h, pad_w;
  int dil_h, dil_w;
  int count_include_pad;
  int is_max;
};

template <typename T>
__device__ __forceinline__ void pool2d(const T* x, T* y, const PoolParams& p) {
  const i64 total = (i64)p.N * p.C * p.P * p.Q;
  GRID_STRIDE(i, total) {
    int q = (int)(i % p.Q), pp = (int)((i / p.Q) % p.P);
    i64 nc = i / ((i64)p.P * p.Q);
    const T* xc = x + nc * p.H * p.W;
    float acc = p.is_max ? -EDGERT_INF : 0.f;
    int count = 0;
    for (int r = 0; r < p.R; ++r) {
      int ih = pp * p.stride_h - p.pad_h + r * p.dil_h;
      for (int s = 0; s < p.S; ++s) {
        int iw = q * p.stride_w - p.pad_w + s * p.dil_w;
        bool inside = ih >= 0 && ih < p.H && iw >= 0 && iw < p.W;
        if (inside) {
          float v = to_f(xc[(i64)ih * p.W + iw]);
          acc = p.is_max ? fmaxf(acc, v) : acc + v;
          ++count;
        } else if (p.count_include_pad) {
          // Padding counts only where the window lies within the padded input.
          if (ih < p.H + p.pad_h && iw < p.W + p.pad_w) ++count;
        }
      }
    }
    y[i] = from_f<T>(p.is_max ? acc : (count > 0 ? acc / count : 0.f));
  }
}

extern "C" __global__ void edgert_pool_f32(const float* x, float* y, PoolParams p) { pool2d<float>(x, y, p); }
extern "C" __global__ void edgert_pool_f16(const __half* x, __half* y, PoolParams p) { pool2d<__half>(x, y, p); }

// Global average pool: one warp per (n, c) plane of hw values.
template <typename T>
__device__ __forceinline__ void global_avg(const T* x, T* y, i64 planes, i64 hw) {
  const i64 warp = ((i64)blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (warp >= planes) return;
  const T* xp = x + warp * hw;
  float s = 0.f;
  for (i64 j = lane; j < hw; j += 32) s += to_f(xp[j]);
  for (int o = 16; o > 0; o /= 2) s += __shfl_down_sync(0xffffffffu, s, o);
  if (lane == 0) y[warp] = from_f<T>(s / (float)hw);
}

extern "C" __global__ void edgert_global_avg_pool_f32(const float* x, float* y, i64 planes, i64 hw) {
  global_avg<float>(x, y, planes, hw);
}
extern "C" __global__ void edgert_global_avg_pool_f16(const __half* x, __half* y, i64 planes, i64 hw) {
  global_avg<__half>(x, y, planes, hw);
}
