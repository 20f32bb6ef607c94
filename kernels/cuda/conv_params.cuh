// ConvParams, shared by conv.cu and conv_tc.cu (mirrored by edgert_cuda::params::ConvParams).
#pragma once
#include "common.cuh"

// x: N x C x H x W, w: K x (C/groups) x R x S, y: N x K x P x Q.
struct ConvParams {
  int N, C, H, W;
  int K, P, Q;
  int R, S;
  int stride_h, stride_w;
  int pad_h, pad_w;
  int dil_h, dil_w;
  int groups;
};
