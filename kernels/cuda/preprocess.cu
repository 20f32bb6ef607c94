// Fused preprocessing (the role of DALI / nvinfer's preprocessing): decoder output (NV12 or
// I420) -> bilinear resize with optional letterbox -> YUV to RGB/BGR -> normalize ->
// NCHW or NHWC, f32/f16/int8, written straight into the engine's input binding. One launch
// handles a batch of frames of different sizes: frame b is described by frames[b] and
// goes to image b of the output (blockIdx.y).
//
// The host reference is edgert_cuda::preprocess::reference; keep the two in step.
#include "common.cuh"

#define FMT_NV12 0
#define FMT_I420 1

#define LAYOUT_NCHW 0
#define LAYOUT_NHWC 1

#define OUT_F32 0
#define OUT_F16 1
#define OUT_S8 2

#define MATRIX_BT601_LIMITED 0
#define MATRIX_BT709_LIMITED 1
#define MATRIX_BT601_FULL 2

struct FrameDesc {
  const u8* y;
  const u8* u;  // NV12: the interleaved UV plane; I420: the U plane
  const u8* v;  // I420: the V plane; NV12: unused
  int width, height;
  int y_pitch, uv_pitch;
  int format;
  int pad_;
};

struct PreprocessParams {
  void* out;
  i64 image_stride;  // elements between images of the output
  int out_w, out_h;
  int layout;
  int dtype;
  int bgr;
  int letterbox;
  int matrix;
  int pad_;
  float mean[3];     // in [0,1] units, RGB order
  float inv_std[3];  // RGB order
  float pad_value[3];  // letterbox fill, 0..255 RGB
  float out_scale;   // int8 outputs: q = round(v / out_scale)
};

__device__ __forceinline__ float bilinear_u8(const u8* p, int pitch, int stride, int w, int h, float x, float y) {
  x = fminf(fmaxf(x, 0.f), (float)(w - 1));
  y = fminf(fmaxf(y, 0.f), (float)(h - 1));
  int x0 = (int)x, y0 = (int)y;
  int x1 = min(x0 + 1, w - 1), y1 = min(y0 + 1, h - 1);
  float fx = x - x0, fy = y - y0;
  float a = p[y0 * pitch + x0 * stride], b = p[y0 * pitch + x1 * stride];
  float c = p[y1 * pitch + x0 * stride], d = p[y1 * pitch + x1 * stride];
  float top = a + (b - a) * fx, bot = c + (d - c) * fx;
  return top + (bot - top) * fy;
}

extern "C" __global__ void edgert_preprocess(const FrameDesc* frames, PreprocessParams p) {
  const int b = blockIdx.y;
  const FrameDesc f = frames[b];
  const i64 npix = (i64)p.out_w * p.out_h;
  GRID_STRIDE(i, npix) {
    const int ox = (int)(i % p.out_w), oy = (int)(i / p.out_w);
    // Geometry: the placed image is nw x nh at (x0, y0); with letterbox the aspect is kept.
    int nw = p.out_w, nh = p.out_h, x0 = 0, y0 = 0;
    if (p.letterbox) {
      float s = fminf((float)p.out_w / f.width, (float)p.out_h / f.height);
      nw = min(p.out_w, max(1, (int)roundf(f.width * s)));  // roundf: half away from zero, as the host reference
      nh = min(p.out_h, max(1, (int)roundf(f.height * s)));
      x0 = (p.out_w - nw) / 2;
      y0 = (p.out_h - nh) / 2;
    }
    float rgb[3];
    if (ox < x0 || ox >= x0 + nw || oy < y0 || oy >= y0 + nh) {
      rgb[0] = p.pad_value[0];
      rgb[1] = p.pad_value[1];
      rgb[2] = p.pad_value[2];
    } else {
      const float sx = (ox - x0 + 0.5f) * ((float)f.width / nw) - 0.5f;
      const float sy = (oy - y0 + 0.5f) * ((float)f.height / nh) - 0.5f;
      const float Y = bilinear_u8(f.y, f.y_pitch, 1, f.width, f.height, sx, sy);
      const int cw = (f.width + 1) / 2, ch = (f.height + 1) / 2;
      const float cx = (sx + 0.5f) * 0.5f - 0.5f, cy = (sy + 0.5f) * 0.5f - 0.5f;
      float U, V;
      if (f.format == FMT_NV12) {
        U = bilinear_u8(f.u, f.uv_pitch, 2, cw, ch, cx, cy);
        V = bilinear_u8(f.u + 1, f.uv_pitch, 2, cw, ch, cx, cy);
      } else {
        U = bilinear_u8(f.u, f.uv_pitch, 1, cw, ch, cx, cy);
        V = bilinear_u8(f.v, f.uv_pitch, 1, cw, ch, cx, cy);
      }
      const float u = U - 128.f, v = V - 128.f;
      float r, g, bl;
      if (p.matrix == MATRIX_BT601_FULL) {
        r = Y + 1.402f * v;
        g = Y - 0.344136f * u - 0.714136f * v;
        bl = Y + 1.772f * u;
      } else {
        const float c = 1.164383f * (Y - 16.f);
        if (p.matrix == MATRIX_BT709_LIMITED) {
          r = c + 1.792741f * v;
          g = c - 0.213249f * u - 0.532909f * v;
          bl = c + 2.112402f * u;
        } else {
          r = c + 1.596027f * v;
          g = c - 0.391762f * u - 0.812968f * v;
          bl = c + 2.017232f * u;
        }
      }
      rgb[0] = fminf(fmaxf(r, 0.f), 255.f);
      rgb[1] = fminf(fmaxf(g, 0.f), 255.f);
      rgb[2] = fminf(fmaxf(bl, 0.f), 255.f);
    }
    for (int c = 0; c < 3; ++c) {
      const int src = p.bgr ? 2 - c : c;
      const float val = (rgb[src] * (1.f / 255.f) - p.mean[src]) * p.inv_std[src];
      const i64 o = (i64)b * p.image_stride + (p.layout == LAYOUT_NCHW ? (i64)c * npix + i : i * 3 + c);
      if (p.dtype == OUT_F32) reinterpret_cast<float*>(p.out)[o] = val;
      else if (p.dtype == OUT_F16) reinterpret_cast<__half*>(p.out)[o] = __float2half_rn(val);
      else reinterpret_cast<signed char*>(p.out)[o] = saturate_s8(val / p.out_scale);
    }
  }
}
