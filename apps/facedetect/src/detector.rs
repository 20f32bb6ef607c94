//! BlazeFace (or a face model with the same outputs) on batches of frames: fills the
//! engine's input in place, runs, decodes the anchors, applies weighted NMS and maps the
//! boxes to source pixels.

use std::collections::HashMap;
use std::sync::Arc;

use anyhow::{Context as _, Result, anyhow, bail};
use edgert_core::tensor::DataMut;
use edgert_core::{Context, Engine};
use edgert_media::postprocess::blazeface::{FaceModelSpec, decode};
use edgert_media::postprocess::nms::weighted_nms;
use edgert_media::{Detection, Frame, InputFormat, rgb_to_input};

/// Most faces reported per frame.
const MAX_FACES: usize = 100;

/// One worker's detector: a context for full batches and one for single frames.
pub struct Detector {
    batched: Option<(usize, Context)>,
    /// Why the batched context could not be made, when it could not.
    batch_refusal: Option<String>,
    single: Context,
    input: String,
    spec: FaceModelSpec,
    fmt: InputFormat,
    /// Output indices: (regressors, scores).
    outputs: (usize, usize),
    scratch: Vec<Detection>,
}

/// Reads the model's input name and size, and the spec that matches its anchor count.
pub fn model_spec(engine: &Arc<Engine>) -> Result<(String, FaceModelSpec, (usize, usize))> {
    let g = &engine.graph;
    let &id = g.inputs.first().ok_or_else(|| anyhow!("the model has no input"))?;
    let name = g.values[id].name.clone();
    let ctx = Context::new(engine.clone(), &HashMap::new())
        .with_context(|| format!("planning the model for its declared input shape (input `{name}`)"))?;
    let shape = ctx.plan().types[id].as_ref().map(|t| t.shape.clone()).unwrap_or_default();
    if shape.len() != 4 || shape[1] != 3 {
        bail!("input `{name}` has shape {shape:?}; a face model takes [N, 3, H, W] RGB");
    }
    let outs = output_roles(&ctx)?;
    let mut ctx = ctx;
    let n = ctx.output_ref(outs.1)?.shape.iter().product::<usize>();
    let spec = FaceModelSpec::for_num_anchors(n).ok_or_else(|| {
        anyhow!("the model scores {n} anchors: known are 896 (BlazeFace short range) and 2304 (full range)")
    })?;
    if (shape[2], shape[3]) != (spec.input_size.1, spec.input_size.0) {
        bail!("input {shape:?} does not match the {} model's {:?}", spec.name, spec.input_size);
    }
    Ok((name, spec, outs))
}

/// Tells the regressors (last dim 16) from the scores (last dim 1).
fn output_roles(ctx: &Context) -> Result<(usize, usize)> {
    let plan = ctx.plan();
    let g = &ctx.engine().graph;
    let mut reg = None;
    let mut score = None;
    for (i, &o) in g.outputs.iter().enumerate() {
        let last = plan.types[o].as_ref().and_then(|t| t.shape.last().copied());
        match last {
            Some(1) => score = Some(i),
            Some(16) => reg = Some(i),
            _ => {}
        }
    }
    match (reg, score) {
        (Some(r), Some(s)) => Ok((r, s)),
        _ => bail!("expected two outputs, regressors [.., 16] and scores [.., 1]"),
    }
}

