//! The streaming keyword detector.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context as _, Result, bail};
use edgert_core::{Context, Engine, onnx};
use serde::{Deserialize, Serialize};

use crate::vad::Vad;

/// Samples per embedding step (80 ms at 16 kHz).
pub const HOP: usize = 1280;
/// Samples the speech embedding needs for one embedding (775 ms).
pub const EMB_WINDOW: usize = 12_400;
/// Embedding width.
pub const EMB_DIM: usize = 96;
/// Log-mel frames per embedding window (25 ms frames every 10 ms over 775 ms).
pub const MEL_FRAMES: usize = 76;
/// Mel bands.
pub const MEL_BANDS: usize = 32;
/// Log-mel frames one step adds.
pub const MEL_STEP: usize = 8;
/// Samples the streaming front end reads per step: the 1,280 new ones and the 240 before
/// them (a 400-sample frame every 160 samples).
pub const FRONT_CHUNK: usize = 1520;

/// Where the speech embedding comes from.
#[derive(Clone, Debug)]
pub enum Embedding {
    /// Streaming: `models/kws/speech_embedding_frontend.onnx` (1,520 samples → the 8 new
    /// log-mel frames) and `models/kws/speech_embedding_body.onnx` (76 frames → one
    /// embedding), made by `models/kws/split_embedding.py`. Each step computes only the new
    /// frames.
    Split {
        /// Front end model.
        frontend: PathBuf,
        /// Conv body model.
        body: PathBuf,
    },
    /// A model taking the whole 12,400-sample window (`samples:0` [1, 12400]), such as the
    /// shipped `models/speech_embedding.onnx`: every step recomputes the window's 76 frames.
    Whole(PathBuf),
}

impl Embedding {
    /// The split models under `root` (a repository checkout).
    pub fn split_in(root: &Path) -> Embedding {
        Embedding::Split {
            frontend: root.join("models/kws/speech_embedding_frontend.onnx"),
            body: root.join("models/kws/speech_embedding_body.onnx"),
        }
    }
}

// One per detector, made once: the size difference between the variants costs nothing.
#[allow(clippy::large_enum_variant)]
enum Emb {
    Whole { ctx: Context },
    Split { front: Context, body: Context, mel: Vec<f32>, silence_frame: Vec<f32> },
}

/// One keyword head as listed in `heads.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct HeadSpec {
    /// The keyword ("lights on").
    pub keyword: String,
    /// ONNX file, relative to the heads file.
    pub file: String,
    /// Score at or above which the keyword fires.
    pub threshold: f32,
    /// Embeddings the head looks at.
    pub window: usize,
}

/// `heads.json`: the embedding model and the heads.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Heads {
    /// Path of the speech embedding model, relative to the repository root (informative).
    pub embedding_model: String,
    /// Common window of the heads.
    pub window: usize,
    /// The heads.
    pub heads: Vec<HeadSpec>,
}

impl Heads {
    /// Reads a heads file.
    pub fn load(path: &Path) -> Result<(Heads, PathBuf)> {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let h: Heads = serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Ok((h, dir))
    }
}

/// A keyword detection.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Detection {
    /// The keyword.
    pub keyword: String,
    /// Its score (0..1).
    pub score: f32,
    /// Time of the end of the chunk that fired, in ms from the start of the stream.
    pub t_ms: u64,
}

struct Head {
    spec: HeadSpec,
    ctx: Context,
    last_fire: Option<u64>,
}

/// Streaming detector: push samples, get detections.
///
/// With a VAD (`enable_vad`), steps where nobody spoke within `vad_hangover_ms` skip the
/// embedding and the heads (the streaming front end still runs: it is cheap and keeps the
/// log-mel history). When speech starts, the embeddings the window lacks are computed from
/// that history first, so while the gate is open the scores are those of an ungated detector.
pub struct Detector {
    emb: Emb,
    heads: Vec<Head>,
    /// The last EMB_WINDOW + (window - 1) × HOP samples (the whole-window model recomputes
    /// skipped embeddings from them).
    audio: Vec<f32>,
    /// New samples not yet consumed by a step (< HOP).
    pending: Vec<f32>,
    /// The last `window` embeddings, oldest first, flattened.
    embeddings: Vec<f32>,
    window: usize,
    /// Samples consumed so far.
    samples: u64,
    /// Scores of the last step, per head.
    scores: Vec<f32>,
    /// No second trigger of one keyword within this many ms.
    pub refractory_ms: u64,
    /// Steps a decision waits after the first keyword crosses its threshold, keeping each
    /// head's peak: similar keywords ("lights on" while "lights off" is being said) cross
    /// first, the one said peaks higher. Adds this many × 80 ms of latency.
    pub decision_steps: usize,
    /// Peak score per head in the open decision, and steps left (0: none open).
    peaks: Vec<f32>,
    deciding: usize,
    /// Peak score of the head that fired last.
    fired_score: f32,
    vad: Option<Vad>,
    /// Speech probability at or above which a 32 ms chunk counts as speech.
    pub vad_threshold: f32,
    /// The embedding and heads run until this many ms after the last speech chunk.
    pub vad_hangover_ms: u64,
    last_speech_ms: Option<u64>,
    /// Embeddings of the window not computed (steps the VAD skipped), newest first.
    stale: usize,
    steps: u64,
    embedding_runs: u64,
}

