//! Planning: concrete shapes for given input shapes, plan-time evaluation of everything that
//! depends only on constants and shapes, and an arena layout from tensor live ranges.
//!
//! Every runtime value gets a byte offset in one buffer. Two values share memory only when
//! their live ranges (first write to last read, inclusive) do not overlap, or when an op
//! only reinterprets its input (`Op::alias_output`: Reshape, Squeeze, ...), in which case
//! they are one buffer and the step is skipped.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::graph::{Dim, Graph, ValueId, format_dims, node_error};
use crate::ops::{self, InferInput, TypeShape};
use crate::tensor::{DType, Tensor};

/// Arena offsets are multiples of this (cache line and AVX-512 vector size).
pub const ALIGN: usize = 64;

/// Where a value lives during execution.
#[derive(Clone, Debug)]
pub enum Slot {
    /// Not used at run time (an omitted optional output, or dead).
    Unused,
    /// A constant: an initializer or a value computed at plan time.
    Const(Arc<Tensor>),
    /// In the arena at `offset`.
    Arena {
        /// Byte offset, a multiple of [`ALIGN`].
        offset: usize,
    },
}

/// One node to execute.
#[derive(Clone, Debug)]
pub struct Step {
    /// Index into the graph's nodes.
    pub node: usize,
    /// Output value ids: the node's outputs, plus hidden values (ids past the graph's
    /// values) for optional outputs the model omits but the op computes anyway.
    pub outputs: Vec<ValueId>,
    /// All outputs alias an input: nothing to compute.
    pub skip: bool,
}

/// A plan for one set of input shapes.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Concrete type of every value (None for values never computed).
    pub types: Vec<Option<TypeShape>>,
    /// Where each value lives.
    pub slots: Vec<Slot>,
    /// The nodes left to run, in order.
    pub steps: Vec<Step>,
    /// Arena size in bytes.
    pub arena_bytes: usize,
    /// Largest sum of sizes of values live at the same time: no layout can be smaller.
    pub lower_bound_bytes: usize,
    /// Scratch bytes (the largest any step needs).
    pub scratch_bytes: usize,
    /// The input shapes this plan is for.
    pub input_shapes: BTreeMap<String, Vec<usize>>,
}

/// The arena layout of a plan, as stored in an engine file and shown by `edgert inspect`.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub struct PlanSummary {
    /// Input shapes the plan is for.
    pub input_shapes: BTreeMap<String, Vec<usize>>,
    /// Arena size in bytes.
    pub arena_bytes: usize,
    /// Lower bound on the arena size.
    pub lower_bound_bytes: usize,
    /// Scratch bytes.
    pub scratch_bytes: usize,
    /// Steps that run (excluding skipped aliases).
    pub steps: usize,
    /// `(value name, offset, bytes)` for each arena value.
    pub offsets: Vec<(String, usize, usize)>,
}

impl Plan {
    /// The layout summary.
    pub fn summary(&self, graph: &Graph) -> PlanSummary {
        let mut offsets = Vec::new();
        for (id, s) in self.slots.iter().enumerate() {
            if let (Slot::Arena { offset }, Some(t)) = (s, &self.types[id]) {
                // Ids past the graph's values are hidden outputs the model omits.
                let name = graph.values.get(id).map_or_else(|| format!("<omitted output {id}>"), |v| v.name.clone());
                offsets.push((name, *offset, t.bytes()));
            }
        }
        PlanSummary {
            input_shapes: self.input_shapes.clone(),
            arena_bytes: self.arena_bytes,
            lower_bound_bytes: self.lower_bound_bytes,
            scratch_bytes: self.scratch_bytes,
            steps: self.steps.iter().filter(|s| !s.skip).count(),
            offsets,
        }
    }
}

