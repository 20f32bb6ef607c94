//! Epilogue fusion: `Conv [→ Add(residual)] [→ activation] [→ clamps]` becomes one
//! `edgert.FusedConv` node whose kernel applies bias, residual, activation and clamp as it
//! stores each output tile. A clamp is what follows the activation and bounds it: Max or Min
//! with a scalar constant, Clip, Relu (e.g. `Max(LeakyRelu(x), -0.4)` in Google's speech
//! embedding); several merge into one `min(max(x, lo), hi)` while that stays exact.
//! Every f32 Conv with constant weights becomes a FusedConv (with an empty epilogue if
//! nothing follows), since that is the op the fast CPU kernels implement. `EDGERT_FUSION=off`
//! stops there (no Add or activation absorbed), to measure what the fusion gains.
//!
//! A link is fused only when the value between the two nodes has no other reader and is not
//! a graph output. The residual must have the Conv output's exact shape (checked by planning
//! the graph with symbolic dims set to 1; without shapes no Add is fused), and the fused node
//! takes the place of the chain's last node, so the residual is computed before it.

use std::collections::HashMap;

use super::use_counts;
use crate::cpu::Activation;
use crate::error::Result;
use crate::graph::{Dim, Graph, Node, ValueId};
use crate::ops::fused::fused_conv::{OP_TYPE, activation_attrs, clamp_attrs};
use crate::ops::{TypeShape, build_op};
use crate::plan;
use crate::tensor::{DType, Tensor};

