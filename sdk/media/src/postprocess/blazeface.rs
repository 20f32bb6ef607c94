//! Decoding of SSD regressors and scores against anchors, as MediaPipe's
//! `TensorsToDetectionsCalculator` does it for BlazeFace (`reverse_output_order`: x, y, w, h;
//! sigmoid scores clipped at ±`score_clipping_thresh`).

use super::anchors::{Anchor, AnchorOptions, generate_anchors};
use super::{Detection, Keypoint};
use crate::error::{Error, Result};

/// Decoding options (the subset of `TensorsToDetectionsCalculatorOptions` BlazeFace uses).
#[derive(Debug, Clone, PartialEq)]
pub struct DecodeOptions {
    /// Values per anchor in the regressor tensor (16 for BlazeFace).
    pub num_coords: usize,
    /// Keypoints per detection (6 for BlazeFace).
    pub num_keypoints: usize,
    /// Divisors of the raw regressor values (the model input size).
    pub x_scale: f32,
    /// See `x_scale`.
    pub y_scale: f32,
    /// See `x_scale`.
    pub w_scale: f32,
    /// See `x_scale`.
    pub h_scale: f32,
    /// Raw scores are clipped to ±this before the sigmoid.
    pub score_clipping_thresh: f32,
    /// Detections below this score are dropped.
    pub min_score_thresh: f32,
}

/// A face model's full description: input size, anchors, decoding and NMS settings.
#[derive(Debug, Clone)]
pub struct FaceModelSpec {
    /// Short name (`short` or `full`).
    pub name: &'static str,
    /// Input width and height in pixels.
    pub input_size: (usize, usize),
    /// Anchors in output order.
    pub anchors: Vec<Anchor>,
    /// Decoding options.
    pub decode: DecodeOptions,
    /// IoU above which weighted NMS merges detections.
    pub nms_iou: f32,
}

impl FaceModelSpec {
    /// BlazeFace short range (`face_detection_short_range.pbtxt`).
    pub fn blazeface_short() -> FaceModelSpec {
        FaceModelSpec {
            name: "short",
            input_size: (128, 128),
            anchors: generate_anchors(&AnchorOptions::blazeface_short()),
            decode: DecodeOptions::blazeface(128.0, 0.5),
            nms_iou: 0.3,
        }
    }

    /// BlazeFace full range (`face_detection_full_range.pbtxt`).
    pub fn blazeface_full() -> FaceModelSpec {
        FaceModelSpec {
            name: "full",
            input_size: (192, 192),
            anchors: generate_anchors(&AnchorOptions::blazeface_full()),
            decode: DecodeOptions::blazeface(192.0, 0.6),
            nms_iou: 0.3,
        }
    }

    /// The spec whose anchor count matches a model's output (896: short, 2304: full).
    pub fn for_num_anchors(n: usize) -> Option<FaceModelSpec> {
        match n {
            896 => Some(FaceModelSpec::blazeface_short()),
            2304 => Some(FaceModelSpec::blazeface_full()),
            _ => None,
        }
    }
}

impl DecodeOptions {
    /// BlazeFace settings for an input of `size` pixels.
    pub fn blazeface(size: f32, min_score_thresh: f32) -> DecodeOptions {
        DecodeOptions {
            num_coords: 16,
            num_keypoints: 6,
            x_scale: size,
            y_scale: size,
            w_scale: size,
            h_scale: size,
            score_clipping_thresh: 100.0,
            min_score_thresh,
        }
    }
}

fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

