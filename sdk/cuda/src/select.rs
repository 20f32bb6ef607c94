//! Kernel selection: which CUDA kernel runs each step of a core plan, with its parameters
//! fully computed on the host (so a context's `run` only packs and launches). Everything
//! here is host-side and tested without a GPU.
//!
//! A node with no CUDA kernel is an error naming the node and op, unless the caller allows
//! CPU fallback: then the step is [`StepKernel::Cpu`], logged, and counted in the report.

use edgert_core::graph::{Graph, Node};
use edgert_core::ops::Attrs;
use edgert_core::plan::{Plan, Slot};
use edgert_core::{DType, Tensor};
use edgert_kernels::names;

use crate::error::{Error, Result};
use crate::params::{
    Act, BiasMode, Binary, BroadcastParams, ConvParams, Epilogue, GatherParams, GemmParams, PoolParams, window_2d,
};

/// What runs one step. Device pointers in parameters (bias, residual) are filled at launch
/// from the node's inputs; everything else is final.
#[derive(Clone, Debug, PartialEq)]
pub enum StepKernel {
    /// Nothing to do (an alias step the planner skips).
    Skip,
    /// Convolution (direct, depthwise or implicit GEMM) with its epilogue.
    Conv {
        /// Kernel name.
        kernel: &'static str,
        /// Geometry.
        params: ConvParams,
        /// Epilogue (bias pointer filled at launch).
        epilogue: Epilogue,
    },
    /// Gemm / MatMul.
    Gemm {
        /// Kernel name.
        kernel: &'static str,
        /// Shapes and strides.
        params: GemmParams,
        /// Epilogue.
        epilogue: Epilogue,
        /// Batches (grid.z).
        batches: u64,
    },
    /// Unary elementwise.
    Unary {
        /// Op code (`UN_*`).
        op: i32,
        /// Parameter 1.
        a: f32,
        /// Parameter 2.
        b: f32,
        /// Elements.
        n: u64,
    },
    /// Broadcasting binary.
    Binary(BroadcastParams),
    /// Max / average pooling.
    Pool(PoolParams),
    /// Global average pooling over `planes` planes of `hw` values.
    GlobalAvgPool {
        /// N*C.
        planes: u64,
        /// H*W.
        hw: u64,
    },
    /// Softmax / LogSoftmax as outer x len x inner.
    Softmax {
        /// Product of dims before the axis.
        outer: u64,
        /// Axis length.
        len: u64,
        /// Product of dims after the axis.
        inner: u64,
        /// LogSoftmax.
        log: bool,
    },
    /// Strided gather (Transpose, a non-aliased reshape copy).
    Gather {
        /// Kernel name (by element size).
        kernel: &'static str,
        /// Index math.
        params: GatherParams,
    },
    /// Concat: one 2-D block copy per input.
    Concat {
        /// Kernel name (by element size).
        kernel: &'static str,
        /// (rows, src_row, dst_row, dst_offset) per input, in elements.
        copies: Vec<(u64, u64, u64, u64)>,
    },
    /// Run the node's reference op on the CPU (explicitly allowed fallback).
    Cpu {
        /// Why there is no CUDA kernel.
        reason: String,
    },
}

impl StepKernel {
    /// The CUDA kernel names this step launches (none for Skip/Cpu).
    pub fn kernel_names(&self) -> Vec<&'static str> {
        match self {
            StepKernel::Skip | StepKernel::Cpu { .. } => vec![],
            StepKernel::Conv { kernel, .. } | StepKernel::Gemm { kernel, .. } => vec![kernel],
            StepKernel::Unary { .. } => vec![names::unary_f32],
            StepKernel::Binary(_) => vec![names::binary_f32],
            StepKernel::Pool(_) => vec![names::pool_f32],
            StepKernel::GlobalAvgPool { .. } => vec![names::global_avg_pool_f32],
            StepKernel::Softmax { inner, .. } => {
                vec![if *inner == 1 { names::softmax_rows_f32 } else { names::softmax_strided_f32 }]
            }
            StepKernel::Gather { kernel, .. } | StepKernel::Concat { kernel, .. } => vec![kernel],
        }
    }
}

/// Selection options.
#[derive(Clone, Copy, Debug, Default)]
pub struct SelectOptions {
    /// Run nodes with no CUDA kernel on the CPU (logged and reported) instead of failing.
    pub cpu_fallback: bool,
    /// The device has FP16 tensor cores (sm_70 and later) and they may be used: convolutions
    /// with f16 weights (FP16 engines) run on the tensor-core kernel, which also rounds
    /// their activations to f16. Otherwise those weights are widened to f32 at upload and
    /// the f32 kernels compute exactly what the CPU's FP16 engine does.
    pub tensor_cores: bool,
    /// The tensor-core conv's tile: 64 (the default) or 128.
    pub tc_tile: Option<u32>,
}

