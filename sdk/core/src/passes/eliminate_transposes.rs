//! Transpose and reshape elimination: chains of layout ops that exporters leave behind are
//! shortened where that needs no shapes (the passes run before shapes are known):
//!
//! * `Transpose(Transpose(x, p1), p2)` becomes one `Transpose(x, q)`, `q[i] = p1[p2[i]]`;
//!   a Transpose whose permutation is the identity is removed (its readers read `x`).
//!   A transpose moves data, so each one removed saves a copy of the tensor.
//! * `Unsqueeze(Squeeze(x, a), a)` and `Squeeze(Unsqueeze(x, a), a)` (the same axes) are
//!   `x`: how a Conv1d is written as a Conv2d (Silero VAD has four such pairs).
//! * `Reshape(R(x), s)`, where `R` is a Reshape, Flatten, Squeeze or Unsqueeze and the
//!   target `s` is a constant that copies no dimension from its input (no 0 entry, or
//!   `allowzero = 1`), reads `x` directly: its result depends only on the element count.
//!
//! Reshapes alias their input in the arena (no copy), so the reshape rules save a node and
//! a planner entry each, not time. A node whose output is a graph output stays (the output
//! keeps its name); the nodes left unread go to `remove_dead_nodes`.
//!
//! Not done here (it needs shapes): a Transpose that moves only size-1 axes is a Reshape.

use std::collections::HashMap;

use super::producers;
use crate::error::Result;
use crate::graph::{Graph, Node, ValueId};
use crate::ops::{Attr, build_op};

/// Shortens Transpose/Reshape chains; returns how many nodes it rewired or removed.
pub fn eliminate_transposes(graph: &mut Graph) -> Result<usize> {
    let producer = producers(graph);
    // Output → the value it equals, for removed nodes (resolved transitively: nodes are in
    // topological order, so an input is resolved before its readers are visited).
    let mut forward: HashMap<ValueId, ValueId> = HashMap::new();
    let mut rewrites = 0;
    for ni in 0..graph.nodes.len() {
        for inp in graph.nodes[ni].inputs.iter_mut().flatten() {
            if let Some(&src) = forward.get(inp) {
                *inp = src;
            }
        }
        let node = &graph.nodes[ni];
        let (Some(Some(data)), Some(Some(out))) = (node.inputs.first().copied(), node.outputs.first().copied()) else {
            continue;
        };
        // The node that produces the input (none for a graph input or a constant).
        let prev = producer.get(&data).map(|&pi| &graph.nodes[pi]);
        let keeps_name = graph.outputs.contains(&out);
        match node.op_type.as_str() {
            "Transpose" => {
                let Some(p2) = perm(node) else { continue };
                if is_identity(&p2) && !keeps_name {
                    forward.insert(out, data);
                    rewrites += 1;
                    continue;
                }
                let (Some(p1), Some(Some(src))) = (prev.and_then(perm), prev.and_then(|p| p.inputs.first().copied()))
                else {
                    continue;
                };
                if p1.len() != p2.len() || p2.iter().any(|&a| a < 0 || a as usize >= p1.len()) {
                    continue; // malformed: the op's own checks will say so
                }
                let q: Vec<i64> = p2.iter().map(|&a| p1[a as usize]).collect();
                if is_identity(&q) && !keeps_name {
                    forward.insert(out, src);
                } else {
                    let mut attrs = node.attrs.clone();
                    attrs.insert("perm", Attr::Ints(q));
                    let Some(Ok(op)) = build_op("Transpose", &attrs, graph.opset) else { continue };
                    let node = &mut graph.nodes[ni];
                    node.attrs = attrs;
                    node.op = std::sync::Arc::from(op);
                    node.inputs[0] = Some(src);
                }
                rewrites += 1;
            }
            "Squeeze" | "Unsqueeze" => {
                let inverse = if node.op_type == "Squeeze" { "Unsqueeze" } else { "Squeeze" };
                let Some(prev) = prev.filter(|p| p.op_type == inverse) else { continue };
                if keeps_name {
                    continue;
                }
                let (Some(mut a), Some(mut b), Some(Some(src))) =
                    (axes(graph, prev), axes(graph, node), prev.inputs.first().copied())
                else {
                    continue;
                };
                a.sort_unstable();
                b.sort_unstable();
                if a == b && !a.is_empty() {
                    forward.insert(out, src);
                    rewrites += 1;
                }
            }
            "Reshape" => {
                let Some(prev) =
                    prev.filter(|p| matches!(p.op_type.as_str(), "Reshape" | "Flatten" | "Squeeze" | "Unsqueeze"))
                else {
                    continue;
                };
                let Some(Some(src)) = prev.inputs.first().copied() else { continue };
                let Some(target) = node.inputs.get(1).copied().flatten().and_then(|s| graph.constants.get(&s)) else {
                    continue;
                };
                let Ok(target) = target.to_i64_vec() else { continue };
                let allow_zero = node.attrs.int_or("allowzero", 0).unwrap_or(0) == 1;
                if allow_zero || !target.contains(&0) {
                    graph.nodes[ni].inputs[0] = Some(src);
                    rewrites += 1;
                }
            }
            _ => {}
        }
    }
    Ok(rewrites)
}

