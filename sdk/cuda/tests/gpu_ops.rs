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
/// GPU result against the reference for two sets of random inputs in one context, both as
/// a replayed CUDA graph (the default: the second run replays the first run's capture with
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
        for (i, (values, want)) in cases.iter().enumerate() {
            for (k, v) in values {
                ctx.set_input(k, v).unwrap();
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
