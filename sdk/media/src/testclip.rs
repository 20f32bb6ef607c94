//! Synthetic H.264 clips with a known number of frames (`videotestsrc` + `x264enc`), for
//! tests and benchmarks.

use std::path::Path;

use gst::prelude::*;
use gstreamer as gst;

use crate::error::{Error, Result};

/// What to encode.
#[derive(Debug, Clone, PartialEq)]
pub struct ClipSpec {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Frames per second.
    pub fps: u32,
    /// Number of frames.
    pub frames: u32,
    /// Target bitrate in kbit/s.
    pub kbps: u32,
    /// `videotestsrc` pattern name (`ball`, `smpte`, `snow`, ...).
    pub pattern: String,
    /// H.264 High profile (else Main).
    pub high_profile: bool,
}

impl ClipSpec {
    /// A small clip: `width x height` at 30 fps, `frames` frames, 500 kbit/s, moving ball.
    pub fn small(width: u32, height: u32, frames: u32) -> ClipSpec {
        ClipSpec { width, height, fps: 30, frames, kbps: 500, pattern: "ball".into(), high_profile: true }
    }
}

/// Encodes `spec` into `path`; the container follows the extension (`.mp4`, `.mkv`,
/// `.h264`). Blocks until the file is complete.
pub fn encode_clip(spec: &ClipSpec, path: &Path) -> Result<()> {
    crate::init()?;
    let loc = path.to_string_lossy().replace('"', "\\\"");
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    let mux = match ext {
        "mp4" => "h264parse ! mp4mux",
        "mkv" => "h264parse ! matroskamux",
        "h264" => "h264parse ! video/x-h264,stream-format=byte-stream",
        other => {
            return Err(Error::Uri { uri: loc, message: format!("unknown clip extension `{other}` (mp4, mkv, h264)") });
        }
    };
    let profile = if spec.high_profile { "high" } else { "main" };
    let desc = format!(
        "videotestsrc pattern={} num-buffers={} ! video/x-raw,format=I420,width={},height={},framerate={}/1 \
         ! x264enc bitrate={} speed-preset=veryfast key-int-max={} ! video/x-h264,profile={profile} \
         ! {mux} ! filesink location=\"{loc}\"",
        spec.pattern,
        spec.frames,
        spec.width,
        spec.height,
        spec.fps,
        spec.kbps,
        spec.fps * 2,
    );
    let err = |m: String| Error::Pipeline { uri: loc.clone(), message: m };
    let p = gst::parse::launch(&desc).map_err(|e| err(format!("{e} ({desc})")))?;
    p.set_state(gst::State::Playing).map_err(|e| err(e.to_string()))?;
    let bus = p.bus().ok_or_else(|| err("no bus".into()))?;
    let result = crate::bus::wait_for_eos(&bus, gst::ClockTime::NONE).map_err(err);
    let _ = p.set_state(gst::State::Null);
    result
}
