// Shared definitions for every edgert kernel: parameter structs (mirrored by #[repr(C)]
// structs in sdk/cuda/src/params.rs; keep the two in step), activations, the epilogue
// fused into Conv/Gemm, and the INT8 dot product.
#pragma once
#include <cuda_fp16.h>

typedef long long i64;
typedef unsigned char u8;

#define EDGERT_MAX_DIMS 6

// NVRTC has no <math.h> INFINITY.
#define EDGERT_INF __int_as_float(0x7f800000)

// Activation codes (edgert_cuda::params::Act).
#define ACT_NONE 0
#define ACT_RELU 1
#define ACT_LEAKY 2
#define ACT_CLIP 3
#define ACT_HARDSWISH 4
#define ACT_SIGMOID 5
#define ACT_TANH 6
#define ACT_HARDSIGMOID 7

// Bias placement in an epilogue.
#define BIAS_NONE 0
#define BIAS_PER_COL 1  // Gemm: bias[n]
#define BIAS_PER_ROW 2  // Conv (rows are output channels): bias[m]

// The epilogue of a fused Conv/Gemm: v = alpha*acc + beta*bias; then residual and activation
// in the order `res_first` says; then the clamp [clamp_lo, clamp_hi] (a Max/Min with a
// constant after the activation, fused on the CPU too; NaN passes, as in ONNX Max/Min); then
// an optional requantization (INT8 outputs only).
struct Epilogue {
  const float* bias;      // null: none
  const float* residual;  // null: none; same layout as the output (f32 kernels)
  const __half* residual_h;  // null: none; same layout as the output (f16 kernels)
  int bias_mode;
  int act;
  float alpha;
  float beta;
  float act_alpha;  // LeakyRelu alpha, Clip min, HardSigmoid alpha
  float act_beta;   // Clip max, HardSigmoid beta
  int res_first;    // 1: add the residual before the activation (ResNet), 0: after
  float clamp_lo;   // -inf: none
  float clamp_hi;   // +inf: none
  // A residual with fewer channels than an NCHW output (a zero channel pad folded away,
  // BlazeFace's widening skips): res_block = K*P*Q output elements per image, res_keep =
  // Cr*P*Q residual elements per image; the channels past Cr add zero. 0: same layout.
  int res_block;
  int res_keep;
  int pad_;
};

__device__ __forceinline__ float apply_act(float v, int act, float a, float b) {
  switch (act) {
    case ACT_RELU: return v > 0.f ? v : 0.f;
    case ACT_LEAKY: return v >= 0.f ? v : v * a;
    case ACT_CLIP: return fminf(fmaxf(v, a), b);
    case ACT_HARDSWISH: return v * fminf(fmaxf(v + 3.f, 0.f), 6.f) * (1.f / 6.f);
    case ACT_SIGMOID: return 1.f / (1.f + __expf(-v));
    case ACT_TANH: return tanhf(v);
    case ACT_HARDSIGMOID: return fminf(fmaxf(a * v + b, 0.f), 1.f);
    default: return v;
  }
}

// The memory an epilogue reads for one output element (bias, residual). Kernels that store
// several elements per thread load these for all of them first and then compute and store:
// the compiler cannot move a load above a store to memory that may alias it, so an epilogue
// that loads, computes and stores element by element waits one memory latency per element.
struct EpilogueLoads {
  float bias;
  float res;
};

// `row`/`col` index the bias; `idx` indexes the residual (the output element).
__device__ __forceinline__ EpilogueLoads epilogue_loads(const Epilogue& ep, i64 row, i64 col, i64 idx) {
  EpilogueLoads l = {0.f, 0.f};
  if (ep.bias_mode == BIAS_PER_COL) l.bias = ep.bias[col];
  else if (ep.bias_mode == BIAS_PER_ROW) l.bias = ep.bias[row];
  i64 ridx = idx;
  bool has_r = ep.residual || ep.residual_h;
  if (has_r && ep.res_block > 0) {
    i64 n = idx / ep.res_block, off = idx - n * ep.res_block;
    has_r = off < ep.res_keep;
    ridx = n * ep.res_keep + off;
  }
  if (has_r) l.res = ep.residual ? ep.residual[ridx] : __half2float(ep.residual_h[ridx]);
  return l;
}

__device__ __forceinline__ float epilogue_apply(float acc, const Epilogue& ep, EpilogueLoads l) {
  float v = ep.alpha * acc + ep.beta * l.bias;
  if (ep.res_first) v += l.res;
  v = apply_act(v, ep.act, ep.act_alpha, ep.act_beta);
  if (!ep.res_first) v += l.res;
  // Comparisons, not fminf/fmaxf: a NaN must pass through as the CPU's clamp lets it.
  if (v < ep.clamp_lo) v = ep.clamp_lo;
  if (v > ep.clamp_hi) v = ep.clamp_hi;
  return v;
}

__device__ __forceinline__ float apply_epilogue(float acc, const Epilogue& ep, i64 row, i64 col, i64 idx) {
  return epilogue_apply(acc, ep, epilogue_loads(ep, row, col, idx));
}

// Four int8 products summed into c. Inline PTX rather than __dp4a: NVRTC 12.2 leaves
// __dp4a as an unresolved extern that ptxas rejects.
__device__ __forceinline__ int dp4a_s8(int a, int b, int c) {
  int d;
  asm("dp4a.s32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}

__device__ __forceinline__ signed char saturate_s8(float v) {
  int q = __float2int_rn(v);
  return (signed char)max(-128, min(127, q));
}

// Conversions so templates can be written once for float and __half.
__device__ __forceinline__ float to_f(float v) { return v; }
__device__ __forceinline__ float to_f(__half v) { return __half2float(v); }
template <typename T> __device__ __forceinline__ T from_f(float v);
template <> __device__ __forceinline__ float from_f<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_f<__half>(float v) { return __float2half_rn(v); }

#define GRID_STRIDE(i, n) \
  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (i64)blockDim.x * gridDim.x)
