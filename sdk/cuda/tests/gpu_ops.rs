//! Differential tests of the CUDA kernels, through the executor, against edgert-core's
//! reference ops (the oracle): one single-op graph per case, random inputs, remainder sizes
//! (7, 13, 1026) and batch > 1. Needs a GPU: without a CUDA driver each test prints
//! `skipped: no GPU` and passes. Run by tests/gpu/run.sh on a machine with one.

use std::collections::HashMap;
use std::sync::Arc;

use edgert_core::compare::{Tolerance, mismatch};
use edgert_core::graph::Dim;
use edgert_core::ops::{Attr, Attrs};
use edgert_core::{DType, Engine, Graph, Tensor};
use edgert_cuda::{ExecOptions, GpuContext};

fn gpu() -> bool {
    match edgert_cuda::driver::check_driver() {
        Ok(()) => true,
        Err(e) => {
            eprintln!("skipped: no GPU ({e})");
            false
        }
    }
}

struct Rng(u64);
impl Rng {
    fn f32s(&mut self, n: usize) -> Vec<f32> {
        (0..n)
            .map(|_| {
                self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                ((self.0 >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
            })
            .collect()
    }
}

/// One node `op` over runtime inputs `ins` (name, shape) and constants `consts`; checks the
/// GPU result against the reference for two sets of random inputs in one context (the first
/// through `set_input`, the second written into pinned staging in place), both as a
/// replayed CUDA graph (the default: the second run replays the first run's capture with
/// new inputs) and kernel by kernel.
fn check(op: &str, attrs: Attrs, ins: &[(&str, &[usize])], consts: &[(&str, &[usize])], seed: u64) {
    let mut rng = Rng(seed);
    let mut g = Graph { opset: 17, ..Default::default() };
    let mut node_inputs = Vec::new();
    for (name, shape) in ins {
        let id = g.add_value(name, Some(DType::F32), Some(shape.iter().map(|&d| Dim::Fixed(d)).collect()));
        g.inputs.push(id);
        node_inputs.push(Some(id));
    }
    for (name, shape) in consts {
        let n = shape.iter().product();
        node_inputs.push(Some(g.add_constant(name, Tensor::from_f32(shape, rng.f32s(n)).unwrap())));
    }
    let y = g.add_value("y", None, None);
    g.add_node("node", op, attrs, node_inputs, vec![Some(y)]).unwrap();
    g.outputs.push(y);
    let cases: Vec<(HashMap<String, Tensor>, Tensor)> = (0..2)
        .map(|_| {
            let values: HashMap<String, Tensor> = ins
                .iter()
                .map(|(name, shape)| {
                    let n = shape.iter().product();
                    (name.to_string(), Tensor::from_f32(shape, rng.f32s(n)).unwrap())
                })
                .collect();
            let want = g.run_reference(&values).unwrap().remove(0);
            (values, want)
        })
        .collect();
    let engine = Arc::new(Engine::from_graph(g).unwrap());
    let shapes: HashMap<String, Vec<usize>> = ins.iter().map(|(k, s)| (k.to_string(), s.to_vec())).collect();
    for kernel_by_kernel in [false, true] {
        let opts = ExecOptions { kernel_by_kernel, ..Default::default() };
        let mut ctx = GpuContext::new(engine.clone(), &shapes, opts).unwrap_or_else(|e| panic!("{op}: {e}"));
        let e = ctx.input_staging_mut("no_such_input").unwrap_err().to_string();
        assert!(e.contains("no such input"), "{e}");
        for (i, (values, want)) in cases.iter().enumerate() {
            for (k, v) in values {
                if i == 0 {
                    ctx.set_input(k, v).unwrap();
                } else {
                    // The in-place path: written into pinned staging, then uploaded.
                    ctx.input_staging_mut(k).unwrap().copy_from_slice(v.view().data.as_bytes());
                    ctx.upload_input(k).unwrap();
                }
            }
            ctx.run().unwrap_or_else(|e| panic!("{op}: {e}"));
            let got = ctx.output(0).unwrap();
            if let Some(m) = mismatch(&got, want, Tolerance::F32) {
                panic!("{op} {ins:?} {consts:?}, inputs #{i}, kernel by kernel {kernel_by_kernel}: {m}");
            }
        }
        assert_eq!(ctx.cuda_graph().is_ok(), !kernel_by_kernel, "{op}: {:?}", ctx.cuda_graph());
    }
    eprintln!("ok {op} {ins:?} {consts:?}");
}

fn ints(v: &[i64]) -> Attr {
    Attr::Ints(v.to_vec())
}

#[test]
fn conv_direct_depthwise_igemm() {
    if !gpu() {
        return;
    }
    let pad1 = || Attrs::new().with("pads", ints(&[1, 1, 1, 1]));
    // Implicit GEMM (C*R*S >= 16), remainder sizes, batch 2, bias.
    check("Conv", pad1(), &[("x", &[2, 13, 7, 13])], &[("w", &[7, 13, 3, 3]), ("b", &[7])], 1);
    // Direct (1x1 over 3 channels), stride 2.
    check("Conv", Attrs::new().with("strides", ints(&[2, 2])), &[("x", &[3, 3, 13, 7])], &[("w", &[5, 3, 1, 1])], 2);
    // Depthwise 3x3, stride 2, 13 channels.
    let dw = pad1().with("group", Attr::Int(13)).with("strides", ints(&[2, 2]));
    check("Conv", dw, &[("x", &[2, 13, 13, 7])], &[("w", &[13, 1, 3, 3]), ("b", &[13])], 3);
    // Grouped, dilated.
    let gd = pad1().with("group", Attr::Int(2)).with("dilations", ints(&[2, 2]));
    check("Conv", gd, &[("x", &[2, 6, 13, 13])], &[("w", &[4, 3, 3, 3])], 4);
    // A large GEMM-shaped conv (K = 64, C*R*S = 1026 / ~).
    check("Conv", Attrs::new(), &[("x", &[2, 114, 7, 13])], &[("w", &[65, 114, 3, 3])], 5);
    // The fused epilogue with a clamp after the activation (the speech embedding's
    // Max(LeakyRelu(x), -0.4), here bounded on both sides).
    let fused = pad1()
        .with("activation", Attr::String(b"LeakyRelu".to_vec()))
        .with("alpha", Attr::Float(0.2))
        .with("clamp_min", Attr::Float(-0.1))
        .with("clamp_max", Attr::Float(0.3));
    check("edgert.FusedConv", fused, &[("x", &[2, 13, 7, 13])], &[("w", &[7, 13, 3, 3]), ("b", &[7])], 6);
    // Residuals (input 3, here constants): the output's shape on the implicit GEMM, and
    // fewer channels (a folded zero channel pad, BlazeFace's widening skips) on the implicit
    // GEMM and the direct kernel.
    let relu = || pad1().with("activation", Attr::String(b"Relu".to_vec()));
    let (x, w, b) = (("x", &[2usize, 13, 7, 13][..]), ("w", &[7usize, 13, 3, 3][..]), ("b", &[7usize][..]));
    check("edgert.FusedConv", relu(), &[x], &[w, b, ("r", &[2, 7, 7, 13])], 7);
    check("edgert.FusedConv", relu(), &[x], &[w, b, ("r", &[2, 4, 7, 13])], 8);
    let direct = [("w", &[6usize, 3, 1, 1][..]), ("b", &[6usize][..]), ("r", &[2usize, 3, 7, 5][..])];
    check("edgert.FusedConv", Attrs::new(), &[("x", &[2, 3, 7, 5])], &direct, 9);
}

/// An FP16 engine's FusedConv (f16 weights, f32 activations) over `x`, with optional bias
/// and residual constants, on the tensor-core kernel and, with tensor cores turned off, on
/// the f32 kernels (weights widened). Inputs are float16 values, so the tensor cores'
/// rounding of activations is exact and both must match the CPU reference to f32 tolerance
/// (only the order of the f32 sums differs); then unrounded inputs on the tensor cores
/// must match within FP16's tolerance.
fn check_fp16_conv(
    gpu: bool,
    attrs: Attrs,
    x: &[usize],
    w: &[usize],
    bias: bool,
    residual: Option<&[usize]>,
    seed: u64,
) {
    let mut rng = Rng(seed);
    let mut g = Graph { opset: 17, ..Default::default() };
    let xid = g.add_value("x", Some(DType::F32), Some(x.iter().map(|&d| Dim::Fixed(d)).collect()));
    g.inputs.push(xid);
    let half = |v: Vec<f32>| v.into_iter().map(|f| half::f16::from_f32(f).to_f32()).collect::<Vec<f32>>();
    let n = w.iter().product();
    let mut inputs = vec![Some(xid), Some(g.add_constant("w", Tensor::from_f32(w, rng.f32s(n)).unwrap()))];
    inputs.push(bias.then(|| g.add_constant("b", Tensor::from_f32(&[w[0]], rng.f32s(w[0])).unwrap())));
    if let Some(r) = residual {
        let n = r.iter().product();
        inputs.push(Some(g.add_constant("r", Tensor::from_f32(r, rng.f32s(n)).unwrap())));
    }
    let y = g.add_value("y", None, None);
    g.add_node("conv", "edgert.FusedConv", attrs, inputs, vec![Some(y)]).unwrap();
    g.outputs.push(y);
    let layers = edgert_core::passes::fp16_weights(&mut g).unwrap();
    assert_eq!(layers[0].precision, "fp16", "{layers:?}");
    let xs = x.iter().product();
    let exact = Tensor::from_f32(x, half(rng.f32s(xs))).unwrap();
    let raw = Tensor::from_f32(x, rng.f32s(xs)).unwrap();
    let reference = |t: &Tensor| g.run_reference(&HashMap::from([("x".to_string(), t.clone())])).unwrap().remove(0);
    let (want_exact, want_raw) = (reference(&exact), reference(&raw));
    if !gpu {
        return; // the graph and the reference ran; the GPU part is skipped
    }
    let engine = Arc::new(Engine::from_graph(g).unwrap());
    let shapes = HashMap::from([("x".to_string(), x.to_vec())]);
    use edgert_kernels::names::{conv_tc64_f16w, conv_tc128_f16w};
    for (no_tensor_cores, tc_tile) in [(false, Some(64)), (false, Some(128)), (true, None)] {
        let opts = ExecOptions { no_tensor_cores, tc_tile, ..Default::default() };
        let mut ctx = GpuContext::new(engine.clone(), &shapes, opts).unwrap_or_else(|e| panic!("{e}"));
        let kernel = ctx.step_kernels()[0].kernel_names();
        let want = match tc_tile {
            Some(64) => vec![conv_tc64_f16w],
            Some(_) => vec![conv_tc128_f16w],
            None => vec![],
        };
        let on_tc = !want.is_empty();
        if on_tc {
            assert_eq!(kernel, want, "{x:?} {w:?}");
        } else {
            assert!(!kernel.iter().any(|k| k.contains("_tc")), "{x:?} {w:?}: {kernel:?}");
        }
        let mut cases = vec![(&exact, &want_exact, Tolerance::F32)];
        if on_tc {
            cases.push((&raw, &want_raw, Tolerance { atol: 2e-3, rtol: 1e-2 }));
        }
        for (input, want, tol) in cases {
            ctx.set_input("x", input).unwrap();
            ctx.run().unwrap();
            let got = ctx.output(0).unwrap();
            if let Some(m) = mismatch(&got, want, tol) {
                panic!("FP16 FusedConv x {x:?} w {w:?} on {kernel:?}, tolerance {tol:?}: {m}");
            }
        }
    }
    eprintln!("ok FP16 FusedConv x {x:?} w {w:?} bias {bias} residual {residual:?}");
}

#[test]
fn fp16_conv_on_tensor_cores() {
    // Without a GPU the graphs and references still run (and the test says it skipped).
    let gpu = gpu();
    let pad1 = || Attrs::new().with("pads", ints(&[1, 1, 1, 1]));
    let relu = || pad1().with("activation", Attr::String(b"Relu".to_vec()));
    // Depth 117 (not a multiple of 8: scalar weight loads), 65 channels, 182 pixels.
    check_fp16_conv(gpu, pad1(), &[2, 13, 7, 13], &[65, 13, 3, 3], true, None, 60);
    // 1x1 stride 2, depth 64 (vector loads), no bias; 3 images of 5x6 outputs.
    let s2 = Attrs::new().with("strides", ints(&[2, 2]));
    check_fp16_conv(gpu, s2, &[3, 64, 9, 11], &[40, 64, 1, 1], false, None, 61);
    // Two row tiles (130 channels), six column tiles, the ResNet epilogue (residual, ReLU).
    check_fp16_conv(gpu, relu(), &[3, 32, 15, 15], &[130, 32, 3, 3], true, Some(&[3, 130, 15, 15]), 62);
    // A narrower residual (a folded channel pad), grouped and dilated.
    let gd = relu().with("group", Attr::Int(2)).with("dilations", ints(&[2, 2])).with("pads", ints(&[2, 2, 2, 2]));
    check_fp16_conv(gpu, gd, &[2, 64, 8, 8], &[48, 32, 3, 3], true, Some(&[2, 40, 8, 8]), 63);
    // A 7x7 stride-2 stem over 3 channels (depth 147) with a LeakyRelu.
    let stem = Attrs::new()
        .with("pads", ints(&[3, 3, 3, 3]))
        .with("strides", ints(&[2, 2]))
        .with("activation", Attr::String(b"LeakyRelu".to_vec()))
        .with("alpha", Attr::Float(0.1));
    check_fp16_conv(gpu, stem, &[2, 3, 33, 31], &[64, 3, 7, 7], true, None, 64);
}

#[test]
fn gemm_and_matmul() {
    if !gpu() {
        return;
    }
    check("Gemm", Attrs::new(), &[("a", &[7, 13])], &[("b", &[13, 1026]), ("c", &[1026])], 10);
    let t = Attrs::new().with("transA", Attr::Int(1)).with("transB", Attr::Int(1)).with("alpha", Attr::Float(0.5));
    check("Gemm", t, &[("a", &[13, 65])], &[("b", &[7, 13])], 11);
    check("MatMul", Attrs::new(), &[("a", &[2, 3, 7, 13])], &[("b", &[13, 65])], 12);
    check("MatMul", Attrs::new(), &[("a", &[3, 7, 13]), ("b", &[3, 13, 5])], &[], 13);
}

#[test]
fn elementwise_pool_softmax_layout() {
    if !gpu() {
        return;
    }
    for op in ["Relu", "Sigmoid", "Tanh", "HardSwish", "Exp", "Abs", "Erf", "Neg", "Softplus"] {
        check(op, Attrs::new(), &[("x", &[2, 3, 1026])], &[], 20);
    }
    check("LeakyRelu", Attrs::new().with("alpha", Attr::Float(0.2)), &[("x", &[7, 13])], &[], 21);
    check("HardSigmoid", Attrs::new(), &[("x", &[7, 13])], &[], 22);
    for op in ["Add", "Sub", "Mul", "Div", "Max", "Min"] {
        check(op, Attrs::new(), &[("a", &[2, 3, 7, 13])], &[("b", &[3, 1, 13])], 23);
        check(op, Attrs::new(), &[("a", &[2, 3, 7, 13]), ("b", &[2, 3, 7, 13])], &[], 24);
    }
    check("PRelu", Attrs::new(), &[("x", &[2, 13, 7, 7])], &[("s", &[13, 1, 1])], 25);
    let mp = Attrs::new()
        .with("kernel_shape", ints(&[3, 3]))
        .with("strides", ints(&[2, 2]))
        .with("pads", ints(&[1, 1, 1, 1]));
    check("MaxPool", mp.clone(), &[("x", &[2, 13, 13, 7])], &[], 30);
    check("AveragePool", mp.clone(), &[("x", &[2, 13, 13, 7])], &[], 31);
    check("AveragePool", mp.with("count_include_pad", Attr::Int(1)), &[("x", &[2, 13, 13, 7])], &[], 32);
    check("GlobalAveragePool", Attrs::new(), &[("x", &[2, 13, 7, 13])], &[], 33);
    check("Softmax", Attrs::new(), &[("x", &[2, 7, 1026])], &[], 40);
    check("Softmax", Attrs::new().with("axis", Attr::Int(1)), &[("x", &[2, 7, 13])], &[], 41);
    check("LogSoftmax", Attrs::new(), &[("x", &[13, 7])], &[], 42);
    check("Transpose", Attrs::new().with("perm", ints(&[0, 2, 3, 1])), &[("x", &[2, 3, 7, 13])], &[], 50);
    check("Concat", Attrs::new().with("axis", Attr::Int(1)), &[("a", &[2, 3, 7]), ("b", &[2, 13, 7])], &[], 51);
}
