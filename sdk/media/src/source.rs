//! Sources: one GStreamer pipeline and one thread per stream, from URI to frames in the mux.
//!
//! ```text
//! filesrc|rtspsrc|v4l2src ! parsebin ─(pad-added: codec → chosen decoder bin)─┐
//! videotestsrc|nvarguscamerasrc (raw) ────────────────────────────────────────┤
//!   queue ! [tee ─ queue ! videoconvert ! RGB ! appsink name=full]            ◀┘
//!         ! videoscale add-borders=true|false ! WxH, PAR 1/1 ! videoconvert ! RGB ! appsink name=sink
//! ```
//!
//! Scaling happens in YUV before colour conversion (cheaper: PITFALLS.md), and videoscale's
//! borders letterbox the picture into the model size. Errors end the stream and are reported
//! to the mux; live network/camera sources reconnect with exponential back-off.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use gstreamer as gst;
use gstreamer_app as gst_app;
use gstreamer_video as gst_video;
use gstreamer_video::prelude::*;

use crate::bus::bus_error;
use crate::camera::{self, ChosenMode};
use crate::decoder::select_decoder;
use crate::error::{Error, Result};
use crate::frame::{Frame, FullFrame};
use crate::letterbox::Letterbox;
use crate::mux::{DropPolicy, Mux, StreamEvent};
use crate::uri::{SourceKind, SourceUri};

/// Initializes GStreamer (idempotent).
pub fn init() -> Result<()> {
    gst::init().map_err(|e| Error::Init(e.to_string()))
}

/// How sources deliver frames.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceConfig {
    /// Model input width: frames are scaled (letterboxed) to it.
    pub width: u32,
    /// Model input height.
    pub height: u32,
    /// Also deliver each frame at source resolution ([`Frame::full`]): costs a colour
    /// conversion of the full frame.
    pub keep_full: bool,
    /// Software decoder threads per stream (0: decoder's choice; 1 is cheapest per frame
    /// with many streams).
    pub decoder_threads: u32,
    /// Reconnection attempts of a live network/camera source after an error or stall.
    pub max_retries: u32,
    /// First back-off; doubles per attempt up to `max_backoff`.
    pub backoff: Duration,
    /// Longest back-off.
    pub max_backoff: Duration,
    /// A stream that delivers nothing for this long is reported as stalled.
    pub stall_timeout: Duration,
    /// Niceness added to the pipeline's streaming threads (decoding, scaling), 0 to 19:
    /// when decoding takes nearly every core, the consumer of the frames (inference) still
    /// runs as soon as a frame is there, instead of queueing behind the decoders (frames
    /// then wait, and live ones are dropped). Linux only; elsewhere ignored.
    pub streaming_nice: i32,
    /// Stretch the picture to the model size instead of letterboxing it (no borders; the
    /// aspect ratio is lost, as models trained on stretched inputs expect).
    pub stretch: bool,
}

impl SourceConfig {
    /// Defaults for a model of the given input size.
    pub fn new(width: u32, height: u32) -> SourceConfig {
        SourceConfig {
            width,
            height,
            keep_full: false,
            decoder_threads: 1,
            max_retries: 5,
            backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
            stall_timeout: Duration::from_secs(10),
            streaming_nice: 0,
            stretch: false,
        }
    }
}

/// The pipeline description a URI runs (without the decoder, which is chosen when the
/// codec is known). Public so that unavailable sources can show what would run.
pub fn pipeline_description(src: &SourceUri, cfg: &SourceConfig, sync: bool) -> String {
    describe_pipeline(src, cfg, sync, None)
}

