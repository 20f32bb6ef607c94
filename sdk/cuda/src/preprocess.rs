//! The fused preprocessing kernel (`edgert_preprocess`): its parameters, and the host
//! reference it is tested against (`tests/gpu/run.sh`). NV12/I420 frames of any size ->
//! bilinear resize (optionally letterboxed, aspect kept) -> YUV to RGB/BGR -> normalize ->
//! NCHW or NHWC f32/f16/int8, one image per frame.

use crate::error::{Error, Result};

/// Decoder output formats.
#[repr(i32)]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Format {
    /// Y plane, then interleaved UV at half resolution.
    Nv12 = 0,
    /// Y, U, V planes, U and V at half resolution.
    I420 = 1,
}

/// YUV -> RGB matrices.
#[repr(i32)]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Matrix {
    /// BT.601, limited range (most SD/webcam video).
    Bt601Limited = 0,
    /// BT.709, limited range (HD video).
    Bt709Limited = 1,
    /// BT.601, full range (JPEG).
    Bt601Full = 2,
}

/// `FrameDesc` in preprocess.cu (device pointers).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FrameDesc {
    /// Y plane.
    pub y: u64,
    /// NV12: UV plane; I420: U plane.
    pub u: u64,
    /// I420: V plane.
    pub v: u64,
    /// Width in pixels.
    pub width: i32,
    /// Height in pixels.
    pub height: i32,
    /// Bytes between Y rows.
    pub y_pitch: i32,
    /// Bytes between chroma rows.
    pub uv_pitch: i32,
    /// [`Format`].
    pub format: i32,
    /// Padding.
    pub pad_: i32,
}

/// `PreprocessParams` in preprocess.cu.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PreprocessParams {
    /// Output binding (device pointer).
    pub out: u64,
    /// Elements between output images.
    pub image_stride: i64,
    /// Output width.
    pub out_w: i32,
    /// Output height.
    pub out_h: i32,
    /// 0 NCHW, 1 NHWC.
    pub layout: i32,
    /// 0 f32, 1 f16, 2 int8.
    pub dtype: i32,
    /// 1: BGR channel order.
    pub bgr: i32,
    /// 1: keep the aspect ratio and pad.
    pub letterbox: i32,
    /// [`Matrix`].
    pub matrix: i32,
    /// Padding.
    pub pad_: i32,
    /// Mean in [0,1] units, RGB.
    pub mean: [f32; 3],
    /// 1/std, RGB.
    pub inv_std: [f32; 3],
    /// Letterbox fill, 0..255 RGB.
    pub pad_value: [f32; 3],
    /// int8 output scale.
    pub out_scale: f32,
}

/// One host frame for the reference.
#[derive(Clone, Debug)]
pub struct HostFrame<'a> {
    /// Format.
    pub format: Format,
    /// Width.
    pub width: usize,
    /// Height.
    pub height: usize,
    /// Y plane (pitch = width).
    pub y: &'a [u8],
    /// NV12: UV plane (pitch = 2 * ceil(width/2)); I420: U plane (pitch = ceil(width/2)).
    pub u: &'a [u8],
    /// I420: V plane; NV12: empty.
    pub v: &'a [u8],
}

/// Where a `w` x `h` frame lands in an `out_w` x `out_h` image: (x0, y0, nw, nh). The kernel
/// computes the same in f32.
pub fn placement(w: usize, h: usize, out_w: usize, out_h: usize, letterbox: bool) -> (usize, usize, usize, usize) {
    if !letterbox {
        return (0, 0, out_w, out_h);
    }
    let s = (out_w as f32 / w as f32).min(out_h as f32 / h as f32);
    let nw = ((w as f32 * s).round() as usize).clamp(1, out_w);
    let nh = ((h as f32 * s).round() as usize).clamp(1, out_h);
    ((out_w - nw) / 2, (out_h - nh) / 2, nw, nh)
}

