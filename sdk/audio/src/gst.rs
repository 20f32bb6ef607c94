//! GStreamer audio sources: compressed files, microphones and RTSP audio, converted to 16 kHz
//! mono f32 by `audioconvert ! audioresample` and pulled from an `appsink`.
//!
//! Pipelines (elements present since GStreamer 1.16):
//! * `file://PATH` (FLAC, MP3, Ogg, anything decodebin decodes), `rtsp://…`:
//!   `uridecodebin` (only its audio stream is linked);
//! * `alsa://DEVICE` (`alsa://` = `default`, `alsa://hw:1,0`): `alsasrc device=DEVICE`;
//! * `pulse://` or `pulse://DEVICE`: `pulsesrc [device=DEVICE]`.

use std::path::Path;
use std::time::{Duration, Instant};

use gstreamer as gst;
use gstreamer::prelude::*;
use gstreamer_app as gst_app;

use crate::{AudioSource, Error, Result, SAMPLE_RATE};

/// How long opening waits for a source to start (or fail) before giving up.
const START_TIMEOUT: Duration = Duration::from_secs(10);

/// A running GStreamer pipeline ending in an appsink of 16 kHz mono F32LE.
pub struct GstSource {
    uri: String,
    pipeline: gst::Pipeline,
    sink: gst_app::AppSink,
    /// Samples pulled but not yet read, from `pos`.
    buf: Vec<f32>,
    pos: usize,
    done: bool,
}

fn err(uri: &str, message: impl Into<String>) -> Error {
    Error::Gst { uri: uri.to_string(), message: message.into() }
}

/// The element that must exist for `scheme`, and the Debian package that has it.
fn needs(scheme: &str) -> (&'static str, &'static str) {
    match scheme {
        "alsa" => ("alsasrc", "gstreamer1.0-alsa"),
        "pulse" => ("pulsesrc", "gstreamer1.0-pulseaudio"),
        "rtsp" | "rtsps" => ("rtspsrc", "gstreamer1.0-plugins-good"),
        _ => ("uridecodebin", "gstreamer1.0-plugins-base"),
    }
}

/// The pipeline's source part for `uri`.
fn source_description(uri: &str) -> Result<String> {
    let (scheme, rest) = uri.split_once("://").ok_or_else(|| err(uri, "not a URI (scheme://…)"))?;
    let quoted = |s: &str| format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""));
    Ok(match scheme {
        "alsa" => format!("alsasrc device={}", quoted(if rest.is_empty() { "default" } else { rest })),
        "pulse" => {
            if rest.is_empty() {
                "pulsesrc".to_string()
            } else {
                format!("pulsesrc device={}", quoted(rest))
            }
        }
        "rtsp" | "rtsps" => format!("uridecodebin uri={}", quoted(uri)),
        "file" => {
            let abs = std::path::absolute(Path::new(rest)).map_err(|e| err(uri, e.to_string()))?;
            if !abs.exists() {
                return Err(Error::Io {
                    path: abs.display().to_string(),
                    source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"),
                });
            }
            let file_uri = gst::glib::filename_to_uri(&abs, None).map_err(|e| err(uri, e.to_string()))?;
            format!("uridecodebin uri={}", quoted(&file_uri))
        }
        other => {
            return Err(Error::Unsupported {
                uri: uri.to_string(),
                hint: format!("`{other}://` is not an audio source; use file://, alsa://, pulse:// or rtsp://"),
            });
        }
    })
}

/// The first error message on the bus, if any.
fn bus_error(bus: &gst::Bus) -> Option<String> {
    while let Some(msg) = bus.pop_filtered(&[gst::MessageType::Error]) {
        if let gst::MessageView::Error(e) = msg.view() {
            let src = e.src().map(|s| s.name().to_string()).unwrap_or_default();
            let debug = e.debug().map(|d| format!(" ({d})")).unwrap_or_default();
            return Some(format!("{src}: {}{debug}", e.error()));
        }
    }
    None
}

fn hint(scheme: &str) -> &'static str {
    match scheme {
        "alsa" => "list capture devices with `arecord -L` and pass one as alsa://DEVICE",
        "pulse" => "is a PulseAudio/PipeWire server running for this user? `pactl list sources short` lists devices",
        "rtsp" | "rtsps" => "check the address and that the stream has an audio track (`gst-discoverer-1.0 URI`)",
        _ => {
            "check the file (`gst-discoverer-1.0 file:///…`); install gstreamer1.0-plugins-{good,ugly} or gstreamer1.0-libav for more formats"
        }
    }
}

