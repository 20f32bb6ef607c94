// Data movement: a strided gather (Transpose, Slice with steps, and any other view the
// host describes as shape + strides + base), a 2-D block copy (Concat writes each input as
// one), and casts between f32 and f16. Gather/copy work on raw element sizes 1/2/4/8 bytes.
#include "common.cuh"

// out[i] (contiguous, `shape`) = in[base + sum_d idx_d * stride_d]; strides may be negative
// (Slice with negative steps).
struct GatherParams {
  i64 n;
  i64 base;
  i64 shape[EDGERT_MAX_DIMS];
  i64 stride[EDGERT_MAX_DIMS];
  int ndim;
  int pad_;
};

template <typename T>
__device__ __forceinline__ void gather(const T* x, T* y, const GatherParams& p) {
  GRID_STRIDE(i, p.n) {
    i64 rest = i, off = p.base;
    for (int d = p.ndim - 1; d >= 0; --d) {
      off += (rest % p.shape[d]) * p.stride[d];
      rest /= p.shape[d];
    }
    y[i] = x[off];
  }
}

extern "C" __global__ void edgert_gather_b1(const unsigned char* x, unsigned char* y, GatherParams p) { gather(x, y, p); }
extern "C" __global__ void edgert_gather_b2(const unsigned short* x, unsigned short* y, GatherParams p) { gather(x, y, p); }
extern "C" __global__ void edgert_gather_b4(const unsigned int* x, unsigned int* y, GatherParams p) { gather(x, y, p); }
extern "C" __global__ void edgert_gather_b8(const unsigned long long* x, unsigned long long* y, GatherParams p) { gather(x, y, p); }

// dst[o * dst_row + dst_off + j] = src[o * src_row + j] for o < rows, j < src_row (elements).
template <typename T>
__device__ __forceinline__ void copy2d(const T* src, T* dst, i64 rows, i64 src_row, i64 dst_row, i64 dst_off) {
  GRID_STRIDE(i, rows * src_row) {
    i64 o = i / src_row, j = i % src_row;
    dst[o * dst_row + dst_off + j] = src[i];
  }
}

extern "C" __global__ void edgert_copy2d_b1(const unsigned char* s, unsigned char* d, i64 rows, i64 sr, i64 dr, i64 off) { copy2d(s, d, rows, sr, dr, off); }
extern "C" __global__ void edgert_copy2d_b2(const unsigned short* s, unsigned short* d, i64 rows, i64 sr, i64 dr, i64 off) { copy2d(s, d, rows, sr, dr, off); }
extern "C" __global__ void edgert_copy2d_b4(const unsigned int* s, unsigned int* d, i64 rows, i64 sr, i64 dr, i64 off) { copy2d(s, d, rows, sr, dr, off); }
extern "C" __global__ void edgert_copy2d_b8(const unsigned long long* s, unsigned long long* d, i64 rows, i64 sr, i64 dr, i64 off) { copy2d(s, d, rows, sr, dr, off); }

extern "C" __global__ void edgert_cast_f32_f16(const float* x, __half* y, i64 n) {
  GRID_STRIDE(i, n) { y[i] = __float2half_rn(x[i]); }
}

extern "C" __global__ void edgert_cast_f16_f32(const __half* x, float* y, i64 n) {
  GRID_STRIDE(i, n) { y[i] = __half2float(x[i]); }
}
