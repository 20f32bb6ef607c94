//! Loop: runs a body while an iteration count and a condition allow, carrying values from
//! one iteration to the next and stacking per-iteration ("scan") outputs.
//!
//! Planning needs static shapes: carried values must keep their type across iterations, and
//! when the body has scan outputs the trip count `M` must be known when a context is
//! planned (a constant, or computed from input shapes). A loop whose condition stops it
//! before `M` iterations while it has scan outputs is a run-time error naming both counts.

use std::collections::{HashMap, HashSet};

use arrayvec::ArrayVec;

use super::subgraph::{Body, bool_scalar, copy_into, truthy};
use crate::error::{Error, Result};
use crate::graph::Graph;
use crate::ops::{Attrs, InferInput, Op, TypeShape, optional};
use crate::passes::remove_dead_nodes;
use crate::plan::MAX_INPUTS;
use crate::tensor::{DType, DataRef, Tensor, TensorData, TensorMut, TensorRef};

/// The Loop op.
#[derive(Debug)]
pub struct Loop {
    body: Body,
    /// Loop-carried values (node inputs 2..2+n_carried).
    n_carried: usize,
}

impl Loop {
    /// Builds from the `body` attribute and the importer's capture list (`captures`: node
    /// inputs after `M`, `cond` and the carried initial values).
    pub fn build(attrs: &Attrs, _opset: i64) -> Result<Loop> {
        let captures = super::captures(attrs)?;
        let sub = super::subgraph_attr(attrs, "body")?;
        let formal = sub.formal_inputs;
        if formal < 2 {
            return Err(Error::Invalid(format!(
                "the body must take at least 2 inputs (iteration number, condition), takes {formal}"
            )));
        }
        let n_carried = formal - 2;
        let body = Body::new(sub, &captures, 2 + n_carried)?;
        if body.num_outputs() < 1 + n_carried {
            return Err(Error::Invalid(format!(
                "the body has {} outputs, needs at least {} (condition and {n_carried} carried values)",
                body.num_outputs(),
                1 + n_carried
            )));
        }
        Ok(Loop { body, n_carried })
    }

    fn n_scan(&self) -> usize {
        self.body.num_outputs() - 1 - self.n_carried
    }
}

/// Most iterations [`Loop::count_iterations`] simulates at plan time.
const MAX_PLANNED_ITERATIONS: usize = 1 << 20;

impl Loop {
    /// The number of iterations, when the condition and the carried values it depends on
    /// are known at plan time (constants, input shapes): runs the slice of the body that
    /// computes the condition and carried values with the reference executor. `None` when
    /// that slice reads run-time data.
    fn count_iterations(&self, inputs: &[Option<InferInput>], trip: Option<usize>) -> Result<Option<usize>> {
        let n = self.n_carried;
        let sub = self.body.subgraph();
        let mut g: Graph = (*sub.graph).clone();
        // Keep only what the condition and carried outputs need.
        g.outputs.truncate(1 + n);
        remove_dead_nodes(&mut g)?;
        let read: HashSet<usize> = g
            .nodes
            .iter()
            .flat_map(|nd| nd.inputs.iter().flatten().copied())
            .chain(g.outputs.iter().copied())
            .collect();
        let mut carried: Vec<Tensor> = Vec::with_capacity(n);
        for j in 0..n {
            let Some(v) = optional(inputs, 2 + j) else { return Ok(None) };
            match v.value {
                Some(t) => carried.push(t.clone()),
                // A carried value the slice never reads may be unknown.
                None if !read.contains(&g.inputs[2 + j]) => carried.push(Tensor::zeros(v.dtype, v.shape)),
                None => return Ok(None),
            }
        }
        let mut feeds: HashMap<String, Tensor> = HashMap::new();
        for (k, &ni) in self.body.capture_inputs().iter().enumerate() {
            let id = g.inputs[sub.formal_inputs + k];
            let Some(i) = optional(inputs, ni) else { return Ok(None) };
            let t = match i.value {
                Some(t) => t.clone(),
                None if !read.contains(&id) => Tensor::zeros(i.dtype, i.shape),
                None => return Ok(None),
            };
            feeds.insert(g.values[id].name.clone(), t);
        }
        let limit = trip.unwrap_or(usize::MAX).min(MAX_PLANNED_ITERATIONS + 1);
        let mut cond = true;
        let mut it = 0usize;
        while it < limit && cond {
            feeds.insert(g.values[g.inputs[0]].name.clone(), Tensor::from_i64(&[], vec![it as i64])?);
            feeds.insert(g.values[g.inputs[1]].name.clone(), Tensor::new(vec![], TensorData::Bool(vec![cond]))?);
            for (j, c) in carried.iter().enumerate() {
                feeds.insert(g.values[g.inputs[2 + j]].name.clone(), c.clone());
            }
            let mut outs = g.run_reference(&feeds)?.into_iter();
            cond = truthy(&outs.next().ok_or_else(|| Error::Invalid("no condition output".into()))?.view())?;
            carried = outs.collect();
            it += 1;
        }
        if it > MAX_PLANNED_ITERATIONS {
            return Err(Error::Invalid(format!("the loop runs more than {MAX_PLANNED_ITERATIONS} iterations")));
        }
        Ok(Some(it))
    }
}

