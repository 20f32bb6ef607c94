//! Dead node removal: nodes none of whose outputs reach a graph output are dropped, and so
//! are constants nothing reads.

use std::collections::HashSet;

use crate::error::Result;
use crate::graph::Graph;

/// Removes dead nodes and unused constants; returns how many nodes were removed.
pub fn remove_dead_nodes(graph: &mut Graph) -> Result<usize> {
    let mut live: HashSet<usize> = graph.outputs.iter().copied().collect();
    let mut keep = vec![false; graph.nodes.len()];
    for (i, node) in graph.nodes.iter().enumerate().rev() {
        if node.outputs.iter().flatten().any(|o| live.contains(o)) {
            keep[i] = true;
            live.extend(node.inputs.iter().flatten().copied());
        }
    }
    let before = graph.nodes.len();
    let mut k = keep.into_iter();
    graph.nodes.retain(|_| k.next().unwrap_or(true));
    graph.constants.retain(|id, _| live.contains(id));
    Ok(before - graph.nodes.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DType;
    use crate::graph::Dim;
    use crate::ops::Attrs;

    #[test]
    fn drops_nodes_that_reach_no_output() {
        let mut g = Graph { opset: 17, ..Graph::default() };
        let x = g.add_value("x", Some(DType::F32), Some(vec![Dim::Fixed(3)]));
        g.inputs.push(x);
        let unused = g.add_constant("w", crate::Tensor::from_f32(&[1], vec![1.0]).unwrap());
        let a = g.add_value("a", None, None);
        let b = g.add_value("b", None, None);
        g.add_node("keep", "Identity", Attrs::new(), vec![Some(x)], vec![Some(a)]).unwrap();
        g.add_node("dead", "Identity", Attrs::new(), vec![Some(x)], vec![Some(b)]).unwrap();
        g.outputs.push(a);
        assert_eq!(remove_dead_nodes(&mut g).unwrap(), 1);
        assert_eq!(g.nodes.len(), 1);
        assert_eq!(g.nodes[0].name, "keep");
        assert!(!g.constants.contains_key(&unused));
    }
}
