//! The IR: a graph of nodes over typed values, with initializers as constants.
//!
//! Values are in SSA form (each produced once). Shapes may hold symbolic dims (a batch
//! dimension `N`); they become concrete when a context is created for given input shapes.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::ops::{self, Attrs, Op};
use crate::tensor::{DType, Tensor};

/// Index of a value in [`Graph::values`].
pub type ValueId = usize;

/// One dimension of a declared shape.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub enum Dim {
    /// Known size.
    Fixed(usize),
    /// Symbolic size (e.g. a batch dimension named `N`); empty name for an unnamed dim.
    Sym(String),
}

impl std::fmt::Display for Dim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Dim::Fixed(n) => write!(f, "{n}"),
            Dim::Sym(s) if s.is_empty() => f.write_str("?"),
            Dim::Sym(s) => f.write_str(s),
        }
    }
}

/// Formats a declared shape as `[N,3,128,128]`.
pub fn format_dims(dims: &[Dim]) -> String {
    let parts: Vec<String> = dims.iter().map(|d| d.to_string()).collect();
    format!("[{}]", parts.join(","))
}

/// What is declared about a value.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub struct ValueInfo {
    /// Name in the model.
    pub name: String,
    /// Element type, if declared or known.
    pub dtype: Option<DType>,
    /// Shape, if declared or known.
    pub shape: Option<Vec<Dim>>,
}

/// One node: an op applied to values.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Node {
    /// Node name (generated `<op_type>_<index>` when the model has none).
    pub name: String,
    /// ONNX op type.
    pub op_type: String,
    /// Parsed attributes (what the engine file stores; the op is rebuilt from them).
    pub attrs: Attrs,
    /// Input values; `None` for an omitted optional input.
    pub inputs: Vec<Option<ValueId>>,
    /// Output values; `None` for an omitted optional output.
    pub outputs: Vec<Option<ValueId>>,
    /// The op instance.
    #[serde(skip, default = "placeholder_op")]
    pub op: Arc<dyn Op>,
}

fn placeholder_op() -> Arc<dyn Op> {
    Arc::new(Unbuilt)
}

/// Stands in for an op between deserializing a node and rebuilding its op.
#[derive(Debug)]
struct Unbuilt;

impl Op for Unbuilt {
    fn op_type(&self) -> &'static str {
        "<unbuilt>"
    }
    fn infer(&self, _: &[Option<ops::InferInput>]) -> Result<Vec<ops::TypeShape>> {
        Err(Error::Invalid("op was not rebuilt after loading".into()))
    }
    fn run(&self, _: &[Option<crate::TensorRef>], _: &mut [crate::TensorMut], _: &mut [u8]) -> Result<()> {
        Err(Error::Invalid("op was not rebuilt after loading".into()))
    }
}

/// A model graph.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Graph {
    /// Every value: graph inputs, initializers and node outputs.
    pub values: Vec<ValueInfo>,
    /// Nodes in topological order.
    pub nodes: Vec<Node>,
    /// Graph inputs (runtime inputs only: initializers are not listed).
    pub inputs: Vec<ValueId>,
    /// Graph outputs.
    pub outputs: Vec<ValueId>,
    /// Constant values (initializers, folded constants) by value.
    #[serde(skip)]
    pub constants: BTreeMap<ValueId, Arc<Tensor>>,
    /// The default-domain opset version the model was written for.
    pub opset: i64,
}

impl Graph {
    /// Adds a value and returns its id.
    pub fn add_value(&mut self, name: &str, dtype: Option<DType>, shape: Option<Vec<Dim>>) -> ValueId {
        self.values.push(ValueInfo { name: name.to_string(), dtype, shape });
        self.values.len() - 1
    }

    /// Adds a constant value.
    pub fn add_constant(&mut self, name: &str, t: Tensor) -> ValueId {
        let shape = t.shape().iter().map(|&d| Dim::Fixed(d)).collect();
        let id = self.add_value(name, Some(t.dtype()), Some(shape));
        self.constants.insert(id, Arc::new(t));
        id
    }

