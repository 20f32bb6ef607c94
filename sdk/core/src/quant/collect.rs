//! Calibration runs: the float32 engine over the user's samples, observing the tensors an
//! INT8 build needs scales for.

use std::collections::HashMap;
use std::sync::Arc;

use super::Calibrator;
use crate::context::Context;
use crate::engine::{BuildInfo, Engine, Target};
use crate::error::Result;
use crate::graph::{Graph, ValueId};
use crate::invalid;
use crate::tensor::Tensor;

/// One calibration sample: a value for each graph input, by name.
pub type Sample = HashMap<String, Tensor>;

/// Runs the (already optimized) float32 `graph` on every sample and collects the statistics
/// of `values`. `progress` is called after each sample with the count so far. A sample whose
/// input shapes differ from the previous one's gets a new context (planning allocates; the
/// runs themselves do not).
pub fn collect(
    graph: &Graph,
    values: &[ValueId],
    samples: &mut dyn Iterator<Item = Result<Sample>>,
    threads: usize,
    progress: &mut dyn FnMut(usize),
) -> Result<Calibrator> {
    let mut g = graph.clone();
    // The observed tensors become extra graph outputs, so the planner keeps them readable.
    let first_extra = g.outputs.len();
    g.outputs.extend(values.iter().copied());
    let engine = Arc::new(Engine { graph: g, target: Target::host_cpu(), build: BuildInfo::default() });
    let names: Vec<String> = values.iter().map(|&v| engine.graph.values[v].name.clone()).collect();
    let mut calibrator = Calibrator::new();
    // The context, with the input shapes it was planned for.
    type Shapes = Vec<(String, Vec<usize>)>;
    let mut ctx: Option<(Shapes, Context)> = None;
    let mut count = 0;
    for sample in samples {
        let sample = sample?;
        let mut shapes: Vec<(String, Vec<usize>)> =
            sample.iter().map(|(k, t)| (k.clone(), t.shape().to_vec())).collect();
        shapes.sort();
        let reuse = ctx.as_ref().is_some_and(|(s, _)| *s == shapes);
        if !reuse {
            let map: HashMap<String, Vec<usize>> = shapes.iter().cloned().collect();
            ctx = Some((shapes, Context::with_threads(engine.clone(), &map, threads)?));
        }
        let Some((_, c)) = ctx.as_mut() else { invalid!("no calibration context") };
        for (name, t) in &sample {
            c.set_input(name, t)?;
        }
        c.run()?;
        for (k, name) in names.iter().enumerate() {
            let out = c.output_ref(first_extra + k)?;
            calibrator.observe(name, out.as_f32()?);
        }
        count += 1;
        progress(count);
    }
    if count == 0 {
        invalid!("calibration needs at least one sample, got none");
    }
    Ok(calibrator)
}
