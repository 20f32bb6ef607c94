//! `voice-actions`: keyword spotting on edgert.
//!
//! * `voice-actions detect URI`: runs the shipped keyword heads over a source and prints one
//!   JSON line per detection (`{"keyword":"lights on","score":0.93,"t_ms":1840}`), exiting at
//!   the end of a file; `--stats` adds a last line with the real-time factor.
//! * `voice-actions eval DIR`: false-reject rate per keyword, false accepts per hour and
//!   trigger latency over a labelled set (`models/kws/make_eval_set.py`).
//! * `voice-actions run --config actions.toml URI`: runs the configured actions
//!   (`voice_actions::actions`), JSON events on stdout, triggers logged on stderr, and with
//!   `--meter` a live level/score line on stderr.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use clap::{Parser, Subcommand};
use voice_actions::actions::{Config, Runner};
use voice_actions::{Detector, Embedding};

/// Which models compute the speech embedding.
#[derive(clap::Args, Clone)]
struct Models {
    /// Heads file (keyword, ONNX head, threshold).
    #[arg(long, default_value = "models/kws/heads.json")]
    heads: PathBuf,
    /// Streaming log-mel front end (models/kws/split_embedding.py makes it).
    #[arg(long, default_value = "models/kws/speech_embedding_frontend.onnx")]
    frontend: PathBuf,
    /// Conv body of the speech embedding over 76 log-mel frames: the ONNX model, or an
    /// engine built from it (`edgert build BODY -o body.edgert --precision int8|fp16 ...`).
    #[arg(long, default_value = "models/kws/speech_embedding_body.onnx")]
    body: PathBuf,
    /// A whole-window embedding model instead (samples:0 [1, 12400], e.g.
    /// models/speech_embedding.onnx): recomputes the window's 76 frames every step.
    #[arg(long)]
    embedding: Option<PathBuf>,
    /// Silero VAD that gates the embedding and the heads (models/kws/vad_conv2d.py makes it).
    #[arg(long, default_value = "models/kws/silero_vad_16k_conv2d.onnx")]
    vad: PathBuf,
    /// Run the embedding and the heads on every step, speech or not.
    #[arg(long)]
    no_vad: bool,
}

impl Models {
    fn detector(&self) -> Result<Detector> {
        let e = match &self.embedding {
            Some(p) => Embedding::Whole(p.clone()),
            None => Embedding::Split { frontend: self.frontend.clone(), body: self.body.clone() },
        };
        let mut det = Detector::with_embedding(&e, &self.heads)?;
        if !self.no_vad {
            det.enable_vad(&self.vad)?;
        }
        Ok(det)
    }
}

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
        /// Audio source: file://PATH (WAV, FLAC, MP3, …), a path, alsa://DEVICE, pulse://[DEVICE] or rtsp://….
        uri: String,
        #[command(flatten)]
        models: Models,
        /// No second trigger of a keyword within this many ms.
        #[arg(long, default_value_t = 1500)]
        refractory_ms: u64,
        /// Print a final JSON line with audio length, compute time and real-time factor.
        #[arg(long)]
        stats: bool,
    },
    /// Run the actions a config maps keywords to.
    Run {
        /// Actions config (TOML).
        #[arg(long)]
        config: PathBuf,
        /// Audio source.
        uri: String,
        #[command(flatten)]
        models: Models,
        /// A live line on stderr: level and the top keyword scores.
        #[arg(long)]
        meter: bool,
    },
    /// Train a new keyword head on the device (not built yet: use models/kws/train.py).
    Train {
        /// The keyword.
        #[arg(long)]
        keyword: String,
    },
    /// False-reject rate per keyword, false accepts per hour and trigger latency over a
    /// labelled folder (models/kws/make_eval_set.py makes one).
    Eval {
        /// Folder with labels.json and its WAV files.
        dir: PathBuf,
        #[command(flatten)]
        models: Models,
        /// An utterance counts as detected if its keyword fires by this many ms after its end.
        #[arg(long, default_value_t = 1000)]
        late_ms: u64,
        /// Also write the full report (every false accept, every latency) as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
        /// One line per file on stderr.
        #[arg(long)]
        verbose: bool,
        /// Every head at this threshold instead of its own in the heads file (to trace the
        /// false-reject / false-accept trade-off).
        #[arg(long)]
        threshold: Option<f32>,
    },
}