impl Detector {
    /// A detector running `batch` frames per inference where the model allows it (falls
    /// back to one frame per run, and says so once, when planning a batch fails).
    pub fn new(engine: Arc<Engine>, batch: usize, threshold: Option<f32>) -> Result<Detector> {
        let (input, mut spec, outputs) = model_spec(&engine)?;
        if let Some(t) = threshold {
            spec.decode.min_score_thresh = t;
        }
        let (w, h) = spec.input_size;
        let shape = |n: usize| HashMap::from([(input.clone(), vec![n, 3, h, w])]);
        let single = Context::new(engine.clone(), &shape(1))?;
        let (batched, batch_refusal) = if batch > 1 {
            match Context::new(engine.clone(), &shape(batch)) {
                Ok(mut c) => {
                    let n_scores = c.output_ref(outputs.1)?.shape.iter().product::<usize>();
                    if n_scores == batch * spec.anchors.len() {
                        (Some((batch, c)), None)
                    } else {
                        (None, Some("the model's output does not scale with the batch".to_string()))
                    }
                }
                Err(e) => (None, Some(format!("the model cannot be planned for it: {e}"))),
            }
        } else {
            (None, None)
        };
        if let Some(why) = &batch_refusal {
            log::info!("batch {batch}: {why}; running frames one by one");
        }
        Ok(Detector {
            batched,
            batch_refusal,
            single,
            input,
            spec,
            fmt: InputFormat::mediapipe_nchw(),
            outputs,
            scratch: Vec::new(),
        })
    }

    /// The model spec (input size, anchors, thresholds).
    pub fn spec(&self) -> &FaceModelSpec {
        &self.spec
    }

    /// Why inference runs at batch 1 although more was asked for (None when it was not
    /// refused).
    pub fn batch_refusal(&self) -> Option<&str> {
        self.batch_refusal.as_deref()
    }

    /// The batch size inference runs at.
    pub fn batch(&self) -> usize {
        self.batched.as_ref().map(|b| b.0).unwrap_or(1)
    }

    /// Detections for each frame, in source pixels.
    pub fn detect(&mut self, frames: &[Frame]) -> Result<Vec<Vec<Detection>>> {
        let mut out = Vec::with_capacity(frames.len());
        let mut rest = frames;
        while !rest.is_empty() {
            let n = match &self.batched {
                Some((b, _)) if rest.len() >= *b => *b,
                _ => 1,
            };
            let (chunk, tail) = rest.split_at(n);
            rest = tail;
            let ctx = if n > 1 { &mut self.batched.as_mut().expect("batched context").1 } else { &mut self.single };
            run_chunk(ctx, &self.input, &self.fmt, &self.spec, self.outputs, chunk, &mut self.scratch, &mut out)?;
        }
        Ok(out)
    }
}

#[allow(clippy::too_many_arguments)]
fn run_chunk(
    ctx: &mut Context,
    input: &str,
    fmt: &InputFormat,
    spec: &FaceModelSpec,
    (ri, si): (usize, usize),
    frames: &[Frame],
    scratch: &mut Vec<Detection>,
    out: &mut Vec<Vec<Detection>>,
) -> Result<()> {
    let (w, h) = spec.input_size;
    let per = 3 * w * h;
    {
        let mut t = ctx.input_mut(input)?;
        let DataMut::F32(buf) = &mut t.data else { bail!("input `{input}` is not float32") };
        for (i, f) in frames.iter().enumerate() {
            if (f.width as usize, f.height as usize) != (w, h) {
                bail!("frame {}x{} does not match the model input {w}x{h}", f.width, f.height);
            }
            rgb_to_input(&f.rgb, w, h, fmt, &mut buf[i * per..(i + 1) * per])?;
        }
    }
    ctx.run()?;
    let na = spec.anchors.len();
    let nc = spec.decode.num_coords;
    let reg = ctx.output(ri)?;
    let scores = ctx.output(si)?;
    let (reg, scores) = (reg.as_f32()?, scores.as_f32()?);
    for (i, f) in frames.iter().enumerate() {
        scratch.clear();
        let r = reg.get(i * na * nc..(i + 1) * na * nc).ok_or_else(|| anyhow!("short regressor output"))?;
        let s = scores.get(i * na..(i + 1) * na).ok_or_else(|| anyhow!("short score output"))?;
        decode(r, s, &spec.anchors, &spec.decode, scratch)?;
        let dets = weighted_nms(std::mem::take(scratch), spec.nms_iou, MAX_FACES);
        out.push(dets.iter().map(|d| f.letterbox.to_source(d)).collect());
    }
    Ok(())
}
