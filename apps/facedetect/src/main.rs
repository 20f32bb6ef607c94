//! `facedetect`: BlazeFace on every frame of every stream. One JSON line per processed frame
//! (faces or not), annotated snapshots, a live status line and a final summary;
//! `--bench N` searches the largest number of real-time 1080p30 streams.

mod bench;
mod detector;
mod draw;
mod stats;
mod video;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, anyhow, bail};
use clap::{Parser, ValueEnum};
use edgert_core::{Engine, onnx};
use edgert_media::{Detection, Frame, Mux, MuxConfig, SourceConfig, StreamEvent, uri};
use serde_json::json;

use crate::detector::{Detector, model_spec};
use crate::stats::{Gathered, percentile, status_line, summary_json};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Range {
    /// BlazeFace short range (128x128): faces within ~2 m.
    Short,
    /// BlazeFace full range (192x192): small faces in wide shots.
    Full,
}

/// Face detection on many video streams.
#[derive(Parser, Clone, Debug)]
#[command(name = "facedetect", version)]
pub struct Args {
    /// Sources: file://PATH, rtsp://HOST/PATH, v4l2:///dev/videoN, csi://N, test://1080p30.
    uris: Vec<String>,
    /// Face model (ONNX, or an engine file from `edgert build`, e.g. `--precision int8`);
    /// default models/blazeface_<range>.onnx.
    #[arg(long)]
    model: Option<PathBuf>,
    /// Which BlazeFace when --model is not given.
    #[arg(long, value_enum, default_value = "short")]
    range: Range,
    /// Where the JSON lines go: file://PATH or PATH (default stdout; `none` for nowhere);
    /// file://PATH.mp4 or .mkv writes annotated video instead (one file per stream,
    /// `PATH_streamN.mp4` when several) and the JSON lines go to stdout.
    #[arg(long)]
    output: Option<String>,
    /// Write annotated PNG frames into this folder.
    #[arg(long)]
    snapshots: Option<PathBuf>,
    /// Snapshot every Nth frame of each stream.
    #[arg(long, default_value_t = 15)]
    snapshot_every: u64,
    /// At most this many snapshots per stream.
    #[arg(long, default_value_t = 10)]
    max_snapshots: u64,
    /// Frames per batch (default: the number of streams, at most 8).
    #[arg(long)]
    batch_size: Option<usize>,
    /// Frame rate the batch timeout is derived from (timeout = 1e6/max_fps µs).
    #[arg(long, default_value_t = 30.0)]
    max_fps: f64,
    /// Batch timeout in µs (overrides --max-fps).
    #[arg(long)]
    batch_timeout_us: Option<u64>,
    /// Capacity of each stream's queue (default: twice the batch size).
    #[arg(long)]
    queue: Option<usize>,
    /// Minimum face score (default: the model's, 0.5 short / 0.6 full).
    #[arg(long)]
    threshold: Option<f32>,
    /// Inference threads (each with its own context; JSON lines of a stream stay ordered
    /// only with 1).
    #[arg(long, default_value_t = 1)]
    workers: usize,
    /// Software decoder threads per stream (0: decoder's choice).
    #[arg(long, default_value_t = 1)]
    decoder_threads: u32,
    /// Stretch frames to the model size instead of letterboxing them (BlazeFace expects
    /// letterboxed input; for models trained on stretched frames).
    #[arg(long)]
    stretch: bool,
    /// Niceness of the decoding threads (0-19) relative to inference: inference then runs as
    /// soon as a frame is there even when decoding fills every core (0: equal shares).
    #[arg(long, default_value_t = 5)]
    decoder_nice: i32,
    /// Reconnection attempts of a live network/camera source (exponential back-off).
    #[arg(long, default_value_t = 5)]
    retries: u32,
    /// First reconnection back-off in ms (doubles per attempt, at most 8 s).
    #[arg(long, default_value_t = 500)]
    backoff_ms: u64,
    /// Print the status line even when stderr is not a terminal.
    #[arg(long)]
    status: bool,
    /// Write the final summary as JSON to this file.
    #[arg(long)]
    summary_json: Option<PathBuf>,
    /// List the V4L2 cameras (/dev/video*), their modes and the mode a plain
    /// `v4l2:///dev/videoN` would use, then exit.
    #[arg(long)]
    list_cameras: bool,
    /// Capacity search: the largest number of real-time 1080p30 streams, up to N.
    #[arg(long, value_name = "N")]
    bench: Option<usize>,
    /// Seconds of video per bench trial.
    #[arg(long, default_value_t = 10)]
    bench_seconds: u32,
    /// Bench clip (default: generated once into target/bench/: 1080p30 H.264 High ~6 Mbit/s,
    /// `videotestsrc pattern=snow`).
    #[arg(long)]
    bench_clip: Option<PathBuf>,
    /// Bench: decode and batch only, no inference (the decode capacity baseline).
    #[arg(long)]
    no_infer: bool,
}

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let args = Args::parse();
    let res = match args.bench {
        _ if args.list_cameras => list_cameras(),
        Some(n) => bench::run_bench(&args, n),
        None => run(&args).map(|r| if r.any_error { 2 } else { 0 }),
    };
    match res {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::exit(1);
        }
    }
}

