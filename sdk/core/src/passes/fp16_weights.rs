//! FP16 (an `--precision fp16` build, or a `best` layer, after the default passes): each
//! `edgert.FusedConv` with constant float32 weights that the GEMM path runs (1-D or 2-D,
//! not depthwise) gets its weights as float16. The GEMM converts them back to f32 one
//! block at a time (`cpu::gemm::AMatrix::F16`): activations, bias and sums stay f32, the
//! weights' storage (engine file and memory) halves, and the outputs change by the weights'
//! rounding to 11 significant bits.
//!
//! Left in f32, each with its reason for the build report: depthwise convolutions (the
//! direct kernel reads f32 weights; they are small), weights outside float16's range,
//! non-constant weights, and every op that is not a convolution (no FP16 kernel yet).

use half::f16;

use crate::error::Result;
use crate::graph::{Graph, ValueId};
use crate::ops::fused::fused_conv::OP_TYPE as FUSED_CONV;
use crate::passes::LayerPrecision;
use crate::tensor::{DType, Tensor, TensorData};

/// Whether node `i` is a convolution whose weights could be float16: `Ok(weights)`, or
/// `Err(reason)` to stay in f32.
pub fn fp16_candidate(graph: &Graph, i: usize) -> std::result::Result<ValueId, String> {
    let node = &graph.nodes[i];
    if node.op_type != FUSED_CONV {
        return Err(format!("no FP16 kernel for {}", node.op_type));
    }
    let input = |k: usize| node.inputs.get(k).copied().flatten();
    let x = input(0).ok_or("no input X")?;
    if graph.values[x].dtype.is_some_and(|d| d != DType::F32) {
        return Err("input is not float32".into());
    }
    let w_id = input(1).ok_or("no weights")?;
    let w = graph.constants.get(&w_id).ok_or("weights are not constant")?;
    let shape = w.shape();
    if !(3..=4).contains(&shape.len()) || w.dtype() != DType::F32 {
        return Err(format!("not a 1-D or 2-D float32 convolution (weights {} {:?})", w.dtype(), shape));
    }
    if shape[1] == 1 && node.attrs.int_or("group", 1).unwrap_or(1) > 1 {
        return Err("depthwise: the direct f32 kernel serves it".into());
    }
    let max = w.as_f32().map_err(|e| e.to_string())?.iter().fold(0f32, |a, v| a.max(v.abs()));
    if max > f16::MAX.to_f32() {
        return Err(format!("weights up to {max:e} exceed float16's range"));
    }
    Ok(w_id)
}

