//! Subgraph attributes (If branches, Loop bodies) and their execution.
//!
//! A subgraph is a [`Graph`] whose `inputs` are its formal inputs (a Loop body's iteration
//! number, condition and carried values; none for If branches) followed by the outer-scope
//! values it reads ("captures"), each an input named as in the outer scope. The importer
//! adds every capture as an extra input of the node that owns the subgraph, so the outer
//! graph's planner sees the dependency and keeps the value alive.
//!
//! Execution plans the subgraph for concrete input types (a *template*), freezing captures
//! that are constant in the outer plan (shape-carrying values: Range bounds, Reshape
//! targets) so the subgraph plans like any graph. Each template owns a pool of
//! [`Context`]s, made once and reused: after the first run, running a subgraph allocates
//! nothing. A run whose inputs match no template (a new shape, a constant capture whose
//! value changed) falls back to the reference executor, which allocates.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::context::Context;
use crate::engine::{BuildInfo, Engine, Target};
use crate::error::{Error, Result};
use crate::graph::{Dim, Graph, ValueId};
use crate::ops::{InferInput, TypeShape};
use crate::tensor::{DType, DataMut, Tensor, TensorMut, TensorRef};

/// A subgraph attribute: the graph, shared (cloning an attribute does not copy it).
#[derive(Clone, Debug)]
pub struct Subgraph {
    /// The graph; its inputs are formal inputs, then captures (see the module docs).
    pub graph: Arc<Graph>,
    /// How many of `graph.inputs` are formal inputs; the rest are captures.
    pub formal_inputs: usize,
}

impl PartialEq for Subgraph {
    fn eq(&self, other: &Subgraph) -> bool {
        Arc::ptr_eq(&self.graph, &other.graph)
            || (self.formal_inputs == other.formal_inputs
                && serde_json::to_vec(self).ok().is_some_and(|a| serde_json::to_vec(other).ok() == Some(a)))
    }
}

impl Subgraph {
    /// Names of the captured outer-scope values, in input order.
    pub fn capture_names(&self) -> impl Iterator<Item = &str> {
        self.graph.inputs[self.formal_inputs.min(self.graph.inputs.len())..]
            .iter()
            .map(|&i| self.graph.values[i].name.as_str())
    }
}

/// The serialized form: the graph plus its constants inline (the top-level graph keeps its
/// constants in the engine file's weights section; a subgraph's travel with it).
#[derive(Serialize, Deserialize)]
struct SubgraphRepr {
    graph: Graph,
    formal_inputs: usize,
    constants: Vec<(ValueId, Tensor)>,
}

impl Serialize for Subgraph {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let constants = self.graph.constants.iter().map(|(&k, v)| (k, (**v).clone())).collect();
        SubgraphRepr { graph: (*self.graph).clone(), formal_inputs: self.formal_inputs, constants }.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Subgraph {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Subgraph, D::Error> {
        use serde::de::Error as _;
        let mut r = SubgraphRepr::deserialize(d)?;
        for (id, t) in r.constants {
            if id >= r.graph.values.len() {
                return Err(D::Error::custom(format!("subgraph constant for unknown value #{id}")));
            }
            r.graph.constants.insert(id, Arc::new(t));
        }
        if r.formal_inputs > r.graph.inputs.len() {
            return Err(D::Error::custom("subgraph has fewer inputs than formal inputs"));
        }
        r.graph.rebuild_ops().map_err(|e| D::Error::custom(format!("subgraph: {e}")))?;
        r.graph.validate().map_err(|e| D::Error::custom(format!("subgraph: {e}")))?;
        Ok(Subgraph { graph: Arc::new(r.graph), formal_inputs: r.formal_inputs })
    }
}

/// Largest constant capture frozen into a template (bigger ones stay runtime inputs, so a
/// changing value never forces a new plan of a large tensor).
const FREEZE_MAX_ELEMS: usize = 1 << 16;
/// Most templates kept per subgraph; beyond, runs use the reference executor.
const MAX_TEMPLATES: usize = 16;

/// A subgraph planned for one set of input types and frozen constant inputs.
#[derive(Debug)]
struct Template {
    types: Vec<TypeShape>,
    /// Body input index → its frozen value.
    frozen: Vec<(usize, Arc<Tensor>)>,
    engine: Arc<Engine>,
    shapes: HashMap<String, Vec<usize>>,
    outputs: Vec<TypeShape>,
}

/// A subgraph with its templates and pooled contexts: what If and Loop execute.
#[derive(Debug)]
pub struct Body {
    sub: Subgraph,
    /// For each subgraph input past the formal ones: the owning node's input index.
    capture_inputs: Vec<usize>,
    templates: Mutex<Vec<Arc<Template>>>,
    pool: Mutex<Vec<(usize, Context)>>,
}

/// One input of a body run: the node's input or a value the op supplies (iteration number,
/// carried state).
pub type BodyInput<'a> = TensorRef<'a>;

impl Body {
    /// Wraps `sub`; `captures` lists the owning node's capture names in node-input order,
    /// starting at node input `first_capture`.
    pub fn new(sub: Subgraph, captures: &[String], first_capture: usize) -> Result<Body> {
        let mut capture_inputs = Vec::new();
        for name in sub.capture_names() {
            let pos = captures.iter().position(|c| c == name).ok_or_else(|| {
                Error::Invalid(format!("subgraph reads outer value `{name}`, which the node does not list as an input"))
            })?;
            capture_inputs.push(first_capture + pos);
        }
        Ok(Body { sub, capture_inputs, templates: Mutex::new(Vec::new()), pool: Mutex::new(Vec::new()) })
    }