/// The pipeline, with the caps of the camera mode chosen for a V4L2 source.
fn describe_pipeline(src: &SourceUri, cfg: &SourceConfig, sync: bool, camera: Option<&ChosenMode>) -> String {
    let q = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"");
    let head = match &src.kind {
        SourceKind::File { path, .. } => {
            format!("filesrc location=\"{}\" ! parsebin name=parse", q(&path.to_string_lossy()))
        }
        SourceKind::Rtsp { url } => {
            format!("rtspsrc location=\"{}\" latency=200 ! application/x-rtp,media=video ! parsebin name=parse", q(url))
        }
        SourceKind::V4l2 { device, .. } => {
            let caps = camera.map(|c| format!(" ! {}", c.caps)).unwrap_or_default();
            format!("v4l2src device=\"{}\"{caps} ! parsebin name=parse", q(&device.to_string_lossy()))
        }
        SourceKind::Csi { sensor } => format!(
            "nvarguscamerasrc sensor-id={sensor} ! video/x-raw(memory:NVMM),width=1920,height=1080,framerate=30/1 \
             ! nvvidconv ! video/x-raw,format=I420 ! queue name=entry max-size-buffers=4"
        ),
        SourceKind::Test { width, height, fps, frames, live } => format!(
            "videotestsrc is-live={live} pattern=ball num-buffers={} ! video/x-raw,format=I420,width={width},height={height},framerate={fps}/1 \
             ! queue name=entry max-size-buffers=4",
            frames.map(|n| n as i64).unwrap_or(-1)
        ),
    };
    let entry = if head.contains("parsebin") { " queue name=entry max-size-buffers=4" } else { "" };
    let scaled = format!(
        "videoscale name=scale add-borders={} ! video/x-raw,width={},height={},pixel-aspect-ratio=1/1 \
         ! videoconvert ! video/x-raw,format=RGB ! appsink name=sink sync={sync} max-buffers=4 drop=false",
        !cfg.stretch, cfg.width, cfg.height
    );
    if cfg.keep_full {
        format!(
            "{head}{entry} ! tee name=t ! queue max-size-buffers=4 ! {scaled} t. ! queue max-size-buffers=4 \
             ! videoconvert ! video/x-raw,format=RGB ! appsink name=full sync=false max-buffers=4 drop=false"
        )
    } else {
        format!("{head}{entry} ! {scaled}")
    }
}

/// A running source.
pub struct Stream {
    /// Index in the mux.
    pub id: usize,
    thread: Option<JoinHandle<()>>,
}

