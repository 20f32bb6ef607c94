//! Spatial padding folding: a `Conv` whose input is a zero `Pad` of the spatial axes only
//! (`Pad(x, pads = [0, 0, t, l, ..; 0, 0, b, r, ..])`, what TensorFlow's SAME padding and
//! asymmetric paddings become in exported graphs) reads `x` directly with the pads added to
//! its own. The convolution then pads on the fly (or not at all, for its interior) instead of
//! a padded copy being written and read back. The Pad stays for any other reader and is
//! otherwise left to `remove_dead_nodes`.
//!
//! Only Convs with explicit pads (`auto_pad` NOTSET) take it, and only non-negative zero
//! padding in constant mode (a crop, another value or reflect/edge padding is not a Conv's
//! zero border). Pooling is left alone: MaxPool pads with -inf, and AveragePool's divisor
//! depends on `count_include_pad`.

use super::{producers, zero_constant_pad};
use crate::error::Result;
use crate::graph::Graph;
use crate::ops::{Attr, build_op};

/// Folds spatial zero Pads into the Convs that read them; returns how many it folded.
pub fn fold_spatial_pad(graph: &mut Graph) -> Result<usize> {
    let producer = producers(graph);
    let mut folded = 0;
    for ci in 0..graph.nodes.len() {
        let conv = &graph.nodes[ci];
        if conv.op_type != "Conv" {
            continue;
        }
        let Some(Some(x)) = conv.inputs.first().copied() else { continue };
        let Some(&pi) = producer.get(&x) else { continue };
        let Some((src, pads)) = zero_constant_pad(graph, &graph.nodes[pi]) else { continue };
        let rank = pads.len() / 2;
        if rank < 3
            || pads.iter().any(|&p| p < 0)
            || pads[0] != 0
            || pads[1] != 0
            || pads[rank] != 0
            || pads[rank + 1] != 0
        {
            continue;
        }
        let spatial = rank - 2;
        let auto_pad = conv.attrs.string("auto_pad")?.unwrap_or_default();
        if !(auto_pad.is_empty() || auto_pad == "NOTSET") {
            continue;
        }
        let mut conv_pads = conv.attrs.ints("pads")?.unwrap_or_else(|| vec![0; 2 * spatial]);
        if conv_pads.len() != 2 * spatial {
            continue; // malformed: the Conv's own checks will say so
        }
        for d in 0..spatial {
            conv_pads[d] += pads[2 + d];
            conv_pads[spatial + d] += pads[rank + 2 + d];
        }
        let mut attrs = conv.attrs.clone();
        attrs.insert("pads", Attr::Ints(conv_pads));
        let op = match build_op("Conv", &attrs, graph.opset) {
            Some(Ok(op)) => std::sync::Arc::from(op),
            _ => continue,
        };
        let node = &mut graph.nodes[ci];
        node.attrs = attrs;
        node.op = op;
        node.inputs[0] = Some(src);
        folded += 1;
    }
    Ok(folded)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{Dim, ValueId};
    use crate::ops::Attrs;
    use crate::ops::nn::test_util::Rng;
    use crate::passes::remove_dead_nodes;
    use crate::passes::test_util::assert_same_outputs;
    use crate::tensor::{DType, Tensor};

    /// x -> Pad(pads, value, mode) -> Conv(3x3, conv_pads, auto_pad) -> y.
    fn graph(pads: &[i64], value: f32, mode: &str, conv_pads: Option<&[i64]>, auto_pad: &str) -> Graph {
        let mut rng = Rng::new(4);
        let mut g = Graph { opset: 17, ..Graph::default() };
        let x = g.add_value("x", Some(DType::F32), Some([1, 2, 7, 6].map(Dim::Fixed).to_vec()));
        g.inputs.push(x);
        let p = g.add_constant("pads", Tensor::from_i64(&[8], pads.to_vec()).unwrap());
        let v = g.add_constant("value", Tensor::scalar_f32(value));
        let w = g.add_constant("w", rng.tensor(&[3, 2, 3, 3]));
        let (xp, y): (ValueId, ValueId) = (g.add_value("xp", None, None), g.add_value("y", None, None));
        let pad_attrs = Attrs::new().with("mode", Attr::String(mode.as_bytes().to_vec()));
        g.add_node("pad", "Pad", pad_attrs, vec![Some(x), Some(p), Some(v)], vec![Some(xp)]).unwrap();
        let mut a = Attrs::new().with("auto_pad", Attr::String(auto_pad.as_bytes().to_vec()));
        if let Some(cp) = conv_pads {
            a = a.with("pads", Attr::Ints(cp.to_vec()));
        }
        g.add_node("conv", "Conv", a, vec![Some(xp), Some(w)], vec![Some(y)]).unwrap();
        g.outputs.push(y);
        g
    }

    #[test]
    fn folds_zero_spatial_pads_into_the_conv() {
        let input = [("x", Rng::new(5).tensor(&[1, 2, 7, 6]))];
        // Asymmetric pad on top of the Conv's own; and with no pads attribute at all.
        for (conv_pads, want) in [(Some(&[1i64, 1, 1, 1][..]), vec![1, 3, 3, 2]), (None, vec![0, 2, 2, 1])] {
            let mut g = graph(&[0, 0, 0, 2, 0, 0, 2, 1], 0.0, "constant", conv_pads, "NOTSET");
            let orig = g.clone();
            assert_eq!(fold_spatial_pad(&mut g).unwrap(), 1);
            remove_dead_nodes(&mut g).unwrap();
            let types: Vec<&str> = g.nodes.iter().map(|n| n.op_type.as_str()).collect();
            assert_eq!(types, ["Conv"]);
            assert_eq!(g.nodes[0].attrs.ints("pads").unwrap(), Some(want));
            assert_same_outputs(&orig, &g, &input);
        }
    }

    #[test]
    fn leaves_what_a_conv_border_cannot_express() {
        let cases: [(&[i64], f32, &str, &str); 5] = [
            (&[0, 0, 1, 1, 0, 0, 1, 1], 0.5, "constant", "NOTSET"), // not zero
            (&[0, 0, 1, 1, 0, 0, 1, 1], 0.0, "reflect", "NOTSET"),  // not a zero border
            (&[0, 1, 1, 1, 0, 0, 1, 1], 0.0, "constant", "NOTSET"), // channels padded
            (&[0, 0, -1, 0, 0, 0, 1, 1], 0.0, "constant", "NOTSET"), // a crop
            (&[0, 0, 1, 1, 0, 0, 1, 1], 0.0, "constant", "SAME_UPPER"), // auto_pad
        ];
        for (pads, value, mode, auto_pad) in cases {
            let conv_pads = (auto_pad == "NOTSET").then_some(&[0i64, 0, 0, 0][..]);
            let mut g = graph(pads, value, mode, conv_pads, auto_pad);
            assert_eq!(fold_spatial_pad(&mut g).unwrap(), 0, "{pads:?} {value} {mode} {auto_pad}");
        }
    }
}