/// A context for `model`: an ONNX model (optimized here, FP32) or an engine file made by
/// `edgert build` (in the precision it was built with, e.g. `--precision int8`).
fn plan_engine(model: &Path, shapes: &[(&str, Vec<usize>)]) -> Result<Context> {
    let shapes: HashMap<String, Vec<usize>> = shapes.iter().map(|(n, s)| (n.to_string(), s.clone())).collect();
    let engine = if Engine::is_engine_file(model) {
        let engine = Engine::load(model).with_context(|| format!("loading engine {}", model.display()))?;
        if !engine.build.precision.is_empty() && engine.build.precision != "fp32" {
            log::info!("{}: a {} engine", model.display(), engine.build.precision);
        }
        engine
    } else {
        let graph = onnx::load_model(model).with_context(|| format!("loading {}", model.display()))?;
        Engine::build(graph, Some(&shapes))?
    };
    Ok(Context::new(Arc::new(engine), &shapes)?)
}

impl Detector {
    /// Loads a whole-window embedding model (`samples:0` [1, 12400]) and the heads listed in
    /// `heads_file`.
    pub fn new(embedding_model: &Path, heads_file: &Path) -> Result<Detector> {
        Detector::with_embedding(&Embedding::Whole(embedding_model.to_path_buf()), heads_file)
    }

    /// Loads the embedding (streaming split or whole window) and the heads in `heads_file`.
    pub fn with_embedding(embedding: &Embedding, heads_file: &Path) -> Result<Detector> {
        let (spec, dir) = Heads::load(heads_file)?;
        let emb = match embedding {
            Embedding::Whole(model) => Emb::Whole { ctx: plan_engine(model, &[("samples:0", vec![1, EMB_WINDOW])])? },
            Embedding::Split { frontend, body } => {
                let mut front = plan_engine(frontend, &[("samples", vec![1, FRONT_CHUNK])]).with_context(|| {
                    "the streaming front end is made by models/kws/split_embedding.py; \
                     or pass --embedding models/speech_embedding.onnx for the whole-window model"
                })?;
                let body = plan_engine(body, &[("log_mel", vec![1, MEL_FRAMES, MEL_BANDS])])?;
                // The window starts as silence: every frame of zeros is the same frame.
                front.input_mut("samples")?.as_f32_mut()?.fill(0.0);
                front.run()?;
                let out = front.output_ref(0)?;
                let frames = out.as_f32()?;
                if frames.len() != MEL_STEP * MEL_BANDS {
                    bail!(
                        "{}: front end gives {} values per step, expected {MEL_STEP}x{MEL_BANDS}",
                        frontend.display(),
                        frames.len()
                    );
                }
                let silence_frame = frames[..MEL_BANDS].to_vec();
                let mel = silence_frame.repeat(MEL_FRAMES + MEL_STEP * (spec.window.max(1) - 1));
                Emb::Split { front, body, mel, silence_frame }
            }
        };
        let window = spec.window;
        if window == 0 {
            bail!("{}: window 0 (heads read at least one embedding)", heads_file.display());
        }
        let mut heads = Vec::new();
        for h in &spec.heads {
            if h.window != window {
                bail!("head `{}` has window {}, the heads file says {}", h.keyword, h.window, window);
            }
            let ctx = plan_engine(&dir.join(&h.file), &[("embeddings", vec![1, window, EMB_DIM])])
                .with_context(|| format!("head `{}`", h.keyword))?;
            heads.push(Head { spec: h.clone(), ctx, last_fire: None });
        }
        let n = heads.len();
        Ok(Detector {
            emb,
            heads,
            audio: vec![0.0; EMB_WINDOW + HOP * (window - 1)],
            pending: Vec::with_capacity(HOP),
            embeddings: vec![0.0; window * EMB_DIM],
            window,
            samples: 0,
            scores: vec![0.0; n],
            refractory_ms: 1500,
            decision_steps: 2,
            peaks: vec![0.0; n],
            deciding: 0,
            fired_score: 0.0,
            vad: None,
            vad_threshold: 0.5,
            vad_hangover_ms: 1000,
            last_speech_ms: None,
            stale: 0,
            steps: 0,
            embedding_runs: 0,
        })
    }

