// Resize (ONNX Resize / Upsample) on the two innermost dims of an NCHW tensor: nearest and
// bilinear, with the ONNX coordinate transformation modes. FP32 and FP16.
#include "common.cuh"

#define COORD_HALF_PIXEL 0
#define COORD_ASYMMETRIC 1
#define COORD_ALIGN_CORNERS 2
#define COORD_PYTORCH_HALF_PIXEL 3

#define NEAREST_ROUND_PREFER_FLOOR 0
#define NEAREST_ROUND_PREFER_CEIL 1
#define NEAREST_FLOOR 2
#define NEAREST_CEIL 3

struct ResizeParams {
  i64 planes;  // N * C
  int H, W, OH, OW;
  float scale_h, scale_w;  // output / input
  int linear;
  int coord_mode;
  int nearest_mode;
  int pad_;
};

__device__ __forceinline__ float src_coord(int o, float scale, int in_len, int out_len, int mode) {
  switch (mode) {
    case COORD_ASYMMETRIC: return o / scale;
    case COORD_ALIGN_CORNERS: return out_len > 1 ? o * (float)(in_len - 1) / (float)(out_len - 1) : 0.f;
    case COORD_PYTORCH_HALF_PIXEL: return out_len > 1 ? (o + 0.5f) / scale - 0.5f : 0.f;
    default: return (o + 0.5f) / scale - 0.5f;
  }
}

__device__ __forceinline__ int nearest_index(float x, int mode, int len) {
  int i;
  switch (mode) {
    case NEAREST_ROUND_PREFER_CEIL: i = (int)floorf(x + 0.5f); break;
    case NEAREST_FLOOR: i = (int)floorf(x); break;
    case NEAREST_CEIL: i = (int)ceilf(x); break;
    default: i = (x == floorf(x) + 0.5f) ? (int)floorf(x) : (int)floorf(x + 0.5f); break;
  }
  return min(max(i, 0), len - 1);
}

template <typename T>
__device__ __forceinline__ void resize(const T* x, T* y, const ResizeParams& p) {
  const i64 total = p.planes * p.OH * p.OW;
  GRID_STRIDE(i, total) {
    int ox = (int)(i % p.OW), oy = (int)((i / p.OW) % p.OH);
    i64 plane = i / ((i64)p.OH * p.OW);
    const T* xp = x + plane * p.H * p.W;
    float sy = src_coord(oy, p.scale_h, p.H, p.OH, p.coord_mode);
    float sx = src_coord(ox, p.scale_w, p.W, p.OW, p.coord_mode);
    if (!p.linear) {
      y[i] = xp[(i64)nearest_index(sy, p.nearest_mode, p.H) * p.W + nearest_index(sx, p.nearest_mode, p.W)];
      continue;
    }
    sy = fminf(fmaxf(sy, 0.f), (float)(p.H - 1));
    sx = fminf(fmaxf(sx, 0.f), (float)(p.W - 1));
    int y0 = (int)sy, x0 = (int)sx;
    int y1 = min(y0 + 1, p.H - 1), x1 = min(x0 + 1, p.W - 1);
    float fy = sy - y0, fx = sx - x0;
    float v00 = to_f(xp[(i64)y0 * p.W + x0]), v01 = to_f(xp[(i64)y0 * p.W + x1]);
    float v10 = to_f(xp[(i64)y1 * p.W + x0]), v11 = to_f(xp[(i64)y1 * p.W + x1]);
    float top = v00 + (v01 - v00) * fx, bot = v10 + (v11 - v10) * fx;
    y[i] = from_f<T>(top + (bot - top) * fy);
  }
}

extern "C" __global__ void edgert_resize_f32(const float* x, float* y, ResizeParams p) { resize<float>(x, y, p); }
extern "C" __global__ void edgert_resize_f16(const __half* x, __half* y, ResizeParams p) { resize<__half>(x, y, p); }