/// Whether `kernel` is a tensor-core conv (which reads its weights as f16).
pub fn is_tensor_core_conv(kernel: &str) -> bool {
    kernel == names::conv_tc128_f16w || kernel == names::conv_tc64_f16w
}

/// The tensor-core conv: 64x64 tiles unless 128 is asked for. On an H200, 64x64 tiles beat
/// 128x128 on every ResNet-50 layer mix measured (batch 64: 14.5 vs 16.3 ms on the GPU;
/// batch 1: 2.8 vs 4.3 ms; tests/gpu/RESULTS.md, runs 7 and 8), so 128 is kept for tuning
/// on other GPUs (`edgert bench --tc-tile 128`).
fn tensor_core_conv(opts: SelectOptions) -> &'static str {
    if opts.tc_tile == Some(128) { names::conv_tc128_f16w } else { names::conv_tc64_f16w }
}

/// The kernel of every step of `plan`, in step order. Fails on the first node with no CUDA
/// kernel unless `opts.cpu_fallback`.
pub fn select(graph: &Graph, plan: &Plan, opts: SelectOptions) -> Result<Vec<StepKernel>> {
    let mut out = Vec::with_capacity(plan.steps.len());
    for step in &plan.steps {
        let node = &graph.nodes[step.node];
        if step.skip {
            out.push(StepKernel::Skip);
            continue;
        }
        match select_node(graph, plan, node, &step.outputs, opts) {
            Ok(k) => out.push(k),
            Err(Unsupported(what)) => {
                if opts.cpu_fallback {
                    log::warn!("node `{}` ({}): no CUDA kernel for {what}: runs on the CPU", node.name, node.op_type);
                    out.push(StepKernel::Cpu { reason: what });
                } else {
                    return Err(Error::Unsupported { node: node.name.clone(), op_type: node.op_type.clone(), what });
                }
            }
        }
    }
    Ok(out)
}

/// Steps that fall back to the CPU: (node name, op type, reason), for the run report.
pub fn fallbacks<'a>(graph: &'a Graph, plan: &Plan, kernels: &'a [StepKernel]) -> Vec<(&'a str, &'a str, &'a str)> {
    plan.steps
        .iter()
        .zip(kernels)
        .filter_map(|(s, k)| match k {
            StepKernel::Cpu { reason } => {
                let n = &graph.nodes[s.node];
                Some((n.name.as_str(), n.op_type.as_str(), reason.as_str()))
            }
            _ => None,
        })
        .collect()
}

struct Unsupported(String);

impl From<Error> for Unsupported {
    fn from(e: Error) -> Unsupported {
        Unsupported(e.to_string())
    }
}

impl From<edgert_core::Error> for Unsupported {
    fn from(e: edgert_core::Error) -> Unsupported {
        Unsupported(e.to_string())
    }
}

type Sel<T> = std::result::Result<T, Unsupported>;

fn unsupported<T>(what: impl Into<String>) -> Sel<T> {
    Err(Unsupported(what.into()))
}

struct Io<'a> {
    plan: &'a Plan,
    node: &'a Node,
}

impl<'a> Io<'a> {
    fn input(&self, i: usize) -> Sel<(DType, &'a [usize])> {
        let Some(Some(id)) = self.node.inputs.get(i) else { return unsupported(format!("missing input #{i}")) };
        match &self.plan.types[*id] {
            Some(t) => Ok((t.dtype, &t.shape)),
            None => unsupported(format!("input #{i} has no type")),
        }
    }
    fn has_input(&self, i: usize) -> bool {
        matches!(self.node.inputs.get(i), Some(Some(_)))
    }
    fn constant(&self, i: usize) -> Option<&'a Tensor> {
        let Some(Some(id)) = self.node.inputs.get(i) else { return None };
        match &self.plan.slots[*id] {
            Slot::Const(t) => Some(t),
            _ => None,
        }
    }
}

/// The smallest depth (C/groups*R*S) and output channels per group for which the tensor-core
/// conv runs; below, its 128x128x32 tiles would be mostly padding and the f32 kernels serve.
const TC_MIN_DEPTH: usize = 32;
const TC_MIN_CHANNELS: usize = 16;

fn f32_only(dtypes: &[DType]) -> Sel<()> {
    match dtypes.iter().find(|&&d| d != DType::F32) {
        Some(d) => unsupported(format!("{d} tensors (the executor runs FP32 engines so far)")),
        None => Ok(()),
    }
}

fn elem_kernel(size: usize, gather: bool) -> Sel<&'static str> {
    Ok(match (size, gather) {
        (1, true) => names::gather_b1,
        (2, true) => names::gather_b2,
        (4, true) => names::gather_b4,
        (8, true) => names::gather_b8,
        (1, false) => names::copy2d_b1,
        (2, false) => names::copy2d_b2,
        (4, false) => names::copy2d_b4,
        (8, false) => names::copy2d_b8,
        _ => return unsupported(format!("{size}-byte elements")),
    })
}

