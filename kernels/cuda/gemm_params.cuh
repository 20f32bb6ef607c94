// GemmParams, shared by gemm.cu and gemm_tc.cu.
#pragma once
#include "common.cuh"

// C[b] (M x N, row stride ldc) = epilogue(A[b] (M x K) * B[b] (K x N)); any element strides,
// so transposed operands need no copy. Batch index is blockIdx.z.
struct GemmParams {
  i64 M, N, K;
  i64 a_sm, a_sk, b_sk, b_sn;
  i64 a_sb, b_sb, c_sb;
  i64 ldc;
};

