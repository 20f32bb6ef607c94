//! Build-time timing of single nodes on this machine, for choices a build makes per layer
//! (INT8 or f32 for each convolution): the node runs alone in a one-node engine with its
//! planned input shapes, and the median of several runs is its time.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use crate::context::Context;
use crate::engine::{BuildInfo, Engine, Target};
use crate::error::Result;
use crate::graph::{Dim, Graph};
use crate::invalid;
use crate::plan::Plan;
use crate::tensor::{DType, Tensor};

/// Timed runs per node (after two warm-up runs).
pub const RUNS: usize = 7;

/// The median time in seconds of node `i` of `graph`, with the input types of `plan` (a
/// plan of `graph`), on `threads` threads. Inputs are filled with a constant; the kernels'
/// time does not depend on the values.
pub fn time_node(graph: &Graph, plan: &Plan, i: usize, threads: usize) -> Result<f64> {
    let node = &graph.nodes[i];
    let mut g = Graph { values: graph.values.clone(), opset: graph.opset, ..Graph::default() };
    let mut shapes = HashMap::new();
    for &v in node.inputs.iter().flatten() {
        if let Some(c) = graph.constants.get(&v) {
            g.constants.insert(v, c.clone());
        } else if !g.inputs.contains(&v) {
            let Some(t) = plan.types.get(v).cloned().flatten() else {
                invalid!("node `{}`: input `{}` has no planned type", node.name, graph.values[v].name);
            };
            // A one-node graph's inputs need declared types, which inner values may lack.
            g.values[v].dtype = Some(t.dtype);
            g.values[v].shape = Some(t.shape.iter().map(|&d| Dim::Fixed(d)).collect());
            g.inputs.push(v);
            shapes.insert(graph.values[v].name.clone(), t.shape);
        }
    }
    g.outputs = node.outputs.iter().flatten().copied().collect();
    g.nodes.push(node.clone());
    let engine = Arc::new(Engine { graph: g, target: Target::host_cpu(), build: BuildInfo::default() });
    let mut ctx = Context::with_threads(engine.clone(), &shapes, threads)?;
    for &v in &engine.graph.inputs {
        let name = &engine.graph.values[v].name;
        let Some(t) = plan.types.get(v).cloned().flatten() else { continue };
        let value = match t.dtype {
            DType::F32 => Tensor::from_f32(&t.shape, vec![0.25; t.shape.iter().product()])?,
            other => Tensor::zeros(other, &t.shape),
        };
        ctx.set_input(name, &value)?;
    }
    for _ in 0..2 {
        ctx.run()?;
    }
    let mut times = [0f64; RUNS];
    for t in &mut times {
        let t0 = Instant::now();
        ctx.run()?;
        *t = t0.elapsed().as_secs_f64();
    }
    times.sort_by(f64::total_cmp);
    Ok(times[RUNS / 2])
}
