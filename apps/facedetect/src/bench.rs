//! `--bench N`: the largest number of real-time streams (up to N) of a 1080p30 H.264 clip
//! played at its frame rate, with detection on every frame. Each trial prints per-stream
//! fps and drops; the search doubles the stream count, then bisects.

use std::path::PathBuf;

use anyhow::{Result, bail};
use edgert_media::testclip::{ClipSpec, encode_clip};

use crate::{Args, run};

struct Trial {
    ok: bool,
}

fn trial(args: &Args, clip: &str, n: usize, frames: u64, secs: f64) -> Result<Trial> {
    let mut a = args.clone();
    a.bench = None;
    a.uris = vec![format!("file://{clip}?realtime=1"); n];
    a.output = Some("none".into());
    a.snapshots = None;
    a.summary_json = None;
    let r = run(&a)?;
    let s = &r.summary;
    let elapsed = s["seconds"].as_f64().unwrap_or(f64::MAX);
    // Real time: the clip's length plus at most 3% lag and half a second of start-up
    // (pipelines and contexts; one stream alone takes ~0.1 s more than the clip).
    let mut ok = !r.any_error && elapsed <= secs * 1.03 + 0.5;
    let mut per = Vec::new();
    for st in s["streams"].as_array().cloned().unwrap_or_default() {
        let inferred = st["inferred"].as_u64().unwrap_or(0);
        let dropped = st["dropped"].as_u64().unwrap_or(0);
        ok &= inferred * 100 >= frames * 97; // at most 3% dropped or lost
        per.push(format!("{:.1}/{dropped}", inferred as f64 / elapsed));
    }
    let lat = &s["latency_ms"];
    let line = format!(
        "{n:3} streams: {} in {elapsed:.1} s (clip {secs:.0} s); fps/drops per stream: {}; latency p50 {:.1} p99 {:.1} ms; batch fill {:.2}",
        if ok { "REAL-TIME" } else { "too slow " },
        per.join(" "),
        lat["p50"].as_f64().unwrap_or(f64::NAN),
        lat["p99"].as_f64().unwrap_or(f64::NAN),
        s["batch_fill"].as_f64().unwrap_or(0.0),
    );
    println!("{line}");
    Ok(Trial { ok })
}

/// Runs the capacity search; returns the exit code.
pub fn run_bench(args: &Args, max: usize) -> Result<i32> {
    if max == 0 {
        bail!("--bench N needs N >= 1");
    }
    let fps = 30u32;
    let frames = fps * args.bench_seconds.max(1);
    let clip = match &args.bench_clip {
        Some(p) => p.clone(),
        None => {
            let p = PathBuf::from(format!("target/bench/1080p30_high_6mbps_{}s.mp4", args.bench_seconds));
            if !p.is_file() {
                std::fs::create_dir_all("target/bench")?;
                eprintln!(
                    "bench: encoding {} (1080p30 H.264 High, 6 Mbit/s, videotestsrc snow, {frames} frames)...",
                    p.display()
                );
                let spec = ClipSpec {
                    width: 1920,
                    height: 1080,
                    fps,
                    frames,
                    kbps: 6000,
                    // Noise: x264 spends the whole 6 Mbit/s on it, and avdec_h264 then costs
                    // ~7.6 ms per frame here, close to real 1080p footage (PITFALLS: ~6 ms).
                    pattern: "snow".into(),
                    high_profile: true,
                };
                encode_clip(&spec, &p)?;
            }
            p
        }
    };
    let clip = clip.to_string_lossy().to_string();
    let secs = frames as f64 / fps as f64;
    println!(
        "bench: {} ({} frames each), detection {}, batch {}, decoder threads {}",
        clip,
        frames,
        if args.no_infer { "OFF (decode only)" } else { "on every frame" },
        args.batch_size.map(|b| b.to_string()).unwrap_or_else(|| "= streams (max 8)".into()),
        args.decoder_threads
    );
    let (mut good, mut bad) = (0usize, None::<usize>);
    let mut n = 1;
    // Double until a trial fails or N is reached, then bisect between the last good and bad.
    loop {
        let t = trial(args, &clip, n, frames as u64, secs)?;
        if t.ok {
            good = n;
            if n == max {
                break;
            }
            n = match bad {
                None => (n * 2).min(max),
                Some(b) => (n + b) / 2,
            };
        } else {
            bad = Some(n);
            n = (good + n) / 2;
        }
        if let Some(b) = bad
            && (b - good <= 1 || n <= good)
        {
            break;
        }
    }
    println!("bench result: {good} real-time stream(s) (searched up to {max})");
    Ok(0)
}