/// Concrete shapes of the graph inputs: from `given`, else from declared fixed dims.
/// Errors name the input and its declared shape.
pub fn resolve_input_shapes(
    graph: &Graph,
    given: &HashMap<String, Vec<usize>>,
) -> Result<BTreeMap<String, Vec<usize>>> {
    for name in given.keys() {
        if !graph.inputs.iter().any(|&i| &graph.values[i].name == name) {
            let names: Vec<&str> = graph.inputs.iter().map(|&i| graph.values[i].name.as_str()).collect();
            return Err(Error::Input { name: name.clone(), message: format!("no such input (inputs: {names:?})") });
        }
    }
    let mut symbols: HashMap<String, usize> = HashMap::new();
    let mut out = BTreeMap::new();
    for &id in &graph.inputs {
        let v = &graph.values[id];
        let declared = v.shape.clone();
        let shape = match (given.get(&v.name), &declared) {
            (Some(s), Some(d)) => {
                let ok = s.len() == d.len()
                    && s.iter().zip(d).all(|(&n, dim)| match dim {
                        Dim::Fixed(f) => *f == n,
                        Dim::Sym(name) if !name.is_empty() => *symbols.entry(name.clone()).or_insert(n) == n,
                        Dim::Sym(_) => true,
                    });
                if !ok {
                    return Err(Error::Input {
                        name: v.name.clone(),
                        message: format!("shape {s:?} does not fit the declared shape {}", format_dims(d)),
                    });
                }
                s.clone()
            }
            (Some(s), None) => s.clone(),
            (None, Some(d)) => d
                .iter()
                .map(|dim| match dim {
                    Dim::Fixed(f) => Ok(*f),
                    Dim::Sym(name) => symbols.get(name).copied().ok_or(()),
                })
                .collect::<std::result::Result<Vec<usize>, ()>>()
                .map_err(|_| Error::Input {
                    name: v.name.clone(),
                    message: format!("has symbolic dims {}: give its shape", format_dims(d)),
                })?,
            (None, None) => {
                return Err(Error::Input {
                    name: v.name.clone(),
                    message: "has no declared shape: give its shape".into(),
                });
            }
        };
        out.insert(v.name.clone(), shape);
    }
    Ok(out)
}