    /// The subgraph.
    pub fn subgraph(&self) -> &Subgraph {
        &self.sub
    }

    /// For each capture (subgraph input past the formal ones), the owning node's input index.
    pub fn capture_inputs(&self) -> &[usize] {
        &self.capture_inputs
    }

    /// Number of formal inputs.
    pub fn formal_inputs(&self) -> usize {
        self.sub.formal_inputs
    }

    /// Number of outputs.
    pub fn num_outputs(&self) -> usize {
        self.sub.graph.outputs.len()
    }

    /// Output types for formal input types `formal` and the owning node's inputs `node`
    /// (whose captures are taken from it). Plans (and caches) a template.
    pub fn infer(
        &self,
        formal: &[(TypeShape, Option<&Tensor>)],
        node: &[Option<InferInput>],
    ) -> Result<Vec<TypeShape>> {
        let mut ins: Vec<(TypeShape, Option<&Tensor>)> = formal.to_vec();
        for &ni in &self.capture_inputs {
            let i = node
                .get(ni)
                .copied()
                .flatten()
                .ok_or_else(|| Error::Invalid(format!("captured input #{ni} is missing")))?;
            ins.push((TypeShape::new(i.dtype, i.shape.to_vec()), i.value));
        }
        if ins.len() != self.sub.graph.inputs.len() {
            return Err(Error::Invalid(format!(
                "subgraph takes {} inputs, got {}",
                self.sub.graph.inputs.len(),
                ins.len()
            )));
        }
        let t = self.template_for(&ins)?;
        Ok(t.outputs.clone())
    }

    fn template_for(&self, ins: &[(TypeShape, Option<&Tensor>)]) -> Result<Arc<Template>> {
        let freezable = |i: usize, v: Option<&Tensor>| -> Option<Tensor> {
            // Formal inputs change from call to call (iteration number, carried state).
            let v = v?;
            (i >= self.sub.formal_inputs && v.len() <= FREEZE_MAX_ELEMS).then(|| v.clone())
        };
        {
            let templates = self.templates.lock().map_err(|_| poisoned())?;
            for t in templates.iter() {
                let same_types = t.types.iter().zip(ins).all(|(a, (b, _))| a == b);
                let same_frozen = ins.iter().enumerate().all(|(i, (_, v))| {
                    let f = t.frozen.iter().find(|(k, _)| *k == i).map(|(_, t)| t.as_ref());
                    match (f, freezable(i, *v)) {
                        (None, None) => true,
                        (Some(a), Some(b)) => *a == b,
                        _ => false,
                    }
                });
                if same_types && same_frozen {
                    return Ok(t.clone());
                }
            }
        }
        let mut g: Graph = (*self.sub.graph).clone();
        let mut frozen = Vec::new();
        let mut freeze = HashMap::new();
        let mut shapes = HashMap::new();
        for (i, (ts, v)) in ins.iter().enumerate() {
            let id = g.inputs[i];
            let val = &mut g.values[id];
            val.dtype = Some(ts.dtype);
            val.shape = Some(ts.shape.iter().map(|&d| Dim::Fixed(d)).collect());
            if let Some(t) = freezable(i, *v) {
                freeze.insert(val.name.clone(), t.clone());
                frozen.push((i, Arc::new(t)));
            } else {
                shapes.insert(val.name.clone(), ts.shape.clone());
            }
        }
        g.freeze_inputs(&freeze)?;
        let engine = Arc::new(Engine { graph: g, target: Target::host_cpu(), build: BuildInfo::default() });
        let ctx = Context::new(engine.clone(), &shapes)?;
        let outputs = engine
            .graph
            .outputs
            .iter()
            .map(|&o| ctx.plan().types[o].clone().ok_or_else(|| Error::Invalid("subgraph output has no type".into())))
            .collect::<Result<Vec<_>>>()?;
        let t =
            Arc::new(Template { types: ins.iter().map(|(t, _)| t.clone()).collect(), frozen, engine, shapes, outputs });
        let mut templates = self.templates.lock().map_err(|_| poisoned())?;
        if templates.len() < MAX_TEMPLATES {
            templates.push(t.clone());
            let idx = templates.len() - 1;
            drop(templates);
            self.pool.lock().map_err(|_| poisoned())?.push((idx, ctx));
        }
        Ok(t)
    }