impl Loop {
    /// Output types found by running the whole loop with the reference executor, when every
    /// input is known; `None` otherwise.
    fn reference_types(&self, inputs: &[Option<InferInput>]) -> Result<Option<Vec<TypeShape>>> {
        let n = self.n_carried;
        let sub = self.body.subgraph();
        let g = &sub.graph;
        if inputs.iter().flatten().any(|i| i.value.is_none()) {
            return Ok(None);
        }
        let value = |i: usize| optional(inputs, i).and_then(|v| v.value);
        let trip = match value(0) {
            Some(t) => t.view().to_i64_vec()?.first().copied().unwrap_or(0).max(0) as usize,
            None => usize::MAX,
        };
        let mut cond = match value(1) {
            Some(c) => truthy(&c.view())?,
            None => true,
        };
        let mut feeds: HashMap<String, Tensor> = HashMap::new();
        for (k, &ni) in self.body.capture_inputs().iter().enumerate() {
            let t = value(ni).ok_or_else(|| Error::Invalid(format!("captured input #{ni} is missing")))?;
            feeds.insert(g.values[g.inputs[sub.formal_inputs + k]].name.clone(), t.clone());
        }
        let mut carried = Vec::with_capacity(n);
        for j in 0..n {
            carried.push(value(2 + j).ok_or_else(|| Error::Invalid(format!("carried input #{j} is missing")))?.clone());
        }
        let mut scan: Vec<Option<TypeShape>> = vec![None; self.n_scan()];
        let mut it = 0usize;
        while it < trip && cond {
            if it >= MAX_PLANNED_ITERATIONS {
                return Err(Error::Invalid(format!("the loop runs more than {MAX_PLANNED_ITERATIONS} iterations")));
            }
            feeds.insert(g.values[g.inputs[0]].name.clone(), Tensor::from_i64(&[], vec![it as i64])?);
            feeds.insert(g.values[g.inputs[1]].name.clone(), Tensor::new(vec![], TensorData::Bool(vec![cond]))?);
            for (j, c) in carried.iter().enumerate() {
                feeds.insert(g.values[g.inputs[2 + j]].name.clone(), c.clone());
            }
            let mut outs = g.run_reference(&feeds)?.into_iter();
            cond = truthy(&outs.next().ok_or_else(|| Error::Invalid("no condition output".into()))?.view())?;
            carried = outs.by_ref().take(n).collect();
            for (k, o) in outs.enumerate() {
                let t = TypeShape::new(o.dtype(), o.shape().to_vec());
                match &scan[k] {
                    Some(prev) if *prev != t => {
                        return Err(Error::Invalid(format!(
                            "scan output #{k} changes type across iterations ({prev:?}, then {t:?})"
                        )));
                    }
                    _ => scan[k] = Some(t),
                }
            }
            it += 1;
        }
        let mut types: Vec<TypeShape> = carried.iter().map(|c| TypeShape::new(c.dtype(), c.shape().to_vec())).collect();
        for (k, s) in scan.into_iter().enumerate() {
            // With no iteration, a scan output's per-iteration shape is unknown: plan [0].
            let s = s.unwrap_or(TypeShape::new(g.values[g.outputs[1 + n + k]].dtype.unwrap_or(DType::F32), vec![]));
            let mut shape = vec![it];
            shape.extend_from_slice(&s.shape);
            types.push(TypeShape::new(s.dtype, shape));
        }
        Ok(Some(types))
    }
}

