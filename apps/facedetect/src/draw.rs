//! Annotated snapshots: boxes and keypoints drawn on the full-resolution frame with the
//! `image` crate, saved as PNG.

use std::path::Path;

use anyhow::{Context as _, Result, anyhow};
use edgert_media::{Detection, FullFrame};
use image::{Rgb, RgbImage};

fn put(img: &mut RgbImage, x: i64, y: i64, c: Rgb<u8>) {
    if x >= 0 && y >= 0 && (x as u32) < img.width() && (y as u32) < img.height() {
        img.put_pixel(x as u32, y as u32, c);
    }
}

/// Draws a rectangle outline `t` pixels thick.
fn rect(img: &mut RgbImage, x0: f32, y0: f32, x1: f32, y1: f32, t: i64, c: Rgb<u8>) {
    let (x0, y0, x1, y1) = (x0.round() as i64, y0.round() as i64, x1.round() as i64, y1.round() as i64);
    for k in 0..t {
        for x in x0..=x1 {
            put(img, x, y0 + k, c);
            put(img, x, y1 - k, c);
        }
        for y in y0..=y1 {
            put(img, x0 + k, y, c);
            put(img, x1 - k, y, c);
        }
    }
}

/// Draws the detections on a copy of `frame` and writes `path` (PNG).
pub fn save_snapshot(frame: &FullFrame, dets: &[Detection], path: &Path) -> Result<()> {
    annotate(frame, dets)?.save(path).with_context(|| format!("writing {}", path.display()))
}

/// A copy of `frame` with the detections' boxes (green) and keypoints (red) drawn on it.
pub fn annotate(frame: &FullFrame, dets: &[Detection]) -> Result<RgbImage> {
    let mut img = RgbImage::from_raw(frame.width, frame.height, frame.data.clone())
        .ok_or_else(|| anyhow!("frame {}x{} has {} bytes", frame.width, frame.height, frame.data.len()))?;
    let t = (frame.width.max(frame.height) / 320).max(2) as i64;
    for d in dets {
        rect(&mut img, d.xmin, d.ymin, d.xmax, d.ymax, t, Rgb([0, 255, 0]));
        for k in &d.keypoints {
            rect(&mut img, k.x - t as f32, k.y - t as f32, k.x + t as f32, k.y + t as f32, t, Rgb([255, 0, 0]));
        }
    }
    Ok(img)
}

#[cfg(test)]
mod tests {
    use super::*;
    use edgert_media::Keypoint;

    #[test]
    fn draws_box_edges_only() {
        let mut img = RgbImage::new(20, 10);
        rect(&mut img, 2.0, 2.0, 8.0, 6.0, 1, Rgb([0, 255, 0]));
        assert_eq!(img.get_pixel(2, 2), &Rgb([0, 255, 0]));
        assert_eq!(img.get_pixel(8, 6), &Rgb([0, 255, 0]));
        assert_eq!(img.get_pixel(5, 2), &Rgb([0, 255, 0]));
        assert_eq!(img.get_pixel(5, 4), &Rgb([0, 0, 0])); // inside stays
        // Off-image boxes are clipped, not a panic.
        rect(&mut img, -50.0, -50.0, 100.0, 100.0, 3, Rgb([1, 1, 1]));
        let f = FullFrame { width: 4, height: 4, data: vec![0; 48] };
        let d = Detection {
            xmin: 0.0,
            ymin: 0.0,
            xmax: 3.0,
            ymax: 3.0,
            score: 1.0,
            keypoints: vec![Keypoint { x: 1.0, y: 1.0 }],
        };
        let p = std::env::temp_dir().join(format!("facedetect-draw-{}.png", std::process::id()));
        save_snapshot(&f, &[d], &p).unwrap();
        assert!(std::fs::metadata(&p).unwrap().len() > 0);
        let _ = std::fs::remove_file(p);
        let bad = FullFrame { width: 4, height: 4, data: vec![0; 5] };
        assert!(save_snapshot(&bad, &[], Path::new("/nonexistent/x.png")).is_err());
    }
}
