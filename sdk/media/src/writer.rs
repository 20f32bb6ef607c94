//! Annotated video output: packed RGB frames encoded to an H.264 file (`.mp4` or `.mkv`)
//! through `appsrc ! videoconvert ! <encoder> ! h264parse ! <muxer> ! filesink`.
//!
//! The encoder is the first registered of `x264enc` (software, gstreamer1.0-plugins-ugly)
//! and `openh264enc`; the one chosen is reported by [`VideoWriter::encoder`]. Frames are
//! stamped with the time stamps the caller gives, so dropped frames leave gaps in time rather
//! than speeding the video up.

use std::path::{Path, PathBuf};
use std::time::Duration;

use gst::prelude::*;
use gstreamer as gst;
use gstreamer_app as gst_app;

use crate::bus::{bus_error, wait_for_eos};
use crate::decoder::unavailable_reason;
use crate::error::{Error, Result};

/// H.264 encoders in preference order: (element, plugin, description).
const ENCODERS: &[(&str, &str, &str)] = &[
    ("x264enc", "x264", "x264enc speed-preset=veryfast tune=zerolatency"),
    ("openh264enc", "openh264", "openh264enc"),
];

/// An open video file being written.
pub struct VideoWriter {
    path: PathBuf,
    pipeline: gst::Element,
    src: gst_app::AppSrc,
    width: u32,
    height: u32,
    encoder: String,
    last_pts: Option<Duration>,
    frames: u64,
}

impl VideoWriter {
    /// Opens `path` for `width x height` RGB frames at nominal `fps` (the container's frame
    /// rate; each frame's own time stamp decides when it shows). The container follows the
    /// extension: `.mp4` or `.mkv`.
    pub fn create(path: &Path, width: u32, height: u32, fps: u32) -> Result<VideoWriter> {
        crate::init()?;
        let loc = path.to_string_lossy().to_string();
        let err = |m: String| Error::Pipeline { uri: loc.clone(), message: m };
        let muxer = match path.extension().and_then(|e| e.to_str()) {
            Some("mp4") => "mp4mux",
            Some("mkv") => "matroskamux",
            other => {
                return Err(Error::Uri {
                    uri: loc.clone(),
                    message: format!("video output needs a .mp4 or .mkv file, not `{}`", other.unwrap_or("")),
                });
            }
        };
        if width == 0 || height == 0 || width % 2 == 1 || height % 2 == 1 {
            return Err(err(format!("{width}x{height}: H.264 output needs even, non-zero sizes")));
        }
        let mut skipped = Vec::new();
        let mut chosen = None;
        for (element, plugin, desc) in ENCODERS {
            match unavailable_reason(element, plugin) {
                None => {
                    chosen = Some((*element, *desc));
                    break;
                }
                Some(why) => skipped.push(why),
            }
        }
        let (encoder, enc_desc) = chosen.ok_or_else(|| {
            err(format!("no H.264 encoder: {} (install gstreamer1.0-plugins-ugly)", skipped.join("; ")))
        })?;
        for why in &skipped {
            log::warn!("video output {loc}: skipped {why}");
        }
        let quoted = loc.replace('\\', "\\\\").replace('"', "\\\"");
        let desc = format!(
            "appsrc name=src format=time caps=video/x-raw,format=RGB,width={width},height={height},framerate={fps}/1 \
             ! videoconvert ! video/x-raw,format=I420 ! {enc_desc} ! h264parse ! {muxer} \
             ! filesink location=\"{quoted}\""
        );
        let pipeline = gst::parse::launch(&desc).map_err(|e| err(format!("{e} ({desc})")))?;
        let bin = pipeline.clone().downcast::<gst::Bin>().map_err(|_| err("not a bin".into()))?;
        let src = bin
            .by_name("src")
            .and_then(|e| e.downcast::<gst_app::AppSrc>().ok())
            .ok_or_else(|| err("no appsrc".into()))?;
        // Blocks the caller rather than queueing frames without bound.
        src.set_property("block", true);
        src.set_max_bytes(4 * width as u64 * height as u64 * 3);
        pipeline.set_state(gst::State::Playing).map_err(|e| err(format!("cannot start: {e}")))?;
        Ok(VideoWriter {
            path: path.to_path_buf(),
            pipeline,
            src,
            width,
            height,
            encoder: encoder.to_string(),
            last_pts: None,
            frames: 0,
        })
    }

    /// The encoder element in use.
    pub fn encoder(&self) -> &str {
        &self.encoder
    }

    /// The time stamp of the last frame written; the next must be later.
    pub fn last_pts(&self) -> Option<Duration> {
        self.last_pts
    }

    /// Frames written so far.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    fn err(&self, m: String) -> Error {
        Error::Pipeline { uri: self.path.to_string_lossy().to_string(), message: m }
    }

    /// Fails with the pipeline's error message if one is waiting on the bus.
    fn check_bus(&self) -> Result<()> {
        match self.pipeline.bus().as_ref().and_then(bus_error) {
            Some(m) => Err(self.err(m)),
            None => Ok(()),
        }
    }

    /// Appends one packed RGB frame (`width*height*3` bytes) shown at `pts`. Time stamps
    /// must increase; a frame of another size or an earlier time is an error (nothing is
    /// written).
    pub fn write(&mut self, rgb: &[u8], width: u32, height: u32, pts: Duration) -> Result<()> {
        if (width, height) != (self.width, self.height) || rgb.len() != (width * height * 3) as usize {
            return Err(self.err(format!(
                "frame {width}x{height} ({} bytes) does not fit the {}x{} output",
                rgb.len(),
                self.width,
                self.height
            )));
        }
        if let Some(last) = self.last_pts
            && pts <= last
        {
            return Err(self.err(format!("frame at {pts:?} is not after the previous one ({last:?})")));
        }
        self.check_bus()?;
        let mut buf = gst::Buffer::from_slice(rgb.to_vec());
        buf.make_mut().set_pts(gst::ClockTime::from_nseconds(pts.as_nanos() as u64));
        self.src.push_buffer(buf).map_err(|e| self.err(format!("encoder refused a frame: {e:?}")))?;
        self.last_pts = Some(pts);
        self.frames += 1;
        Ok(())
    }

    /// Ends the stream and waits until the file is complete.
    pub fn finish(self) -> Result<u64> {
        let _ = self.src.end_of_stream();
        let bus = self.pipeline.bus().ok_or_else(|| self.err("no bus".into()))?;
        let result =
            wait_for_eos(&bus, Some(gst::ClockTime::from_seconds(60))).map(|()| self.frames).map_err(|m| self.err(m));
        let _ = self.pipeline.set_state(gst::State::Null);
        result
    }
}

impl Drop for VideoWriter {
    fn drop(&mut self) {
        let _ = self.pipeline.set_state(gst::State::Null);
    }
}
