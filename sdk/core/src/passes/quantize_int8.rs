//! INT8 quantization (an `--precision int8` build, after the default passes): each
//! `edgert.FusedConv` whose input has a calibrated scale becomes an `edgert.QConv` with
//! symmetric per-output-channel int8 weights (`quant::weights`), an int32 bias in
//! accumulator units, and the input quantized per tensor to uint8 with zero point 128
//! (the symmetric int8 grid `[-127, 127]` shifted into the GEMM's unsigned operand).
//!
//! Not every layer is quantized; [`LayerPrecision`] says which are and why the others are
//! not, for the build report. Left in f32: depthwise convolutions (one input channel per
//! group: the direct f32 kernel is faster than a GEMM with k = kh*kw), convolutions whose
//! input has no scale in the calibration cache, non-2-D or non-constant-weight ones, and
//! every op that is not a convolution (no INT8 kernel yet).

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::graph::{Graph, ValueId};
use crate::ops::Attr;
use crate::ops::fused::fused_conv::OP_TYPE as FUSED_CONV;
use crate::ops::fused::qconv::{MAX_CHANNELS, OP_TYPE as QCONV};
use crate::quant::CalibrationCache;
use crate::quant::weights::{quantize_bias, quantize_per_channel_bits};
use crate::tensor::{DType, Tensor, TensorData};

/// The uint8 zero point of quantized activations.
pub const X_ZERO_POINT: i64 = 128;

/// The precision a node runs in, and why.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub struct LayerPrecision {
    /// Node name.
    pub node: String,
    /// Op type after the pass.
    pub op_type: String,
    /// `int8` or `fp32`.
    pub precision: String,
    /// Why: the input scale for INT8 layers, the reason otherwise.
    pub reason: String,
}

impl LayerPrecision {
    /// The report line of `node` after a pass.
    pub fn of(node: &crate::graph::Node, precision: &str, reason: String) -> LayerPrecision {
        LayerPrecision { node: node.name.clone(), op_type: node.op_type.clone(), precision: precision.into(), reason }
    }
}

/// Whether node `i` is a convolution the pass could quantize, given a scale for its input:
/// `Ok(x)` with the input value, or `Err(reason)` to stay in f32.
pub fn int8_candidate(graph: &Graph, i: usize) -> std::result::Result<ValueId, String> {
    let node = &graph.nodes[i];
    if node.op_type != FUSED_CONV {
        return Err(format!("no INT8 kernel for {}", node.op_type));
    }
    let input = |k: usize| node.inputs.get(k).copied().flatten();
    let x = input(0).ok_or("no input X")?;
    if graph.values[x].dtype.is_some_and(|d| d != DType::F32) {
        return Err("input is not float32".into());
    }
    let w = input(1).and_then(|w| graph.constants.get(&w)).ok_or("weights are not constant")?;
    let shape = w.shape();
    if shape.len() != 4 || w.dtype() != DType::F32 {
        return Err(format!("not a 2-D float32 convolution (weights {} {:?})", w.dtype(), shape));
    }
    let group = node.attrs.int_or("group", 1).unwrap_or(1);
    if shape[1] == 1 && group > 1 {
        return Err("depthwise: the direct f32 kernel serves it".into());
    }
    if shape[0] > MAX_CHANNELS {
        return Err(format!("{} output channels (INT8 takes at most {MAX_CHANNELS})", shape[0]));
    }
    if input(2).is_some_and(|b| !graph.constants.contains_key(&b)) {
        return Err("bias is not constant".into());
    }
    Ok(x)
}