/// `--list-cameras`: every V4L2 node, what it is, its modes and the default choice.
fn list_cameras() -> Result<i32> {
    use edgert_media::camera;
    let nodes = camera::list_cameras();
    if nodes.is_empty() {
        println!("no V4L2 devices (/dev/video*) on this machine");
    }
    for n in nodes {
        match n {
            Err((path, e)) => println!("{}: {e}", path.display()),
            Ok(c) if !c.capture => {
                println!("{}: {} ({}, {}): not a capture node", c.path.display(), c.card, c.driver, c.bus)
            }
            Ok(c) => {
                println!("{}: {} ({}, {})", c.path.display(), c.card, c.driver, c.bus);
                for m in &c.modes {
                    println!("    {}", camera::describe_mode(m));
                }
                match camera::choose_mode(&c.modes, &camera::ModeRequest::default()) {
                    Ok(m) => println!("  v4l2://{} uses {m} ({})", c.path.display(), m.caps),
                    Err(e) => println!("  v4l2://{} cannot be used: {e}", c.path.display()),
                }
            }
        }
    }
    Ok(0)
}

/// What a run produced, for the caller (the bench reads it).
pub struct RunReport {
    /// The summary (see [`summary_json`]).
    pub summary: serde_json::Value,
    /// Some stream reported an error.
    pub any_error: bool,
}

fn model_path(args: &Args) -> PathBuf {
    args.model.clone().unwrap_or_else(|| match args.range {
        Range::Short => PathBuf::from("models/blazeface_short.onnx"),
        Range::Full => PathBuf::from("models/blazeface_full.onnx"),
    })
}

fn open_output(spec: Option<&str>) -> Result<Option<Box<dyn Write + Send>>> {
    Ok(match spec {
        None | Some("-") | Some("stdout") => Some(Box::new(std::io::BufWriter::new(std::io::stdout()))),
        Some("none") => None,
        Some(s) => {
            if video::is_video_output(s) {
                return open_output(None);
            }
            let path = s.strip_prefix("file://").unwrap_or(s);
            let f = std::fs::File::create(path).with_context(|| format!("creating {path}"))?;
            Some(Box::new(std::io::BufWriter::new(f)))
        }
    })
}

fn json_line(f: &Frame, dets: &[Detection]) -> String {
    let r = |v: f32| (v as f64 * 100.0).round() / 100.0;
    let d: Vec<_> = dets
        .iter()
        .map(|d| {
            json!({
                "box": [r(d.xmin), r(d.ymin), r(d.xmax), r(d.ymax)],
                "score": (d.score as f64 * 1e4).round() / 1e4,
                "keypoints": d.keypoints.iter().map(|k| [r(k.x), r(k.y)]).collect::<Vec<_>>(),
            })
        })
        .collect();
    let pts = f.pts.map(|p| (p.as_secs_f64() * 1e5).round() / 100.0);
    json!({"stream": f.stream, "frame": f.index, "pts_ms": pts, "detections": d}).to_string()
}

