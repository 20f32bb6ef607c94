//! edgert-audio: audio sources for the voice pipeline.
//!
//! Sources are opened by URI ([`open`]) and deliver 16 kHz mono f32 samples in [-1, 1]
//! ([`AudioSource`]), whatever the file's rate and channel count ([`resample`]). A
//! single-producer single-consumer lock-free [`ring::Ring`] carries samples from a capture
//! thread to the inference thread.
//!
//! WAV files (`file://PATH.wav` or a plain path; PCM 8/16/24/32-bit, IEEE float 32/64; any
//! rate and channel count) are read natively. With the `gstreamer` feature (default), every
//! other file (FLAC, MP3, …), `alsa://DEVICE`, `pulse://[DEVICE]` and `rtsp://` audio go
//! through GStreamer ([`gst::GstSource`]); without it they are an error that says so.

#[cfg(feature = "gstreamer")]
pub mod gst;
pub mod resample;
pub mod ring;
pub mod wav;

use std::path::Path;

/// The sample rate every source delivers.
pub const SAMPLE_RATE: u32 = 16_000;

/// Errors of this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not a WAV file this crate can decode.
    #[error("{path}: {message}")]
    Format {
        /// The file.
        path: String,
        /// What is wrong, and what would work.
        message: String,
    },
    /// A GStreamer source failed to start or broke while running.
    #[error("audio source `{uri}`: {message}")]
    Gst {
        /// The URI.
        uri: String,
        /// What failed, and what to check.
        message: String,
    },
    /// The URI names a source kind this build does not have.
    #[error("unsupported audio source `{uri}`: {hint}")]
    Unsupported {
        /// The URI.
        uri: String,
        /// What is supported instead.
        hint: String,
    },
}

/// Result with this crate's error.
pub type Result<T> = std::result::Result<T, Error>;

/// A source of 16 kHz mono f32 samples.
pub trait AudioSource: Send {
    /// Fills `out` with up to `out.len()` samples; returns how many, 0 at the end of a file.
    fn read(&mut self, out: &mut [f32]) -> Result<usize>;
    /// A human-readable description (`file.wav: 44100 Hz, 2 channels → 16 kHz mono`).
    fn describe(&self) -> String;
}

/// A fully decoded clip served in order (files are decoded and resampled when opened).
#[derive(Debug, Clone)]
pub struct Clip {
    samples: Vec<f32>,
    pos: usize,
    description: String,
}

impl Clip {
    /// Wraps 16 kHz mono samples.
    pub fn new(samples: Vec<f32>, description: String) -> Clip {
        Clip { samples, pos: 0, description }
    }
    /// All samples.
    pub fn samples(&self) -> &[f32] {
        &self.samples
    }
}

impl AudioSource for Clip {
    fn read(&mut self, out: &mut [f32]) -> Result<usize> {
        let n = out.len().min(self.samples.len() - self.pos);
        out[..n].copy_from_slice(&self.samples[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
    fn describe(&self) -> String {
        self.description.clone()
    }
}

/// Opens a source by URI: `file://PATH`, a plain path, `alsa://DEVICE`, `pulse://[DEVICE]` or
/// `rtsp://…`. WAV files are read natively; the rest needs the `gstreamer` feature.
pub fn open(uri: &str) -> Result<Box<dyn AudioSource>> {
    let (scheme, path) = match uri.split_once("://") {
        Some((s, p)) => (s, p),
        None => ("file", uri),
    };
    if scheme == "file" && is_wav(Path::new(path)) {
        return Ok(Box::new(load_wav_16k(Path::new(path))?));
    }
    open_gst(&format!("{scheme}://{path}"))
}

fn is_wav(path: &Path) -> bool {
    path.extension().and_then(|e| e.to_str()).is_some_and(|e| e.eq_ignore_ascii_case("wav"))
}

#[cfg(feature = "gstreamer")]
fn open_gst(uri: &str) -> Result<Box<dyn AudioSource>> {
    Ok(Box::new(gst::GstSource::open(uri)?))
}

#[cfg(not(feature = "gstreamer"))]
fn open_gst(uri: &str) -> Result<Box<dyn AudioSource>> {
    Err(Error::Unsupported {
        uri: uri.to_string(),
        hint: "this build of edgert-audio reads only WAV files: build it with the `gstreamer` feature \
               for other formats, microphones and RTSP"
            .into(),
    })
}

/// Reads a WAV file and converts it to 16 kHz mono.
pub fn load_wav_16k(path: &Path) -> Result<Clip> {
    let p = path.display().to_string();
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
    if matches!(ext.as_str(), "flac" | "mp3" | "ogg" | "opus") {
        return Err(Error::Unsupported {
            uri: p,
            hint: format!("{ext} is decoded by GStreamer: open it with edgert_audio::open(\"file://…\")"),
        });
    }
    let bytes = std::fs::read(path).map_err(|e| Error::Io { path: p.clone(), source: e })?;
    let w = wav::decode(&bytes).map_err(|message| Error::Format { path: p.clone(), message })?;
    let mono = w.mono();
    let samples = resample::resample(&mono, w.rate, SAMPLE_RATE);
    let description = format!("{p}: {} Hz, {} channel(s), {:?} → 16 kHz mono", w.rate, w.channels, w.format);
    Ok(Clip::new(samples, description))
}

/// Writes 16-bit PCM mono WAV (for tests and tools).
pub fn write_wav_16bit(path: &Path, samples: &[f32], rate: u32) -> Result<()> {
    let bytes = wav::encode_pcm16(samples, rate);
    std::fs::write(path, bytes).map_err(|e| Error::Io { path: path.display().to_string(), source: e })
}