impl Op for Loop {
    fn op_type(&self) -> &'static str {
        "Loop"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        let n = self.n_carried;
        let trip = match optional(inputs, 0) {
            None => None,
            Some(m) => match m.value {
                Some(v) => {
                    let v = v.view().to_i64_vec()?;
                    let &[v] = v.as_slice() else {
                        return Err(Error::Invalid("trip count M must hold one integer".into()));
                    };
                    Some(v.max(0) as usize)
                }
                None if self.n_scan() == 0 => None,
                None => {
                    return Err(Error::Invalid(
                        "the trip count M must be known when the context is planned (the body has scan \
                         outputs, whose length is M)"
                            .into(),
                    ));
                }
            },
        };
        // An initial condition known to be false runs no iteration.
        let runs = match optional(inputs, 1).and_then(|c| c.value) {
            Some(c) => truthy(&c.view())?,
            None => true,
        };
        let mut formal = vec![(TypeShape::new(DType::I64, vec![]), None), (bool_scalar(), None)];
        for j in 0..n {
            let v = optional(inputs, 2 + j).ok_or_else(|| Error::Invalid(format!("carried input #{j} is missing")))?;
            formal.push((TypeShape::new(v.dtype, v.shape.to_vec()), None));
        }
        let outs = match self.body.infer(&formal, inputs) {
            Ok(o) => o,
            // A body with data-dependent shapes can't be planned; when every input is known
            // (constant folding, the reference executor) run the loop to learn its types.
            Err(e) => return self.reference_types(inputs)?.ok_or(e),
        };
        if outs[0].dtype != DType::Bool || outs[0].shape.iter().product::<usize>() != 1 {
            return Err(Error::Invalid(format!("the body's condition output is {:?}, not one bool", outs[0])));
        }
        let mut result = Vec::with_capacity(outs.len() - 1);
        for j in 0..n {
            if outs[1 + j] != formal[2 + j].0 {
                return Err(Error::Invalid(format!(
                    "carried value #{j} changes type across iterations ({:?} in, {:?} out): \
                     edgert needs static shapes",
                    formal[2 + j].0,
                    outs[1 + j]
                )));
            }
            result.push(outs[1 + j].clone());
        }
        let len = if !runs {
            0
        } else {
            // Exporters of `while` loops (TensorFlow's map) give M = INT64_MAX and stop on the
            // condition, which often depends only on counters: run that part of the body now.
            match self.count_iterations(inputs, trip)? {
                Some(k) => k,
                None if self.n_scan() == 0 => 0,
                None => match trip {
                    Some(t) => t,
                    None => {
                        return Err(Error::Invalid(
                            "the loop has scan outputs but no trip count, and its condition depends on run-time \
                             data: its output length can't be planned"
                                .into(),
                        ));
                    }
                },
            }
        };
        for o in &outs[1 + n..] {
            let mut shape = vec![len];
            shape.extend_from_slice(&o.shape);
            result.push(TypeShape::new(o.dtype, shape));
        }
        Ok(result)
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let n = self.n_carried;
        let n_scan = self.n_scan();
        if outputs.len() != n + n_scan {
            return Err(Error::Invalid(format!("Loop has {} outputs, expected {}", outputs.len(), n + n_scan)));
        }
        let trip = match optional(inputs, 0) {
            Some(m) => match m.data {
                DataRef::I64(&[v]) => v.max(0) as u64,
                DataRef::I32(&[v]) => v.max(0) as u64,
                _ => return Err(Error::Invalid(format!("trip count M must be one integer, got {:?}", m.shape))),
            },
            None => u64::MAX,
        };
        let mut cond = match optional(inputs, 1) {
            Some(c) => truthy(&c)?,
            None => true,
        };
        for (j, out) in outputs[..n].iter_mut().enumerate() {
            let v = optional(inputs, 2 + j).ok_or_else(|| Error::Invalid(format!("carried input #{j} is missing")))?;
            copy_into(out, 0, &v)?;
        }
        let planned = outputs[n..].first().map(|o| o.shape[0]);
        let per_iter: ArrayVec<usize, MAX_INPUTS> =
            outputs[n..].iter().map(|o| o.shape[1..].iter().product()).collect();

        let mut it = 0u64;
        // The session sets the captures once; formal inputs change every iteration.
        let mut session = None;
        while it < trip && cond {
            if planned.is_some_and(|p| it >= p as u64) {
                return Err(Error::Invalid(format!(
                    "the loop runs past the {} iterations it was planned for",
                    planned.unwrap_or(0)
                )));
            }
            let iter_num = [it as i64];
            let cond_in = [cond];
            let mut formal: ArrayVec<TensorRef, MAX_INPUTS> = ArrayVec::new();
            formal.push(TensorRef { shape: &[], data: DataRef::I64(&iter_num) });
            formal.push(TensorRef { shape: &[], data: DataRef::Bool(&cond_in) });
            for o in outputs[..n].iter() {
                formal.try_push(o.as_ref()).map_err(|_| Error::Invalid("too many carried values".into()))?;
            }
            if session.is_none() {
                session = Some(self.body.session(&formal, inputs)?);
            }
            let s = session.as_mut().ok_or_else(|| Error::Invalid("no session".into()))?;
            s.run(&formal)?;
            drop(formal);
            cond = truthy(&s.output(0)?)?;
            for (j, out) in outputs[..n].iter_mut().enumerate() {
                let r = s.output(1 + j)?;
                copy_into(out, 0, &r)?;
            }
            for k in 0..n_scan {
                let r = s.output(1 + n + k)?;
                if r.data.len() != per_iter[k] {
                    return Err(Error::Invalid(format!(
                        "scan output #{k} has {} elements in iteration {it}, planned {}",
                        r.data.len(),
                        per_iter[k]
                    )));
                }
                copy_into(&mut outputs[n + k], it as usize * per_iter[k], &r)?;
            }
            it += 1;
        }
        if let Some(p) = planned
            && it != p as u64
        {
            return Err(Error::Invalid(format!(
                "the loop stopped after {it} iterations but was planned for {p} (its condition ended it \
                     early): scan outputs of data-dependent length are not supported"
            )));
        }
        Ok(())
    }
}