/// The input values the INT8 build needs scales for (what calibration observes).
pub fn int8_inputs(graph: &Graph) -> Vec<ValueId> {
    let mut v: Vec<ValueId> = (0..graph.nodes.len()).filter_map(|i| int8_candidate(graph, i).ok()).collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// The weight bits an INT8 build uses by default on this machine: 7 where the convolution
/// kernel would be the AVX2 one (x86-64 without VNNI): 7-bit weights let it use
/// `vpmaddubsw` without saturation (ResNet-50 INT8: 141 vs 166 ms with 8-bit weights, 1
/// thread); 8 elsewhere (VNNI, NEON, portable).
pub fn default_weight_bits() -> u32 {
    use crate::cpu::gemm_i8::{I8Kernel, I8Kind};
    match I8Kernel::for_isa(crate::cpu::isa::active()).kind {
        I8Kind::Avx2 => 7,
        _ => 8,
    }
}

/// Quantizes every candidate convolution whose input has a scale in `scales`, with
/// `weight_bits`-bit weights (7 or 8); returns each node's precision and the reason.
pub fn quantize_int8(graph: &mut Graph, scales: &CalibrationCache, weight_bits: u32) -> Result<Vec<LayerPrecision>> {
    if !(7..=8).contains(&weight_bits) {
        crate::invalid!("INT8 weights have 7 or 8 bits, not {weight_bits}");
    }
    let mut report = Vec::with_capacity(graph.nodes.len());
    for i in 0..graph.nodes.len() {
        let decision = int8_candidate(graph, i).and_then(|x| {
            let name = &graph.values[x].name;
            match scales.scales.get(name) {
                Some(&s) if s > 0.0 && s.is_finite() => Ok((x, s)),
                Some(&s) => Err(format!("calibration scale {s} of `{name}` is not a positive number")),
                None => Err(format!("no calibration scale for `{name}`")),
            }
        });
        let (precision, reason) = match decision {
            Ok((_, x_scale)) => {
                quantize_node(graph, i, x_scale, weight_bits)?;
                ("int8", format!("input scale {x_scale:e} ({}), {weight_bits}-bit weights", scales.method.name()))
            }
            Err(reason) => ("fp32", reason),
        };
        report.push(LayerPrecision::of(&graph.nodes[i], precision, reason));
    }
    Ok(report)
}

/// Rewrites FusedConv node `i` into a QConv (inputs X, W, B, R, S become X, Wq, w_scale,
/// Bq, R, S).
fn quantize_node(graph: &mut Graph, i: usize, x_scale: f32, weight_bits: u32) -> Result<()> {
    let node = &graph.nodes[i];
    let input = |k: usize| node.inputs.get(k).copied().flatten();
    let (x, w_id, b_id, r, s) = (input(0), input(1), input(2), input(3), input(4));
    let (name, mut attrs) = (node.name.clone(), node.attrs.clone());
    let Some(w) = w_id.and_then(|w| graph.constants.get(&w)).cloned() else {
        crate::invalid!("node `{name}`: weights are not constant");
    };
    let m = w.shape()[0];
    let (wq, w_scale) = quantize_per_channel_bits(w.as_f32()?, m, weight_bits);
    let bias = match b_id.and_then(|b| graph.constants.get(&b)).cloned() {
        Some(b) => Some(quantize_bias(&b.to_f32_vec()?, x_scale, &w_scale)),
        None => None,
    };
    let wq_id = graph.add_constant(&format!("{name}.w_int8"), Tensor::new(w.shape().to_vec(), TensorData::I8(wq))?);
    let ws_id = graph.add_constant(&format!("{name}.w_scale"), Tensor::from_f32(&[m], w_scale)?);
    let bq_id = match bias {
        Some(b) => Some(graph.add_constant(&format!("{name}.b_int32"), Tensor::new(vec![m], TensorData::I32(b))?)),
        None => None,
    };
    attrs.insert("x_scale", Attr::Float(x_scale));
    attrs.insert("x_zero_point", Attr::Int(X_ZERO_POINT));
    let op = crate::ops::build_op(QCONV, &attrs, graph.opset)
        .ok_or_else(|| crate::invalid_err!("{QCONV} is not registered"))??;
    let node = &mut graph.nodes[i];
    node.op_type = QCONV.to_string();
    node.attrs = attrs;
    node.inputs = vec![x, Some(wq_id), Some(ws_id), bq_id, r, s];
    while node.inputs.last() == Some(&None) {
        node.inputs.pop();
    }
    node.op = op.into();
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::HashMap;
    use std::sync::Arc;

    use super::*;
    use crate::engine::{Engine, Int8Options, Int8Scales};

    const ALL: Int8Options = Int8Options { only_faster: false, threads: 1, weight_bits: 8 };
    use crate::graph::Dim;
    use crate::ops::Attrs;
    use crate::ops::nn::test_util::Rng;
    use crate::quant::Method;
    use crate::{Context, Tensor};

    pub(crate) const SHAPE: [usize; 4] = [2, 3, 16, 16];

    /// x → Conv3x3+Relu (8) → depthwise 3x3 → Conv1x1 (16) + Conv1x1(x) (16) → Relu →
    /// GlobalAveragePool: regular, depthwise and pointwise convolutions, a residual.
    pub(crate) fn net() -> Graph {
        let mut rng = Rng::new(21);
        let mut g = Graph { opset: 13, ..Graph::default() };
        let x = g.add_value("x", Some(DType::F32), Some(SHAPE.iter().map(|&d| Dim::Fixed(d)).collect()));
        g.inputs.push(x);
        let mut c = |name: &str, shape: &[usize]| g.add_constant(name, rng.tensor(shape));
        let (w1, b1, wd, w2, b2, w3) = (
            c("w1", &[8, 3, 3, 3]),
            c("b1", &[8]),
            c("wd", &[8, 1, 3, 3]),
            c("w2", &[16, 8, 1, 1]),
            c("b2", &[16]),
            c("w3", &[16, 3, 1, 1]),
        );
        let v: Vec<ValueId> = (0..8).map(|i| g.add_value(&format!("v{i}"), None, None)).collect();
        let pad1 = Attrs::new().with("pads", Attr::Ints(vec![1; 4]));
        g.add_node("conv1", "Conv", pad1.clone(), vec![Some(x), Some(w1), Some(b1)], vec![Some(v[0])]).unwrap();
        g.add_node("relu1", "Relu", Attrs::new(), vec![Some(v[0])], vec![Some(v[1])]).unwrap();
        let dw = pad1.with("group", Attr::Int(8));
        g.add_node("dw", "Conv", dw, vec![Some(v[1]), Some(wd)], vec![Some(v[2])]).unwrap();
        g.add_node("pw", "Conv", Attrs::new(), vec![Some(v[2]), Some(w2), Some(b2)], vec![Some(v[3])]).unwrap();
        g.add_node("skip", "Conv", Attrs::new(), vec![Some(x), Some(w3)], vec![Some(v[4])]).unwrap();
        g.add_node("add", "Add", Attrs::new(), vec![Some(v[3]), Some(v[4])], vec![Some(v[5])]).unwrap();
        g.add_node("relu2", "Relu", Attrs::new(), vec![Some(v[5])], vec![Some(v[6])]).unwrap();
        g.add_node("gap", "GlobalAveragePool", Attrs::new(), vec![Some(v[6])], vec![Some(v[7])]).unwrap();
        g.outputs.push(v[3]);
        g.outputs.push(v[7]);
        g
    }

    fn run(engine: Engine, x: &Tensor) -> Vec<Tensor> {
        let shapes = HashMap::from([("x".to_string(), SHAPE.to_vec())]);
        let mut ctx = Context::with_threads(Arc::new(engine), &shapes, 2).unwrap();
        ctx.set_input("x", x).unwrap();
        ctx.run().unwrap();
        (0..ctx.num_outputs()).map(|i| ctx.output(i).unwrap()).collect()
    }

    pub(crate) fn samples(seed: u64, n: usize) -> impl Iterator<Item = Result<crate::quant::collect::Sample>> {
        let mut rng = Rng::new(seed);
        (0..n).map(move |_| Ok(HashMap::from([("x".to_string(), rng.tensor(&SHAPE))])))
    }

    #[test]
    fn calibrated_int8_build_is_close_to_fp32_and_reports_every_layer() {
        let x = Rng::new(99).tensor(&SHAPE);
        let want = run(Engine::build(net(), None).unwrap(), &x);
        let mut seen = 0;
        let (engine, cache) = Engine::build_int8(
            net(),
            None,
            Int8Scales::Calibrate {
                samples: &mut samples(1, 6),
                method: Method::MinMax,
                threads: 1,
                progress: &mut |n| seen = n,
            },
            &ALL,
        )
        .unwrap();
        assert_eq!(seen, 6, "progress saw every sample");
        // Three convolutions in INT8 (conv1, pw, skip), the depthwise one and the pooling in
        // f32, each with its reason.
        let layers: HashMap<&str, (&str, &str)> =
            engine.build.layers.iter().map(|l| (l.node.as_str(), (l.precision.as_str(), l.reason.as_str()))).collect();
        assert_eq!(layers.len(), engine.graph.nodes.len());
        assert_eq!(layers.values().filter(|l| l.0 == "int8").count(), 3, "{layers:?}");
        assert_eq!(layers["dw"].0, "fp32");
        assert!(layers["dw"].1.contains("depthwise"), "{layers:?}");
        assert!(layers["gap"].1.contains("no INT8 kernel for GlobalAveragePool"), "{layers:?}");
        assert_eq!(engine.build.precision, "int8");
        let qconvs = engine.graph.nodes.iter().filter(|n| n.op_type == QCONV).count();
        assert_eq!(qconvs, 3);
        // Only quantized weights are left for the INT8 layers (the f32 copies were dropped).
        let f32_weights =
            engine.graph.constants.values().filter(|t| t.dtype() == DType::F32 && t.shape().len() == 4).count();
        assert_eq!(f32_weights, 1, "only the depthwise weights stay f32");
        assert!(cache.scales.contains_key("x") && cache.scales.contains_key("v2"), "{:?}", cache.scales);

        let bytes = engine.to_bytes().unwrap();
        let got = run(engine, &x);
        for (o, (g, w)) in got.iter().zip(&want).enumerate() {
            let (g, w) = (g.as_f32().unwrap(), w.as_f32().unwrap());
            let range = w.iter().fold(0f32, |a, v| a.max(v.abs()));
            let max_err = g.iter().zip(w).fold(0f32, |a, (g, w)| a.max((g - w).abs()));
            // Three stacked 8-bit layers: a few percent of the output range at most; and not
            // zero (the INT8 path really ran).
            assert!(max_err <= 0.03 * range, "output {o}: max error {max_err} for range {range}");
            assert!(max_err > 0.0, "output {o} is bit-identical to f32: INT8 did not run");
        }
        // The engine file round-trips, and a build from the cache's text gives the same engine.
        let loaded = run(Engine::from_bytes(&bytes).unwrap(), &x);
        let cache2 = CalibrationCache::parse(&cache.to_text()).unwrap();
        let (from_cache, _) = Engine::build_int8(net(), None, Int8Scales::Cache(cache2), &ALL).unwrap();
        let rebuilt = run(from_cache, &x);
        for ((a, b), c) in got.iter().zip(&loaded).zip(&rebuilt) {
            assert_eq!(a.as_f32().unwrap(), b.as_f32().unwrap());
            assert_eq!(a.as_f32().unwrap(), c.as_f32().unwrap());
        }
    }

    #[test]
    fn a_tensor_without_a_scale_stays_fp32_and_says_so() {
        let mut cache = CalibrationCache { method: Method::Entropy, scales: Default::default() };
        cache.scales.insert("x".into(), 0.02);
        cache.scales.insert("v2".into(), f32::NAN);
        let (engine, _) = Engine::build_int8(net(), None, Int8Scales::Cache(cache), &ALL).unwrap();
        let l = |name: &str| engine.build.layers.iter().find(|l| l.node == name).unwrap();
        assert_eq!(l("conv1").precision, "int8");
        assert!(l("conv1").reason.contains("entropy"));
        assert_eq!(l("skip").precision, "int8");
        assert_eq!(l("pw").precision, "fp32");
        assert!(l("pw").reason.contains("not a positive number"), "{:?}", l("pw"));
        // No samples: a clear error.
        let err = Engine::build_int8(
            net(),
            None,
            Int8Scales::Calibrate {
                samples: &mut samples(1, 0),
                method: Method::MinMax,
                threads: 1,
                progress: &mut |_| {},
            },
            &ALL,
        )
        .unwrap_err();
        assert!(err.to_string().contains("at least one sample"), "{err}");
    }

    /// With `only_faster`, each quantized layer was timed against its f32 form: it stays
    /// INT8 only if faster, and the report gives both times either way. Outputs stay close.
    #[test]
    fn only_faster_times_every_int8_layer_and_says_which_won() {
        let cache = {
            let (_, c) = Engine::build_int8(
                net(),
                None,
                Int8Scales::Calibrate {
                    samples: &mut samples(1, 4),
                    method: Method::MinMax,
                    threads: 1,
                    progress: &mut |_| {},
                },
                &ALL,
            )
            .unwrap();
            c
        };
        let timed = Int8Options { only_faster: true, threads: 1, weight_bits: 8 };
        let (engine, _) = Engine::build_int8(net(), None, Int8Scales::Cache(cache), &timed).unwrap();
        let mut timed_layers = 0;
        for l in &engine.build.layers {
            match l.precision.as_str() {
                "int8" => {
                    assert!(l.reason.contains("faster here") && l.op_type == QCONV, "{l:?}");
                    timed_layers += 1;
                }
                _ if l.reason.starts_with("fp32 faster here") => {
                    assert_eq!(l.op_type, FUSED_CONV, "{l:?}");
                    timed_layers += 1;
                }
                _ => {}
            }
        }
        assert_eq!(timed_layers, 3, "{:?}", engine.build.layers);
        let qconvs = engine.graph.nodes.iter().filter(|n| n.op_type == QCONV).count();
        assert_eq!(qconvs, engine.build.layers.iter().filter(|l| l.precision == "int8").count());
        let x = Rng::new(99).tensor(&SHAPE);
        let want = run(Engine::build(net(), None).unwrap(), &x);
        for (g, w) in run(engine, &x).iter().zip(&want) {
            let (g, w) = (g.as_f32().unwrap(), w.as_f32().unwrap());
            let range = w.iter().fold(0f32, |a, v| a.max(v.abs()));
            assert!(g.iter().zip(w).all(|(g, w)| (g - w).abs() <= 0.03 * range));
        }
    }
}
