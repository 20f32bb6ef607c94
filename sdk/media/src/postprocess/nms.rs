//! Weighted non-maximum suppression as MediaPipe's `NonMaxSuppressionCalculator` does it
//! (`algorithm: WEIGHTED`, `overlap_type: INTERSECTION_OVER_UNION`): the best detection
//! absorbs every detection that overlaps it by more than the threshold (itself included); the
//! merged box and keypoints are the score-weighted mean, the score stays the best one's.

use super::{Detection, Keypoint};

/// Intersection over union of two boxes; 0 when they do not overlap or are empty.
pub fn iou(a: &Detection, b: &Detection) -> f32 {
    let ix = (a.xmax.min(b.xmax) - a.xmin.max(b.xmin)).max(0.0);
    let iy = (a.ymax.min(b.ymax) - a.ymin.max(b.ymin)).max(0.0);
    let inter = ix * iy;
    if inter <= 0.0 {
        return 0.0;
    }
    let area = |d: &Detection| (d.xmax - d.xmin).max(0.0) * (d.ymax - d.ymin).max(0.0);
    let union = area(a) + area(b) - inter;
    if union <= 0.0 { 0.0 } else { inter / union }
}

/// Weighted NMS over `dets`; returns at most `max_detections` merged detections, best first.
pub fn weighted_nms(mut dets: Vec<Detection>, iou_threshold: f32, max_detections: usize) -> Vec<Detection> {
    // Stable sort: equal scores keep their anchor order, as MediaPipe's std::sort on pairs
    // (score, index) effectively does for the outputs that matter.
    dets.sort_by(|a, b| b.score.total_cmp(&a.score));
    let mut remaining: Vec<usize> = (0..dets.len()).collect();
    let mut out = Vec::new();
    while let Some(&top) = remaining.first() {
        if out.len() >= max_detections {
            break;
        }
        let best = &dets[top];
        let (candidates, rest): (Vec<usize>, Vec<usize>) =
            remaining.iter().partition(|&&i| iou(&dets[i], best) > iou_threshold);
        let mut merged = best.clone();
        if !candidates.is_empty() {
            let total: f32 = candidates.iter().map(|&i| dets[i].score).sum();
            if total > 0.0 {
                let (mut x0, mut y0, mut x1, mut y1) = (0.0, 0.0, 0.0, 0.0);
                let mut kps = vec![Keypoint { x: 0.0, y: 0.0 }; best.keypoints.len()];
                for &i in &candidates {
                    let d = &dets[i];
                    x0 += d.xmin * d.score;
                    y0 += d.ymin * d.score;
                    x1 += d.xmax * d.score;
                    y1 += d.ymax * d.score;
                    for (k, p) in kps.iter_mut().zip(&d.keypoints) {
                        k.x += p.x * d.score;
                        k.y += p.y * d.score;
                    }
                }
                merged.xmin = x0 / total;
                merged.ymin = y0 / total;
                merged.xmax = x1 / total;
                merged.ymax = y1 / total;
                for k in &mut kps {
                    k.x /= total;
                    k.y /= total;
                }
                merged.keypoints = kps;
            }
        }
        out.push(merged);
        // A degenerate top box (IoU with itself 0) is not among its own candidates: drop it
        // explicitly so the loop always advances.
        remaining = rest.into_iter().filter(|&i| i != top).collect();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn det(x0: f32, y0: f32, x1: f32, y1: f32, score: f32) -> Detection {
        Detection { xmin: x0, ymin: y0, xmax: x1, ymax: y1, score, keypoints: vec![Keypoint { x: x0, y: y0 }] }
    }

    #[test]
    fn iou_hand_computed() {
        let a = det(0.0, 0.0, 2.0, 2.0, 1.0);
        let b = det(1.0, 1.0, 3.0, 3.0, 1.0);
        // intersection 1, union 4 + 4 - 1 = 7
        assert!((iou(&a, &b) - 1.0 / 7.0).abs() < 1e-6);
        assert_eq!(iou(&a, &det(5.0, 5.0, 6.0, 6.0, 1.0)), 0.0);
        assert_eq!(iou(&a, &a), 1.0);
        assert_eq!(iou(&det(0.0, 0.0, 0.0, 0.0, 1.0), &det(0.0, 0.0, 0.0, 0.0, 1.0)), 0.0);
    }

    #[test]
    fn weighted_merge_hand_computed() {
        // A = [0,0,1,1] (0.9), B = [0.2,0,1.2,1] (0.6): inter 0.8, union 1.2, IoU 0.667 > 0.3,
        // so B merges into A. C is far away: its own output.
        let a = det(0.0, 0.0, 1.0, 1.0, 0.9);
        let b = det(0.2, 0.0, 1.2, 1.0, 0.6);
        let c = det(5.0, 5.0, 6.0, 6.0, 0.7);
        let out = weighted_nms(vec![b, c.clone(), a], 0.3, 10);
        assert_eq!(out.len(), 2);
        let m = &out[0];
        // xmin = (0*0.9 + 0.2*0.6) / 1.5 = 0.08; xmax = (0.9 + 1.2*0.6)/1.5 = 1.08
        assert!((m.xmin - 0.08).abs() < 1e-6, "{m:?}");
        assert!((m.xmax - 1.08).abs() < 1e-6, "{m:?}");
        assert!((m.ymin - 0.0).abs() < 1e-6 && (m.ymax - 1.0).abs() < 1e-6);
        assert!((m.keypoints[0].x - 0.08).abs() < 1e-6);
        assert_eq!(m.score, 0.9); // the best one's score
        assert_eq!(out[1], c);
    }

    #[test]
    fn threshold_and_limit() {
        let a = det(0.0, 0.0, 2.0, 2.0, 0.9);
        let b = det(1.0, 1.0, 3.0, 3.0, 0.8); // IoU 1/7 = 0.14
        assert_eq!(weighted_nms(vec![a.clone(), b.clone()], 0.3, 10).len(), 2);
        assert_eq!(weighted_nms(vec![a.clone(), b.clone()], 0.1, 10).len(), 1);
        assert_eq!(weighted_nms(vec![a, b], 0.3, 1).len(), 1);
        assert!(weighted_nms(vec![], 0.3, 10).is_empty());
        // Degenerate boxes terminate.
        let z = det(0.0, 0.0, 0.0, 0.0, 0.9);
        assert_eq!(weighted_nms(vec![z.clone(), z], 0.3, 10).len(), 2);
    }
}
