//! The control-flow family: If and Loop, whose bodies are subgraphs.
//!
//! Subgraphs read outer-scope values; the importer turns each such read into an extra input
//! of the owning node (listed, by name, in the node's `captures` attribute) and an extra
//! input of the subgraph, so planning, liveness and dead-node removal see the dependency.

pub mod if_op;
pub mod loop_op;
pub mod subgraph;

pub use subgraph::Subgraph;

use super::{Attr, Attrs, Op};
use crate::error::{Error, Result};

/// Op types this family builds.
pub const OP_TYPES: &[&str] = &["If", "Loop"];

/// Name of the attribute in which the importer lists a node's captured outer values (node
/// inputs after the op's own inputs, in order). Not an ONNX attribute.
pub const CAPTURES_ATTR: &str = "edgert.captures";

fn boxed<T: Op + 'static>(r: Result<T>) -> Result<Box<dyn Op>> {
    r.map(|op| Box::new(op) as Box<dyn Op>)
}

/// Builds an op of this family, or `None` if the op type is not one of ours.
pub fn build(op_type: &str, attrs: &Attrs, opset: i64) -> Option<Result<Box<dyn Op>>> {
    Some(match op_type {
        "If" => boxed(if_op::If::build(attrs, opset)),
        "Loop" => boxed(loop_op::Loop::build(attrs, opset)),
        _ => return None,
    })
}

/// The capture names recorded by the importer (none if absent).
pub fn captures(attrs: &Attrs) -> Result<Vec<String>> {
    Ok(attrs.strings(CAPTURES_ATTR)?.unwrap_or_default())
}

/// A required subgraph attribute.
pub fn subgraph_attr(attrs: &Attrs, name: &str) -> Result<Subgraph> {
    match attrs.get(name) {
        Some(Attr::Graph(g)) => Ok(g.clone()),
        Some(other) => Err(Error::Invalid(format!("attribute `{name}` should be a graph, got {other:?}"))),
        None => Err(Error::Invalid(format!("missing graph attribute `{name}`"))),
    }
}

#[cfg(test)]
mod tests;
