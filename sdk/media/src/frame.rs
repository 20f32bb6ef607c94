//! Decoded frames as the pipeline hands them over.

use std::time::{Duration, Instant};

use crate::letterbox::Letterbox;

/// A full-resolution RGB picture (packed, `width*3` bytes per row), for drawing and crops.
#[derive(Debug, Clone)]
pub struct FullFrame {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Packed RGB bytes.
    pub data: Vec<u8>,
}

/// One decoded frame of one stream, scaled (letterboxed) to the model input size.
#[derive(Debug, Clone)]
pub struct Frame {
    /// Stream index (order of the URIs).
    pub stream: usize,
    /// Frame number within the stream, from 0, counting every decoded frame.
    pub index: u64,
    /// Presentation time stamp, when the stream has one.
    pub pts: Option<Duration>,
    /// When the frame left the decoder branch (latency is measured from here).
    pub decoded_at: Instant,
    /// Width of `rgb` (the model input width).
    pub width: u32,
    /// Height of `rgb`.
    pub height: u32,
    /// Packed RGB bytes, `width*height*3`.
    pub rgb: Vec<u8>,
    /// Where the source picture lies inside `rgb`.
    pub letterbox: Letterbox,
    /// The frame at source resolution, when the source was asked to keep it.
    pub full: Option<FullFrame>,
}
