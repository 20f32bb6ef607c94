// Elementwise ops: unary activations/math and binary ops with NumPy broadcasting. FP16 unary
// ops move two values per load (__half2); math is done in f32.
#include "common.cuh"

// Unary op codes (edgert_cuda::params::Unary).
#define UN_IDENTITY 0
#define UN_RELU 1
#define UN_LEAKY 2
#define UN_CLIP 3
#define UN_HARDSWISH 4
#define UN_SIGMOID 5
#define UN_TANH 6
#define UN_HARDSIGMOID 7
#define UN_EXP 8
#define UN_LOG 9
#define UN_SQRT 10
#define UN_NEG 11
#define UN_ABS 12
#define UN_ERF 13
#define UN_GELU 14
#define UN_SOFTPLUS 15
#define UN_RECIPROCAL 16
#define UN_ELU 17

__device__ __forceinline__ float unary(int op, float x, float a, float b) {
  switch (op) {
    case UN_RELU: case UN_LEAKY: case UN_CLIP: case UN_HARDSWISH:
    case UN_SIGMOID: case UN_TANH: case UN_HARDSIGMOID:
      return apply_act(x, op, a, b);  // same codes as ACT_*
    case UN_EXP: return expf(x);
    case UN_LOG: return logf(x);
    case UN_SQRT: return sqrtf(x);
    case UN_NEG: return -x;
    case UN_ABS: return fabsf(x);
    case UN_ERF: return erff(x);
    case UN_GELU: return 0.5f * x * (1.f + erff(x * 0.70710678118654752f));
    case UN_SOFTPLUS: return x > 20.f ? x : log1pf(expf(x));
    case UN_RECIPROCAL: return 1.f / x;
    case UN_ELU: return x >= 0.f ? x : a * (expf(x) - 1.f);
    default: return x;
  }
}

extern "C" __global__ void edgert_unary_f32(const float* x, float* y, i64 n, int op, float a, float b) {
  GRID_STRIDE(i, n) { y[i] = unary(op, x[i], a, b); }
}

// x and y 4-byte aligned (arena offsets are 64-byte multiples); an odd tail is done by the
// thread that owns the last pair.
extern "C" __global__ void edgert_unary_f16(const __half* x, __half* y, i64 n, int op, float a, float b) {
  const __half2* x2 = reinterpret_cast<const __half2*>(x);
  __half2* y2 = reinterpret_cast<__half2*>(y);
  const i64 pairs = n / 2;
  GRID_STRIDE(i, pairs) {
    float2 v = __half22float2(x2[i]);
    y2[i] = __floats2half2_rn(unary(op, v.x, a, b), unary(op, v.y, a, b));
  }
  if ((n & 1) && blockIdx.x == 0 && threadIdx.x == 0) y[n - 1] = __float2half_rn(unary(op, __half2float(x[n - 1]), a, b));
}

// Binary op codes (edgert_cuda::params::Binary).
#define BIN_ADD 0
#define BIN_SUB 1
#define BIN_MUL 2
#define BIN_DIV 3
#define BIN_MAX 4
#define BIN_MIN 5
#define BIN_POW 6
#define BIN_PRELU 7

__device__ __forceinline__ float binary(int op, float a, float b) {
  switch (op) {
    case BIN_ADD: return a + b;
    case BIN_SUB: return a - b;
    case BIN_MUL: return a * b;
    case BIN_DIV: return a / b;
    case BIN_MAX: return fmaxf(a, b);
    case BIN_MIN: return fminf(a, b);
    case BIN_POW: return powf(a, b);
    case BIN_PRELU: return a < 0.f ? a * b : a;
    default: return 0.f;
  }
}

// Broadcasting: the output is contiguous with `shape`; an input's stride is 0 along the
// dims it broadcasts. Dims are coalesced on the host (at most EDGERT_MAX_DIMS remain).
struct BroadcastParams {
  i64 n;
  i64 shape[EDGERT_MAX_DIMS];
  i64 sa[EDGERT_MAX_DIMS];
  i64 sb[EDGERT_MAX_DIMS];
  int ndim;
  int op;
};

template <typename T>
__device__ __forceinline__ void binary_bcast(const T* a, const T* b, T* y, const BroadcastParams& p) {
  GRID_STRIDE(i, p.n) {
    i64 rest = i, ia = 0, ib = 0;
    for (int d = p.ndim - 1; d >= 0; --d) {
      i64 c = rest % p.shape[d];
      rest /= p.shape[d];
      ia += c * p.sa[d];
      ib += c * p.sb[d];
    }
    y[i] = from_f<T>(binary(p.op, to_f(a[ia]), to_f(b[ib])));
  }
}

extern "C" __global__ void edgert_binary_f32(const float* a, const float* b, float* y, BroadcastParams p) {
  binary_bcast<float>(a, b, y, p);
}

extern "C" __global__ void edgert_binary_f16(const __half* a, const __half* b, __half* y, BroadcastParams p) {
  binary_bcast<__half>(a, b, y, p);
}

// Same-shape fast path for FP16 (residual adds): two values per load.
extern "C" __global__ void edgert_binary_same_f16(const __half* a, const __half* b, __half* y, i64 n, int op) {
  const __half2* a2 = reinterpret_cast<const __half2*>(a);
  const __half2* b2 = reinterpret_cast<const __half2*>(b);
  __half2* y2 = reinterpret_cast<__half2*>(y);
  GRID_STRIDE(i, n / 2) {
    if (op == BIN_ADD) y2[i] = __hadd2(a2[i], b2[i]);
    else if (op == BIN_MUL) y2[i] = __hmul2(a2[i], b2[i]);
    else {
      float2 u = __half22float2(a2[i]), v = __half22float2(b2[i]);
      y2[i] = __floats2half2_rn(binary(op, u.x, v.x), binary(op, u.y, v.y));
    }
  }
  if ((n & 1) && blockIdx.x == 0 && threadIdx.x == 0)
    y[n - 1] = __float2half_rn(binary(op, __half2float(a[n - 1]), __half2float(b[n - 1])));
}
