//! BatchNorm folding: `BatchNormalization(Conv(X, W, B))` with constant parameters becomes
//! `Conv(X, W', B')` with `W'[m] = W[m]·s[m]`, `B'[m] = (B[m] − mean[m])·s[m] + beta[m]`,
//! `s = gamma / sqrt(var + epsilon)` (computed in f64, stored in f32).

use std::sync::Arc;

use super::use_counts;
use crate::error::Result;
use crate::graph::{Graph, ValueId};
use crate::tensor::{DType, Tensor};

/// Folds every eligible BatchNormalization into the Conv before it; returns how many.
pub fn fold_batchnorm(graph: &mut Graph) -> Result<usize> {
    let uses = use_counts(graph);
    let producer = super::producers(graph);
    let mut remove = vec![false; graph.nodes.len()];
    let mut folded = 0;
    for bi in 0..graph.nodes.len() {
        let bn = &graph.nodes[bi];
        if bn.op_type != "BatchNormalization" || bn.outputs.iter().skip(1).any(|o| o.is_some_and(|o| uses[o] > 0)) {
            continue;
        }
        if bn.attrs.int_or("training_mode", 0)? != 0 {
            continue;
        }
        let Some(Some(y)) = bn.inputs.first().copied() else { continue };
        let Some(&ci) = producer.get(&y) else { continue };
        let conv = &graph.nodes[ci];
        if conv.op_type != "Conv" || uses[y] != 1 || graph.outputs.contains(&y) || remove[ci] {
            continue;
        }
        let konst = |i: Option<&Option<ValueId>>| -> Option<Arc<Tensor>> {
            i.copied().flatten().and_then(|id| graph.constants.get(&id).cloned()).filter(|t| t.dtype() == DType::F32)
        };
        let (Some(w), Some(gamma), Some(beta), Some(mean), Some(var)) = (
            konst(conv.inputs.get(1)),
            konst(bn.inputs.get(1)),
            konst(bn.inputs.get(2)),
            konst(bn.inputs.get(3)),
            konst(bn.inputs.get(4)),
        ) else {
            continue;
        };
        let bias = konst(conv.inputs.get(2));
        if conv.inputs.get(2).copied().flatten().is_some() && bias.is_none() {
            continue; // a runtime bias: leave both nodes
        }
        let m = w.shape().first().copied().unwrap_or(0);
        if m == 0
            || [&gamma, &beta, &mean, &var].iter().any(|t| t.len() != m)
            || bias.as_ref().is_some_and(|b| b.len() != m)
        {
            continue;
        }
        let eps = bn.attrs.float_or("epsilon", 1e-5)? as f64;
        let (g, bt, mu, v) = (gamma.as_f32()?, beta.as_f32()?, mean.as_f32()?, var.as_f32()?);
        let scale: Vec<f64> = (0..m).map(|i| g[i] as f64 / (v[i] as f64 + eps).sqrt()).collect();
        let per = w.len() / m;
        let ws = w.as_f32()?;
        let new_w: Vec<f32> = (0..w.len()).map(|i| (ws[i] as f64 * scale[i / per]) as f32).collect();
        let b0 = match &bias {
            Some(b) => b.as_f32()?.to_vec(),
            None => vec![0.0; m],
        };
        let new_b: Vec<f32> =
            (0..m).map(|i| ((b0[i] as f64 - mu[i] as f64) * scale[i] + bt[i] as f64) as f32).collect();
        let (conv_name, bn_out) = (conv.name.clone(), bn.outputs[0]);
        let wid = graph.add_constant(&format!("{conv_name}/W_bn_folded"), Tensor::from_f32(w.shape(), new_w)?);
        let bid = graph.add_constant(&format!("{conv_name}/B_bn_folded"), Tensor::from_f32(&[m], new_b)?);
        let conv = &mut graph.nodes[ci];
        conv.inputs.resize(3, None);
        conv.inputs[1] = Some(wid);
        conv.inputs[2] = Some(bid);
        conv.outputs[0] = bn_out;
        remove[bi] = true;
        folded += 1;
    }
    let mut r = remove.into_iter();
    graph.nodes.retain(|_| !r.next().unwrap_or(false));
    Ok(folded)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::Dim;
    use crate::ops::nn::test_util::Rng;
    use crate::ops::{Attr, Attrs};
    use crate::passes::test_util::assert_same_outputs;

    #[test]
    fn folds_bn_into_conv_and_keeps_outputs() {
        let mut rng = Rng::new(3);
        let mut g = Graph { opset: 17, ..Graph::default() };
        let x =
            g.add_value("x", Some(DType::F32), Some(vec![Dim::Fixed(2), Dim::Fixed(3), Dim::Fixed(7), Dim::Fixed(5)]));
        g.inputs.push(x);
        let w = g.add_constant("w", rng.tensor(&[4, 3, 3, 3]));
        let b = g.add_constant("b", rng.tensor(&[4]));
        let gamma = g.add_constant("g", rng.tensor(&[4]));
        let beta = g.add_constant("be", rng.tensor(&[4]));
        let mean = g.add_constant("mu", rng.tensor(&[4]));
        let var = g.add_constant("v", Tensor::from_f32(&[4], vec![0.5, 1.0, 2.0, 0.1]).unwrap());
        let c = g.add_value("c", None, None);
        let y = g.add_value("y", None, None);
        let a = Attrs::new().with("pads", Attr::Ints(vec![1, 1, 1, 1]));
        g.add_node("conv", "Conv", a, vec![Some(x), Some(w), Some(b)], vec![Some(c)]).unwrap();
        let bn_attrs = Attrs::new().with("epsilon", Attr::Float(1e-3));
        g.add_node("bn", "BatchNormalization", bn_attrs, [c, gamma, beta, mean, var].map(Some).to_vec(), vec![Some(y)])
            .unwrap();
        g.outputs.push(y);
        let orig = g.clone();
        assert_eq!(fold_batchnorm(&mut g).unwrap(), 1);
        assert_eq!(g.op_counts().into_iter().collect::<Vec<_>>(), vec![("Conv".to_string(), 1)]);
        assert_same_outputs(&orig, &g, &[("x", rng.tensor(&[2, 3, 7, 5]))]);
    }
}