/// Fuses Conv epilogues; returns how many Conv nodes became FusedConv.
pub fn fuse_conv_epilogue(graph: &mut Graph) -> Result<usize> {
    let fuse = fusion_enabled();
    let uses = use_counts(graph);
    let types = known_types(graph);
    let mut consumer: HashMap<ValueId, usize> = HashMap::new();
    for (i, n) in graph.nodes.iter().enumerate() {
        for &v in n.inputs.iter().flatten() {
            consumer.insert(v, i);
        }
    }
    // The single reader of `v`, if `v` has exactly one and is not a graph output.
    let mut removed = vec![false; graph.nodes.len()];
    let mut placed: HashMap<usize, Node> = HashMap::new();
    let mut new_consts: Vec<(String, Tensor, usize, usize)> = Vec::new(); // (name, tensor, node, input slot)
    let mut fused = 0;
    for ci in 0..graph.nodes.len() {
        // The single reader of `v`, if `v` has exactly one, is not a graph output, and the
        // reader is not already part of another chain (two Convs feeding one Add).
        let sole_reader = |v: ValueId| -> Option<usize> {
            let r = (uses[v] == 1 && !graph.outputs.contains(&v)).then(|| consumer.get(&v).copied()).flatten()?;
            (!removed[r]).then_some(r)
        };
        let conv = &graph.nodes[ci];
        if conv.op_type != "Conv" || removed[ci] {
            continue;
        }
        let Some(w) = conv.inputs.get(1).copied().flatten().and_then(|w| graph.constants.get(&w)) else { continue };
        if w.dtype() != DType::F32 || w.shape().len() < 3 {
            continue;
        }
        let m = w.shape()[0];
        let Some(Some(mut out)) = conv.outputs.first().copied() else { continue };
        let mut last = ci;
        let mut chain = vec![ci];
        let mut residual = None;
        // Residual Add.
        if let Some(ai) = sole_reader(out).filter(|_| fuse)
            && graph.nodes[ai].op_type == "Add"
            && let Some(types) = &types
        {
            let add = &graph.nodes[ai];
            let other = add.inputs.iter().flatten().copied().find(|&v| v != out);
            let same = |a: ValueId, b: ValueId| matches!((&types[a], &types[b]), (Some(x), Some(y)) if x == y);
            if let (Some(r), Some(Some(add_out))) = (other, add.outputs.first().copied())
                && add.inputs.iter().flatten().count() == 2
                && !graph.constants.contains_key(&r)
                && same(r, out)
                && same(add_out, out)
            {
                residual = Some(r);
                out = add_out;
                last = ai;
                chain.push(ai);
            }
        }
        // Activation.
        let mut activation = Activation::None;
        let mut slope: Option<Tensor> = None;
        if let Some(ai) = sole_reader(out).filter(|_| fuse)
            && let Some((act, s)) = as_activation(graph, &graph.nodes[ai], m)?
            && let Some(Some(act_out)) = graph.nodes[ai].outputs.first().copied()
        {
            activation = act;
            slope = s;
            out = act_out;
            last = ai;
            chain.push(ai);
        }
        // Clamps after the activation. `min(max(x, lo), hi)` then another bound merges
        // exactly unless a lower bound would follow an upper one.
        let mut clamp: Option<(f32, f32)> = None;
        let out_rank = w.shape().len();
        while let Some(ai) = sole_reader(out).filter(|_| fuse)
            && let Some((l2, h2)) = as_clamp(graph, &graph.nodes[ai], out, out_rank)?
            && let Some(Some(clamp_out)) = graph.nodes[ai].outputs.first().copied()
        {
            let (lo, hi) = clamp.unwrap_or((f32::NEG_INFINITY, f32::INFINITY));
            if hi < f32::INFINITY && l2 > f32::NEG_INFINITY {
                break;
            }
            clamp = Some((lo.max(l2), hi.min(h2)));
            out = clamp_out;
            last = ai;
            chain.push(ai);
        }
        let conv = &graph.nodes[ci];
        let mut attrs = conv.attrs.clone();
        activation_attrs(activation, &mut attrs);
        clamp_attrs(clamp, &mut attrs);
        let op = match build_op(OP_TYPE, &attrs, graph.opset) {
            Some(Ok(op)) => std::sync::Arc::from(op),
            _ => continue, // attributes the fused op rejects: leave the Conv as it is
        };
        let mut inputs: Vec<Option<ValueId>> = conv.inputs.iter().take(3).copied().collect();
        inputs.resize(3, None);
        inputs.push(residual);
        if let Some(s) = slope {
            // Slot 4 is filled once the constant exists (below).
            new_consts.push((format!("{}/prelu_slope", conv.name), s, last, 4));
        } else {
            while inputs.len() > 2 && inputs.last() == Some(&None) {
                inputs.pop();
            }
        }
        placed.insert(
            last,
            Node { name: conv.name.clone(), op_type: OP_TYPE.to_string(), attrs, inputs, outputs: vec![Some(out)], op },
        );
        for &i in &chain {
            removed[i] = true;
        }
        fused += 1;
    }
    for (name, t, node, slot) in new_consts {
        let id = graph.add_constant(&name, t);
        if let Some(n) = placed.get_mut(&node) {
            n.inputs.resize(slot + 1, None);
            n.inputs[slot] = Some(id);
        }
    }
    let old = std::mem::take(&mut graph.nodes);
    for (i, n) in old.into_iter().enumerate() {
        if let Some(f) = placed.remove(&i) {
            graph.nodes.push(f);
        } else if !removed[i] {
            graph.nodes.push(n);
        }
    }
    Ok(fused)
}

/// `EDGERT_FUSION=off` (a diagnostic knob for measuring what fusion gains): Convs still
/// become FusedConv, so they run on the same fast kernels, but with the bias only; residual
/// Adds and activations stay separate nodes.
pub fn fusion_enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| {
        let v = std::env::var("EDGERT_FUSION").unwrap_or_default();
        let off = matches!(v.trim().to_ascii_lowercase().as_str(), "off" | "0" | "false" | "no");
        if off {
            log::warn!("EDGERT_FUSION={v}: epilogue fusion is off (Conv + bias only)");
        }
        !off
    })
}