fn describe(ev: &StreamEvent, uris: &[String]) -> String {
    let u = |i: &usize| uris.get(*i).map(String::as_str).unwrap_or("?");
    match ev {
        StreamEvent::Decoder { stream, codec, decoder, skipped } => {
            let mut s = format!("stream {stream} ({}): {codec} -> {decoder}", u(stream));
            for k in skipped {
                s.push_str(&format!("\n    skipped {k}"));
            }
            s
        }
        StreamEvent::Error { stream, message } => format!("stream {stream} ({}): ERROR {message}", u(stream)),
        StreamEvent::Reconnecting { stream, attempt, delay } => {
            format!("stream {stream} ({}): reconnecting (attempt {attempt}) in {delay:?}", u(stream))
        }
        StreamEvent::Warning { stream, message } => format!("stream {stream} ({}): WARNING {message}", u(stream)),
        StreamEvent::Eos { stream } => format!("stream {stream} ({}): end of stream", u(stream)),
    }
}

/// An ONNX model (optimized now) or an engine file from `edgert build` (e.g. INT8).
fn load_model(path: &std::path::Path) -> Result<Engine> {
    let is_engine = std::fs::read(path).map(|b| b.starts_with(edgert_core::engine::MAGIC)).unwrap_or(false);
    if is_engine {
        return Engine::load(path).with_context(|| format!("loading engine {}", path.display()));
    }
    let graph = onnx::load_model(path).with_context(|| format!("loading {}", path.display()))?;
    Ok(Engine::from_graph(graph)?)
}