fn bilinear(p: &[u8], pitch: usize, stride: usize, w: usize, h: usize, x: f32, y: f32) -> f32 {
    let x = x.clamp(0.0, (w - 1) as f32);
    let y = y.clamp(0.0, (h - 1) as f32);
    let (x0, y0) = (x as usize, y as usize);
    let (x1, y1) = ((x0 + 1).min(w - 1), (y0 + 1).min(h - 1));
    let (fx, fy) = (x - x0 as f32, y - y0 as f32);
    let at = |yy: usize, xx: usize| p[yy * pitch + xx * stride] as f32;
    let top = at(y0, x0) + (at(y0, x1) - at(y0, x0)) * fx;
    let bot = at(y1, x0) + (at(y1, x1) - at(y1, x0)) * fx;
    top + (bot - top) * fy
}

/// YUV (0..255) to RGB (0..255, clamped).
pub fn yuv_to_rgb(y: f32, u: f32, v: f32, m: Matrix) -> [f32; 3] {
    let (u, v) = (u - 128.0, v - 128.0);
    let (r, g, b) = match m {
        Matrix::Bt601Full => (y + 1.402 * v, y - 0.344136 * u - 0.714136 * v, y + 1.772 * u),
        Matrix::Bt709Limited => {
            let c = 1.164383 * (y - 16.0);
            (c + 1.792741 * v, c - 0.213249 * u - 0.532909 * v, c + 2.112402 * u)
        }
        Matrix::Bt601Limited => {
            let c = 1.164383 * (y - 16.0);
            (c + 1.596027 * v, c - 0.391762 * u - 0.812968 * v, c + 2.017232 * u)
        }
    };
    [r.clamp(0.0, 255.0), g.clamp(0.0, 255.0), b.clamp(0.0, 255.0)]
}