/// Plans `graph` for the given input shapes (see [`resolve_input_shapes`]).
pub fn plan(graph: &Graph, given: &HashMap<String, Vec<usize>>) -> Result<Plan> {
    let input_shapes = resolve_input_shapes(graph, given)?;
    let n = graph.values.len();
    let mut types: Vec<Option<TypeShape>> = vec![None; n];
    let mut consts: Vec<Option<Arc<Tensor>>> = vec![None; n];
    for (&id, t) in &graph.constants {
        types[id] = Some(TypeShape::new(t.dtype(), t.shape().to_vec()));
        consts[id] = Some(t.clone());
    }
    for &id in &graph.inputs {
        let v = &graph.values[id];
        let dtype =
            v.dtype.ok_or_else(|| Error::Input { name: v.name.clone(), message: "has no declared type".into() })?;
        types[id] = Some(TypeShape::new(dtype, input_shapes[&v.name].clone()));
    }

    // Shapes, and plan-time evaluation of nodes whose inputs are all known.
    let mut steps = Vec::new();
    for (ni, node) in graph.nodes.iter().enumerate() {
        let mut infer_in = Vec::with_capacity(node.inputs.len());
        for inp in &node.inputs {
            infer_in.push(match inp {
                None => None,
                Some(id) => {
                    let t = types[*id].as_ref().ok_or_else(|| {
                        node_error(node, Error::Invalid(format!("input `{}` has no type", graph.values[*id].name)))
                    })?;
                    Some(InferInput { dtype: t.dtype, shape: &t.shape, value: consts[*id].as_deref() })
                }
            });
        }
        let all_const = infer_in.iter().flatten().all(|i| i.value.is_some());
        let shape_only = shape_value(node.op_type.as_str(), &node.attrs, &infer_in).map_err(|e| node_error(node, e))?;
        let outs: Vec<(TypeShape, Option<Arc<Tensor>>)> = if let Some(t) = shape_only {
            vec![(TypeShape::new(t.dtype(), t.shape().to_vec()), Some(Arc::new(t)))]
        } else if all_const {
            let ins: Vec<Option<&Tensor>> = infer_in.iter().map(|i| i.and_then(|i| i.value)).collect();
            ops::eval(node.op.as_ref(), &ins)
                .map_err(|e| node_error(node, e))?
                .into_iter()
                .map(|t| (TypeShape::new(t.dtype(), t.shape().to_vec()), Some(Arc::new(t))))
                .collect()
        } else {
            let ts = node.op.infer(&infer_in).map_err(|e| node_error(node, e))?;
            ops::check_sizes(&ts).map_err(|e| node_error(node, e))?;
            // Trailing outputs the model omits and the op can skip get no buffer at all.
            let declared = node.outputs.iter().rposition(Option::is_some).map_or(0, |i| i + 1);
            let computed = ts.len().min(declared.max(node.op.required_outputs()));
            let mut outputs = Vec::with_capacity(computed);
            for (i, t) in ts.iter().take(computed).enumerate() {
                outputs.push(match node.outputs.get(i).copied().flatten() {
                    Some(o) => o,
                    None => {
                        types.push(Some(t.clone()));
                        consts.push(None);
                        types.len() - 1
                    }
                });
            }
            steps.push(Step { node: ni, outputs, skip: false });
            ts.into_iter().map(|t| (t, None)).collect()
        };
        if outs.len() < node.outputs.iter().flatten().count() || outs.len() < node.outputs.len() {
            return Err(node_error(
                node,
                Error::Invalid(format!("op produced {} outputs, node declares {}", outs.len(), node.outputs.len())),
            ));
        }
        for (o, (t, c)) in node.outputs.iter().zip(outs) {
            if let Some(o) = o {
                types[*o] = Some(t);
                consts[*o] = c;
            }
        }
    }
    if steps.iter().any(|s| graph.nodes[s.node].inputs.len() > MAX_INPUTS || s.outputs.len() > MAX_OUTPUTS) {
        return Err(Error::Invalid(format!(
            "a node has more than {MAX_INPUTS} inputs or {MAX_OUTPUTS} outputs, which the executor does not support"
        )));
    }

    // Live ranges in step time: graph inputs are written at time 0, step k at time k + 1.
    let n = types.len();
    let end = steps.len() + 1;
    let mut def = vec![usize::MAX; n];
    let mut last = vec![0usize; n];
    for &id in &graph.inputs {
        def[id] = 0;
    }
    for (k, s) in steps.iter().enumerate() {
        let node = &graph.nodes[s.node];
        for &o in &s.outputs {
            def[o] = k + 1;
            last[o] = last[o].max(k + 1);
        }
        for &i in node.inputs.iter().flatten() {
            last[i] = last[i].max(k + 1);
        }
    }
    // Outputs must survive the run, and inputs too: a caller may set inputs once and run
    // many times (benchmarks, a static mask), so no step may reuse an input's memory.
    for &o in graph.outputs.iter().chain(&graph.inputs) {
        last[o] = end;
    }
    let in_arena = |id: ValueId| def[id] != usize::MAX && consts[id].is_none();

    // Alias groups: an output that only reinterprets its input shares the input's buffer.
    let mut group: Vec<usize> = (0..n).collect();
    fn root(group: &mut [usize], mut i: usize) -> usize {
        while group[i] != i {
            group[i] = group[group[i]];
            i = group[i];
        }
        i
    }
    for s in steps.iter_mut() {
        let node = &graph.nodes[s.node];
        if s.outputs.len() != 1 {
            continue;
        }
        let (Some(out), Some(j)) = (s.outputs.first(), node.op.alias_output(0)) else { continue };
        let Some(Some(inp)) = node.inputs.get(j) else { continue };
        let (Some(ti), Some(to)) = (&types[*inp], &types[*out]) else { continue };
        if in_arena(*inp) && in_arena(*out) && ti.bytes() == to.bytes() && ti.dtype == to.dtype {
            let r = root(&mut group, *inp);
            group[*out] = r;
            s.skip = true;
        }
    }
    // Buffers: one per alias group, live over the union of its members' ranges.
    let mut buf_of: HashMap<usize, usize> = HashMap::new();
    let mut bufs: Vec<(usize, usize, usize)> = Vec::new(); // (bytes, first, last)
    for id in 0..n {
        if !in_arena(id) {
            continue;
        }
        let bytes = types[id].as_ref().map(|t| t.bytes()).unwrap_or(0);
        let r = root(&mut group, id);
        let b = *buf_of.entry(r).or_insert_with(|| {
            bufs.push((0, usize::MAX, 0));
            bufs.len() - 1
        });
        let e = &mut bufs[b];
        e.0 = e.0.max(bytes);
        e.1 = e.1.min(def[id]);
        e.2 = e.2.max(last[id]).max(def[id]);
    }
    let lower_bound_bytes =
        (0..=end).map(|t| bufs.iter().filter(|b| b.1 <= t && t <= b.2).map(|b| b.0).sum::<usize>()).max().unwrap_or(0);
    let offsets = assign_offsets(&bufs);
    let arena_bytes = bufs.iter().zip(&offsets).map(|(b, &o)| o.saturating_add(b.0)).max().unwrap_or(0);
    if arena_bytes > crate::tensor::MAX_TENSOR_BYTES {
        return Err(Error::Invalid(format!("the arena would take {arena_bytes} bytes: refusing (corrupt shapes?)")));
    }

    let mut slots = vec![Slot::Unused; n];
    for id in 0..n {
        if let Some(c) = &consts[id] {
            slots[id] = Slot::Const(c.clone());
        } else if in_arena(id) {
            let r = root(&mut group, id);
            slots[id] = Slot::Arena { offset: offsets[buf_of[&r]] };
        }
    }
    let mut scratch_bytes = 0;
    for s in &steps {
        let node = &graph.nodes[s.node];
        let ins: Vec<Option<TypeShape>> = node.inputs.iter().map(|i| i.and_then(|i| types[i].clone())).collect();
        let outs: Vec<TypeShape> =
            s.outputs.iter().map(|&o| types[o].clone().unwrap_or(TypeShape::new(DType::F32, vec![0]))).collect();
        scratch_bytes = scratch_bytes.max(node.op.scratch_bytes(&ins, &outs));
    }
    if scratch_bytes > crate::tensor::MAX_TENSOR_BYTES {
        return Err(Error::Invalid(format!("ops ask for {scratch_bytes} scratch bytes: refusing (corrupt shapes?)")));
    }
    for &o in &graph.outputs {
        if types[o].is_none() {
            return Err(Error::Invalid(format!("graph output `{}` is never computed", graph.values[o].name)));
        }
    }
    Ok(Plan { types, slots, steps, arena_bytes, lower_bound_bytes, scratch_bytes, input_shapes })
}