    /// Builds the op for `op_type` and appends a node. Errors for an unknown op type.
    pub fn add_node(
        &mut self,
        name: &str,
        op_type: &str,
        attrs: Attrs,
        inputs: Vec<Option<ValueId>>,
        outputs: Vec<Option<ValueId>>,
    ) -> Result<()> {
        let op = build_node_op(name, op_type, &attrs, self.opset, self.nodes.len())?;
        self.nodes.push(Node { name: name.to_string(), op_type: op_type.to_string(), attrs, inputs, outputs, op });
        Ok(())
    }

    /// Rebuilds every node's op from its attributes (after deserializing).
    pub fn rebuild_ops(&mut self) -> Result<()> {
        for (i, n) in self.nodes.iter_mut().enumerate() {
            n.op = build_node_op(&n.name, &n.op_type, &n.attrs, self.opset, i)?;
        }
        Ok(())
    }

    /// Turns graph inputs into constants with the given values: for inputs that carry shapes
    /// (a Reshape target, Reduce axes, TopK's K) which the planner needs to know, as
    /// TensorRT needs shape tensors fixed in a profile. Returns how many were frozen.
    pub fn freeze_inputs(&mut self, values: &HashMap<String, Tensor>) -> Result<usize> {
        let mut frozen = 0;
        for (name, t) in values {
            let Some(pos) = self.inputs.iter().position(|&i| &self.values[i].name == name) else {
                return Err(Error::Input { name: name.clone(), message: "no such input to freeze".into() });
            };
            let id = self.inputs.remove(pos);
            let v = &mut self.values[id];
            v.dtype = Some(t.dtype());
            v.shape = Some(t.shape().iter().map(|&d| Dim::Fixed(d)).collect());
            self.constants.insert(id, Arc::new(t.clone()));
            frozen += 1;
        }
        Ok(frozen)
    }

    /// Value id by name.
    pub fn find_value(&self, name: &str) -> Option<ValueId> {
        self.values.iter().position(|v| v.name == name)
    }

    /// Number of nodes per op type.
    pub fn op_counts(&self) -> BTreeMap<String, usize> {
        let mut m = BTreeMap::new();
        for n in &self.nodes {
            *m.entry(n.op_type.clone()).or_insert(0) += 1;
        }
        m
    }

    /// Total bytes of constant data.
    pub fn weights_bytes(&self) -> usize {
        self.constants.values().map(|t| t.len() * t.dtype().size()).sum()
    }

    /// Checks the structure: ids in range, every value produced at most once, every node
    /// input available before the node (inputs, constants or earlier outputs).
    pub fn validate(&self) -> Result<()> {
        let n = self.values.len();
        let mut available = vec![false; n];
        for &i in self.inputs.iter().chain(self.constants.keys()) {
            if i >= n {
                return Err(Error::Invalid(format!("value id {i} out of range")));
            }
            available[i] = true;
        }
        for node in &self.nodes {
            for &inp in node.inputs.iter().flatten() {
                if inp >= n || !available[inp] {
                    let name = self.values.get(inp).map(|v| v.name.as_str()).unwrap_or("?");
                    return Err(Error::Invalid(format!(
                        "node `{}` ({}) reads `{}` before it is produced (graph not in \
                         topological order, or the value is never produced)",
                        node.name, node.op_type, name
                    )));
                }
            }
            for &out in node.outputs.iter().flatten() {
                if out >= n || available[out] {
                    let name = self.values.get(out).map(|v| v.name.as_str()).unwrap_or("?");
                    return Err(Error::Invalid(format!("value `{}` is produced twice (node `{}`)", name, node.name)));
                }
                available[out] = true;
            }
        }
        for &o in &self.outputs {
            if o >= n || !available[o] {
                let name = self.values.get(o).map(|v| v.name.as_str()).unwrap_or("?");
                return Err(Error::Invalid(format!("graph output `{name}` is never produced")));
            }
        }
        Ok(())
    }

