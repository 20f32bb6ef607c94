//! Channel-padding folding: a residual that is a zero `Pad` of another tensor along the
//! channel axis only, at the end (`Pad(x, pads = [0,0,..; 0,k,0,..])`, what TFLite-converted
//! BlazeFace and MobileNet-style blocks use to widen a skip connection), is read by the
//! `edgert.FusedConv` directly from the unpadded tensor: the epilogue adds the residual to
//! the first channels only. The Pad is left to `remove_dead_nodes` once nothing reads it.
//!
//! Runs after `fuse_conv_epilogue` (which put the Pad's output in the FusedConv's residual
//! slot); only zero constant padding on axis 1's end with every other pad zero is folded.

use super::{producers, zero_constant_pad};
use crate::error::Result;
use crate::graph::{Graph, Node, ValueId};
use crate::ops::fused::fused_conv::OP_TYPE;

/// The residual slot of a FusedConv.
const RESIDUAL: usize = 3;

/// Folds channel Pads into FusedConv residuals; returns how many residuals it rewired.
pub fn fold_channel_pad(graph: &mut Graph) -> Result<usize> {
    let producer = producers(graph);
    let mut rewired = 0;
    for ci in 0..graph.nodes.len() {
        let node = &graph.nodes[ci];
        if node.op_type != OP_TYPE {
            continue;
        }
        let Some(Some(r)) = node.inputs.get(RESIDUAL).copied() else { continue };
        let Some(&pi) = producer.get(&r) else { continue };
        if let Some(src) = channel_pad_source(graph, &graph.nodes[pi]) {
            graph.nodes[ci].inputs[RESIDUAL] = Some(src);
            rewired += 1;
        }
    }
    Ok(rewired)
}

/// The padded tensor, if `pad` pads only the end of axis 1 with zeros.
fn channel_pad_source(graph: &Graph, pad: &Node) -> Option<ValueId> {
    let (src, pads) = zero_constant_pad(graph, pad)?;
    let rank = pads.len() / 2;
    let only_channel_end =
        rank >= 2 && pads.iter().enumerate().all(|(i, &p)| if i == rank + 1 { p >= 0 } else { p == 0 });
    only_channel_end.then_some(src)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::Dim;
    use crate::ops::nn::test_util::Rng;
    use crate::ops::{Attr, Attrs};
    use crate::passes::test_util::assert_same_outputs;
    use crate::passes::{fuse_conv_epilogue, remove_dead_nodes};
    use crate::tensor::DType;
    use crate::tensor::Tensor;

    /// A BlazeFace block: `x` (c channels) → depthwise → 1x1 conv to m channels, plus
    /// `Pad(x)` to m channels, then Relu. Returns the graph and the input's shape.
    fn blaze_block(pads: Vec<i64>, value: f32, mode: &str) -> (Graph, Vec<usize>) {
        let mut rng = Rng::new(3);
        let (n, c, m, h, w) = (2, 5, 8, 6, 7);
        let mut g = Graph { opset: 13, ..Graph::default() };
        let shape = vec![n, c, h, w];
        let x = g.add_value("x", Some(DType::F32), Some(shape.iter().map(|&d| Dim::Fixed(d)).collect()));
        g.inputs.push(x);
        let wd = g.add_constant("wd", rng.tensor(&[c, 1, 3, 3]));
        let wp = g.add_constant("wp", rng.tensor(&[m, c, 1, 1]));
        let bp = g.add_constant("bp", rng.tensor(&[m]));
        let p = g.add_constant("pads", Tensor::from_i64(&[8], pads).unwrap());
        let k = g.add_constant("value", Tensor::scalar_f32(value));
        let v: Vec<ValueId> = (0..5).map(|i| g.add_value(&format!("v{i}"), None, None)).collect();
        let dw = Attrs::new().with("group", Attr::Int(c as i64)).with("pads", Attr::Ints(vec![1; 4]));
        g.add_node("dw", "Conv", dw, vec![Some(x), Some(wd)], vec![Some(v[0])]).unwrap();
        g.add_node("pw", "Conv", Attrs::new(), vec![Some(v[0]), Some(wp), Some(bp)], vec![Some(v[1])]).unwrap();
        let mode = Attrs::new().with("mode", Attr::String(mode.as_bytes().to_vec()));
        g.add_node("pad", "Pad", mode, vec![Some(x), Some(p), Some(k)], vec![Some(v[2])]).unwrap();
        g.add_node("add", "Add", Attrs::new(), vec![Some(v[2]), Some(v[1])], vec![Some(v[3])]).unwrap();
        g.add_node("relu", "Relu", Attrs::new(), vec![Some(v[3])], vec![Some(v[4])]).unwrap();
        g.outputs.push(v[4]);
        (g, shape)
    }

    #[test]
    fn folds_a_zero_channel_pad_into_the_residual() {
        let (mut g, shape) = blaze_block(vec![0, 0, 0, 0, 0, 3, 0, 0], 0.0, "constant");
        let orig = g.clone();
        assert_eq!(fuse_conv_epilogue(&mut g).unwrap(), 2);
        assert!(g.nodes.iter().any(|n| n.op_type == "Pad"));
        assert_eq!(fold_channel_pad(&mut g).unwrap(), 1);
        remove_dead_nodes(&mut g).unwrap();
        let types: Vec<&str> = g.nodes.iter().map(|n| n.op_type.as_str()).collect();
        assert_eq!(types, [OP_TYPE, OP_TYPE], "the Pad is gone");
        assert_eq!(g.nodes[1].inputs[RESIDUAL], Some(g.inputs[0]), "the residual is x itself");
        let x = Rng::new(9).tensor(&shape);
        assert_same_outputs(&orig, &g, &[("x", x)]);
    }

    #[test]
    fn leaves_other_pads_alone() {
        for (pads, value, mode) in [
            (vec![0, 3, 0, 0, 0, 0, 0, 0], 0.0, "constant"), // channels at the start
            (vec![0, 0, 1, 0, 0, 3, 0, 0], 0.0, "constant"), // also spatial
            (vec![0, 0, 0, 0, 0, 3, 0, 0], 1.5, "constant"), // not zero
            (vec![0, 0, 0, 0, 0, 3, 0, 0], 0.0, "edge"),     // not constant
        ] {
            let (mut g, _) = blaze_block(pads.clone(), value, mode);
            fuse_conv_epilogue(&mut g).unwrap();
            let fused = g.clone();
            assert_eq!(fold_channel_pad(&mut g).unwrap(), 0, "{pads:?} {value} {mode}");
            assert_eq!(format!("{:?}", g.nodes), format!("{:?}", fused.nodes));
        }
    }
}
