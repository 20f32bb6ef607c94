//! `voice-actions`: keyword spotting on edgert.
//!
//! * `voice-actions detect URI`: runs the shipped keyword heads over a source and prints one
//!   JSON line per detection (`{"keyword":"lights on","score":0.93,"t_ms":1840}`), exiting at
//!   the end of a file; `--stats` adds a last line with the real-time factor.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use clap::{Parser, Subcommand};
use voice_actions::Detector;

#[derive(Parser)]
#[command(name = "voice-actions", about = "On-device keyword spotting that triggers actions (edgert sample app)")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run the keyword heads over an audio source; one JSON line per detection.
    Detect {
        /// Audio source: file://PATH.wav or a path (alsa://, pulse://, rtsp:// not built yet).
        uri: String,
        /// Heads file (keyword, ONNX head, threshold).
        #[arg(long, default_value = "models/kws/heads.json")]
        heads: PathBuf,
        /// Speech embedding model.
        #[arg(long, default_value = "models/speech_embedding.onnx")]
        embedding: PathBuf,
        /// No second trigger of a keyword within this many ms.
        #[arg(long, default_value_t = 1500)]
        refractory_ms: u64,
        /// Print a final JSON line with audio length, compute time and real-time factor.
        #[arg(long)]
        stats: bool,
    },
}

fn main() -> Result<()> {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    match Cli::parse().cmd {
        Cmd::Detect { uri, heads, embedding, refractory_ms, stats } => {
            let mut det = Detector::new(&embedding, &heads)?;
            det.refractory_ms = refractory_ms;
            let mut src = edgert_audio::open(&uri)?;
            let mut buf = vec![0.0f32; 1280];
            let stdout = std::io::stdout();
            let mut out = stdout.lock();
            let mut compute = std::time::Duration::ZERO;
            let mut io_err = None;
            loop {
                let n = src.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                let t0 = Instant::now();
                det.push(&buf[..n], |_, d| {
                    if let Some(d) = d {
                        let line = serde_json::to_string(&d).unwrap_or_default();
                        if let Err(e) = writeln!(out, "{line}") {
                            io_err = Some(e);
                        }
                    }
                })?;
                compute += t0.elapsed();
            }
            if let Some(e) = io_err {
                return Err(e.into());
            }
            if stats {
                let audio_s = det.t_ms() as f64 / 1000.0;
                let rtf = if audio_s > 0.0 { compute.as_secs_f64() / audio_s } else { 0.0 };
                writeln!(
                    out,
                    "{}",
                    serde_json::json!({"stats": {"audio_s": audio_s, "compute_s": compute.as_secs_f64(), "rtf": rtf}})
                )?;
            }
            Ok(())
        }
    }
}