impl Stream {
    /// Waits for the source thread to finish.
    pub fn join(mut self) {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Registers `src` with the mux and starts its thread. Errors (missing device, broken file,
/// unreachable host) are reported to the mux as events and end the stream; they never
/// stop other streams. `stop` ends the stream early.
pub fn spawn(src: SourceUri, mux: Arc<Mux>, cfg: SourceConfig, stop: Arc<AtomicBool>) -> Stream {
    let policy = if src.is_live() { DropPolicy::DropOldest } else { DropPolicy::Block };
    let id = mux.add_stream(&src.uri, policy);
    let thread = std::thread::Builder::new()
        .name(format!("source-{id}"))
        .spawn(move || run_stream(id, &src, &mux, &cfg, &stop))
        .ok();
    Stream { id, thread }
}

enum Outcome {
    Eos,
    Stopped,
}

fn run_stream(id: usize, src: &SourceUri, mux: &Mux, cfg: &SourceConfig, stop: &AtomicBool) {
    let mut index = 0u64;
    let mut attempt = 0u32;
    loop {
        let before = index;
        match run_once(id, src, mux, cfg, stop, &mut index) {
            Ok(Outcome::Eos) => {
                mux.report(StreamEvent::Eos { stream: id });
                break;
            }
            Ok(Outcome::Stopped) => break,
            Err(e) => {
                log::warn!("stream {id} ({}): {e}", src.uri);
                mux.report(StreamEvent::Error { stream: id, message: e.to_string() });
                if index > before {
                    attempt = 0; // it worked for a while: start the back-off afresh
                }
                // A camera element that is not registered will not appear by waiting.
                let hopeless = matches!((&e, &src.kind), (Error::Unavailable { .. }, SourceKind::Csi { .. }));
                if hopeless
                    || !src.reconnects()
                    || attempt >= cfg.max_retries
                    || stop.load(Ordering::Relaxed)
                    || mux.is_closed()
                {
                    break;
                }
                attempt += 1;
                let delay = cfg.backoff.saturating_mul(1 << (attempt - 1).min(16)).min(cfg.max_backoff);
                mux.report(StreamEvent::Reconnecting { stream: id, attempt, delay });
                let until = Instant::now() + delay;
                while Instant::now() < until && !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(20).min(delay));
                }
            }
        }
    }
    mux.end_stream(id);
}

fn pipeline_err(src: &SourceUri, message: impl Into<String>) -> Error {
    Error::Pipeline { uri: src.uri.clone(), message: message.into() }
}

/// Checks what can be checked before building: devices and camera elements. For a V4L2
/// camera, asks the driver for its modes and returns the one chosen.
fn check_available(src: &SourceUri, cfg: &SourceConfig) -> Result<Option<ChosenMode>> {
    let unavailable = |reason: String| Error::Unavailable { uri: src.uri.clone(), reason };
    match &src.kind {
        SourceKind::V4l2 { device, .. } if !device.exists() => {
            Err(unavailable(format!("no device {} (no camera attached here)", device.display())))
        }
        SourceKind::V4l2 { device, mode } => {
            let info = camera::probe(device).map_err(unavailable)?;
            if !info.capture {
                return Err(unavailable(format!(
                    "{} ({}, driver {}) does not capture video (a metadata or output node; \
                     `facedetect --list-cameras` lists the capture nodes)",
                    device.display(),
                    info.card,
                    info.driver
                )));
            }
            let chosen =
                camera::choose_mode(&info.modes, mode).map_err(|e| unavailable(format!("{}: {e}", info.card)))?;
            log::info!("{}: {} ({}) mode {chosen}", src.uri, info.card, info.driver);
            Ok(Some(chosen))
        }
        SourceKind::Csi { .. } if gst::ElementFactory::find("nvarguscamerasrc").is_none() => Err(unavailable(format!(
            "element nvarguscamerasrc is not registered (Jetson only); the pipeline would be: {}",
            pipeline_description(src, cfg, false)
        ))),
        SourceKind::File { path, .. } if !path.is_file() => Err(unavailable(format!("no file {}", path.display()))),
        _ => Ok(None),
    }
}

fn run_once(
    id: usize,
    src: &SourceUri,
    mux: &Mux,
    cfg: &SourceConfig,
    stop: &AtomicBool,
    index: &mut u64,
) -> Result<Outcome> {
    let camera = check_available(src, cfg)?;
    let sync = matches!(src.kind, SourceKind::File { realtime: true, .. });
    let desc = describe_pipeline(src, cfg, sync, camera.as_ref());
    // Said with the decoder choice: the camera mode is part of how the stream is read.
    let mode_note = camera.map(|c| format!(" (camera mode {c})")).unwrap_or_default();
    log::debug!("stream {id}: {desc}");
    let pipeline = gst::parse::launch(&desc)
        .map_err(|e| pipeline_err(src, format!("{e} (pipeline: {desc})")))?
        .downcast::<gst::Pipeline>()
        .map_err(|_| pipeline_err(src, "not a pipeline"))?;
    let guard = NullOnDrop(pipeline.clone());
    if cfg.streaming_nice != 0 {
        lower_streaming_threads(&pipeline, cfg.streaming_nice);
    }
    let by_name = |n: &str| pipeline.by_name(n).ok_or_else(|| pipeline_err(src, format!("no element `{n}`")));
    let sink = by_name("sink")?.downcast::<gst_app::AppSink>().map_err(|_| pipeline_err(src, "sink is no appsink"))?;
    let full = match cfg.keep_full {
        true => Some(by_name("full")?.downcast::<gst_app::AppSink>().map_err(|_| pipeline_err(src, "no appsink"))?),
        false => None,
    };
    let scale_pad =
        by_name("scale")?.static_pad("sink").ok_or_else(|| pipeline_err(src, "videoscale has no sink pad"))?;
    let link_error: Arc<Mutex<Option<String>>> = Arc::new(Mutex::new(None));

    if let Some(parse) = pipeline.by_name("parse") {
        let entry = by_name("entry")?;
        let weak = pipeline.downgrade();
        let link_error_cb = Arc::clone(&link_error);
        let threads = cfg.decoder_threads;
        // The mux outlives no stream thread, but the callback needs 'static: report through a
        // channel drained by this thread.
        let (tx, rx) = std::sync::mpsc::channel::<StreamEvent>();
        let linked = Arc::new(AtomicBool::new(false));
        parse.connect_pad_added(move |_, pad| {
            let caps = pad.current_caps().unwrap_or_else(|| pad.query_caps(None));
            let Some(name) = caps.structure(0).map(|s| s.name().to_string()) else { return };
            if !(name.starts_with("video/") || name.starts_with("image/")) {
                return; // audio, subtitles: not ours
            }
            if linked.swap(true, Ordering::SeqCst) {
                return; // a second video track: the first one is used
            }
            let Some(pipeline) = weak.upgrade() else { return };
            let res = link_decoder(&pipeline, pad, &entry, &name, threads, id, &mode_note, &tx);
            if let Err(e) = res {
                *link_error_cb.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
            }
        });
        return pull_loop(
            id,
            src,
            mux,
            cfg,
            stop,
            index,
            &pipeline,
            &sink,
            full.as_ref(),
            &scale_pad,
            &link_error,
            Some(rx),
        )
        .inspect(|_| drop(guard));
    }
    let what = match &src.kind {
        SourceKind::Test { .. } => "raw (videotestsrc)",
        _ => "raw (camera)",
    };
    mux.report(StreamEvent::Decoder { stream: id, codec: "video/x-raw".into(), decoder: what.into(), skipped: vec![] });
    pull_loop(id, src, mux, cfg, stop, index, &pipeline, &sink, full.as_ref(), &scale_pad, &link_error, None)
}

/// Adds `nice` to every streaming thread of `pipeline` while it runs the pipeline's task.
/// GStreamer posts `stream-status` from the streaming thread itself (enter when its loop
/// starts, leave when it ends), so the sync handler runs in that thread. Streaming threads
/// come from a process-wide pool and may later run another pipeline's task: on leave the
/// thread gets its niceness back. Lowering niceness again needs privilege (root, or an
/// `RLIMIT_NICE` that allows it); without it the pooled thread stays niced, and says so
/// in the log once per thread.
fn lower_streaming_threads(pipeline: &gst::Pipeline, nice: i32) {
    let Some(bus) = pipeline.bus() else { return };
    let nice = nice.clamp(0, 19);
    bus.set_sync_handler(move |_, msg| {
        if let gst::MessageView::StreamStatus(s) = msg.view() {
            match s.get().0 {
                gst::StreamStatusType::Enter => thread_nice::raise(nice),
                gst::StreamStatusType::Leave => thread_nice::restore(),
                _ => {}
            }
        }
        gst::BusSyncReply::Pass
    });
}

#[cfg(target_os = "linux")]
mod thread_nice {
    use std::cell::Cell;