    /// Gates the embedding and the heads on Silero VAD (`model`, e.g.
    /// `models/kws/silero_vad_16k_conv2d.onnx`).
    pub fn enable_vad(&mut self, model: &Path) -> Result<()> {
        self.vad = Some(Vad::new(model)?);
        Ok(())
    }

    /// Steps so far (80 ms each).
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// Embeddings computed so far (one per step without a VAD; fewer with one, on audio
    /// without speech).
    pub fn embedding_runs(&self) -> u64 {
        self.embedding_runs
    }

    /// The keywords, in head order.
    pub fn keywords(&self) -> Vec<&str> {
        self.heads.iter().map(|h| h.spec.keyword.as_str()).collect()
    }

    /// The thresholds, in head order.
    pub fn thresholds(&self) -> Vec<f32> {
        self.heads.iter().map(|h| h.spec.threshold).collect()
    }

    /// Sets a keyword's threshold; false if no head has that keyword.
    pub fn set_threshold(&mut self, keyword: &str, threshold: f32) -> bool {
        match self.heads.iter_mut().find(|h| h.spec.keyword == keyword) {
            Some(h) => {
                h.spec.threshold = threshold;
                true
            }
            None => false,
        }
    }

    /// RMS level of the current audio window in dBFS.
    pub fn level_db(&self) -> f32 {
        let tail = &self.audio[self.audio.len() - HOP..];
        let ms = tail.iter().map(|v| v * v).sum::<f32>() / HOP as f32;
        10.0 * (ms + 1e-10).log10()
    }

    /// Scores of the last step, in head order.
    pub fn scores(&self) -> &[f32] {
        &self.scores
    }

    /// The embedding window (oldest first), `window × 96`.
    pub fn embeddings(&self) -> &[f32] {
        &self.embeddings
    }

    /// Feeds samples; calls `on_step` after every 80 ms step (with the detections of that
    /// step, usually none). Allocates nothing in steady state.
    pub fn push(&mut self, mut x: &[f32], mut on_step: impl FnMut(&Detector, Option<Detection>)) -> Result<()> {
        while !x.is_empty() {
            let take = (HOP - self.pending.len()).min(x.len());
            self.pending.extend_from_slice(&x[..take]);
            x = &x[take..];
            if self.pending.len() == HOP {
                let fired = self.step()?;
                self.pending.clear();
                match fired {
                    Some(i) => {
                        let h = &self.heads[i];
                        let d =
                            Detection { keyword: h.spec.keyword.clone(), score: self.fired_score, t_ms: self.t_ms() };
                        on_step(self, Some(d));
                    }
                    None => on_step(self, None),
                }
            }
        }
        Ok(())
    }

    /// Back to the state of a new detector (silence before, nothing consumed, no refractory
    /// period running), keeping the planned engines and the thresholds.
    pub fn reset(&mut self) {
        self.audio.fill(0.0);
        self.pending.clear();
        self.embeddings.fill(0.0);
        self.samples = 0;
        self.scores.fill(0.0);
        self.peaks.fill(0.0);
        self.deciding = 0;
        self.fired_score = 0.0;
        self.last_speech_ms = None;
        self.stale = 0;
        self.steps = 0;
        self.embedding_runs = 0;
        if let Some(v) = &mut self.vad {
            v.reset();
        }
        for h in &mut self.heads {
            h.last_fire = None;
        }
        if let Emb::Split { mel, silence_frame, .. } = &mut self.emb {
            for f in mel.chunks_exact_mut(MEL_BANDS) {
                f.copy_from_slice(silence_frame);
            }
        }
    }

    /// Milliseconds of audio consumed.
    pub fn t_ms(&self) -> u64 {
        self.samples * 1000 / edgert_audio::SAMPLE_RATE as u64
    }

