//! Post-processing of detection models: SSD anchors, box decoding, weighted NMS, and the
//! mapping from model-input coordinates back to source pixels.

pub mod anchors;
pub mod blazeface;
pub mod nms;

/// A keypoint in the same coordinates as its detection's box.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Keypoint {
    /// x.
    pub x: f32,
    /// y.
    pub y: f32,
}

/// A detection: a box, a score in [0, 1] and keypoints. Coordinates are normalized to the
/// model input until mapped to source pixels ([`crate::Letterbox::to_source`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Detection {
    /// Left.
    pub xmin: f32,
    /// Top.
    pub ymin: f32,
    /// Right.
    pub xmax: f32,
    /// Bottom.
    pub ymax: f32,
    /// Confidence.
    pub score: f32,
    /// Keypoints (BlazeFace: right eye, left eye, nose, mouth, right ear, left ear).
    pub keypoints: Vec<Keypoint>,
}
