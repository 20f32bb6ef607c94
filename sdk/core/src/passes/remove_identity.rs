//! Identity removal: an `Identity` node forwards its input, so its readers read the input
//! directly. A node whose output is a graph output stays (the
//! output keeps its name).

use crate::error::Result;
use crate::graph::Graph;

/// Removes no-op nodes; returns how many.
pub fn remove_identity(graph: &mut Graph) -> Result<usize> {
    let mut removed = 0;
    let mut keep = vec![true; graph.nodes.len()];
    for i in 0..graph.nodes.len() {
        let n = &graph.nodes[i];
        let noop = n.op_type == "Identity";
        let (Some(Some(src)), Some(Some(dst))) = (n.inputs.first().copied(), n.outputs.first().copied()) else {
            continue;
        };
        if !noop || graph.outputs.contains(&dst) {
            continue;
        }
        for other in graph.nodes.iter_mut() {
            for inp in other.inputs.iter_mut().flatten() {
                if *inp == dst {
                    *inp = src;
                }
            }
        }
        keep[i] = false;
        removed += 1;
    }
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
