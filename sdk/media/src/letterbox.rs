//! Letterbox geometry (where a source frame lands inside the model input) and the conversion
//! of a model-size RGB frame into the model's input tensor layout.
//!
//! GStreamer does the scaling, in YUV before colour conversion (`videoscale add-borders=true`
//! to the model size with `pixel-aspect-ratio=1/1`), which centres the picture between black
//! borders; [`Letterbox::fit`] reproduces videoscale's arithmetic so that detections can be
//! mapped back to source pixels.

use crate::error::{Error, Result};
use crate::postprocess::{Detection, Keypoint};

/// Where a `src_w x src_h` frame sits inside a `dst_w x dst_h` model input.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Letterbox {
    /// Source width in pixels.
    pub src_w: u32,
    /// Source height in pixels.
    pub src_h: u32,
    /// Model input width.
    pub dst_w: u32,
    /// Model input height.
    pub dst_h: u32,
    /// Left border in model pixels.
    pub x: u32,
    /// Top border in model pixels.
    pub y: u32,
    /// Width of the picture inside the model input.
    pub w: u32,
    /// Height of the picture inside the model input.
    pub h: u32,
}

impl Letterbox {
    /// The placement videoscale (`add-borders=true`) chooses for a source of the given size
    /// and pixel aspect ratio `par_n/par_d` scaled into `dst` with square pixels. Zero sizes
    /// give an identity-sized box rather than a division by zero.
    pub fn fit(src_w: u32, src_h: u32, par: (u32, u32), dst_w: u32, dst_h: u32) -> Letterbox {
        let full = Letterbox { src_w, src_h, dst_w, dst_h, x: 0, y: 0, w: dst_w, h: dst_h };
        let (par_n, par_d) = (par.0.max(1) as u64, par.1.max(1) as u64);
        if src_w == 0 || src_h == 0 || dst_w == 0 || dst_h == 0 {
            return full;
        }
        // Display aspect ratio n/d = (src_w * par_n) / (src_h * par_d).
        let n = src_w as u64 * par_n;
        let d = src_h as u64 * par_d;
        let to_h = (dst_w as u64 * d / n) as u32;
        if to_h <= dst_h {
            let b = dst_h - to_h;
            Letterbox { y: b / 2, h: to_h, ..full }
        } else {
            let to_w = ((dst_h as u64 * n / d) as u32).min(dst_w);
            let b = dst_w - to_w;
            Letterbox { x: b / 2, w: to_w, ..full }
        }
    }

    /// The whole model input, no borders: the source stretched to `dst` (`add-borders=false`).
    /// Takes the same arguments as [`fit`](Letterbox::fit) so that either can be chosen.
    pub fn stretch(src_w: u32, src_h: u32, _par: (u32, u32), dst_w: u32, dst_h: u32) -> Letterbox {
        Letterbox { src_w, src_h, dst_w, dst_h, x: 0, y: 0, w: dst_w, h: dst_h }
    }

    /// Maps a point in normalized model-input coordinates to source pixels.
    pub fn point_to_source(&self, x: f32, y: f32) -> (f32, f32) {
        let sx = (x * self.dst_w as f32 - self.x as f32) * self.src_w as f32 / self.w.max(1) as f32;
        let sy = (y * self.dst_h as f32 - self.y as f32) * self.src_h as f32 / self.h.max(1) as f32;
        (sx, sy)
    }

    /// Maps a detection from normalized model-input coordinates to source pixels, clipping
    /// the box to the frame.
    pub fn to_source(&self, d: &Detection) -> Detection {
        let (x0, y0) = self.point_to_source(d.xmin, d.ymin);
        let (x1, y1) = self.point_to_source(d.xmax, d.ymax);
        let (w, h) = (self.src_w as f32, self.src_h as f32);
        Detection {
            xmin: x0.clamp(0.0, w),
            ymin: y0.clamp(0.0, h),
            xmax: x1.clamp(0.0, w),
            ymax: y1.clamp(0.0, h),
            score: d.score,
            keypoints: d
                .keypoints
                .iter()
                .map(|k| {
                    let (x, y) = self.point_to_source(k.x, k.y);
                    Keypoint { x, y }
                })
                .collect(),
        }
    }
}

/// Channel order of the model input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChannelOrder {
    /// Red, green, blue.
    Rgb,
    /// Blue, green, red.
    Bgr,
}

/// Memory layout of the model input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Planar: `[C, H, W]` per image.
    Nchw,
    /// Interleaved: `[H, W, C]` per image.
    Nhwc,
}

/// How pixel values become model inputs: `(value - mean) * scale` per channel (in the
/// model's channel order), in the given layout.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct InputFormat {
    /// Channel order.
    pub order: ChannelOrder,
    /// Layout.
    pub layout: Layout,
    /// Subtracted from each 0..255 value.
    pub mean: [f32; 3],
    /// Multiplied after subtracting the mean.
    pub scale: [f32; 3],
}