    thread_local! {
        /// The thread's niceness before [`raise`], until [`restore`].
        static BEFORE: Cell<Option<i32>> = const { Cell::new(None) };
    }

    fn tid() -> libc::id_t {
        // SAFETY: gettid takes no arguments and cannot fail.
        unsafe { libc::syscall(libc::SYS_gettid) as libc::id_t }
    }

    fn set(value: i32) -> std::io::Result<()> {
        // SAFETY: plain integers; on Linux PRIO_PROCESS with a thread id changes that thread.
        match unsafe { libc::setpriority(libc::PRIO_PROCESS, tid(), value) } {
            0 => Ok(()),
            _ => Err(std::io::Error::last_os_error()),
        }
    }

    pub(super) fn raise(nice: i32) {
        // SAFETY: as above; -1 is also a valid niceness, so errno is not checked (the
        // thread's own niceness can always be read).
        let now = unsafe { libc::getpriority(libc::PRIO_PROCESS, tid()) };
        let before = BEFORE.get().unwrap_or(now);
        match set((before + nice).min(19)) {
            Ok(()) => BEFORE.set(Some(before)),
            Err(e) => log::debug!("raising a streaming thread's niceness by {nice}: {e}"),
        }
    }

    pub(super) fn restore() {
        if let Some(before) = BEFORE.take()
            && let Err(e) = set(before)
        {
            log::info!("a pooled streaming thread keeps its raised niceness (restoring {before}: {e})");
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod thread_nice {
    pub(super) fn raise(_nice: i32) {}
    pub(super) fn restore() {}
}

/// Sets the pipeline to NULL however the stream ends (an error, a stop, a panic upstream).
struct NullOnDrop(gst::Pipeline);

impl Drop for NullOnDrop {
    fn drop(&mut self) {
        let _ = self.0.set_state(gst::State::Null);
    }
}

#[allow(clippy::too_many_arguments)]
fn link_decoder(
    pipeline: &gst::Pipeline,
    pad: &gst::Pad,
    entry: &gst::Element,
    codec: &str,
    threads: u32,
    id: usize,
    note: &str,
    tx: &std::sync::mpsc::Sender<StreamEvent>,
) -> std::result::Result<(), String> {
    let sink_pad = entry.static_pad("sink").ok_or("queue has no sink pad")?;
    if codec == "video/x-raw" {
        let decoder = format!("raw{note}");
        let _ = tx.send(StreamEvent::Decoder { stream: id, codec: codec.into(), decoder, skipped: vec![] });
        return pad.link(&sink_pad).map(|_| ()).map_err(|e| format!("linking raw video: {e:?}"));
    }
    let choice = select_decoder(codec, threads).map_err(|e| e.to_string())?;
    log::info!("stream {id}: {codec} decoded by {} (skipped: {:?})", choice.element, choice.skipped);
    let bin = gst::parse::bin_from_description(&choice.description, true)
        .map_err(|e| format!("creating `{}`: {e}", choice.description))?;
    pipeline.add(&bin).map_err(|e| format!("adding decoder: {e}"))?;
    bin.link(entry).map_err(|e| format!("linking {} to the scaler: {e}", choice.element))?;
    bin.sync_state_with_parent().map_err(|e| format!("starting {}: {e}", choice.element))?;
    let bin_sink = bin.static_pad("sink").ok_or("decoder bin has no sink pad")?;
    pad.link(&bin_sink).map_err(|e| format!("linking {codec} to {}: {e:?}", choice.element))?;
    let _ = tx.send(StreamEvent::Decoder {
        stream: id,
        codec: codec.into(),
        decoder: format!("{}{note}", choice.description),
        skipped: choice.skipped,
    });
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn pull_loop(
    id: usize,
    src: &SourceUri,
    mux: &Mux,
    cfg: &SourceConfig,
    stop: &AtomicBool,
    index: &mut u64,
    pipeline: &gst::Pipeline,
    sink: &gst_app::AppSink,
    full: Option<&gst_app::AppSink>,
    scale_pad: &gst::Pad,
    link_error: &Mutex<Option<String>>,
    events: Option<std::sync::mpsc::Receiver<StreamEvent>>,
) -> Result<Outcome> {
    let bus = pipeline.bus().ok_or_else(|| pipeline_err(src, "pipeline has no bus"))?;
    if let Err(e) = pipeline.set_state(gst::State::Playing) {
        let detail = bus_error(&bus).unwrap_or_else(|| e.to_string());
        return Err(pipeline_err(src, detail));
    }
    let mut last = Instant::now();
    let mut letterbox: Option<(gst::Caps, Letterbox)> = None;
    // Frame period from the source caps, and the last time stamp: a gap of more than 1.5
    // periods means frames were lost (decoders drop corrupt data without a message).
    let mut period: Option<Duration> = None;
    let mut last_pts: Option<Duration> = None;
    loop {
        if let Some(rx) = &events {
            while let Ok(ev) = rx.try_recv() {
                mux.report(ev);
            }
        }
        if stop.load(Ordering::Relaxed) || mux.is_closed() {
            return Ok(Outcome::Stopped);
        }
        if let Some(e) = bus_error(&bus) {
            return Err(pipeline_err(src, e));
        }
        if let Some(e) = link_error.lock().unwrap_or_else(|p| p.into_inner()).take() {
            return Err(pipeline_err(src, e));
        }
        let Some(sample) = sink.try_pull_sample(gst::ClockTime::from_mseconds(100)) else {
            if sink.is_eos() {
                return Ok(Outcome::Eos);
            }
            if last.elapsed() > cfg.stall_timeout {
                return Err(pipeline_err(src, format!("stalled: no frame for {:?}", cfg.stall_timeout)));
            }
            continue;
        };
        // Source geometry: what the scaler receives (re-read when its caps change).
        let in_caps = scale_pad.current_caps().ok_or_else(|| pipeline_err(src, "scaler input has no caps"))?;
        if letterbox.as_ref().is_none_or(|(c, _)| *c != in_caps) {
            let info = gst_video::VideoInfo::from_caps(&in_caps).map_err(|e| pipeline_err(src, e.to_string()))?;
            let par = info.par();
            let fit = if cfg.stretch { Letterbox::stretch } else { Letterbox::fit };
            let lb = fit(
                info.width(),
                info.height(),
                (par.numer().max(1) as u32, par.denom().max(1) as u32),
                cfg.width,
                cfg.height,
            );
            letterbox = Some((in_caps, lb));
            let fps = info.fps();
            period = (fps.numer() > 0 && fps.denom() > 0)
                .then(|| Duration::from_secs_f64(fps.denom() as f64 / fps.numer() as f64));
        }
        let lb = letterbox.as_ref().map(|(_, l)| *l).ok_or_else(|| pipeline_err(src, "no geometry"))?;
        let (w, h, rgb, pts) = packed_rgb(&sample).map_err(|e| pipeline_err(src, e))?;
        if let (Some(p), Some(prev), Some(now)) = (period, last_pts, pts)
            && now > prev + p.mul_f64(1.5)
        {
            let missing = ((now - prev).as_secs_f64() / p.as_secs_f64()).round() as u64 - 1;
            mux.report(StreamEvent::Warning {
                stream: id,
                message: format!(
                    "source `{}`: {missing} frame(s) missing before pts {:.3} s (corrupt or lost data)",
                    src.uri,
                    now.as_secs_f64()
                ),
            });
        }
        if pts.is_some() {
            last_pts = pts;
        }
        let full = match full {
            Some(f) => match f.try_pull_sample(gst::ClockTime::from_seconds(5)) {
                Some(s) => {
                    let (width, height, data, _) = packed_rgb(&s).map_err(|e| pipeline_err(src, e))?;
                    Some(FullFrame { width, height, data })
                }
                None => None,
            },
            None => None,
        };
        let frame = Frame {
            stream: id,
            index: *index,
            pts,
            decoded_at: Instant::now(),
            width: w,
            height: h,
            rgb,
            letterbox: lb,
            full,
        };
        *index += 1;
        if !mux.push(frame) {
            return Ok(Outcome::Stopped);
        }
        last = Instant::now();
    }
}

/// Copies an RGB sample into packed rows (GStreamer pads RGB rows to 4 bytes).
fn packed_rgb(sample: &gst::Sample) -> std::result::Result<(u32, u32, Vec<u8>, Option<Duration>), String> {
    let caps = sample.caps().ok_or("sample without caps")?;
    let info = gst_video::VideoInfo::from_caps(caps).map_err(|e| e.to_string())?;
    let buffer = sample.buffer().ok_or("sample without buffer")?;
    let pts = buffer.pts().map(|t| Duration::from_nanos(t.nseconds()));
    let vf = gst_video::VideoFrameRef::from_buffer_ref_readable(buffer, &info).map_err(|e| e.to_string())?;
    let (w, h) = (info.width() as usize, info.height() as usize);
    let stride = vf.plane_stride()[0] as usize;
    let data = vf.plane_data(0).map_err(|e| e.to_string())?;
    let row = w * 3;
    if stride < row || data.len() < stride * (h.max(1) - 1) + row {
        return Err(format!("RGB frame {w}x{h} with stride {stride} has only {} bytes", data.len()));
    }
    let mut out = Vec::with_capacity(row * h);
    for y in 0..h {
        out.extend_from_slice(&data[y * stride..y * stride + row]);
    }
    Ok((w as u32, h as u32, out, pts))
}