/// The activation a node computes, if it is one the epilogue can apply to a Conv output with
/// `m` channels (PRelu's slope as a per-channel tensor).
fn as_activation(graph: &Graph, n: &Node, m: usize) -> Result<Option<(Activation, Option<Tensor>)>> {
    let konst = |i: usize| n.inputs.get(i).copied().flatten().and_then(|v| graph.constants.get(&v));
    Ok(match n.op_type.as_str() {
        "Relu" => Some((Activation::Relu, None)),
        "LeakyRelu" => Some((Activation::LeakyRelu(n.attrs.float_or("alpha", 0.01)?), None)),
        "Sigmoid" => Some((Activation::Sigmoid, None)),
        "HardSwish" => Some((Activation::HardSwish, None)),
        "Clip" => {
            // Bounds from constant inputs (opset 11+) or attributes (older).
            let bound = |i: usize, attr: &str, default: f32| -> Result<Option<f32>> {
                match n.inputs.get(i).copied().flatten() {
                    None => Ok(Some(n.attrs.float_or(attr, default)?)),
                    Some(_) => Ok(konst(i)
                        .filter(|t| t.dtype() == DType::F32 && t.len() == 1)
                        .map(|t| t.as_f32().map(|v| v[0]))
                        .transpose()?),
                }
            };
            match (bound(1, "min", f32::NEG_INFINITY)?, bound(2, "max", f32::INFINITY)?) {
                (Some(lo), Some(hi)) => Some((Activation::Clip(lo, hi), None)),
                _ => None,
            }
        }
        "PRelu" => {
            let Some(s) = konst(1).filter(|t| t.dtype() == DType::F32) else { return Ok(None) };
            let dims = s.shape();
            // Per channel: [m,1,1], [1,m,1,1] (broadcast over H, W), or a single value.
            let per_channel = match dims {
                [c, 1, 1] | [1, c, 1, 1] => *c == m,
                _ => s.len() == 1 && dims.len() <= 4,
            };
            if !per_channel {
                return Ok(None);
            }
            let v = s.as_f32()?;
            let vals: Vec<f32> = (0..m).map(|i| if v.len() == 1 { v[0] } else { v[i] }).collect();
            Some((Activation::PRelu, Some(Tensor::from_f32(&[m], vals)?)))
        }
        _ => None,
    })
}

/// The bounds `(lo, hi)` a node applies to the value `v` (rank `rank`), if it is a clamp the
/// epilogue can take: Max or Min of `v` and a scalar f32 constant (which broadcasts without
/// changing the shape), Clip with constant bounds, Relu.
fn as_clamp(graph: &Graph, n: &Node, v: ValueId, rank: usize) -> Result<Option<(f32, f32)>> {
    let scalar_other = || -> Result<Option<f32>> {
        let ins: Vec<ValueId> = n.inputs.iter().flatten().copied().collect();
        let [a, b] = ins[..] else { return Ok(None) };
        let other = if a == v && b != v {
            b
        } else if b == v && a != v {
            a
        } else {
            return Ok(None);
        };
        match graph.constants.get(&other) {
            Some(t) if t.dtype() == DType::F32 && t.len() == 1 && t.shape().len() <= rank => Ok(Some(t.as_f32()?[0])),
            _ => Ok(None),
        }
    };
    Ok(match n.op_type.as_str() {
        "Max" => scalar_other()?.filter(|c| !c.is_nan()).map(|c| (c, f32::INFINITY)),
        "Min" => scalar_other()?.filter(|c| !c.is_nan()).map(|c| (f32::NEG_INFINITY, c)),
        "Relu" | "Clip" => match as_activation(graph, n, 0)? {
            Some((Activation::Relu, _)) => Some((0.0, f32::INFINITY)),
            Some((Activation::Clip(lo, hi), _)) if !lo.is_nan() && !hi.is_nan() => Some((lo, hi)),
            _ => None,
        },
        _ => None,
    })
}