    /// Finds the template matching these run-time inputs (formal first, then captures) and
    /// takes a context for it from the pool. `None`: no template fits.
    fn checkout(&self, ins: &[TensorRef]) -> Result<Option<(usize, Arc<Template>, Context)>> {
        let found = {
            let templates = self.templates.lock().map_err(|_| poisoned())?;
            templates
                .iter()
                .enumerate()
                .find(|(_, t)| {
                    t.types.len() == ins.len()
                        && t.types.iter().zip(ins).all(|(ts, r)| ts.dtype == r.dtype() && ts.shape == r.shape)
                        && t.frozen.iter().all(|(i, v)| same_value(v, &ins[*i]))
                })
                .map(|(k, t)| (k, t.clone()))
        };
        let Some((k, t)) = found else { return Ok(None) };
        let taken = {
            let mut pool = self.pool.lock().map_err(|_| poisoned())?;
            pool.iter().position(|(j, _)| *j == k).map(|p| pool.swap_remove(p).1)
        };
        let ctx = match taken {
            Some(c) => c,
            // Another context of the same engine is running this body: make a second one
            // (allocates once; it joins the pool afterwards).
            None => Context::new(t.engine.clone(), &t.shapes)?,
        };
        Ok(Some((k, t, ctx)))
    }

    fn checkin(&self, k: usize, ctx: Context) {
        if let Ok(mut pool) = self.pool.lock() {
            pool.push((k, ctx));
        }
    }

    /// Runs the body once per call of `step`, which is handed a [`BodyRun`] to set inputs,
    /// run and read outputs. `captures` gives the owning node's inputs (for captured values).
    pub fn session(&self, formal: &[TensorRef], node_inputs: &[Option<TensorRef>]) -> Result<BodyRun<'_>> {
        let mut ins: arrayvec::ArrayVec<TensorRef, { crate::plan::MAX_INPUTS }> = arrayvec::ArrayVec::new();
        for f in formal {
            ins.try_push(*f).map_err(|_| Error::Invalid("too many subgraph inputs".into()))?;
        }
        for &ni in &self.capture_inputs {
            let t = node_inputs
                .get(ni)
                .copied()
                .flatten()
                .ok_or_else(|| Error::Invalid(format!("captured input #{ni} is missing")))?;
            ins.try_push(t).map_err(|_| Error::Invalid("too many subgraph inputs".into()))?;
        }
        match self.checkout(&ins)? {
            Some((k, t, mut ctx)) => {
                // Captures are set once: a context never reuses an input's memory.
                let frozen_at = |i: usize| t.frozen.iter().any(|(j, _)| *j == i);
                for (i, r) in ins.iter().enumerate().skip(self.sub.formal_inputs) {
                    if !frozen_at(i) {
                        let name = &t.engine.graph.values[self.sub.graph.inputs[i]].name;
                        set_input(&mut ctx, name, r)?;
                    }
                }
                Ok(BodyRun { body: self, planned: Some((k, t, ctx)), captures: Vec::new(), outputs: Vec::new() })
            }
            None => {
                // Reference fallback (allocates): keep owned copies of the captures.
                log::debug!("subgraph inputs match no planned template: running the reference executor");
                let captures = ins[self.sub.formal_inputs..].iter().map(|r| r.to_tensor()).collect();
                Ok(BodyRun { body: self, planned: None, captures, outputs: Vec::new() })
            }
        }
    }
}

/// One body execution session (inputs set per call, captures set once).
pub struct BodyRun<'a> {
    body: &'a Body,
    planned: Option<(usize, Arc<Template>, Context)>,
    captures: Vec<Tensor>,
    outputs: Vec<Tensor>,
}