impl InputFormat {
    /// MediaPipe's float models: RGB in [-1, 1], NCHW (as the converted ONNX models take it).
    pub fn mediapipe_nchw() -> InputFormat {
        let s = 1.0 / 127.5;
        InputFormat { order: ChannelOrder::Rgb, layout: Layout::Nchw, mean: [127.5; 3], scale: [s; 3] }
    }
}

/// Writes one packed RGB frame (`width*height*3` bytes) into `out` (`3*width*height` floats)
/// in the given format.
pub fn rgb_to_input(rgb: &[u8], width: usize, height: usize, fmt: &InputFormat, out: &mut [f32]) -> Result<()> {
    let n = width * height;
    if rgb.len() != n * 3 || out.len() != n * 3 {
        return Err(Error::Preprocess(format!(
            "frame {width}x{height} has {} bytes and the input {} values; expected {} of each",
            rgb.len(),
            out.len(),
            n * 3
        )));
    }
    let src_ch = match fmt.order {
        ChannelOrder::Rgb => [0, 1, 2],
        ChannelOrder::Bgr => [2, 1, 0],
    };
    match fmt.layout {
        Layout::Nchw => {
            for c in 0..3 {
                let (m, s, sc) = (fmt.mean[c], fmt.scale[c], src_ch[c]);
                let plane = &mut out[c * n..(c + 1) * n];
                for (o, px) in plane.iter_mut().zip(rgb.chunks_exact(3)) {
                    *o = (px[sc] as f32 - m) * s;
                }
            }
        }
        Layout::Nhwc => {
            for (o, px) in out.chunks_exact_mut(3).zip(rgb.chunks_exact(3)) {
                for c in 0..3 {
                    o[c] = (px[src_ch[c]] as f32 - fmt.mean[c]) * fmt.scale[c];
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_wide_and_tall() {
        // 1920x1080 into 128x128: height 128*1080/1920 = 72, borders 56 -> 28 top.
        let l = Letterbox::fit(1920, 1080, (1, 1), 128, 128);
        assert_eq!((l.x, l.y, l.w, l.h), (0, 28, 128, 72));
        // 480x640 (portrait) into 192x192: to_h = 192*640/480 = 256 > 192, so to_w = 144.
        let l = Letterbox::fit(480, 640, (1, 1), 192, 192);
        assert_eq!((l.x, l.y, l.w, l.h), (24, 0, 144, 192));
        // Anamorphic 1440x1080 with PAR 4/3 displays as 16:9.
        let l = Letterbox::fit(1440, 1080, (4, 3), 128, 128);
        assert_eq!((l.x, l.y, l.w, l.h), (0, 28, 128, 72));
        // Degenerate sizes do not divide by zero.
        let l = Letterbox::fit(0, 0, (0, 0), 128, 128);
        assert_eq!((l.w, l.h), (128, 128));
    }

    #[test]
    fn maps_back_to_source() {
        let l = Letterbox::fit(1920, 1080, (1, 1), 128, 128);
        // Model point (64, 28+36) = centre of the picture -> source centre.
        let (x, y) = l.point_to_source(0.5, 64.0 / 128.0);
        assert!((x - 960.0).abs() < 1e-3 && (y - 540.0).abs() < 1e-3, "{x} {y}");
        // Top-left corner of the picture -> (0, 0).
        let (x, y) = l.point_to_source(0.0, 28.0 / 128.0);
        assert!(x.abs() < 1e-3 && y.abs() < 1e-3);
        let d = Detection {
            xmin: 0.25,
            ymin: 28.0 / 128.0,
            xmax: 0.5,
            ymax: 1.0,
            score: 0.9,
            keypoints: vec![Keypoint { x: 0.5, y: 0.5 }],
        };
        let s = l.to_source(&d);
        // x: 32 px * 15 = 480; 64 * 15 = 960. ymax clipped to 1080 (it lies in the border).
        assert!((s.xmin - 480.0).abs() < 1e-3 && (s.xmax - 960.0).abs() < 1e-3);
        assert!(s.ymin.abs() < 1e-3 && s.ymax == 1080.0);
        assert!((s.keypoints[0].x - 960.0).abs() < 1e-3 && (s.keypoints[0].y - 540.0).abs() < 1e-3);
    }

    #[test]
    fn converts_layouts() {
        // 2x1 image: red, then (10, 20, 30).
        let rgb = [255u8, 0, 0, 10, 20, 30];
        let mut out = [0f32; 6];
        rgb_to_input(&rgb, 2, 1, &InputFormat::mediapipe_nchw(), &mut out).unwrap();
        let e = |v: f32| v / 127.5 - 1.0;
        let want = [e(255.0), e(10.0), e(0.0), e(20.0), e(0.0), e(30.0)];
        for (a, b) in out.iter().zip(want) {
            assert!((a - b).abs() < 1e-6);
        }
        let f = InputFormat { order: ChannelOrder::Bgr, layout: Layout::Nhwc, mean: [0.0; 3], scale: [1.0; 3] };
        rgb_to_input(&rgb, 2, 1, &f, &mut out).unwrap();
        assert_eq!(out, [0.0, 0.0, 255.0, 30.0, 20.0, 10.0]);
        assert!(rgb_to_input(&rgb, 3, 1, &f, &mut out).is_err());
    }
}