/// A Transpose's explicit permutation (`None` without one: the default reverses the axes,
/// which needs the rank).
fn perm(node: &Node) -> Option<Vec<i64>> {
    (node.op_type == "Transpose").then(|| node.attrs.ints("perm").ok().flatten()).flatten()
}

fn is_identity(perm: &[i64]) -> bool {
    perm.iter().enumerate().all(|(i, &a)| a == i as i64)
}

/// A Squeeze's or Unsqueeze's explicit axes: the `axes` input from opset 13 (a constant),
/// the attribute before. `None` where they are absent or computed at run time.
fn axes(graph: &Graph, node: &Node) -> Option<Vec<i64>> {
    if graph.opset >= 13 {
        let id = node.inputs.get(1).copied().flatten()?;
        graph.constants.get(&id)?.to_i64_vec().ok()
    } else {
        node.attrs.ints("axes").ok().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DType;
    use crate::graph::Dim;
    use crate::ops::Attrs;
    use crate::ops::nn::test_util::Rng;
    use crate::passes::remove_dead_nodes;
    use crate::passes::test_util::assert_same_outputs;
    use crate::tensor::Tensor;

    fn input(g: &mut Graph, name: &str, dims: &[usize]) -> ValueId {
        let x = g.add_value(name, Some(DType::F32), Some(dims.iter().map(|&d| Dim::Fixed(d)).collect()));
        g.inputs.push(x);
        x
    }

    fn transpose(g: &mut Graph, name: &str, x: ValueId, perm: &[i64]) -> ValueId {
        let y = g.add_value(name, None, None);
        let attrs = Attrs::new().with("perm", Attr::Ints(perm.to_vec()));
        g.add_node(name, "Transpose", attrs, vec![Some(x)], vec![Some(y)]).unwrap();
        y
    }

    fn with_axes(g: &mut Graph, op: &str, name: &str, x: ValueId, axes: &[i64]) -> ValueId {
        let a = g.add_constant(&format!("{name}_axes"), Tensor::from_i64(&[axes.len()], axes.to_vec()).unwrap());
        let y = g.add_value(name, None, None);
        g.add_node(name, op, Attrs::new(), vec![Some(x), Some(a)], vec![Some(y)]).unwrap();
        y
    }

    fn reshape(g: &mut Graph, name: &str, x: ValueId, target: &[i64]) -> ValueId {
        let s = g.add_constant(&format!("{name}_shape"), Tensor::from_i64(&[target.len()], target.to_vec()).unwrap());
        let y = g.add_value(name, None, None);
        g.add_node(name, "Reshape", Attrs::new(), vec![Some(x), Some(s)], vec![Some(y)]).unwrap();
        y
    }

    fn relu(g: &mut Graph, name: &str, x: ValueId) -> ValueId {
        let y = g.add_value(name, None, None);
        g.add_node(name, "Relu", Attrs::new(), vec![Some(x)], vec![Some(y)]).unwrap();
        y
    }

    fn op_types(g: &Graph) -> Vec<&str> {
        g.nodes.iter().map(|n| n.op_type.as_str()).collect()
    }

    /// Runs the pass and dead-node removal; checks the outputs against the graph before.
    fn run(g: &mut Graph, inputs: &[(&str, Tensor)]) -> usize {
        let before = g.clone();
        let n = eliminate_transposes(g).unwrap();
        remove_dead_nodes(g).unwrap();
        g.validate().unwrap();
        assert_same_outputs(&before, g, inputs);
        n
    }

    #[test]
    fn transpose_pairs_compose_and_cancel() {
        let mut g = Graph { opset: 17, ..Graph::default() };
        let x = input(&mut g, "x", &[2, 3, 4, 5]);
        // NCHW -> NHWC -> NCHW cancels; a third transpose after a non-inverse pair composes.
        let a = transpose(&mut g, "to_nhwc", x, &[0, 2, 3, 1]);
        let b = transpose(&mut g, "to_nchw", a, &[0, 3, 1, 2]);
        let y = relu(&mut g, "relu", b);
        let c = transpose(&mut g, "t1", y, &[1, 0, 2, 3]);
        let d = transpose(&mut g, "t2", c, &[0, 1, 3, 2]);
        let z = relu(&mut g, "relu2", d);
        g.outputs.push(z);
        let x_t = Rng::new(1).tensor(&[2, 3, 4, 5]);
        assert_eq!(run(&mut g, &[("x", x_t)]), 2);
        assert_eq!(op_types(&g), ["Relu", "Transpose", "Relu"]);
        assert_eq!(g.nodes[0].inputs[0], Some(x), "the cancelled pair is bypassed");
        assert_eq!(g.nodes[1].attrs.ints("perm").unwrap(), Some(vec![1, 0, 3, 2]));
        assert_eq!(g.nodes[1].inputs[0], Some(y));
    }

    #[test]
    fn identity_transpose_goes_but_a_named_output_stays() {
        let mut g = Graph { opset: 17, ..Graph::default() };
        let x = input(&mut g, "x", &[3, 4]);
        let a = transpose(&mut g, "noop", x, &[0, 1]);
        let y = relu(&mut g, "relu", a);
        let t = transpose(&mut g, "t", y, &[1, 0]);
        let out = transpose(&mut g, "back", t, &[1, 0]);
        g.outputs.push(out);
        let x_t = Rng::new(2).tensor(&[3, 4]);
        // `back` cancels `t` but names the graph output: it becomes the identity Transpose
        // of `y` (composed), and stays.
        assert_eq!(run(&mut g, &[("x", x_t)]), 2);
        assert_eq!(op_types(&g), ["Relu", "Transpose"]);
        assert_eq!(g.nodes[1].attrs.ints("perm").unwrap(), Some(vec![0, 1]));
        assert_eq!(g.nodes[1].inputs[0], Some(y));
    }

    #[test]
    fn squeeze_unsqueeze_pairs_with_the_same_axes_cancel() {
        let mut g = Graph { opset: 17, ..Graph::default() };
        let x = input(&mut g, "x", &[2, 6, 1, 9]);
        // Conv1d-as-Conv2d: squeeze axis 2, then unsqueeze it back.
        let s = with_axes(&mut g, "Squeeze", "sq", x, &[2]);
        let u = with_axes(&mut g, "Unsqueeze", "unsq", s, &[2]);
        let y = relu(&mut g, "relu", u);
        // Different axes: not an identity, stays.
        let u2 = with_axes(&mut g, "Unsqueeze", "unsq2", y, &[0]);
        let s2 = with_axes(&mut g, "Squeeze", "sq2", u2, &[3]);
        g.outputs.push(s2);
        let x_t = Rng::new(3).tensor(&[2, 6, 1, 9]);
        assert_eq!(run(&mut g, &[("x", x_t)]), 1);
        assert_eq!(op_types(&g), ["Relu", "Unsqueeze", "Squeeze"]);
        assert_eq!(g.nodes[0].inputs[0], Some(x));
    }

    #[test]
    fn reshape_reads_through_reshape_likes_unless_it_copies_a_dim() {
        let mut g = Graph { opset: 17, ..Graph::default() };
        let x = input(&mut g, "x", &[2, 3, 4]);
        let f = g.add_value("flat", None, None);
        g.add_node("flatten", "Flatten", Attrs::new().with("axis", Attr::Int(1)), vec![Some(x)], vec![Some(f)])
            .unwrap();
        let r = reshape(&mut g, "r1", f, &[4, -1]);
        let y = relu(&mut g, "relu", r);
        // A 0 copies a dim of the Reshape's own input: reading past the Unsqueeze would
        // change which dim that is, so it stays.
        let u = with_axes(&mut g, "Unsqueeze", "unsq", y, &[0]);
        let r2 = reshape(&mut g, "r2", u, &[0, -1]);
        g.outputs.push(r2);
        let x_t = Rng::new(4).tensor(&[2, 3, 4]);
        assert_eq!(run(&mut g, &[("x", x_t)]), 1);
        assert_eq!(op_types(&g), ["Reshape", "Relu", "Unsqueeze", "Reshape"]);
        assert_eq!(g.nodes[0].inputs[0], Some(x), "the Flatten is bypassed");
    }
}