fn unary_code(op_type: &str, attrs: &Attrs, io: &Io) -> Sel<Option<(i32, f32, f32)>> {
    Ok(Some(match op_type {
        "Relu" => (1, 0.0, 0.0),
        "LeakyRelu" => (2, attrs.float_or("alpha", 0.01)?, 0.0),
        "Clip" => {
            // Opset >= 11: min/max are optional constant inputs; before: attributes.
            let bound = |i: usize, attr: &str, dflt: f32| -> Sel<f32> {
                if io.has_input(i) {
                    match io.constant(i) {
                        Some(t) => Ok(t.to_f32_vec()?.first().copied().unwrap_or(dflt)),
                        None => unsupported("Clip with non-constant bounds"),
                    }
                } else {
                    Ok(attrs.float_or(attr, dflt)?)
                }
            };
            (3, bound(1, "min", f32::NEG_INFINITY)?, bound(2, "max", f32::INFINITY)?)
        }
        "HardSwish" => (4, 0.0, 0.0),
        "Sigmoid" => (5, 0.0, 0.0),
        "Tanh" => (6, 0.0, 0.0),
        "HardSigmoid" => (7, attrs.float_or("alpha", 0.2)?, attrs.float_or("beta", 0.5)?),
        "Exp" => (8, 0.0, 0.0),
        "Log" => (9, 0.0, 0.0),
        "Sqrt" => (10, 0.0, 0.0),
        "Neg" => (11, 0.0, 0.0),
        "Abs" => (12, 0.0, 0.0),
        "Erf" => (13, 0.0, 0.0),
        "Gelu" if attrs.string_or("approximate", "none")? == "none" => (14, 0.0, 0.0),
        "Softplus" => (15, 0.0, 0.0),
        "Reciprocal" => (16, 0.0, 0.0),
        "Elu" => (17, attrs.float_or("alpha", 1.0)?, 0.0),
        "Identity" => (0, 0.0, 0.0),
        _ => return Ok(None),
    }))
}