impl BodyRun<'_> {
    /// Runs the body with these formal inputs.
    pub fn run(&mut self, formal: &[TensorRef]) -> Result<()> {
        let g = &self.body.sub.graph;
        if formal.len() != self.body.sub.formal_inputs {
            return Err(Error::Invalid(format!(
                "subgraph takes {} formal inputs, got {}",
                self.body.sub.formal_inputs,
                formal.len()
            )));
        }
        match &mut self.planned {
            Some((_, t, ctx)) => {
                for (i, r) in formal.iter().enumerate() {
                    let ts = &t.types[i];
                    if ts.dtype != r.dtype() || ts.shape != r.shape {
                        return Err(Error::Invalid(format!(
                            "subgraph input `{}` changed type to {} {:?} between iterations (planned {} {:?})",
                            g.values[g.inputs[i]].name,
                            r.dtype(),
                            r.shape,
                            ts.dtype,
                            ts.shape
                        )));
                    }
                    set_input(ctx, &g.values[g.inputs[i]].name, r)?;
                }
                ctx.run()
            }
            None => {
                let mut map = HashMap::new();
                for (i, r) in formal.iter().enumerate() {
                    map.insert(g.values[g.inputs[i]].name.clone(), r.to_tensor());
                }
                for (k, c) in self.captures.iter().enumerate() {
                    map.insert(g.values[g.inputs[self.body.sub.formal_inputs + k]].name.clone(), c.clone());
                }
                self.outputs = g.run_reference(&map)?;
                Ok(())
            }
        }
    }

    /// Output `i` of the last run.
    pub fn output(&mut self, i: usize) -> Result<TensorRef<'_>> {
        match &mut self.planned {
            Some((_, _, ctx)) => ctx.output_ref(i),
            None => self.outputs.get(i).map(|t| t.view()).ok_or_else(|| Error::Invalid(format!("no output #{i}"))),
        }
    }
}

impl Drop for BodyRun<'_> {
    fn drop(&mut self) {
        if let Some((k, _, ctx)) = self.planned.take() {
            self.body.checkin(k, ctx);
        }
    }
}

fn poisoned() -> Error {
    Error::Invalid("a subgraph's template cache was poisoned by a panic".into())
}

fn same_value(v: &Tensor, r: &TensorRef) -> bool {
    let (a, b) = (v.view().data.as_bytes(), r.data.as_bytes());
    v.dtype() == r.dtype() && v.shape() == r.shape && (std::ptr::eq(a.as_ptr(), b.as_ptr()) || a == b)
}

fn set_input(ctx: &mut Context, name: &str, src: &TensorRef) -> Result<()> {
    match ctx.input_mut(name) {
        Ok(mut dst) => copy_into(&mut dst, 0, src),
        // An input the subgraph never reads has no memory.
        Err(Error::Input { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Copies `src` into `dst` starting at element `offset` (same element type).
pub fn copy_into(dst: &mut TensorMut, offset: usize, src: &TensorRef) -> Result<()> {
    let bytes = src.data.as_bytes();
    let size = src.dtype().size();
    if dst.dtype() != src.dtype() {
        return Err(Error::Invalid(format!("cannot copy {} into {}", src.dtype(), dst.dtype())));
    }
    let dst_bytes: &mut [u8] = match &mut dst.data {
        // SAFETY: plain-old-data element types viewed as bytes; bool holds 0/1 and the
        // source is a bool tensor too, so only 0/1 bytes are written.
        DataMut::F32(v) => unsafe { as_bytes_mut(v) },
        DataMut::F16(v) => unsafe { as_bytes_mut(v) },
        DataMut::I8(v) => unsafe { as_bytes_mut(v) },
        DataMut::U8(v) => unsafe { as_bytes_mut(v) },
        DataMut::I32(v) => unsafe { as_bytes_mut(v) },
        DataMut::I64(v) => unsafe { as_bytes_mut(v) },
        DataMut::Bool(v) => unsafe { as_bytes_mut(v) },
    };
    let start = offset.checked_mul(size).ok_or_else(|| Error::Invalid("copy offset overflows".into()))?;
    let end = start + bytes.len();
    if end > dst_bytes.len() {
        return Err(Error::Invalid(format!(
            "copy of {} elements at {offset} overruns a tensor of {} elements",
            src.data.len(),
            dst.data.len()
        )));
    }
    dst_bytes[start..end].copy_from_slice(bytes);
    Ok(())
}

/// # Safety
/// `T` must be plain old data; writes must keep every element a valid `T`.
unsafe fn as_bytes_mut<T>(v: &mut [T]) -> &mut [u8] {
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut u8, std::mem::size_of_val(v)) }
}

/// A scalar-ish view for ops: the first element of a bool or integer tensor as a bool.
pub fn truthy(t: &TensorRef) -> Result<bool> {
    use crate::tensor::DataRef;
    match t.data {
        DataRef::Bool(v) if v.len() == 1 => Ok(v[0]),
        DataRef::U8(v) if v.len() == 1 => Ok(v[0] != 0),
        DataRef::I64(v) if v.len() == 1 => Ok(v[0] != 0),
        DataRef::I32(v) if v.len() == 1 => Ok(v[0] != 0),
        _ => Err(Error::Invalid(format!("condition must be one bool, got {} {:?}", t.dtype(), t.shape))),
    }
}

/// The type of a bool scalar.
pub fn bool_scalar() -> TypeShape {
    TypeShape::new(DType::Bool, vec![])
}