/// Decodes one image's outputs: `regressors` is `[anchors * num_coords]`, `scores` is
/// `[anchors]` (raw logits). Appends detections above the score threshold to `out`, boxes and
/// keypoints in normalized model-input coordinates.
pub fn decode(
    regressors: &[f32],
    scores: &[f32],
    anchors: &[Anchor],
    o: &DecodeOptions,
    out: &mut Vec<Detection>,
) -> Result<()> {
    let n = anchors.len();
    if o.num_coords < 4 + 2 * o.num_keypoints {
        return Err(Error::Postprocess(format!(
            "num_coords {} cannot hold a box and {} keypoints",
            o.num_coords, o.num_keypoints
        )));
    }
    if regressors.len() != n * o.num_coords || scores.len() != n {
        return Err(Error::Postprocess(format!(
            "expected {} regressor values and {} scores for {} anchors, got {} and {}",
            n * o.num_coords,
            n,
            n,
            regressors.len(),
            scores.len()
        )));
    }
    let t = o.score_clipping_thresh;
    for (i, a) in anchors.iter().enumerate() {
        let score = sigmoid(scores[i].clamp(-t, t));
        if score < o.min_score_thresh || score.is_nan() {
            continue;
        }
        let r = &regressors[i * o.num_coords..(i + 1) * o.num_coords];
        let xc = r[0] / o.x_scale * a.w + a.x_center;
        let yc = r[1] / o.y_scale * a.h + a.y_center;
        let w = r[2] / o.w_scale * a.w;
        let h = r[3] / o.h_scale * a.h;
        let keypoints = (0..o.num_keypoints)
            .map(|k| Keypoint {
                x: r[4 + 2 * k] / o.x_scale * a.w + a.x_center,
                y: r[4 + 2 * k + 1] / o.y_scale * a.h + a.y_center,
            })
            .collect();
        out.push(Detection {
            xmin: xc - w / 2.0,
            ymin: yc - h / 2.0,
            xmax: xc + w / 2.0,
            ymax: yc + h / 2.0,
            score,
            keypoints,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> DecodeOptions {
        DecodeOptions::blazeface(128.0, 0.5)
    }

    #[test]
    fn decodes_against_anchor() {
        let anchors = [
            Anchor { x_center: 0.25, y_center: 0.5, w: 1.0, h: 1.0 },
            Anchor { x_center: 0.75, y_center: 0.75, w: 1.0, h: 1.0 },
        ];
        let mut reg = vec![0.0f32; 32];
        // Anchor 0: centre moved by (+12.8, -6.4) px of 128 -> (+0.1, -0.05); size 32x64 px.
        reg[..4].copy_from_slice(&[12.8, -6.4, 32.0, 64.0]);
        // Keypoint 0 at (+64, 0) px -> x 0.25 + 0.5.
        reg[4] = 64.0;
        let scores = [0.0f32, -1.0]; // sigmoid(0) = 0.5 (kept, ≥ 0.5), sigmoid(-1) = 0.269 (dropped)
        let mut out = Vec::new();
        decode(&reg, &scores, &anchors, &opts(), &mut out).unwrap();
        assert_eq!(out.len(), 1);
        let d = &out[0];
        let close = |a: f32, b: f32| (a - b).abs() < 1e-6;
        // centre (0.35, 0.45), w 0.25, h 0.5
        assert!(close(d.xmin, 0.225) && close(d.xmax, 0.475), "{d:?}");
        assert!(close(d.ymin, 0.2) && close(d.ymax, 0.7), "{d:?}");
        assert!(close(d.score, 0.5));
        assert_eq!(d.keypoints.len(), 6);
        assert!(close(d.keypoints[0].x, 0.75) && close(d.keypoints[0].y, 0.5));
        assert!(close(d.keypoints[1].x, 0.25));
    }

    #[test]
    fn clips_scores_and_rejects_bad_shapes() {
        let anchors = [Anchor { x_center: 0.5, y_center: 0.5, w: 1.0, h: 1.0 }];
        let reg = vec![0.0f32; 16];
        let mut out = Vec::new();
        // 1e4 is clipped to 100: sigmoid is 1.
        decode(&reg, &[1e4], &anchors, &opts(), &mut out).unwrap();
        assert_eq!(out[0].score, 1.0);
        // NaN scores are dropped, not propagated.
        out.clear();
        decode(&reg, &[f32::NAN], &anchors, &opts(), &mut out).unwrap();
        assert!(out.is_empty());
        assert!(decode(&reg[..15], &[0.0], &anchors, &opts(), &mut out).is_err());
        assert!(decode(&reg, &[0.0, 0.0], &anchors, &opts(), &mut out).is_err());
    }

    #[test]
    fn spec_by_anchor_count() {
        assert_eq!(FaceModelSpec::for_num_anchors(896).unwrap().input_size, (128, 128));
        assert_eq!(FaceModelSpec::for_num_anchors(2304).unwrap().input_size, (192, 192));
        assert!(FaceModelSpec::for_num_anchors(7).is_none());
    }
}
