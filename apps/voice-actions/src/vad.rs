//! Silero VAD over the stream, to skip the keyword embedding when nobody speaks.
//!
//! `models/kws/silero_vad_16k_conv2d.onnx` (Silero VAD 6.2.3, MIT; its 1-D convolutions
//! rewritten as 2-D ones by `models/kws/vad_conv2d.py`, same weights): each run reads 512 new
//! samples after the 64 before them (`input` [1, 576]) and the LSTM state (`state`
//! [2, 1, 128]), and gives the speech probability of those 32 ms and the next state.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context as _, Result, bail};
use edgert_core::{Context, Engine, onnx};

/// New samples per VAD run (32 ms).
pub const VAD_CHUNK: usize = 512;
/// Samples of context before them.
pub const VAD_CONTEXT: usize = 64;
const STATE: usize = 2 * 128;

/// Streaming Silero VAD: push any number of samples, read the highest speech probability
/// of the 32 ms chunks they completed.
pub struct Vad {
    ctx: Context,
    /// The last 64 samples, then the pending new ones (< 512).
    buf: Vec<f32>,
    state: Vec<f32>,
}

impl Vad {
    /// Loads a Silero VAD model with `input` [1, 576] and `state` [2, 1, 128].
    pub fn new(model: &Path) -> Result<Vad> {
        let graph = onnx::load_model(model).with_context(|| {
            format!(
                "loading the VAD {} (models/kws/vad_conv2d.py makes it; --no-vad turns gating off)",
                model.display()
            )
        })?;
        let shapes: HashMap<String, Vec<usize>> =
            [("input".to_string(), vec![1, VAD_CONTEXT + VAD_CHUNK]), ("state".to_string(), vec![2, 1, 128])].into();
        let engine = Arc::new(Engine::build(graph, Some(&shapes))?);
        let ctx = Context::new(engine, &shapes)?;
        let mut v = Vad { ctx, buf: Vec::with_capacity(VAD_CONTEXT + VAD_CHUNK), state: vec![0.0; STATE] };
        v.reset();
        Ok(v)
    }

    /// Forgets the audio and the LSTM state.
    pub fn reset(&mut self) {
        self.buf.clear();
        self.buf.resize(VAD_CONTEXT, 0.0);
        self.state.fill(0.0);
    }

    /// Feeds samples; returns the highest speech probability of the chunks they completed
    /// (None if they completed none). Allocates nothing.
    pub fn push(&mut self, mut x: &[f32]) -> Result<Option<f32>> {
        let mut best: Option<f32> = None;
        while !x.is_empty() {
            let take = (VAD_CONTEXT + VAD_CHUNK - self.buf.len()).min(x.len());
            self.buf.extend_from_slice(&x[..take]);
            x = &x[take..];
            if self.buf.len() == VAD_CONTEXT + VAD_CHUNK {
                let p = self.run()?;
                best = Some(best.map_or(p, |b: f32| b.max(p)));
                self.buf.copy_within(VAD_CHUNK.., 0);
                self.buf.truncate(VAD_CONTEXT);
            }
        }
        Ok(best)
    }

    fn run(&mut self) -> Result<f32> {
        self.ctx.input_mut("input")?.as_f32_mut()?.copy_from_slice(&self.buf);
        self.ctx.input_mut("state")?.as_f32_mut()?.copy_from_slice(&self.state);
        self.ctx.run()?;
        let p = self.ctx.output_ref(0)?.as_f32()?.first().copied();
        let out = self.ctx.output_ref(1)?;
        let s = out.as_f32()?;
        if s.len() != STATE {
            bail!("the VAD's second output has {} values, expected a [2, 1, 128] state", s.len());
        }
        self.state.copy_from_slice(s);
        match p {
            Some(p) => Ok(p),
            None => bail!("the VAD gave no speech probability"),
        }
    }
}