/// Most inputs of one executed node (a fixed-capacity array keeps `run` allocation-free).
pub const MAX_INPUTS: usize = 64;
/// Most outputs of one executed node.
pub const MAX_OUTPUTS: usize = 16;

/// Greedy by size: place the largest buffers first, each at the lowest aligned offset that
/// does not collide with an already placed buffer live at the same time.
fn assign_offsets(bufs: &[(usize, usize, usize)]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..bufs.len()).collect();
    order.sort_by(|&a, &b| bufs[b].0.cmp(&bufs[a].0).then(bufs[a].1.cmp(&bufs[b].1)));
    let mut offsets = vec![0usize; bufs.len()];
    let mut placed: Vec<usize> = Vec::new();
    for &i in &order {
        let (size, first, last) = bufs[i];
        let mut busy: Vec<(usize, usize)> = placed
            .iter()
            .filter(|&&j| bufs[j].1 <= last && first <= bufs[j].2)
            .map(|&j| (offsets[j], offsets[j] + bufs[j].0))
            .collect();
        busy.sort_unstable();
        let mut off = 0;
        for (s, e) in busy {
            if off + size <= s {
                break;
            }
            off = off.max(e.next_multiple_of(ALIGN));
        }
        offsets[i] = off;
        placed.push(i);
    }
    offsets
}

/// Shape and Size depend only on their input's shape: their value is known at plan time.
fn shape_value(op_type: &str, attrs: &ops::Attrs, inputs: &[Option<InferInput>]) -> Result<Option<Tensor>> {
    let Some(Some(x)) = inputs.first() else { return Ok(None) };
    match op_type {
        "Shape" => {
            let r = x.shape.len() as i64;
            let clamp = |v: i64| if v < 0 { (v + r).clamp(0, r) } else { v.clamp(0, r) } as usize;
            let start = clamp(attrs.int_or("start", 0)?);
            let end = clamp(attrs.int_or("end", r)?);
            let dims: Vec<i64> = x.shape[start..end.max(start)].iter().map(|&d| d as i64).collect();
            Ok(Some(Tensor::from_i64(&[dims.len()], dims)?))
        }
        "Size" => {
            Ok(Some(Tensor::new(vec![], crate::TensorData::I64(vec![x.shape.iter().product::<usize>() as i64]))?))
        }
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_reuse_dead_memory_and_respect_alignment() {
        // a: t0..1, b: t1..2, c: t2..3 — a and c may share.
        let bufs = [(100, 0, 1), (10, 1, 2), (100, 2, 3)];
        let off = assign_offsets(&bufs);
        assert_eq!(off[0], off[2]);
        assert!(off[1] >= 128 || off[1] + 10 <= off[0]);
        assert!(off.iter().all(|o| o % ALIGN == 0));
    }

    #[test]
    fn overlapping_buffers_never_collide() {
        // Random intervals: any two live at the same time must not overlap in memory.
        let mut seed = 12345u64;
        let mut rnd = |m: usize| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((seed >> 33) as usize) % m
        };
        for _ in 0..50 {
            let bufs: Vec<(usize, usize, usize)> = (0..40)
                .map(|_| {
                    let a = rnd(30);
                    (rnd(5000), a, a + rnd(6))
                })
                .collect();
            let off = assign_offsets(&bufs);
            for i in 0..bufs.len() {
                for j in 0..i {
                    let (bi, bj) = (bufs[i], bufs[j]);
                    let time = bi.1 <= bj.2 && bj.1 <= bi.2;
                    let mem = off[i] < off[j] + bj.0 && off[j] < off[i] + bi.0;
                    assert!(!(time && mem), "{bi:?}@{} and {bj:?}@{} collide", off[i], off[j]);
                }
            }
        }
    }
}