/// Types of every value, from planning the graph with symbolic dims set to 1; `None` when the
/// graph can't be planned that way (undeclared input shapes, data-dependent shapes).
fn known_types(graph: &Graph) -> Option<Vec<Option<TypeShape>>> {
    let mut shapes = HashMap::new();
    for &i in &graph.inputs {
        let v = &graph.values[i];
        let dims = v.shape.as_ref()?;
        shapes.insert(v.name.clone(), dims.iter().map(|d| if let Dim::Fixed(n) = d { *n } else { 1 }).collect());
    }
    plan::plan(graph, &shapes).ok().map(|p| p.types)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::nn::test_util::Rng;
    use crate::ops::{Attr, Attrs};
    use crate::passes::test_util::assert_same_outputs;

    fn input(g: &mut Graph, name: &str, shape: &[usize]) -> ValueId {
        let x = g.add_value(name, Some(DType::F32), Some(shape.iter().map(|&d| Dim::Fixed(d)).collect()));
        g.inputs.push(x);
        x
    }

    /// Conv → Add(residual) → act for every activation kind: one FusedConv, same outputs.
    #[test]
    fn fuses_conv_add_activation_chains() {
        let acts: Vec<(&str, Attrs, Vec<Tensor>)> = vec![
            ("Relu", Attrs::new(), vec![]),
            ("LeakyRelu", Attrs::new().with("alpha", Attr::Float(0.2)), vec![]),
            ("Sigmoid", Attrs::new(), vec![]),
            ("HardSwish", Attrs::new(), vec![]),
            ("Clip", Attrs::new(), vec![Tensor::scalar_f32(-0.5), Tensor::scalar_f32(0.7)]),
            ("PRelu", Attrs::new(), vec![Tensor::from_f32(&[4, 1, 1], vec![0.1, -0.3, 0.5, 2.0]).unwrap()]),
        ];
        for (act, act_attrs, extra) in acts {
            let mut rng = Rng::new(5);
            let mut g = Graph { opset: 17, ..Graph::default() };
            let x = input(&mut g, "x", &[2, 3, 9, 7]);
            let r = input(&mut g, "r", &[2, 4, 9, 7]);
            let w = g.add_constant("w", rng.tensor(&[4, 3, 3, 3]));
            let b = g.add_constant("b", rng.tensor(&[4]));
            let (c, s, y) = (g.add_value("c", None, None), g.add_value("s", None, None), g.add_value("y", None, None));
            let a = Attrs::new().with("pads", Attr::Ints(vec![1, 1, 1, 1]));
            g.add_node("conv", "Conv", a, vec![Some(x), Some(w), Some(b)], vec![Some(c)]).unwrap();
            g.add_node("add", "Add", Attrs::new(), vec![Some(r), Some(c)], vec![Some(s)]).unwrap();
            let mut ins = vec![Some(s)];
            for (i, t) in extra.into_iter().enumerate() {
                ins.push(Some(g.add_constant(&format!("k{i}"), t)));
            }
            g.add_node("act", act, act_attrs, ins, vec![Some(y)]).unwrap();
            g.outputs.push(y);
            let orig = g.clone();
            assert_eq!(fuse_conv_epilogue(&mut g).unwrap(), 1, "{act}");
            assert_eq!(g.nodes.len(), 1, "{act}: {:?}", g.op_counts());
            assert_eq!(g.nodes[0].op_type, OP_TYPE);
            let inputs = [("x", rng.tensor(&[2, 3, 9, 7])), ("r", rng.tensor(&[2, 4, 9, 7]))];
            assert_same_outputs(&orig, &g, &inputs);
        }
    }

    /// Bounds after the activation merge into the clamp: `Min(Max(LeakyRelu(conv), -0.4),
    /// 0.3)` (the speech embedding's pattern, plus a Min) is one node; a Max after a Min, and a
    /// Max with a per-channel constant, are not absorbed.
    #[test]
    fn absorbs_scalar_bounds_after_the_activation() {
        let mut rng = Rng::new(12);
        let mut g = Graph { opset: 17, ..Graph::default() };
        let x = input(&mut g, "x", &[1, 3, 6, 5]);
        let w = g.add_constant("w", rng.tensor(&[4, 3, 3, 3]));
        let lo = g.add_constant("lo", Tensor::from_f32(&[1, 1, 1, 1], vec![-0.4]).unwrap());
        let hi = g.add_constant("hi", Tensor::scalar_f32(0.3));
        let v: Vec<ValueId> = (0..4).map(|i| g.add_value(&format!("v{i}"), None, None)).collect();
        g.add_node("conv", "Conv", Attrs::new(), vec![Some(x), Some(w)], vec![Some(v[0])]).unwrap();
        let leaky = Attrs::new().with("alpha", Attr::Float(0.2));
        g.add_node("act", "LeakyRelu", leaky, vec![Some(v[0])], vec![Some(v[1])]).unwrap();
        g.add_node("max", "Max", Attrs::new(), vec![Some(lo), Some(v[1])], vec![Some(v[2])]).unwrap();
        g.add_node("min", "Min", Attrs::new(), vec![Some(v[2]), Some(hi)], vec![Some(v[3])]).unwrap();
        g.outputs.push(v[3]);
        let orig = g.clone();
        assert_eq!(fuse_conv_epilogue(&mut g).unwrap(), 1);
        assert_eq!(g.nodes.len(), 1, "{:?}", g.op_counts());
        assert_eq!(g.nodes[0].attrs.float("clamp_min").unwrap(), Some(-0.4));
        assert_eq!(g.nodes[0].attrs.float("clamp_max").unwrap(), Some(0.3));
        let big: Vec<f32> = (0..90).map(|_| rng.sym() * 3.0).collect();
        let inputs = [("x", Tensor::from_f32(&[1, 3, 6, 5], big).unwrap())];
        assert_same_outputs(&orig, &g, &inputs);

        // Relu → Min(0.3) → Max(0.1): the Max stays; then a per-channel Max stays too.
        let mut g = Graph { opset: 17, ..Graph::default() };
        let x = input(&mut g, "x", &[1, 3, 6, 5]);
        let w = g.add_constant("w", rng.tensor(&[4, 3, 3, 3]));
        let hi = g.add_constant("hi", Tensor::scalar_f32(0.3));
        let lo = g.add_constant("lo", Tensor::scalar_f32(0.1));
        let per_channel = g.add_constant("pc", rng.tensor(&[4, 1, 1]));
        let v: Vec<ValueId> = (0..5).map(|i| g.add_value(&format!("v{i}"), None, None)).collect();
        g.add_node("conv", "Conv", Attrs::new(), vec![Some(x), Some(w)], vec![Some(v[0])]).unwrap();
        g.add_node("relu", "Relu", Attrs::new(), vec![Some(v[0])], vec![Some(v[1])]).unwrap();
        g.add_node("min", "Min", Attrs::new(), vec![Some(v[1]), Some(hi)], vec![Some(v[2])]).unwrap();
        g.add_node("max", "Max", Attrs::new(), vec![Some(v[2]), Some(lo)], vec![Some(v[3])]).unwrap();
        g.add_node("max2", "Max", Attrs::new(), vec![Some(v[3]), Some(per_channel)], vec![Some(v[4])]).unwrap();
        g.outputs.push(v[4]);
        let orig = g.clone();
        fuse_conv_epilogue(&mut g).unwrap();
        let types: Vec<&str> = g.nodes.iter().map(|n| n.op_type.as_str()).collect();
        assert_eq!(types, [OP_TYPE, "Max", "Max"]);
        assert_same_outputs(&orig, &g, &[("x", rng.tensor(&[1, 3, 6, 5]))]);
    }

    /// A Conv output read twice, a broadcasting Add, and a graph output in the middle stop
    /// the chain where they occur.
    #[test]
    fn stops_at_shared_values_broadcasts_and_outputs() {
        let mut rng = Rng::new(6);
        let mut g = Graph { opset: 17, ..Graph::default() };
        let x = input(&mut g, "x", &[1, 2, 5, 5]);
        let r = input(&mut g, "r", &[1, 1, 5, 5]); // broadcasts over channels: not a residual
        let w = g.add_constant("w", rng.tensor(&[3, 2, 1, 1]));
        let w2 = g.add_constant("w2", rng.tensor(&[3, 3, 1, 1]));
        let v: Vec<ValueId> = (0..5).map(|i| g.add_value(&format!("v{i}"), None, None)).collect();
        g.add_node("c1", "Conv", Attrs::new(), vec![Some(x), Some(w)], vec![Some(v[0])]).unwrap();
        g.add_node("add", "Add", Attrs::new(), vec![Some(v[0]), Some(r)], vec![Some(v[1])]).unwrap();
        g.add_node("c2", "Conv", Attrs::new(), vec![Some(v[1]), Some(w2)], vec![Some(v[2])]).unwrap();
        g.add_node("relu", "Relu", Attrs::new(), vec![Some(v[2])], vec![Some(v[3])]).unwrap();
        g.add_node("sig", "Sigmoid", Attrs::new(), vec![Some(v[3])], vec![Some(v[4])]).unwrap();
        g.outputs.extend([v[2], v[4]]); // c2's output is a graph output: Relu can't be fused
        let orig = g.clone();
        assert_eq!(fuse_conv_epilogue(&mut g).unwrap(), 2);
        let types: Vec<&str> = g.nodes.iter().map(|n| n.op_type.as_str()).collect();
        assert_eq!(types, [OP_TYPE, "Add", OP_TYPE, "Relu", "Sigmoid"]);
        assert_same_outputs(&orig, &g, &[("x", rng.tensor(&[1, 2, 5, 5])), ("r", rng.tensor(&[1, 1, 5, 5]))]);
    }

    /// ResNet's downsampling block: two Convs feed one Add. One Conv takes the Add and the
    /// Relu; the other stays a plain FusedConv computed before it.
    #[test]
    fn two_convs_into_one_add() {
        let mut rng = Rng::new(8);
        let mut g = Graph { opset: 17, ..Graph::default() };
        let x = input(&mut g, "x", &[2, 3, 6, 6]);
        let w1 = g.add_constant("w1", rng.tensor(&[4, 3, 3, 3]));
        let w2 = g.add_constant("w2", rng.tensor(&[4, 3, 1, 1]));
        let v: Vec<ValueId> = (0..4).map(|i| g.add_value(&format!("v{i}"), None, None)).collect();
        let a = Attrs::new().with("pads", Attr::Ints(vec![1, 1, 1, 1]));
        g.add_node("main", "Conv", a, vec![Some(x), Some(w1)], vec![Some(v[0])]).unwrap();
        g.add_node("short", "Conv", Attrs::new(), vec![Some(x), Some(w2)], vec![Some(v[1])]).unwrap();
        g.add_node("add", "Add", Attrs::new(), vec![Some(v[0]), Some(v[1])], vec![Some(v[2])]).unwrap();
        g.add_node("relu", "Relu", Attrs::new(), vec![Some(v[2])], vec![Some(v[3])]).unwrap();
        g.outputs.push(v[3]);
        let orig = g.clone();
        assert_eq!(fuse_conv_epilogue(&mut g).unwrap(), 2);
        assert_eq!(g.nodes.iter().map(|n| n.name.as_str()).collect::<Vec<_>>(), ["short", "main"]);
        assert_eq!(g.nodes[1].inputs.len(), 4, "main takes the residual");
        assert_same_outputs(&orig, &g, &[("x", rng.tensor(&[2, 3, 6, 6]))]);
    }
}
