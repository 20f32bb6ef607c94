//! `--output file://out.mp4`: annotated frames of each stream encoded to a video file (one
//! file per stream: `out.mp4` for one stream, `out_stream0.mp4`, `out_stream1.mp4`, … for
//! several). Inference workers may finish batches out of order, so frames wait in a small
//! window sorted by frame number before they are encoded.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, Result};
use edgert_media::{Detection, Frame, VideoWriter};

use crate::draw;

/// Whether `--output` names a video file rather than a JSON-lines file.
pub fn is_video_output(spec: &str) -> bool {
    let path = spec.strip_prefix("file://").unwrap_or(spec);
    path.ends_with(".mp4") || path.ends_with(".mkv")
}

/// The file stream `stream` of `streams` goes to.
pub fn stream_path(base: &Path, stream: usize, streams: usize) -> PathBuf {
    if streams == 1 {
        return base.to_path_buf();
    }
    let stem = base.file_stem().map(|s| s.to_string_lossy().to_string()).unwrap_or_default();
    let ext = base.extension().map(|s| s.to_string_lossy().to_string()).unwrap_or_default();
    base.with_file_name(format!("{stem}_stream{stream}.{ext}"))
}

struct Pending {
    rgb: Vec<u8>,
    width: u32,
    height: u32,
    pts: Duration,
}

/// One stream's output file, opened at its first frame (its size is known then).
struct StreamVideo {
    path: PathBuf,
    writer: Option<VideoWriter>,
    pending: BTreeMap<u64, Pending>,
    first_pts: Option<Duration>,
    written_up_to: Option<u64>,
    late: u64,
    failed: Option<String>,
}

/// Per-stream annotated video files.
pub struct VideoOutput {
    streams: Vec<StreamVideo>,
    window: usize,
    fps: f64,
}

/// What was written, per stream: (path, frames written, frames left out (too late or out of
/// time order), error).
pub type VideoReport = Vec<(PathBuf, u64, u64, Option<String>)>;

impl VideoOutput {
    /// Outputs for `streams` streams under `spec` (`file://PATH.mp4|.mkv`); `window` frames
    /// per stream wait to be put in order; `fps` stamps frames without a time stamp.
    pub fn new(spec: &str, streams: usize, window: usize, fps: f64) -> Result<VideoOutput> {
        let base = PathBuf::from(spec.strip_prefix("file://").unwrap_or(spec));
        if let Some(dir) = base.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let streams = (0..streams)
            .map(|i| StreamVideo {
                path: stream_path(&base, i, streams),
                writer: None,
                pending: BTreeMap::new(),
                first_pts: None,
                written_up_to: None,
                late: 0,
                failed: None,
            })
            .collect();
        Ok(VideoOutput { streams, window: window.max(1), fps: fps.max(1.0) })
    }

    /// Queues `frame` (its full-resolution picture, annotated with `dets`) for its file.
    pub fn push(&mut self, frame: &Frame, dets: &[Detection]) -> Result<()> {
        let Some(full) = &frame.full else { return Ok(()) };
        let fps = self.fps;
        let window = self.window;
        let Some(s) = self.streams.get_mut(frame.stream) else { return Ok(()) };
        if s.failed.is_some() {
            return Ok(());
        }
        if s.written_up_to.is_some_and(|w| frame.index <= w) {
            s.late += 1;
            return Ok(());
        }
        let pts = frame.pts.unwrap_or_else(|| Duration::from_secs_f64(frame.index as f64 / fps));
        let img = draw::annotate(full, dets)?;
        s.pending.insert(frame.index, Pending { rgb: img.into_raw(), width: full.width, height: full.height, pts });
        while s.pending.len() > window {
            s.write_oldest(fps)?;
        }
        Ok(())
    }

    /// Writes what is pending and closes every file.
    pub fn finish(mut self) -> VideoReport {
        let fps = self.fps;
        let mut report = Vec::new();
        for s in &mut self.streams {
            // `write_oldest` records why it failed in `s.failed`.
            while !s.pending.is_empty() && s.write_oldest(fps).is_ok() {}
            let mut frames = 0;
            if let Some(w) = s.writer.take() {
                match w.finish() {
                    Ok(n) => frames = n,
                    Err(e) => s.failed = Some(e.to_string()),
                }
            }
            report.push((s.path.clone(), frames, s.late, s.failed.clone()));
        }
        report
    }
}

impl StreamVideo {
    fn write_oldest(&mut self, fps: f64) -> Result<()> {
        let Some((index, p)) = self.pending.pop_first() else { return Ok(()) };
        self.written_up_to = Some(index);
        if self.writer.is_none() {
            let w = VideoWriter::create(&self.path, p.width, p.height, fps.round() as u32)
                .with_context(|| format!("video output {}", self.path.display()));
            match w {
                Ok(w) => {
                    log::info!("video output {}: {}x{} with {}", self.path.display(), p.width, p.height, w.encoder());
                    self.writer = Some(w);
                }
                Err(e) => {
                    self.failed = Some(format!("{e:#}"));
                    return Err(e);
                }
            }
        }
        let first = *self.first_pts.get_or_insert(p.pts);
        let pts = p.pts.saturating_sub(first);
        // Time stamps start at 0 in the file; a frame whose time does not advance (a live
        // source's clock restarting after a reconnect) is dropped rather than breaking the file.
        let writer = self.writer.as_mut().expect("opened above");
        if writer.last_pts().is_some_and(|last| pts <= last) {
            self.late += 1;
            return Ok(());
        }
        match writer.write(&p.rgb, p.width, p.height, pts) {
            Ok(()) => Ok(()),
            Err(e) => {
                self.failed = Some(e.to_string());
                Err(e.into())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_file_per_stream_when_several() {
        assert_eq!(stream_path(Path::new("/x/out.mp4"), 0, 1), PathBuf::from("/x/out.mp4"));
        assert_eq!(stream_path(Path::new("/x/out.mp4"), 2, 3), PathBuf::from("/x/out_stream2.mp4"));
        assert!(is_video_output("file:///tmp/a.mkv") && is_video_output("a.mp4"));
        assert!(!is_video_output("file:///tmp/a.jsonl"));
    }
}
