//! Identity removal: an `Identity` node forwards its input, so its readers read the input
//! directly. A node whose output is a graph output stays (the
//! output keeps its name).

use std::collections::HashMap;

use crate::error::Result;
use crate::graph::{Graph, ValueId};

/// Removes no-op nodes; returns how many.
pub fn remove_identity(graph: &mut Graph) -> Result<usize> {
    let mut keep = vec![true; graph.nodes.len()];
    // Output → input of every Identity whose output is not a graph output; an input that is
    // itself a forwarded output resolves to its source (nodes are in topological order).
    let mut forward: HashMap<ValueId, ValueId> = HashMap::new();
    for (i, n) in graph.nodes.iter().enumerate() {
        if n.op_type != "Identity" {
            continue;
        }
        let (Some(Some(src)), Some(Some(dst))) = (n.inputs.first().copied(), n.outputs.first().copied()) else {
            continue;
        };
        if !graph.outputs.contains(&dst) {
            let src = forward.get(&src).copied().unwrap_or(src);
            forward.insert(dst, src);
            keep[i] = false;
        }
    }
    for inp in graph.nodes.iter_mut().flat_map(|n| n.inputs.iter_mut().flatten()) {
        if let Some(&src) = forward.get(inp) {
            *inp = src;
        }
    }
    let removed = forward.len();
    let mut k = keep.into_iter();
    graph.nodes.retain(|_| k.next().unwrap_or(true));
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DType;
    use crate::graph::Dim;
    use crate::ops::Attrs;
    use crate::ops::nn::test_util::Rng;
    use crate::passes::test_util::assert_same_outputs;

    #[test]
    fn forwards_identity_but_keeps_named_outputs() {
        let mut g = Graph { opset: 17, ..Graph::default() };
        let x = g.add_value("x", Some(DType::F32), Some(vec![Dim::Fixed(4)]));
        g.inputs.push(x);
        let (a, b, y, z) = (
            g.add_value("a", None, None),
            g.add_value("b", None, None),
            g.add_value("y", None, None),
            g.add_value("z", None, None),
        );
        g.add_node("id1", "Identity", Attrs::new(), vec![Some(x)], vec![Some(a)]).unwrap();
        g.add_node("id2", "Identity", Attrs::new(), vec![Some(a)], vec![Some(b)]).unwrap();
        g.add_node("relu", "Relu", Attrs::new(), vec![Some(b)], vec![Some(y)]).unwrap();
        g.add_node("id_out", "Identity", Attrs::new(), vec![Some(y)], vec![Some(z)]).unwrap();
        g.outputs.extend([y, z]);
        let orig = g.clone();
        assert_eq!(remove_identity(&mut g).unwrap(), 2);
        assert_eq!(g.nodes.iter().map(|n| n.name.as_str()).collect::<Vec<_>>(), ["relu", "id_out"]);
        assert_eq!(g.nodes[0].inputs, vec![Some(x)]);
        assert_same_outputs(&orig, &g, &[("x", Rng::new(1).tensor(&[4]))]);
    }
}