/// Stores the weights of every candidate convolution as float16; returns each node's
/// precision and the reason.
pub fn fp16_weights(graph: &mut Graph) -> Result<Vec<LayerPrecision>> {
    let mut report = Vec::with_capacity(graph.nodes.len());
    for i in 0..graph.nodes.len() {
        let (precision, reason) = match fp16_candidate(graph, i) {
            Ok(w_id) => {
                let w = graph.constants[&w_id].clone();
                let halves: Vec<f16> = w.as_f32()?.iter().map(|&v| f16::from_f32(v)).collect();
                let name = format!("{}.w_f16", graph.nodes[i].name);
                let id = graph.add_constant(&name, Tensor::new(w.shape().to_vec(), TensorData::F16(halves))?);
                graph.nodes[i].inputs[1] = Some(id);
                ("fp16", "weights stored as float16, f32 activations and sums".to_string())
            }
            Err(reason) => ("fp32", reason),
        };
        report.push(LayerPrecision::of(&graph.nodes[i], precision, reason));
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Arc;

    use super::*;
    use crate::engine::Engine;
    use crate::graph::Dim;
    use crate::ops::nn::test_util::Rng;
    use crate::ops::{Attr, Attrs};
    use crate::{Context, Tensor};

    // 1600 positions: the padded convolutions take the packing GEMM (`gemm_packing`).
    const SHAPE: [usize; 4] = [2, 5, 40, 40];

    /// x → Conv3x3 (24, padded) + Relu → depthwise 3x3 → Conv1x1 (40) → grouped Conv3x3
    /// (2 groups, 8): padded, pointwise and grouped GEMM convolutions, and a depthwise one.
    /// `scale` multiplies conv1's weights.
    fn net(scale: f32) -> Graph {
        let mut rng = Rng::new(5);
        let mut g = Graph { opset: 13, ..Graph::default() };
        let x = g.add_value("x", Some(DType::F32), Some(SHAPE.iter().map(|&d| Dim::Fixed(d)).collect()));
        g.inputs.push(x);
        let mut c = |name: &str, shape: &[usize], s: f32| {
            let t = rng.tensor(shape);
            let v: Vec<f32> = t.as_f32().unwrap().iter().map(|x| x * s).collect();
            g.add_constant(name, Tensor::from_f32(shape, v).unwrap())
        };
        let (w1, b1, wd, w2, w3) = (
            c("w1", &[24, 5, 3, 3], scale),
            c("b1", &[24], 1.0),
            c("wd", &[24, 1, 3, 3], 1.0),
            c("w2", &[40, 24, 1, 1], 1.0),
            c("w3", &[8, 20, 3, 3], 1.0),
        );
        let v: Vec<ValueId> = (0..5).map(|i| g.add_value(&format!("v{i}"), None, None)).collect();
        let pad1 = Attrs::new().with("pads", Attr::Ints(vec![1; 4]));
        g.add_node("conv1", "Conv", pad1.clone(), vec![Some(x), Some(w1), Some(b1)], vec![Some(v[0])]).unwrap();
        g.add_node("relu1", "Relu", Attrs::new(), vec![Some(v[0])], vec![Some(v[1])]).unwrap();
        let dw = pad1.clone().with("group", Attr::Int(24));
        g.add_node("dw", "Conv", dw, vec![Some(v[1]), Some(wd)], vec![Some(v[2])]).unwrap();
        g.add_node("pw", "Conv", Attrs::new(), vec![Some(v[2]), Some(w2)], vec![Some(v[3])]).unwrap();
        let grouped = pad1.with("group", Attr::Int(2));
        g.add_node("grouped", "Conv", grouped, vec![Some(v[3]), Some(w3)], vec![Some(v[4])]).unwrap();
        g.outputs.push(v[4]);
        g
    }

    fn run(engine: Engine, x: &Tensor) -> Vec<f32> {
        let shapes = HashMap::from([("x".to_string(), SHAPE.to_vec())]);
        let mut ctx = Context::with_threads(Arc::new(engine), &shapes, 2).unwrap();
        ctx.set_input("x", x).unwrap();
        ctx.run().unwrap();
        ctx.output(0).unwrap().as_f32().unwrap().to_vec()
    }

    #[test]
    fn fp16_weights_are_rounded_weights_and_every_layer_is_reported() {
        let x = Rng::new(8).tensor(&SHAPE);
        let mut g = net(1.0);
        let mut fp32 = Engine::build(g.clone(), None).unwrap().graph;
        let layers = fp16_weights(&mut fp32).unwrap();
        let by: HashMap<&str, &LayerPrecision> = layers.iter().map(|l| (l.node.as_str(), l)).collect();
        assert_eq!(layers.len(), fp32.nodes.len());
        assert_eq!(layers.iter().filter(|l| l.precision == "fp16").count(), 3, "{layers:?}");
        assert_eq!(by["dw"].precision, "fp32");
        assert!(by["dw"].reason.contains("depthwise"), "{:?}", by["dw"]);
        crate::passes::remove_dead_nodes(&mut fp32).unwrap();
        let f16_consts = fp32.constants.values().filter(|t| t.dtype() == DType::F16).count();
        let f32_4d = fp32.constants.values().filter(|t| t.dtype() == DType::F32 && t.shape().len() == 4).count();
        assert_eq!((f16_consts, f32_4d), (3, 1), "the f32 copies of converted weights are gone");
        let half = Engine::from_graph(fp32).unwrap();
        let bytes = half.to_bytes().unwrap();
        let got = run(half, &x);

        // Oracle: the fp32 engine on the same weights rounded to f16 in the model itself.
        for (_, t) in g.constants.iter_mut() {
            if t.shape().len() == 4 && t.shape()[1] != 1 {
                let r: Vec<f32> = t.as_f32().unwrap().iter().map(|&v| f16::from_f32(v).to_f32()).collect();
                *t = Arc::new(Tensor::from_f32(t.shape(), r).unwrap());
            }
        }
        let want = run(Engine::build(g, None).unwrap(), &x);
        let exact = run(Engine::build(net(1.0), None).unwrap(), &x);
        let range = exact.iter().fold(0f32, |a, v| a.max(v.abs()));
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!((g - w).abs() <= 1e-5 * (1.0 + w.abs()), "at {i}: {g} vs rounded-weights f32 {w}");
        }
        let err = got.iter().zip(&exact).fold(0f32, |a, (g, w)| a.max((g - w).abs()));
        assert!(err > 0.0 && err <= 2e-3 * range, "error {err} for range {range}: not the f16 rounding");
        // The engine file keeps the f16 weights.
        assert_eq!(run(Engine::from_bytes(&bytes).unwrap(), &x), got);
    }

    #[test]
    fn weights_beyond_the_float16_range_stay_fp32() {
        let mut g = Engine::build(net(1e5), None).unwrap().graph;
        let layers = fp16_weights(&mut g).unwrap();
        let conv1 = layers.iter().find(|l| l.node == "conv1").unwrap();
        assert_eq!(conv1.precision, "fp32");
        assert!(conv1.reason.contains("exceed float16's range"), "{conv1:?}");
        assert_eq!(layers.iter().filter(|l| l.precision == "fp16").count(), 2);
    }
}