/// The host reference: f32 output of `frames.len()` images, in the layout `p` says (`p.dtype`
/// and `p.out` are ignored: compare f16/int8 kernel outputs after converting).
pub fn reference(frames: &[HostFrame], p: &PreprocessParams) -> Result<Vec<f32>> {
    let (ow, oh) = (p.out_w as usize, p.out_h as usize);
    let npix = ow * oh;
    let stride = p.image_stride as usize;
    if stride < npix * 3 {
        return Err(Error::Invalid(format!("image_stride {stride} < 3 * {ow} * {oh}")));
    }
    let matrix = match p.matrix {
        0 => Matrix::Bt601Limited,
        1 => Matrix::Bt709Limited,
        2 => Matrix::Bt601Full,
        m => return Err(Error::Invalid(format!("matrix code {m}"))),
    };
    let mut out = vec![0f32; stride * frames.len()];
    for (b, f) in frames.iter().enumerate() {
        let (cw, ch) = (f.width.div_ceil(2), f.height.div_ceil(2));
        let (uv_pitch, ustride) = match f.format {
            Format::Nv12 => (2 * cw, 2),
            Format::I420 => (cw, 1),
        };
        if f.width == 0 || f.height == 0 || f.y.len() < f.width * f.height || f.u.len() < uv_pitch * ch {
            return Err(Error::Invalid(format!("frame {b}: planes too small for {}x{}", f.width, f.height)));
        }
        if f.format == Format::I420 && f.v.len() < cw * ch {
            return Err(Error::Invalid(format!("frame {b}: V plane too small")));
        }
        let (x0, y0, nw, nh) = placement(f.width, f.height, ow, oh, p.letterbox != 0);
        for oy in 0..oh {
            for ox in 0..ow {
                let rgb = if ox < x0 || ox >= x0 + nw || oy < y0 || oy >= y0 + nh {
                    p.pad_value
                } else {
                    let sx = (ox - x0) as f32 + 0.5;
                    let sx = sx * (f.width as f32 / nw as f32) - 0.5;
                    let sy = ((oy - y0) as f32 + 0.5) * (f.height as f32 / nh as f32) - 0.5;
                    let yv = bilinear(f.y, f.width, 1, f.width, f.height, sx, sy);
                    let (cx, cy) = ((sx + 0.5) * 0.5 - 0.5, (sy + 0.5) * 0.5 - 0.5);
                    let (u, v) = match f.format {
                        Format::Nv12 => (
                            bilinear(f.u, uv_pitch, ustride, cw, ch, cx, cy),
                            bilinear(&f.u[1..], uv_pitch, ustride, cw, ch, cx, cy),
                        ),
                        Format::I420 => {
                            (bilinear(f.u, uv_pitch, 1, cw, ch, cx, cy), bilinear(f.v, uv_pitch, 1, cw, ch, cx, cy))
                        }
                    };
                    yuv_to_rgb(yv, u, v, matrix)
                };
                let i = oy * ow + ox;
                for c in 0..3 {
                    let src = if p.bgr != 0 { 2 - c } else { c };
                    let val = (rgb[src] / 255.0 - p.mean[src]) * p.inv_std[src];
                    let o = b * stride + if p.layout == 0 { c * npix + i } else { i * 3 + c };
                    out[o] = val;
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(w: usize, h: usize, letterbox: bool) -> PreprocessParams {
        PreprocessParams {
            out: 0,
            image_stride: (w * h * 3) as i64,
            out_w: w as i32,
            out_h: h as i32,
            layout: 0,
            dtype: 0,
            bgr: 0,
            letterbox: letterbox as i32,
            matrix: 0,
            pad_: 0,
            mean: [0.0; 3],
            inv_std: [1.0; 3],
            pad_value: [114.0; 3],
            out_scale: 1.0,
        }
    }

    #[test]
    fn letterbox_placement() {
        assert_eq!(placement(1920, 1080, 128, 128, true), (0, 28, 128, 72));
        assert_eq!(placement(480, 640, 128, 128, true), (16, 0, 96, 128));
        assert_eq!(placement(7, 13, 128, 128, false), (0, 0, 128, 128));
        assert_eq!(placement(100, 100, 128, 64, true), (32, 0, 64, 64));
    }

    #[test]
    fn flat_grey_frame_and_padding() {
        // Y=126 U=V=128 in BT.601 limited: grey (126-16)*1.164383 in every channel.
        let (w, h) = (13, 7);
        let y = vec![126u8; w * h];
        let uv = vec![128u8; 2 * w.div_ceil(2) * h.div_ceil(2)];
        let f = HostFrame { format: Format::Nv12, width: w, height: h, y: &y, u: &uv, v: &[] };
        let p = params(16, 16, true);
        let out = reference(&[f.clone(), f], &p).unwrap();
        let grey = (126.0 - 16.0) * 1.164383 / 255.0;
        let (x0, y0, nw, nh) = placement(w, h, 16, 16, true);
        assert_eq!((x0, y0, nw, nh), (0, 3, 16, 9));
        for b in 0..2 {
            for c in 0..3 {
                for yy in 0..16 {
                    for xx in 0..16 {
                        let v = out[b * 768 + c * 256 + yy * 16 + xx];
                        let inside = yy >= y0 && yy < y0 + nh;
                        let want = if inside { grey } else { 114.0 / 255.0 };
                        assert!((v - want).abs() < 1e-5, "b{b} c{c} ({xx},{yy}): {v} vs {want}");
                    }
                }
            }
        }
    }

    #[test]
    fn i420_and_nv12_agree_and_bgr_swaps() {
        let (w, h) = (9, 5);
        let (cw, ch) = (5, 3);
        let y: Vec<u8> = (0..w * h).map(|i| (i * 37 % 256) as u8).collect();
        let u: Vec<u8> = (0..cw * ch).map(|i| (60 + i * 11 % 120) as u8).collect();
        let v: Vec<u8> = (0..cw * ch).map(|i| (90 + i * 7 % 100) as u8).collect();
        let uv: Vec<u8> = u.iter().zip(&v).flat_map(|(&a, &b)| [a, b]).collect();
        let nv12 = HostFrame { format: Format::Nv12, width: w, height: h, y: &y, u: &uv, v: &[] };
        let i420 = HostFrame { format: Format::I420, width: w, height: h, y: &y, u: &u, v: &v };
        let mut p = params(11, 6, false);
        let a = reference(&[nv12], &p).unwrap();
        let b = reference(std::slice::from_ref(&i420), &p).unwrap();
        assert_eq!(a, b);
        p.bgr = 1;
        let c = reference(&[i420], &p).unwrap();
        assert_eq!(&a[..66], &c[2 * 66..]);
        // Too-small planes are an error, not a panic.
        let bad = HostFrame { format: Format::Nv12, width: w, height: h, y: &y[..3], u: &uv, v: &[] };
        assert!(reference(&[bad], &p).is_err());
    }
}