impl GstSource {
    /// Builds the pipeline for `uri` and starts it; fails (naming the device or file and
    /// what to check) when the source can't start.
    pub fn open(uri: &str) -> Result<GstSource> {
        gst::init().map_err(|e| err(uri, format!("GStreamer init failed: {e}")))?;
        let scheme = uri.split_once("://").map_or("file", |(s, _)| s);
        let (element, package) = needs(scheme);
        if gst::ElementFactory::find(element).is_none() {
            return Err(err(uri, format!("GStreamer element `{element}` is missing: install {package}")));
        }
        let desc = format!(
            "{} ! queue ! audioconvert ! audioresample ! \
             audio/x-raw,format=F32LE,rate={SAMPLE_RATE},channels=1,layout=interleaved ! \
             appsink name=sink sync=false max-buffers=64",
            source_description(uri)?
        );
        let pipeline = gst::parse::launch(&desc)
            .map_err(|e| err(uri, format!("building `{desc}`: {e}")))?
            .downcast::<gst::Pipeline>()
            .map_err(|_| err(uri, "the pipeline description did not make a pipeline"))?;
        let sink = pipeline
            .by_name("sink")
            .and_then(|s| s.downcast::<gst_app::AppSink>().ok())
            .ok_or_else(|| err(uri, "no appsink in the pipeline"))?;
        let bus = pipeline.bus().ok_or_else(|| err(uri, "the pipeline has no bus"))?;
        let src = GstSource { uri: uri.to_string(), pipeline, sink, buf: Vec::new(), pos: 0, done: false };
        if src.pipeline.set_state(gst::State::Playing).is_err() {
            let why = bus_error(&bus).unwrap_or_else(|| "the pipeline refused to start".into());
            return Err(err(uri, format!("{why}; {}", hint(scheme))));
        }
        // Wait until it plays (or fails): device and network errors come asynchronously.
        let t0 = Instant::now();
        loop {
            if let Some(why) = bus_error(&bus) {
                return Err(err(uri, format!("{why}; {}", hint(scheme))));
            }
            let (res, state, _) = src.pipeline.state(gst::ClockTime::from_mseconds(50));
            if res.is_ok() && state == gst::State::Playing {
                break;
            }
            if t0.elapsed() > START_TIMEOUT {
                return Err(err(uri, format!("did not start within {} s; {}", START_TIMEOUT.as_secs(), hint(scheme))));
            }
        }
        Ok(src)
    }

    /// Pulls the next buffer into `buf`; false at the end of the stream.
    fn pull(&mut self) -> Result<bool> {
        loop {
            if let Some(sample) = self.sink.try_pull_sample(gst::ClockTime::from_mseconds(100)) {
                let buffer = sample.buffer().ok_or_else(|| err(&self.uri, "a sample without a buffer"))?;
                let map = buffer.map_readable().map_err(|e| err(&self.uri, e.to_string()))?;
                self.buf.clear();
                self.buf.extend(map.as_slice().chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])));
                self.pos = 0;
                return Ok(true);
            }
            if self.sink.is_eos() {
                return Ok(false);
            }
            if let Some(bus) = self.pipeline.bus()
                && let Some(why) = bus_error(&bus)
            {
                return Err(err(&self.uri, why));
            }
        }
    }
}

impl AudioSource for GstSource {
    fn read(&mut self, out: &mut [f32]) -> Result<usize> {
        let mut n = 0;
        while n < out.len() && !self.done {
            if self.pos == self.buf.len() && !self.pull()? {
                self.done = true;
                break;
            }
            let k = (out.len() - n).min(self.buf.len() - self.pos);
            out[n..n + k].copy_from_slice(&self.buf[self.pos..self.pos + k]);
            self.pos += k;
            n += k;
        }
        Ok(n)
    }

    fn describe(&self) -> String {
        format!("{}: GStreamer → 16 kHz mono", self.uri)
    }
}

impl Drop for GstSource {
    fn drop(&mut self) {
        let _ = self.pipeline.set_state(gst::State::Null);
    }
}