    /// Sorts nodes topologically (ONNX requires it, but some exporters don't comply).
    pub fn sort_topologically(&mut self) -> Result<()> {
        let n = self.values.len();
        let mut available = vec![false; n];
        for &i in self.inputs.iter().chain(self.constants.keys()) {
            if i < n {
                available[i] = true;
            }
        }
        let mut pending: Vec<Node> = std::mem::take(&mut self.nodes);
        let mut sorted = Vec::with_capacity(pending.len());
        while !pending.is_empty() {
            let before = pending.len();
            let mut rest = Vec::new();
            for node in pending {
                if node.inputs.iter().flatten().all(|&i| i < n && available[i]) {
                    for &o in node.outputs.iter().flatten() {
                        if o < n {
                            available[o] = true;
                        }
                    }
                    sorted.push(node);
                } else {
                    rest.push(node);
                }
            }
            if rest.len() == before {
                let node = &rest[0];
                let missing = node
                    .inputs
                    .iter()
                    .flatten()
                    .find(|&&i| i >= n || !available[i])
                    .and_then(|&i| self.values.get(i))
                    .map(|v| v.name.clone())
                    .unwrap_or_default();
                return Err(Error::Invalid(format!(
                    "node `{}` ({}) needs `{}`, which no node produces (or a cycle)",
                    node.name, node.op_type, missing
                )));
            }
            pending = rest;
        }
        self.nodes = sorted;
        Ok(())
    }

    /// Runs the graph with the reference ops, allocating as it goes: the oracle path.
    /// `inputs` maps graph input names to values.
    pub fn run_reference(&self, inputs: &HashMap<String, Tensor>) -> Result<Vec<Tensor>> {
        let mut vals: Vec<Option<Arc<Tensor>>> = vec![None; self.values.len()];
        for (&id, t) in &self.constants {
            vals[id] = Some(t.clone());
        }
        for &id in &self.inputs {
            let name = &self.values[id].name;
            let t = inputs.get(name).ok_or_else(|| Error::Input { name: name.clone(), message: "missing".into() })?;
            vals[id] = Some(Arc::new(t.clone()));
        }
        for node in &self.nodes {
            let ins: Vec<Option<&Tensor>> =
                node.inputs.iter().map(|i| i.and_then(|i| vals.get(i)?.as_deref())).collect();
            if ins.iter().zip(&node.inputs).any(|(t, i)| i.is_some() && t.is_none()) {
                return Err(Error::Invalid(format!("node `{}`: an input has no value", node.name)));
            }
            let outs = ops::eval(node.op.as_ref(), &ins).map_err(|e| node_error(node, e))?;
            for (o, t) in node.outputs.iter().zip(outs) {
                if let Some(o) = o {
                    vals[*o] = Some(Arc::new(t));
                }
            }
        }
        self.outputs
            .iter()
            .map(|&o| {
                vals[o]
                    .as_deref()
                    .cloned()
                    .ok_or_else(|| Error::Invalid(format!("output `{}` was not computed", self.values[o].name)))
            })
            .collect()
    }
}

/// Wraps an op's error with the node's name and type.
pub fn node_error(node: &Node, e: Error) -> Error {
    match e {
        Error::Node { .. } => e,
        other => Error::Node { node: node.name.clone(), op_type: node.op_type.clone(), message: other.to_string() },
    }
}

fn build_node_op(name: &str, op_type: &str, attrs: &Attrs, opset: i64, index: usize) -> Result<Arc<dyn Op>> {
    match ops::build_op(op_type, attrs, opset) {
        Some(Ok(op)) => Ok(Arc::from(op)),
        Some(Err(e)) => {
            Err(Error::Node { node: name.to_string(), op_type: op_type.to_string(), message: e.to_string() })
        }
        None => Err(Error::UnsupportedOp {
            node: name.to_string(),
            op_type: op_type.to_string(),
            domain: String::new(),
            index,
            opset,
        }),
    }
}
