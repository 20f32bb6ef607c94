//! A QDQ model made by onnxruntime's quantizer (`models/qdq/make_qdq.py`: a small conv net,
//! `quantize_static`, QDQ, per-channel, u8 activations, s8 weights) runs in edgert within one
//! quantization step of onnxruntime's output, through the reference executor and the
//! planned engine (where the QDQ convolutions run on the INT8 kernels).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::tensor::Tensor;
use crate::{Context, Engine, npy, onnx};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models/qdq")
}

/// Largest difference between two f32 tensors, in quantization steps.
fn max_steps(got: &Tensor, want: &Tensor, step: f64) -> f64 {
    assert_eq!(got.shape(), want.shape());
    let (g, w) = (got.as_f32().unwrap(), want.as_f32().unwrap());
    g.iter().zip(w).map(|(&a, &b)| (a as f64 - b as f64).abs() / step).fold(0.0, f64::max)
}

#[test]
fn qdq_convnet_within_one_step_of_onnxruntime() {
    let d = dir();
    let case: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("golden/case.json")).unwrap()).unwrap();
    let step = case["output_step"].as_f64().unwrap();
    let x = npy::read(&d.join("golden/input_0.npy")).unwrap();
    let literal = npy::read(&d.join("golden/output_0.npy")).unwrap();
    let fused = npy::read(&d.join("golden/output_0_ort_fused.npy")).unwrap();

    let graph = onnx::load_model(&d.join("small_convnet_qdq.onnx")).unwrap();
    let ops: Vec<&str> = graph.nodes.iter().map(|n| n.op_type.as_str()).collect();
    assert!(ops.contains(&"QuantizeLinear") && ops.contains(&"DequantizeLinear"), "{ops:?}");
    let inputs: HashMap<String, Tensor> = [("input".to_string(), x.clone())].into();
    let reference = graph.run_reference(&inputs).unwrap().remove(0);

    let engine = Engine::from_graph(graph).unwrap();
    // Both convolutions run on the INT8 kernels (passes::fold_qdq_conv), not in float on
    // dequantized values.
    let qconvs = engine.graph.nodes.iter().filter(|n| n.op_type == "edgert.QConv").count();
    assert_eq!(qconvs, 2, "{:?}", engine.graph.nodes.iter().map(|n| &n.op_type).collect::<Vec<_>>());
    let engine = Arc::new(engine);
    let shapes: HashMap<String, Vec<usize>> = [("input".to_string(), x.shape().to_vec())].into();
    let mut ctx = Context::new(engine, &shapes).unwrap();
    ctx.set_input("input", &x).unwrap();
    ctx.run().unwrap();
    let planned = ctx.output(0).unwrap();

    let (r, p) = (max_steps(&reference, &literal, step), max_steps(&planned, &literal, step));
    let f = max_steps(&reference, &fused, step);
    println!(
        "QDQ convnet: reference {r:.3} steps, engine {p:.3} steps from onnxruntime (optimizations off); {f:.3} steps from its fused int8 kernels"
    );
    // The QDQ graph computed literally (dequantize, float op, quantize): one step at most.
    assert!(r <= 1.0 + 1e-3, "reference is {r} steps from onnxruntime");
    assert!(p <= 1.0 + 1e-3, "engine is {p} steps from onnxruntime");
    // onnxruntime's fused kernels themselves differ from its literal run (case.json says by
    // how much): edgert must be no further from them than that plus one step.
    let ort_own = case["max_steps_fused_vs_literal"].as_f64().unwrap();
    assert!(f <= ort_own + 1.0 + 1e-3, "{f} steps from onnxruntime's fused run (its own spread: {ort_own})");
}
