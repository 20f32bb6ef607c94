//! Constant folding: a node whose inputs are all constants is evaluated once with its
//! reference implementation and replaced by its outputs as constants.
//!
//! Only values that depend on nothing but constants are folded here; values that depend on
//! input *shapes* (Shape → Gather → Reshape chains) are folded when a context is planned
//! for concrete shapes, so one engine serves every batch size.

use std::sync::Arc;

use crate::error::Result;
use crate::graph::{Graph, node_error};
use crate::ops;
use crate::tensor::Tensor;

/// Folds constant nodes; returns how many were folded.
pub fn fold_constants(graph: &mut Graph) -> Result<usize> {
    let mut kept = Vec::with_capacity(graph.nodes.len());
    let mut folded = 0;
    for node in std::mem::take(&mut graph.nodes) {
        let all_const = node.inputs.iter().flatten().all(|i| graph.constants.contains_key(i));
        // Random ops are not constant even without inputs.
        let random = node.op_type.starts_with("Random");
        if !all_const || random {
            kept.push(node);
            continue;
        }
        let ins: Vec<Option<&Tensor>> =
            node.inputs.iter().map(|i| i.and_then(|i| graph.constants.get(&i).map(|t| t.as_ref()))).collect();
        let outs = ops::eval(node.op.as_ref(), &ins).map_err(|e| node_error(&node, e))?;
        for (o, t) in node.outputs.iter().zip(outs) {
            if let Some(o) = o {
                graph.values[*o].dtype = Some(t.dtype());
                graph.values[*o].shape = Some(t.shape().iter().map(|&d| crate::graph::Dim::Fixed(d)).collect());
                graph.constants.insert(*o, Arc::new(t));
            }
        }
        folded += 1;
    }
    graph.nodes = kept;
    Ok(folded)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::Graph;
    use crate::ops::Attrs;

    #[test]
    fn folds_only_constant_subgraphs() {
        let mut g = Graph { opset: 17, ..Graph::default() };
        let a = g.add_constant("a", Tensor::from_f32(&[2], vec![1.0, -2.0]).unwrap());
        let x = g.add_value("x", Some(crate::DType::F32), Some(vec![crate::graph::Dim::Fixed(2)]));
        g.inputs.push(x);
        let b = g.add_value("b", None, None);
        let y = g.add_value("y", None, None);
        g.add_node("relu", "Relu", Attrs::new(), vec![Some(a)], vec![Some(b)]).unwrap();
        g.add_node("add", "Add", Attrs::new(), vec![Some(b), Some(x)], vec![Some(y)]).unwrap();
        g.outputs.push(y);
        let before =
            g.run_reference(&[("x".to_string(), Tensor::from_f32(&[2], vec![3.0, 4.0]).unwrap())].into()).unwrap();
        assert_eq!(fold_constants(&mut g).unwrap(), 1);
        assert_eq!(g.nodes.len(), 1);
        assert_eq!(g.nodes[0].op_type, "Add");
        assert_eq!(g.constants[&b].as_f32().unwrap(), &[1.0, 0.0]);
        let after =
            g.run_reference(&[("x".to_string(), Tensor::from_f32(&[2], vec![3.0, 4.0]).unwrap())].into()).unwrap();
        assert_eq!(before, after);
    }
}