/// Runs detection on `args.uris` until every stream ends.
pub fn run(args: &Args) -> Result<RunReport> {
    if args.uris.is_empty() {
        bail!("give at least one source URI (e.g. test://1080p30 or file://clip.mp4)");
    }
    let sources = args.uris.iter().map(|u| uri::parse(u)).collect::<Result<Vec<_>, _>>()?;
    edgert_media::init()?;
    let path = model_path(args);
    let engine = Arc::new(load_model(&path)?);
    let (_, spec, _) = model_spec(&engine)?;
    // The detectors are made (and their contexts planned) before any source starts, so no
    // frame of a live source waits, or is dropped, while the engine gets ready.
    let wanted = args.batch_size.unwrap_or(sources.len().min(8)).max(1);
    let mut detectors = Vec::new();
    if !args.no_infer {
        for _ in 0..args.workers.max(1) {
            detectors.push(Detector::new(engine.clone(), wanted, args.threshold)?);
        }
    }
    let inference_batch = detectors.first().map(Detector::batch);
    // A model that runs one frame per inference gains nothing from frames waiting for a
    // batch to fill, only latency: unless --batch-size says otherwise, the mux then hands
    // frames over as they come.
    let batch = match (args.batch_size, inference_batch) {
        (None, Some(b)) => b,
        _ => wanted,
    };
    let inference = match detectors.first() {
        Some(d) => format!(
            "{} ({} range, {}x{}), inference at batch {}{}",
            path.display(),
            d.spec().name,
            d.spec().input_size.0,
            d.spec().input_size.1,
            d.batch(),
            match d.batch_refusal() {
                Some(why) if d.batch() < wanted => format!(" (batch {wanted} refused: {why})"),
                _ => String::new(),
            }
        ),
        None => "no inference (--no-infer)".to_string(),
    };
    let mut mux_cfg = MuxConfig::new(batch, args.max_fps);
    if let Some(us) = args.batch_timeout_us {
        mux_cfg.batch_timeout = Duration::from_micros(us);
    }
    if let Some(q) = args.queue {
        mux_cfg.queue_capacity = q.max(1);
    }
    let mux = Arc::new(Mux::new(mux_cfg));
    let mut src_cfg = SourceConfig::new(spec.input_size.0 as u32, spec.input_size.1 as u32);
    let video_spec = args.output.as_deref().filter(|s| video::is_video_output(s));
    src_cfg.keep_full = args.snapshots.is_some() || video_spec.is_some();
    let video_out = match video_spec {
        Some(spec) => {
            let window = args.workers.max(1) * batch * 2;
            Some(Arc::new(Mutex::new(video::VideoOutput::new(spec, sources.len(), window, args.max_fps)?)))
        }
        None => None,
    };
    src_cfg.decoder_threads = args.decoder_threads;
    src_cfg.streaming_nice = args.decoder_nice;
    src_cfg.stretch = args.stretch;
    src_cfg.max_retries = args.retries;
    src_cfg.backoff = Duration::from_millis(args.backoff_ms);
    if let Some(d) = &args.snapshots {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
    }
    let out = Arc::new(Mutex::new(open_output(args.output.as_deref())?));
    let gathered = Arc::new(Mutex::new(Gathered::default()));
    let recent = Arc::new(Mutex::new(Vec::<f32>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let snapshots_taken = Arc::new(Mutex::new(vec![0u64; sources.len()]));
    let t0 = Instant::now();
    let streams: Vec<_> =
        sources.into_iter().map(|s| edgert_media::spawn(s, mux.clone(), src_cfg.clone(), stop.clone())).collect();

    eprintln!(
        "facedetect: {inference}; mux batch {batch}, timeout {:?}, queue {}",
        mux_cfg.batch_timeout, mux_cfg.queue_capacity
    );
    let mut detectors = detectors.into_iter();
    let mut workers = Vec::new();
    for _ in 0..args.workers.max(1) {
        let mut det = detectors.next();
        let (mux, out, gathered, recent) = (mux.clone(), out.clone(), gathered.clone(), recent.clone());
        let video_out = video_out.clone();
        let (snap_dir, every, max_snap, taken) =
            (args.snapshots.clone(), args.snapshot_every.max(1), args.max_snapshots, snapshots_taken.clone());
        workers.push(std::thread::spawn(move || -> Result<()> {
            while let Some(batch) = mux.next_batch() {
                let results = match det.as_mut() {
                    Some(d) => match d.detect(&batch) {
                        Ok(r) => r,
                        Err(e) => {
                            eprintln!("inference failed on a batch of {}: {e:#}", batch.len());
                            gathered.lock().unwrap().failed += batch.len() as u64;
                            continue;
                        }
                    },
                    None => vec![Vec::new(); batch.len()],
                };
                let mut lines = String::new();
                let mut lat = Vec::with_capacity(batch.len());
                for (f, dets) in batch.iter().zip(&results) {
                    lat.push(f.decoded_at.elapsed().as_secs_f32() * 1e3);
                    mux.mark_inferred(f.stream, 1);
                    lines.push_str(&json_line(f, dets));
                    lines.push('\n');
                    if let Some(v) = &video_out
                        && let Err(e) = v.lock().unwrap().push(f, dets)
                    {
                        eprintln!("stream {}: {e:#}", f.stream);
                    }
                    if let (Some(dir), Some(full)) = (&snap_dir, &f.full)
                        && f.index % every == 0
                    {
                        let mut t = taken.lock().unwrap();
                        if t[f.stream] < max_snap {
                            t[f.stream] += 1;
                            drop(t);
                            let p = dir.join(format!("stream{}_frame{:05}.png", f.stream, f.index));
                            if let Err(e) = draw::save_snapshot(full, dets, &p) {
                                eprintln!("snapshot: {e:#}");
                            }
                        }
                    }
                }
                if let Some(o) = out.lock().unwrap().as_mut() {
                    o.write_all(lines.as_bytes())?;
                }
                recent.lock().unwrap().extend_from_slice(&lat);
                let mut g = gathered.lock().unwrap();
                g.latencies_ms.extend_from_slice(&lat);
                g.batches += 1;
                g.batched_frames += batch.len() as u64;
            }
            Ok(())
        }));
    }

    // Status and events until every worker is done.
    let show_status = args.status || std::io::stderr().is_terminal();
    let tty = std::io::stderr().is_terminal();
    let mut prev = mux.stats();
    let mut last_status = Instant::now();
    let mut prev_batches = (0u64, 0u64);
    let mut any_error = false;
    let mut ev_log = Vec::new();
    while !workers.iter().all(|w| w.is_finished()) {
        std::thread::sleep(Duration::from_millis(50));
        for ev in mux.take_events() {
            any_error |= matches!(ev, StreamEvent::Error { .. });
            if tty && show_status {
                eprint!("\r\x1b[K");
            }
            eprintln!("{}", describe(&ev, &args.uris));
            ev_log.push(ev);
        }
        if show_status && last_status.elapsed() >= Duration::from_secs(1) {
            let dt = last_status.elapsed().as_secs_f64();
            last_status = Instant::now();
            let stats = mux.stats();
            let lat = std::mem::take(&mut *recent.lock().unwrap());
            let (b, f) = {
                let g = gathered.lock().unwrap();
                (g.batches, g.batched_frames)
            };
            let fill = if b > prev_batches.0 { (f - prev_batches.1) as f64 / (b - prev_batches.0) as f64 } else { 0.0 };
            prev_batches = (b, f);
            let line = status_line(t0, &stats, &prev, dt, &lat, fill, batch);
            if tty {
                eprint!("\r\x1b[K{line}")
            } else {
                eprintln!("{line}")
            }
            prev = stats;
        }
    }
    if tty && show_status {
        eprintln!();
    }
    stop.store(true, Ordering::Relaxed);
    mux.close();
    for s in streams {
        s.join();
    }
    for w in workers {
        w.join().map_err(|_| anyhow!("an inference worker panicked"))??;
    }
    for ev in mux.take_events() {
        any_error |= matches!(ev, StreamEvent::Error { .. });
        eprintln!("{}", describe(&ev, &args.uris));
    }
    if let Some(o) = out.lock().unwrap().as_mut() {
        o.flush()?;
    }
    if let Some(v) = video_out {
        let v = Arc::try_unwrap(v).map_err(|_| anyhow!("video output still shared"))?.into_inner().unwrap();
        for (path, frames, left_out, err) in v.finish() {
            match err {
                Some(e) => {
                    any_error = true;
                    eprintln!("video {}: ERROR {e} ({frames} frames written)", path.display());
                }
                None => eprintln!("video {}: {frames} annotated frames ({left_out} left out)", path.display()),
            }
        }
    }
    let secs = t0.elapsed().as_secs_f64();
    let stats = mux.stats();
    let g = gathered.lock().unwrap();
    let mut summary = summary_json(&stats, &g, secs);
    summary["mux_batch"] = json!(batch);
    summary["inference_batch"] = json!(inference_batch);
    eprintln!("summary: {} stream(s), {secs:.1} s", stats.len());
    for (i, s) in stats.iter().enumerate() {
        eprintln!(
            "  stream {i} {}: decoder {}, decoded {}, inferred {}, dropped {}, {:.1} fps{}",
            s.uri,
            s.decoder.as_deref().unwrap_or("-"),
            s.decoded,
            s.inferred,
            s.dropped,
            s.inferred as f64 / secs.max(1e-9),
            if s.errors.is_empty() { String::new() } else { format!(", {} error(s)", s.errors.len()) }
        );
    }
    let p = |q| percentile(&g.latencies_ms, q).map(|v| format!("{v:.1}")).unwrap_or_else(|| "-".into());
    eprintln!(
        "  latency decoded->detections p50 {} p99 {} ms; batch fill {:.2}/{batch}",
        p(0.5),
        p(0.99),
        summary["batch_fill"].as_f64().unwrap_or(0.0)
    );
    if let Some(path) = &args.summary_json {
        std::fs::write(path, serde_json::to_string_pretty(&summary)? + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(RunReport { summary, any_error })
}