    /// One 80 ms step: new embedding, every head. Returns the head that fired, if any: once a
    /// head out of its refractory period crosses its threshold, `decision_steps` more steps
    /// run and the head with the highest peak fires.
    fn step(&mut self) -> Result<Option<usize>> {
        let n = self.audio.len();
        self.audio.copy_within(HOP.., 0);
        self.audio[n - HOP..].copy_from_slice(&self.pending);
        self.samples += HOP as u64;
        self.steps += 1;
        if let Emb::Split { front, mel, .. } = &mut self.emb {
            // Always: the log-mel history must hold the frames of skipped steps.
            front.input_mut("samples")?.as_f32_mut()?.copy_from_slice(&self.audio[n - FRONT_CHUNK..]);
            front.run()?;
            let m = mel.len();
            mel.copy_within(MEL_STEP * MEL_BANDS.., 0);
            mel[m - MEL_STEP * MEL_BANDS..].copy_from_slice(front.output_ref(0)?.as_f32()?);
        }
        let now = self.t_ms();
        let w = self.window;
        self.embeddings.copy_within(EMB_DIM.., 0);
        let open = match &mut self.vad {
            None => true,
            Some(vad) => {
                if vad.push(&self.pending)?.is_some_and(|p| p >= self.vad_threshold) {
                    self.last_speech_ms = Some(now);
                }
                self.last_speech_ms.is_some_and(|t| now - t <= self.vad_hangover_ms)
            }
        };
        if !open {
            self.stale = (self.stale + 1).min(w - 1);
            self.scores.fill(0.0);
        } else {
            // Embeddings of skipped steps first (oldest first), then this step's.
            for j in (0..=self.stale).rev() {
                let e = embed(&mut self.emb, &self.audio, j)?;
                self.embeddings[(w - 1 - j) * EMB_DIM..(w - j) * EMB_DIM].copy_from_slice(&e[..EMB_DIM]);
                self.embedding_runs += 1;
            }
            self.stale = 0;
        }
        let mut crossed = false;
        for (i, h) in self.heads.iter_mut().enumerate() {
            if !open {
                break;
            }
            {
                let mut inp = h.ctx.input_mut("embeddings")?;
                inp.as_f32_mut()?.copy_from_slice(&self.embeddings);
            }
            h.ctx.run()?;
            let Some(&s) = h.ctx.output_ref(0)?.as_f32()?.first() else {
                bail!("head `{}` gave no score", h.spec.keyword);
            };
            self.scores[i] = s;
            let ready = h.last_fire.is_none_or(|t| now.saturating_sub(t) >= self.refractory_ms);
            if s >= h.spec.threshold && ready {
                crossed = true;
                self.peaks[i] = self.peaks[i].max(s);
            }
        }
        if self.deciding == 0 {
            if !crossed {
                return Ok(None);
            }
            self.deciding = self.decision_steps + 1;
        }
        self.deciding -= 1;
        if self.deciding > 0 {
            return Ok(None);
        }
        // Decide: the head with the highest peak fires; every head that crossed is then in
        // its refractory period (one utterance, one trigger).
        let mut best: Option<usize> = None;
        for (i, &p) in self.peaks.iter().enumerate() {
            if p > 0.0 && best.is_none_or(|b| p > self.peaks[b]) {
                best = Some(i);
            }
        }
        self.fired_score = best.map_or(0.0, |b| self.peaks[b]);
        for (i, p) in self.peaks.iter_mut().enumerate() {
            if *p > 0.0 {
                self.heads[i].last_fire = Some(now);
            }
            *p = 0.0;
        }
        Ok(best)
    }
}

/// The embedding of the step `j` steps before the last one: from the log-mel history (split)
/// or the audio history (whole window).
fn embed<'a>(emb: &'a mut Emb, audio: &[f32], j: usize) -> Result<&'a [f32]> {
    let out = match emb {
        Emb::Whole { ctx } => {
            let end = audio.len() - j * HOP;
            ctx.input_mut("samples:0")?.as_f32_mut()?.copy_from_slice(&audio[end - EMB_WINDOW..end]);
            ctx.run()?;
            ctx.output_ref(0)?
        }
        Emb::Split { body, mel, .. } => {
            let end = mel.len() - j * MEL_STEP * MEL_BANDS;
            body.input_mut("log_mel")?.as_f32_mut()?.copy_from_slice(&mel[end - MEL_FRAMES * MEL_BANDS..end]);
            body.run()?;
            body.output_ref(0)?
        }
    };
    let e = out.as_f32()?;
    if e.len() < EMB_DIM {
        bail!("the embedding model gave {} values, expected {EMB_DIM}", e.len());
    }
    Ok(e)
}