fn run_actions(config: PathBuf, uri: String, models: Models, meter: bool) -> Result<()> {
    let mut det = models.detector()?;
    let known: Vec<String> = det.keywords().iter().map(|s| s.to_string()).collect();
    let known_ref: Vec<&str> = known.iter().map(String::as_str).collect();
    let cfg = Config::load(&config, &known_ref)?;
    for k in &cfg.keywords {
        if let Some(t) = k.threshold {
            det.set_threshold(&k.name, t);
        }
    }
    let mut runner = Runner::new(cfg);
    let mut src = edgert_audio::open(&uri)?;
    let mut buf = vec![0.0f32; 1280];
    let mut err = None;
    loop {
        let n = src.read(&mut buf)?;
        if n == 0 {
            break;
        }
        det.push(&buf[..n], |d, hit| {
            if meter {
                let mut top: Vec<(usize, f32)> = d.scores().iter().copied().enumerate().collect();
                top.sort_by(|a, b| b.1.total_cmp(&a.1));
                let kw = d.keywords();
                let s: Vec<String> = top.iter().take(3).map(|(i, s)| format!("{} {:.2}", kw[*i], s)).collect();
                eprint!("\r{:>7} ms  level {:>6.1} dB  {}   ", d.t_ms(), d.level_db(), s.join("  "));
            }
            if let Some(h) = hit
                && let Err(e) = runner.handle(&h)
            {
                err = Some(e);
            }
        })?;
        if let Some(e) = err.take() {
            return Err(e);
        }
    }
    if meter {
        eprintln!();
    }
    Ok(())
}

fn main() -> Result<()> {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    match Cli::parse().cmd {
        Cmd::Detect { uri, models, refractory_ms, stats } => {
            let mut det = models.detector()?;
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
                    serde_json::json!({"stats": {
                        "audio_s": audio_s, "compute_s": compute.as_secs_f64(), "rtf": rtf,
                        "steps": det.steps(), "embedding_runs": det.embedding_runs()}})
                )?;
            }
            Ok(())
        }
        Cmd::Run { config, uri, models, meter } => run_actions(config, uri, models, meter),
        Cmd::Train { keyword } => anyhow::bail!(
            "on-device training is not built yet; train `{keyword}` on a host with \
             models/kws/train.py (add it to KEYWORDS there) and copy models/kws/ to the device"
        ),
        Cmd::Eval { dir, models, late_ms, json, verbose, threshold } => {
            let mut det = models.detector()?;
            if let Some(t) = threshold {
                if !(0.0..=1.0).contains(&t) {
                    anyhow::bail!("--threshold {t}: a score threshold is between 0 and 1");
                }
                let keywords: Vec<String> = det.keywords().iter().map(|s| s.to_string()).collect();
                for k in &keywords {
                    det.set_threshold(k, t);
                }
            }
            let report = voice_actions::eval::evaluate(&mut det, &dir, late_ms, |file, found| {
                if verbose {
                    let k: Vec<String> = found.iter().map(|d| format!("{}@{}", d.keyword, d.t_ms)).collect();
                    eprintln!("{file}: {}", k.join(" "));
                }
            })?;
            print!("{}", report.markdown());
            if let Some(p) = json {
                std::fs::write(&p, serde_json::to_string_pretty(&report)?)
                    .map_err(|e| anyhow::anyhow!("writing {}: {e}", p.display()))?;
            }
            Ok(())
        }
    }
}