fn select_node(graph: &Graph, plan: &Plan, node: &Node, outputs: &[usize], opts: SelectOptions) -> Sel<StepKernel> {
    let io = Io { plan, node };
    let out_t = match outputs.first().and_then(|&o| plan.types.get(o)).and_then(|t| t.as_ref()) {
        Some(t) => t,
        None => return unsupported("an output with no type"),
    };
    let (out_dtype, out_shape) = (out_t.dtype, out_t.shape.as_slice());
    let attrs = &node.attrs;
    let op = node.op_type.as_str();
    if let Some((code, a, b)) = unary_code(op, attrs, &io)? {
        let (d, _) = io.input(0)?;
        f32_only(&[d, out_dtype])?;
        return Ok(StepKernel::Unary { op: code, a, b, n: out_shape.iter().product::<usize>() as u64 });
    }
    let binary = match op {
        "Add" => Some(Binary::Add),
        "Sub" => Some(Binary::Sub),
        "Mul" => Some(Binary::Mul),
        "Div" => Some(Binary::Div),
        "Max" if node.inputs.len() == 2 => Some(Binary::Max),
        "Min" if node.inputs.len() == 2 => Some(Binary::Min),
        "Pow" => Some(Binary::Pow),
        "PRelu" => Some(Binary::PRelu),
        _ => None,
    };
    if let Some(b) = binary {
        let ((da, sa), (db, sb)) = (io.input(0)?, io.input(1)?);
        f32_only(&[da, db, out_dtype])?;
        return Ok(StepKernel::Binary(BroadcastParams::new(sa, sb, out_shape, b)?));
    }
    match op {
        "Conv" | "edgert.FusedConv" => {
            let ((dx, x), (dw, w)) = (io.input(0)?, io.input(1)?);
            // f16 weights: an FP16 engine's FusedConv (f32 activations and sums).
            f32_only(&[dx, if dw == DType::F16 { DType::F32 } else { dw }, out_dtype])?;
            if io.constant(1).is_none() {
                return unsupported("Conv with non-constant weights");
            }
            if io.has_input(2) && io.constant(2).is_none() {
                return unsupported("Conv with a non-constant bias");
            }
            let params = ConvParams::new(attrs, x, w, out_shape)?;
            let mut epilogue = Epilogue {
                bias_mode: if io.has_input(2) { BiasMode::PerRow as i32 } else { BiasMode::None as i32 },
                ..Default::default()
            };
            if op == "edgert.FusedConv" {
                // Conv + bias, then the residual (input 3), then the activation.
                use edgert_core::cpu::Activation as A;
                let (act, a, b) = match edgert_core::ops::fused::fused_conv::parse_activation(attrs)? {
                    A::None => (Act::None, 0.0, 0.0),
                    A::Relu => (Act::Relu, 0.0, 0.0),
                    A::LeakyRelu(alpha) => (Act::Leaky, alpha, 0.0),
                    A::Clip(lo, hi) => (Act::Clip, lo, hi),
                    A::HardSwish => (Act::HardSwish, 0.0, 0.0),
                    A::Sigmoid => (Act::Sigmoid, 0.0, 0.0),
                    other => return unsupported(format!("the fused activation {other:?}")),
                };
                if let Some((lo, hi)) = edgert_core::ops::fused::fused_conv::parse_clamp(attrs)? {
                    (epilogue.clamp_lo, epilogue.clamp_hi) = (lo, hi);
                }
                epilogue.act = act as i32;
                epilogue.act_alpha = a;
                epilogue.act_beta = b;
                epilogue.res_first = 1;
                if io.has_input(3) {
                    let (dr, r) = io.input(3)?;
                    f32_only(&[dr])?;
                    if r != out_shape {
                        // A folded channel pad: the residual's channels are the output's first.
                        let narrower = r.len() == 4
                            && out_shape.len() == 4
                            && r[0] == out_shape[0]
                            && r[1] < out_shape[1]
                            && r[2..] == out_shape[2..];
                        let per_image = |c: usize| i32::try_from(c * r[2] * r[3]).ok();
                        match (narrower, per_image(out_shape[1]), per_image(r[1])) {
                            (true, Some(block), Some(keep)) => (epilogue.res_block, epilogue.res_keep) = (block, keep),
                            _ => {
                                return unsupported(format!(
                                    "a residual of shape {r:?} for an output of {out_shape:?}"
                                ));
                            }
                        }
                    }
                }
            }
            let depth = (params.c / params.groups) as usize * params.r as usize * params.s as usize;
            let tensor_cores = dw == DType::F16
                && opts.tensor_cores
                && !params.is_depthwise()
                && depth >= TC_MIN_DEPTH
                && (params.k / params.groups) as usize >= TC_MIN_CHANNELS;
            let kernel = if tensor_cores {
                tensor_core_conv(opts)
            } else if params.is_depthwise() {
                names::conv_depthwise_f32
            } else if (params.c / params.groups) as i64 * params.r as i64 * params.s as i64 >= 16 {
                names::conv_igemm_f32
            } else {
                names::conv_direct_f32
            };
            Ok(StepKernel::Conv { kernel, params, epilogue })
        }
        "Gemm" => {
            let ((da, a), (db, b)) = (io.input(0)?, io.input(1)?);
            f32_only(&[da, db, out_dtype])?;
            let (ta, tb) = (attrs.int_or("transA", 0)? != 0, attrs.int_or("transB", 0)? != 0);
            if a.len() != 2 || b.len() != 2 || out_shape.len() != 2 {
                return unsupported("Gemm on tensors that are not 2-D");
            }
            let k = if ta { a[0] } else { a[1] };
            let (m, n) = (out_shape[0], out_shape[1]);
            let mut epilogue = Epilogue {
                alpha: attrs.float_or("alpha", 1.0)?,
                beta: attrs.float_or("beta", 1.0)?,
                ..Default::default()
            };
            if io.has_input(2) {
                let (dc, c) = io.input(2)?;
                f32_only(&[dc])?;
                if c.iter().product::<usize>() != n || c.last() != Some(&n) {
                    return unsupported(format!("Gemm bias of shape {c:?} (only a per-column bias of {n})"));
                }
                epilogue.bias_mode = BiasMode::PerCol as i32;
            }
            Ok(StepKernel::Gemm {
                kernel: names::gemm_f32,
                params: GemmParams::gemm(m, n, k, ta, tb),
                epilogue,
                batches: 1,
            })
        }
        "MatMul" => {
            let ((da, a), (db, b)) = (io.input(0)?, io.input(1)?);
            f32_only(&[da, db, out_dtype])?;
            if a.len() < 2 || b.len() < 2 {
                return unsupported("MatMul with a 1-D operand");
            }
            let (m, k, n) = (a[a.len() - 2], a[a.len() - 1], b[b.len() - 1]);
            let batches: usize = out_shape[..out_shape.len() - 2].iter().product();
            let a_batches: usize = a[..a.len() - 2].iter().product();
            let b_batches: usize = b[..b.len() - 2].iter().product();
            let mut p = GemmParams::gemm(m, n, k, false, false);
            p.c_sb = (m * n) as i64;
            p.a_sb = if a_batches == 1 { 0 } else { (m * k) as i64 };
            p.b_sb = if b_batches == 1 { 0 } else { (k * n) as i64 };
            if (a_batches != 1 && a_batches != batches) || (b_batches != 1 && b_batches != batches) {
                return unsupported(format!("MatMul broadcasting {a:?} x {b:?} across batch dims"));
            }
            Ok(StepKernel::Gemm {
                kernel: names::gemm_f32,
                params: p,
                epilogue: Epilogue::default(),
                batches: batches as u64,
            })
        }
        "MaxPool" | "AveragePool" => {
            let (dx, x) = io.input(0)?;
            f32_only(&[dx, out_dtype])?;
            if outputs.len() > 1 {
                return unsupported("MaxPool's Indices output");
            }
            let ks = attrs.ints("kernel_shape")?.unwrap_or_default();
            if x.len() != 4 || ks.len() != 2 {
                return unsupported("pooling that is not 2-D");
            }
            let win = window_2d(attrs, [x[2], x[3]], [out_shape[2], out_shape[3]], [ks[0] as usize, ks[1] as usize])?;
            let i32v = |v: usize| v as i32;
            Ok(StepKernel::Pool(PoolParams {
                n: i32v(x[0]),
                c: i32v(x[1]),
                h: i32v(x[2]),
                w: i32v(x[3]),
                p: i32v(out_shape[2]),
                q: i32v(out_shape[3]),
                r: ks[0] as i32,
                s: ks[1] as i32,
                stride_h: win[0].0,
                stride_w: win[1].0,
                pad_h: win[0].1,
                pad_w: win[1].1,
                dil_h: win[0].2,
                dil_w: win[1].2,
                count_include_pad: attrs.int_or("count_include_pad", 0)? as i32,
                is_max: (op == "MaxPool") as i32,
            }))
        }
        "GlobalAveragePool" => {
            let (dx, x) = io.input(0)?;
            f32_only(&[dx, out_dtype])?;
            if x.len() < 3 {
                return unsupported("GlobalAveragePool on fewer than 3 dims");
            }
            Ok(StepKernel::GlobalAvgPool { planes: (x[0] * x[1]) as u64, hw: x[2..].iter().product::<usize>() as u64 })
        }
        "Softmax" | "LogSoftmax" => {
            let (dx, x) = io.input(0)?;
            f32_only(&[dx, out_dtype])?;
            let r = x.len() as i64;
            let default = if graph.opset >= 13 { -1 } else { 1 };
            let mut axis = attrs.int_or("axis", default)?;
            if axis < 0 {
                axis += r;
            }
            if axis < 0 || axis >= r.max(1) {
                return unsupported(format!("axis {axis} of a rank-{r} tensor"));
            }
            let a = axis as usize;
            let outer: usize = x[..a].iter().product();
            let (len, inner) = if graph.opset >= 13 {
                (x.get(a).copied().unwrap_or(1), x[(a + 1).min(x.len())..].iter().product())
            } else {
                // Before opset 13 the input is coerced to 2-D at `axis`.
                (x[a..].iter().product(), 1)
            };
            Ok(StepKernel::Softmax {
                outer: outer as u64,
                len: len as u64,
                inner: inner as u64,
                log: op == "LogSoftmax",
            })
        }
        "Transpose" => {
            let (dx, x) = io.input(0)?;
            let perm: Vec<usize> = match attrs.ints("perm")? {
                Some(p) => p.iter().map(|&v| v as usize).collect(),
                None => (0..x.len()).rev().collect(),
            };
            Ok(StepKernel::Gather { kernel: elem_kernel(dx.size(), true)?, params: GatherParams::transpose(x, &perm)? })
        }
        "Reshape" | "Flatten" | "Squeeze" | "Unsqueeze" => {
            // Not aliased by the planner (else the step is skipped): a plain copy.
            let (dx, x) = io.input(0)?;
            Ok(StepKernel::Gather {
                kernel: elem_kernel(dx.size(), true)?,
                params: GatherParams::transpose(&[x.iter().product()], &[0])?,
            })
        }
        "Concat" => {
            let r = out_shape.len() as i64;
            let mut axis = attrs.int_or("axis", 0)?;
            if axis < 0 {
                axis += r;
            }
            if axis < 0 || axis >= r {
                return unsupported(format!("Concat axis {axis}"));
            }
            let a = axis as usize;
            let rows: usize = out_shape[..a].iter().product();
            let inner: usize = out_shape[a + 1..].iter().product();
            let mut copies = Vec::new();
            let mut off = 0usize;
            let mut size = 0;
            for i in 0..node.inputs.len() {
                let (d, s) = io.input(i)?;
                size = d.size();
                let len = s.get(a).copied().unwrap_or(0);
                copies.push((rows as u64, (len * inner) as u64, (out_shape[a] * inner) as u64, (off * inner) as u64));
                off += len;
            }
            Ok(StepKernel::Concat { kernel: elem_kernel(size, false)?, copies })
        }
        other => unsupported(format!("the op `{other}`")),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use edgert_core::graph::Dim;
    use edgert_core::ops::Attr;

    use super::*;

    /// x[1,3,13,7] -> Conv(8, 3x3, pad 1) + bias -> Relu -> GlobalAveragePool -> Flatten ->
    /// Gemm(8 -> 5) -> Softmax, plus TopK when `topk`.
    fn graph(topk: bool) -> Graph {
        let mut g = Graph { opset: 17, ..Default::default() };
        let f = |v: usize| Dim::Fixed(v);
        let x = g.add_value("x", Some(DType::F32), Some(vec![f(2), f(3), f(13), f(7)]));
        g.inputs.push(x);
        let w = g.add_constant("w", Tensor::from_f32(&[8, 3, 3, 3], vec![0.1; 216]).unwrap());
        let b = g.add_constant("b", Tensor::from_f32(&[8], vec![0.0; 8]).unwrap());
        let gw = g.add_constant("gw", Tensor::from_f32(&[8, 5], vec![0.1; 40]).unwrap());
        let gb = g.add_constant("gb", Tensor::from_f32(&[5], vec![0.0; 5]).unwrap());
        let names = ["c", "r", "p", "fl", "gm", "sm", "tv", "ti"];
        let ids: Vec<usize> = names.iter().map(|n| g.add_value(n, None, None)).collect();
        let pads = Attrs::new().with("pads", Attr::Ints(vec![1, 1, 1, 1]));
        g.add_node("conv", "Conv", pads, vec![Some(x), Some(w), Some(b)], vec![Some(ids[0])]).unwrap();
        g.add_node("relu", "Relu", Attrs::new(), vec![Some(ids[0])], vec![Some(ids[1])]).unwrap();
        g.add_node("gap", "GlobalAveragePool", Attrs::new(), vec![Some(ids[1])], vec![Some(ids[2])]).unwrap();
        g.add_node("flat", "Flatten", Attrs::new(), vec![Some(ids[2])], vec![Some(ids[3])]).unwrap();
        g.add_node("fc", "Gemm", Attrs::new(), vec![Some(ids[3]), Some(gw), Some(gb)], vec![Some(ids[4])]).unwrap();
        g.add_node("softmax", "Softmax", Attrs::new(), vec![Some(ids[4])], vec![Some(ids[5])]).unwrap();
        g.outputs.push(ids[5]);
        if topk {
            let k = g.add_constant("k", Tensor::from_i64(&[1], vec![2]).unwrap());
            g.add_node("top", "TopK", Attrs::new(), vec![Some(ids[5]), Some(k)], vec![Some(ids[6]), Some(ids[7])])
                .unwrap();
            g.outputs.push(ids[6]);
        }
        g
    }

    #[test]
    fn small_cnn_maps_to_kernels() {
        let g = graph(false);
        let plan = edgert_core::plan::plan(&g, &HashMap::new()).unwrap();
        let ks = select(&g, &plan, SelectOptions::default()).unwrap();
        assert_eq!(ks.len(), plan.steps.len());
        let StepKernel::Conv { kernel, params, epilogue } = &ks[0] else { panic!("{:?}", ks[0]) };
        assert_eq!(*kernel, names::conv_igemm_f32);
        assert_eq!((params.n, params.k, params.p, params.q, params.pad_h), (2, 8, 13, 7, 1));
        assert_eq!(epilogue.bias_mode, BiasMode::PerRow as i32);
        assert_eq!(ks[1], StepKernel::Unary { op: Act::Relu as i32, a: 0.0, b: 0.0, n: 2 * 8 * 13 * 7 });
        assert_eq!(ks[2], StepKernel::GlobalAvgPool { planes: 16, hw: 91 });
        // Flatten aliases its input: the planner skips it.
        assert_eq!(ks[3], StepKernel::Skip);
        let StepKernel::Gemm { params, epilogue, .. } = &ks[4] else { panic!("{:?}", ks[4]) };
        assert_eq!((params.m, params.n, params.k), (2, 5, 8));
        assert_eq!(epilogue.bias_mode, BiasMode::PerCol as i32);
        assert_eq!(ks[5], StepKernel::Softmax { outer: 2, len: 5, inner: 1, log: false });
        for k in &ks {
            for name in k.kernel_names() {
                assert!(edgert_kernels::Module::of_kernel(name).is_some(), "{name} is not a registered kernel");
            }
        }
    }

    /// x[2,3,5,4] -> edgert.FusedConv(6 channels, 1x1) + residual `r`, shaped `r_shape`.
    fn fused_conv_with_residual(r_shape: &[usize]) -> Vec<StepKernel> {
        let mut g = Graph { opset: 17, ..Default::default() };
        let dims = |s: &[usize]| Some(s.iter().map(|&v| Dim::Fixed(v)).collect());
        let x = g.add_value("x", Some(DType::F32), dims(&[2, 3, 5, 4]));
        let r = g.add_value("r", Some(DType::F32), dims(r_shape));
        g.inputs.extend([x, r]);
        let w = g.add_constant("w", Tensor::from_f32(&[6, 3, 1, 1], vec![0.1; 18]).unwrap());
        let b = g.add_constant("b", Tensor::from_f32(&[6], vec![0.0; 6]).unwrap());
        let y = g.add_value("y", None, None);
        let inputs = vec![Some(x), Some(w), Some(b), Some(r)];
        g.add_node("fc", "edgert.FusedConv", Attrs::new(), inputs, vec![Some(y)]).unwrap();
        g.outputs.push(y);
        let plan = edgert_core::plan::plan(&g, &HashMap::new()).unwrap();
        select(&g, &plan, SelectOptions { cpu_fallback: true, ..Default::default() }).unwrap()
    }

    #[test]
    fn narrower_residual_is_a_channel_padded_epilogue() {
        // BlazeFace's widening skip (a zero channel Pad folded into the residual): 3 of 6.
        let StepKernel::Conv { epilogue, .. } = fused_conv_with_residual(&[2, 3, 5, 4])[0] else { panic!() };
        assert_eq!((epilogue.res_block, epilogue.res_keep), (6 * 20, 3 * 20));
        // Same shape: the plain layout.
        let StepKernel::Conv { epilogue, .. } = fused_conv_with_residual(&[2, 6, 5, 4])[0] else { panic!() };
        assert_eq!((epilogue.res_block, epilogue.res_keep), (0, 0));
        // (edgert.FusedConv itself rejects any other residual shape.)
    }

    #[test]
    fn optimized_engine_fused_conv_maps_to_conv_with_epilogue() {
        // Engine passes turn Conv + Relu into edgert.FusedConv.
        let engine = edgert_core::Engine::from_graph(graph(false)).unwrap();
        let g = &engine.graph;
        assert!(g.nodes.iter().any(|n| n.op_type == "edgert.FusedConv"), "{:?}", g.op_counts());
        let plan = edgert_core::plan::plan(g, &HashMap::new()).unwrap();
        let ks = select(g, &plan, SelectOptions::default()).unwrap();
        let conv = ks.iter().find_map(|k| match k {
            StepKernel::Conv { epilogue, .. } => Some(*epilogue),
            _ => None,
        });
        let ep = conv.expect("a Conv kernel");
        assert_eq!((ep.act, ep.bias_mode, ep.res_first), (Act::Relu as i32, BiasMode::PerRow as i32, 1));
        assert!(!ks.iter().any(|k| matches!(k, StepKernel::Unary { .. })), "Relu was fused: {ks:?}");
    }

    #[test]
    fn unsupported_node_fails_with_its_name_or_falls_back_visibly() {
        let g = graph(true);
        let plan = edgert_core::plan::plan(&g, &HashMap::new()).unwrap();
        let e = select(&g, &plan, SelectOptions::default()).unwrap_err().to_string();
        assert!(e.contains("node `top` (TopK)"), "{e}");
        assert!(e.contains("--device cpu"), "{e}");
        let ks = select(&g, &plan, SelectOptions { cpu_fallback: true, ..Default::default() }).unwrap();
        let fb = fallbacks(&g, &plan, &ks);
        assert_eq!(fb.len(), 1);
        assert_eq!((fb[0].0, fb[0].1), ("top", "TopK"));
    }

    /// A clamp after the activation (a Max with a constant, fused by the engine passes) goes
    /// into the CUDA epilogue's clamp bounds.
    #[test]
    fn fused_clamp_goes_into_the_conv_epilogue() {
        let mut g = graph(false);
        let relu_out = g.nodes[1].outputs[0].expect("relu output");
        let lo = g.add_constant("lo", Tensor::scalar_f32(0.05));
        let m = g.add_value("m", None, None);
        let gap = g.nodes.iter().position(|n| n.op_type == "GlobalAveragePool").expect("gap");
        g.nodes[gap].inputs[0] = Some(m);
        g.add_node("floor", "Max", Attrs::new(), vec![Some(relu_out), Some(lo)], vec![Some(m)]).unwrap();
        g.sort_topologically().unwrap();
        let engine = edgert_core::Engine::from_graph(g).unwrap();
        let g = &engine.graph;
        assert!(!g.nodes.iter().any(|n| n.op_type == "Max"), "Max was fused: {:?}", g.op_counts());
        let plan = edgert_core::plan::plan(g, &HashMap::new()).unwrap();
        let ks = select(g, &plan, SelectOptions::default()).unwrap();
        let ep = ks.iter().find_map(|k| match k {
            StepKernel::Conv { epilogue, .. } => Some(*epilogue),
            _ => None,
        });
        let ep = ep.expect("a Conv kernel");
        assert_eq!((ep.act, ep.clamp_lo, ep.clamp_hi), (Act::Relu as i32, 0.05, f32::INFINITY));
    }

    #[test]
    fn concat_copies_and_opset_11_softmax() {
        let mut g = Graph { opset: 11, ..Default::default() };
        let f = |v: usize| Dim::Fixed(v);
        let a = g.add_value("a", Some(DType::F32), Some(vec![f(2), f(3), f(5)]));
        let b = g.add_value("b", Some(DType::F32), Some(vec![f(2), f(4), f(5)]));
        g.inputs.extend([a, b]);
        let c = g.add_value("c", None, None);
        let s = g.add_value("s", None, None);
        g.add_node("cat", "Concat", Attrs::new().with("axis", Attr::Int(1)), vec![Some(a), Some(b)], vec![Some(c)])
            .unwrap();
        g.add_node("sm", "Softmax", Attrs::new(), vec![Some(c)], vec![Some(s)]).unwrap();
        g.outputs.push(s);
        let plan = edgert_core::plan::plan(&g, &HashMap::new()).unwrap();
        let ks = select(&g, &plan, SelectOptions::default()).unwrap();
        assert_eq!(
            ks[0],
            StepKernel::Concat { kernel: names::copy2d_b4, copies: vec![(2, 15, 35, 0), (2, 20, 35, 15)] }
        );
        // Opset 11, axis 1 of [2,7,5]: coerced to 2 x 35.
        assert_eq!(ks[1], StepKernel::Softmax { outer: 2, len: 35, inner: 1, log: false });
    }

    /// x[2,3,9,9] -> three FusedConvs (16x3x3x3, 64x16x3x3, 8x64x1x1), weights float16 after
    /// the fp16_weights pass (an FP16 engine).
    fn fp16_graph() -> Graph {
        let mut g = Graph { opset: 17, ..Default::default() };
        let f = |v: usize| Dim::Fixed(v);
        let mut v = g.add_value("x", Some(DType::F32), Some(vec![f(2), f(3), f(9), f(9)]));
        g.inputs.push(v);
        for (i, w) in [[16, 3, 3, 3], [64, 16, 3, 3], [8, 64, 1, 1]].iter().enumerate() {
            let n = w.iter().product();
            let wid = g.add_constant(&format!("w{i}"), Tensor::from_f32(w, vec![0.25; n]).unwrap());
            let y = g.add_value(&format!("y{i}"), None, None);
            let pads = Attr::Ints(vec![(w[2] / 2) as i64; 4]);
            let attrs = Attrs::new().with("pads", pads).with("activation", Attr::String(b"Relu".to_vec()));
            g.add_node(&format!("conv{i}"), "edgert.FusedConv", attrs, vec![Some(v), Some(wid)], vec![Some(y)])
                .unwrap();
            v = y;
        }
        g.outputs.push(v);
        let layers = edgert_core::passes::fp16_weights(&mut g).unwrap();
        assert_eq!(layers.iter().filter(|l| l.precision == "fp16").count(), 3, "{layers:?}");
        g
    }

    #[test]
    fn fp16_weights_use_tensor_cores_where_the_tiles_fit_and_are_widened_elsewhere() {
        let g = fp16_graph();
        let plan = edgert_core::plan::plan(&g, &HashMap::new()).unwrap();
        let kernel = |k: &StepKernel| match k {
            StepKernel::Conv { kernel, .. } => *kernel,
            other => panic!("{other:?}"),
        };
        let tc = select(&g, &plan, SelectOptions { tensor_cores: true, ..Default::default() }).unwrap();
        // Depth 27 (< 32) and 8 output channels (< 16) stay on the f32 kernels.
        let names: Vec<&str> = tc.iter().map(kernel).collect();
        assert_eq!(names, [names::conv_igemm_f32, names::conv_tc64_f16w, names::conv_igemm_f32]);
        let l = crate::arena::layout(&g, &plan, &tc).unwrap();
        let size = |id: usize| l.weights.iter().find(|w| w.0 == id).unwrap().2;
        let (w0, w1, w2) =
            (g.nodes[0].inputs[1].unwrap(), g.nodes[1].inputs[1].unwrap(), g.nodes[2].inputs[1].unwrap());
        assert_eq!(g.constants[&w1].dtype(), DType::F16);
        assert_eq!((size(w0), size(w1), size(w2)), (16 * 27 * 4, 64 * 144 * 2, 8 * 64 * 4));
        assert_eq!(l.widened, vec![w0, w2]);
        // Without tensor cores every f16 weight is widened and no step reads f16.
        let plain = select(&g, &plan, SelectOptions::default()).unwrap();
        assert!(plain.iter().all(|k| !is_tensor_core_conv(kernel(k))), "{plain:?}");
        let l = crate::arena::layout(&g, &plan, &plain).unwrap();
        assert_eq!(l.widened, vec![w0, w1, w2]);
        assert_eq!(size(w1), 64 * 144 * 2, "the first layout's");
        assert_eq!(l.weights.iter().find(|w| w.0 == w1).unwrap().2, 64 * 144 * 4);
    }
}
