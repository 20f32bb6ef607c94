// Softmax / LogSoftmax along one axis of a tensor viewed as outer x axis x inner.
#include "common.cuh"

// inner == 1 (the usual last-axis case): one block of 256 threads per row.
template <typename T>
__device__ __forceinline__ void softmax_rows(const T* x, T* y, i64 rows, i64 len, int log_out) {
  __shared__ float red[32];
  const i64 row = blockIdx.x;
  if (row >= rows) return;
  const T* xr = x + row * len;
  T* yr = y + row * len;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nwarps = blockDim.x / 32;
  // max
  float m = -EDGERT_INF;
  for (i64 j = threadIdx.x; j < len; j += blockDim.x) m = fmaxf(m, to_f(xr[j]));
  for (int o = 16; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  if (lane == 0) red[warp] = m;
  __syncthreads();
  m = red[0];
  for (int w = 1; w < nwarps; ++w) m = fmaxf(m, red[w]);
  __syncthreads();
  // sum of exp
  float s = 0.f;
  for (i64 j = threadIdx.x; j < len; j += blockDim.x) s += __expf(to_f(xr[j]) - m);
  for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (lane == 0) red[warp] = s;
  __syncthreads();
  s = 0.f;
  for (int w = 0; w < nwarps; ++w) s += red[w];
  const float ls = logf(s), inv = 1.f / s;
  for (i64 j = threadIdx.x; j < len; j += blockDim.x) {
    float v = to_f(xr[j]) - m;
    yr[j] = from_f<T>(log_out ? v - ls : __expf(v) * inv);
  }
}

extern "C" __global__ void edgert_softmax_rows_f32(const float* x, float* y, i64 rows, i64 len, int log_out) {
  softmax_rows<float>(x, y, rows, len, log_out);
}
extern "C" __global__ void edgert_softmax_rows_f16(const __half* x, __half* y, i64 rows, i64 len, int log_out) {
  softmax_rows<__half>(x, y, rows, len, log_out);
}

// inner > 1: one thread per (outer, inner) position walks the axis (coalesced over inner).
template <typename T>
__device__ __forceinline__ void softmax_strided(const T* x, T* y, i64 outer, i64 len, i64 inner, int log_out) {
  GRID_STRIDE(i, outer * inner) {
    const i64 o = i / inner, in = i % inner;
    const T* xs = x + o * len * inner + in;
    T* ys = y + o * len * inner + in;
    float m = -EDGERT_INF;
    for (i64 j = 0; j < len; ++j) m = fmaxf(m, to_f(xs[j * inner]));
    float s = 0.f;
    for (i64 j = 0; j < len; ++j) s += __expf(to_f(xs[j * inner]) - m);
    const float ls = logf(s), inv = 1.f / s;
    for (i64 j = 0; j < len; ++j) {
      float v = to_f(xs[j * inner]) - m;
      ys[j * inner] = from_f<T>(log_out ? v - ls : __expf(v) * inv);
    }
  }
}

extern "C" __global__ void edgert_softmax_strided_f32(const float* x, float* y, i64 outer, i64 len, i64 inner, int log_out) {
  softmax_strided<float>(x, y, outer, len, inner, log_out);
}
extern "C" __global__ void edgert_softmax_strided_f16(const __half* x, __half* y, i64 outer, i64 len, i64 inner, int log_out) {
  softmax_strided<__half>(x, y, outer, len, inner, log_out);
}
