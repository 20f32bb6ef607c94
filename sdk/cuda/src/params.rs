//! Kernel parameter structs, `#[repr(C)]` mirrors of the structs in `kernels/cuda/*.cu(h)`
//! (keep them in step: the layout tests below pin sizes and offsets), the host-side
//! reductions that fill them (broadcast strides with coalesced dims, strided gathers for
//! Transpose/Slice, Conv/Pool geometry), and [`KernelArgs`], the argument packing for
//! `cuLaunchKernel` (no heap allocation per launch).

use crate::error::{Error, Result};

/// Most dims a broadcast or gather kernel takes (`EDGERT_MAX_DIMS`).
pub const MAX_DIMS: usize = 6;

/// Activation codes (`ACT_*` in common.cuh).
#[repr(i32)]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Act {
    /// None.
    None = 0,
    /// max(x, 0).
    Relu = 1,
    /// LeakyRelu(alpha).
    Leaky = 2,
    /// Clip(min, max).
    Clip = 3,
    /// HardSwish.
    HardSwish = 4,
    /// Sigmoid.
    Sigmoid = 5,
    /// Tanh.
    Tanh = 6,
    /// HardSigmoid(alpha, beta).
    HardSigmoid = 7,
}

/// Bias placement (`BIAS_*`).
#[repr(i32)]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum BiasMode {
    /// No bias.
    None = 0,
    /// `bias[n]` (Gemm).
    PerCol = 1,
    /// `bias[m]` (Conv output channels).
    PerRow = 2,
}

/// `Epilogue` in common.cuh. Pointers are device addresses (0 for none).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Epilogue {
    /// f32 bias.
    pub bias: u64,
    /// f32 residual (same layout as the output).
    pub residual: u64,
    /// f16 residual.
    pub residual_h: u64,
    /// [`BiasMode`].
    pub bias_mode: i32,
    /// [`Act`].
    pub act: i32,
    /// Scale of the product.
    pub alpha: f32,
    /// Scale of the bias.
    pub beta: f32,
    /// Activation parameter 1.
    pub act_alpha: f32,
    /// Activation parameter 2.
    pub act_beta: f32,
    /// 1: residual added before the activation.
    pub res_first: i32,
    /// Lower clamp after the activation (`-inf`: none).
    pub clamp_lo: f32,
    /// Upper clamp after the activation (`+inf`: none).
    pub clamp_hi: f32,
    /// A residual with fewer channels than the NCHW output (a folded zero channel pad):
    /// output elements per image, K*P*Q (0: the residual is laid out like the output).
    pub res_block: i32,
    /// Residual elements per image, Cr*P*Q; output channels past Cr add zero.
    pub res_keep: i32,
    /// Padding.
    pub pad_: i32,
}

impl Default for Epilogue {
    fn default() -> Epilogue {
        Epilogue {
            bias: 0,
            residual: 0,
            residual_h: 0,
            bias_mode: BiasMode::None as i32,
            act: Act::None as i32,
            alpha: 1.0,
            beta: 1.0,
            act_alpha: 0.0,
            act_beta: 0.0,
            res_first: 1,
            clamp_lo: f32::NEG_INFINITY,
            clamp_hi: f32::INFINITY,
            res_block: 0,
            res_keep: 0,
            pad_: 0,
        }
    }
}

/// `GemmParams` in gemm_params.cuh (element strides).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GemmParams {
    /// Rows of C.
    pub m: i64,
    /// Columns of C.
    pub n: i64,
    /// Depth.
    pub k: i64,
    /// A stride along m.
    pub a_sm: i64,
    /// A stride along k.
    pub a_sk: i64,
    /// B stride along k.
    pub b_sk: i64,
    /// B stride along n.
    pub b_sn: i64,
    /// A batch stride.
    pub a_sb: i64,
    /// B batch stride.
    pub b_sb: i64,
    /// C batch stride.
    pub c_sb: i64,
    /// C row stride.
    pub ldc: i64,
}

impl GemmParams {
    /// ONNX Gemm: A is M x K (K x M if `trans_a`), B is K x N (N x K if `trans_b`), one batch.
    pub fn gemm(m: usize, n: usize, k: usize, trans_a: bool, trans_b: bool) -> GemmParams {
        let (m, n, k) = (m as i64, n as i64, k as i64);
        let (a_sm, a_sk) = if trans_a { (1, m) } else { (k, 1) };
        let (b_sk, b_sn) = if trans_b { (1, k) } else { (n, 1) };
        GemmParams { m, n, k, a_sm, a_sk, b_sk, b_sn, a_sb: 0, b_sb: 0, c_sb: m * n, ldc: n }
    }
}

/// `QGemmParams` in gemm.cu.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QGemmParams {
    /// Rows.
    pub m: i64,
    /// Columns.
    pub n: i64,
    /// Depth (a multiple of 4).
    pub k: i64,
    /// A row stride in bytes (multiple of 4).
    pub lda: i64,
    /// B row stride in bytes (multiple of 4).
    pub ldb: i64,
    /// C row stride in elements.
    pub ldc: i64,
    /// Per-column weight scales (device pointer).
    pub scale_b: u64,
    /// Activation scale.
    pub scale_a: f32,
    /// Output scale (int8 outputs).
    pub scale_out: f32,
    /// 1: int8 output.
    pub out_int8: i32,
    /// Padding.
    pub pad_: i32,
}

/// `ConvParams` in conv.cu.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConvParams {
    /// Batch.
    pub n: i32,
    /// Input channels.
    pub c: i32,
    /// Input height.
    pub h: i32,
    /// Input width.
    pub w: i32,
    /// Output channels.
    pub k: i32,
    /// Output height.
    pub p: i32,
    /// Output width.
    pub q: i32,
    /// Kernel height.
    pub r: i32,
    /// Kernel width.
    pub s: i32,
    /// Stride (h).
    pub stride_h: i32,
    /// Stride (w).
    pub stride_w: i32,
    /// Top padding.
    pub pad_h: i32,
    /// Left padding.
    pub pad_w: i32,
    /// Dilation (h).
    pub dil_h: i32,
    /// Dilation (w).
    pub dil_w: i32,
    /// Groups.
    pub groups: i32,
}

fn to_i32(v: usize, what: &str) -> Result<i32> {
    i32::try_from(v).map_err(|_| Error::Invalid(format!("{what} = {v} does not fit the kernel's 32-bit index")))
}

/// Window geometry read from ONNX attributes (`strides`, `pads`, `dilations`, `auto_pad`)
/// for 2-D NCHW ops: returns (stride, pad_begin, dilation) per spatial dim.
pub fn window_2d(
    attrs: &edgert_core::ops::Attrs,
    in_hw: [usize; 2],
    out_hw: [usize; 2],
    kernel: [usize; 2],
) -> Result<[(i32, i32, i32); 2]> {
    let get = |name: &str, default: i64| -> Result<Vec<i64>> {
        Ok(attrs.ints(name)?.unwrap_or_else(|| vec![default; if name == "pads" { 4 } else { 2 }]))
    };
    let strides = get("strides", 1)?;
    let dil = get("dilations", 1)?;
    let pads = get("pads", 0)?;
    if strides.len() != 2 || dil.len() != 2 || pads.len() != 4 {
        return Err(Error::Invalid("only 2-D windows (4-D NCHW tensors) have CUDA kernels".into()));
    }
    let auto = attrs.string_or("auto_pad", "NOTSET")?;
    let mut out = [(0, 0, 0); 2];
    for d in 0..2 {
        let pad = match auto.as_str() {
            "SAME_UPPER" | "SAME_LOWER" => {
                let eff = (kernel[d] as i64 - 1) * dil[d] + 1;
                let total = ((out_hw[d] as i64 - 1) * strides[d] + eff - in_hw[d] as i64).max(0);
                if auto == "SAME_UPPER" { total / 2 } else { total - total / 2 }
            }
            "VALID" => 0,
            _ => pads[d],
        };
        out[d] = (strides[d] as i32, pad as i32, dil[d] as i32);
    }
    Ok(out)
}

impl ConvParams {
    /// From the shapes (x N,C,H,W; w K,C/g,R,S; y N,K,P,Q) and the node's attributes.
    pub fn new(attrs: &edgert_core::ops::Attrs, x: &[usize], w: &[usize], y: &[usize]) -> Result<ConvParams> {
        if x.len() != 4 || w.len() != 4 || y.len() != 4 {
            return Err(Error::Invalid(format!("Conv with input {x:?}: only 2-D convolution has CUDA kernels")));
        }
        let groups = attrs.int_or("group", 1)?;
        let win = window_2d(attrs, [x[2], x[3]], [y[2], y[3]], [w[2], w[3]])?;
        Ok(ConvParams {
            n: to_i32(x[0], "N")?,
            c: to_i32(x[1], "C")?,
            h: to_i32(x[2], "H")?,
            w: to_i32(x[3], "W")?,
            k: to_i32(y[1], "K")?,
            p: to_i32(y[2], "P")?,
            q: to_i32(y[3], "Q")?,
            r: to_i32(w[2], "R")?,
            s: to_i32(w[3], "S")?,
            stride_h: win[0].0,
            stride_w: win[1].0,
            pad_h: win[0].1,
            pad_w: win[1].1,
            dil_h: win[0].2,
            dil_w: win[1].2,
            groups: i32::try_from(groups).map_err(|_| Error::Invalid(format!("group = {groups}")))?,
        })
    }

    /// Depthwise: one input channel per group.
    pub fn is_depthwise(&self) -> bool {
        self.groups > 1 && self.groups == self.c && self.k % self.c == 0
    }
}

/// `PoolParams` in pool.cu.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolParams {
    /// Batch.
    pub n: i32,
    /// Channels.
    pub c: i32,
    /// Input height.
    pub h: i32,
    /// Input width.
    pub w: i32,
    /// Output height.
    pub p: i32,
    /// Output width.
    pub q: i32,
    /// Window height.
    pub r: i32,
    /// Window width.
    pub s: i32,
    /// Stride (h).
    pub stride_h: i32,
    /// Stride (w).
    pub stride_w: i32,
    /// Top padding.
    pub pad_h: i32,
    /// Left padding.
    pub pad_w: i32,
    /// Dilation (h).
    pub dil_h: i32,
    /// Dilation (w).
    pub dil_w: i32,
    /// AveragePool count_include_pad.
    pub count_include_pad: i32,
    /// 1: MaxPool.
    pub is_max: i32,
}

/// `BroadcastParams` in elementwise.cu.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BroadcastParams {
    /// Output elements.
    pub n: i64,
    /// Output shape (coalesced).
    pub shape: [i64; MAX_DIMS],
    /// Strides of `a` (0 where broadcast).
    pub sa: [i64; MAX_DIMS],
    /// Strides of `b`.
    pub sb: [i64; MAX_DIMS],
    /// Dims used.
    pub ndim: i32,
    /// Binary op code.
    pub op: i32,
}

/// Binary op codes (`BIN_*`).
#[repr(i32)]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Binary {
    /// a + b.
    Add = 0,
    /// a - b.
    Sub = 1,
    /// a * b.
    Mul = 2,
    /// a / b.
    Div = 3,
    /// max.
    Max = 4,
    /// min.
    Min = 5,
    /// pow.
    Pow = 6,
    /// PRelu(x, slope).
    PRelu = 7,
}

/// Contiguous strides of `shape` right-aligned to `rank` dims, 0 where the dim is 1 (or absent).
fn bcast_strides(shape: &[usize], rank: usize) -> Vec<i64> {
    let mut s = vec![0i64; rank];
    let mut acc = 1i64;
    for (i, &d) in shape.iter().enumerate().rev() {
        let o = rank - shape.len() + i;
        s[o] = if d == 1 { 0 } else { acc };
        acc *= d as i64;
    }
    s
}

impl BroadcastParams {
    /// Strides for `a` and `b` broadcast to `out` (NumPy rules), with adjacent dims merged
    /// wherever both inputs continue contiguously (or stay broadcast) across them.
    pub fn new(a: &[usize], b: &[usize], out: &[usize], op: Binary) -> Result<BroadcastParams> {
        let rank = out.len();
        if a.len() > rank || b.len() > rank {
            return Err(Error::Invalid(format!("broadcast {a:?} and {b:?} to {out:?}: rank too high")));
        }
        for (x, name) in [(a, "a"), (b, "b")] {
            for (i, &d) in x.iter().enumerate() {
                let o = out[rank - x.len() + i];
                if d != 1 && d != o {
                    return Err(Error::Invalid(format!("input {name} {x:?} does not broadcast to {out:?}")));
                }
            }
        }
        let (sa, sb) = (bcast_strides(a, rank), bcast_strides(b, rank));
        // Drop size-1 output dims, then merge dim i into i+1 when, for both inputs,
        // stride[i] == stride[i+1] * shape[i+1] (contiguous) or both are 0 (broadcast).
        let mut dims: Vec<(i64, i64, i64)> =
            (0..rank).filter(|&i| out[i] != 1).map(|i| (out[i] as i64, sa[i], sb[i])).collect();
        let mut merged: Vec<(i64, i64, i64)> = Vec::new();
        for d in dims.drain(..) {
            if let Some(last) = merged.last_mut() {
                let ok = |ls: i64, s: i64| (ls == 0 && s == 0) || (s != 0 && ls == s * d.0);
                if ok(last.1, d.1) && ok(last.2, d.2) {
                    *last = (last.0 * d.0, d.1, d.2);
                    continue;
                }
            }
            merged.push(d);
        }
        if merged.is_empty() {
            merged.push((1, 0, 0));
        }
        if merged.len() > MAX_DIMS {
            return Err(Error::Invalid(format!(
                "broadcast of {a:?} and {b:?} needs {} dims after merging; the kernel takes {MAX_DIMS}",
                merged.len()
            )));
        }
        let mut p = BroadcastParams {
            n: out.iter().product::<usize>() as i64,
            ndim: merged.len() as i32,
            op: op as i32,
            ..Default::default()
        };
        for (i, (d, x, y)) in merged.into_iter().enumerate() {
            p.shape[i] = d;
            p.sa[i] = x;
            p.sb[i] = y;
        }
        Ok(p)
    }

    /// The input offsets the kernel computes for output element `i` (its index math, on the
    /// host, for tests).
    pub fn offsets(&self, i: i64) -> (i64, i64) {
        let (mut rest, mut ia, mut ib) = (i, 0, 0);
        for d in (0..self.ndim as usize).rev() {
            let c = rest % self.shape[d];
            rest /= self.shape[d];
            ia += c * self.sa[d];
            ib += c * self.sb[d];
        }
        (ia, ib)
    }
}

/// `GatherParams` in layout.cu.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GatherParams {
    /// Output elements.
    pub n: i64,
    /// Offset of the first element read.
    pub base: i64,
    /// Output shape.
    pub shape: [i64; MAX_DIMS],
    /// Input stride per output dim (may be negative).
    pub stride: [i64; MAX_DIMS],
    /// Dims used.
    pub ndim: i32,
    /// Padding.
    pub pad_: i32,
}

fn contiguous_strides(shape: &[usize]) -> Vec<i64> {
    let mut s = vec![1i64; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1] as i64;
    }
    s
}

impl GatherParams {
    fn from_dims(base: i64, dims: Vec<(i64, i64)>) -> Result<GatherParams> {
        // Merge dim i into i+1 where stride[i] == stride[i+1] * shape[i+1]; drop size-1 dims.
        let mut merged: Vec<(i64, i64)> = Vec::new();
        for d in dims.into_iter().filter(|d| d.0 != 1) {
            if let Some(last) = merged.last_mut()
                && last.1 == d.1 * d.0
            {
                *last = (last.0 * d.0, d.1);
                continue;
            }
            merged.push(d);
        }
        if merged.is_empty() {
            merged.push((1, 1));
        }
        if merged.len() > MAX_DIMS {
            return Err(Error::Invalid(format!("a gather over {} dims; the kernel takes {MAX_DIMS}", merged.len())));
        }
        let mut p = GatherParams {
            n: merged.iter().map(|d| d.0).product(),
            base,
            ndim: merged.len() as i32,
            ..Default::default()
        };
        for (i, (d, s)) in merged.into_iter().enumerate() {
            p.shape[i] = d;
            p.stride[i] = s;
        }
        Ok(p)
    }

    /// Transpose of a contiguous `shape` by `perm` (output dim i is input dim perm[i]).
    pub fn transpose(shape: &[usize], perm: &[usize]) -> Result<GatherParams> {
        let mut seen = vec![false; shape.len()];
        if perm.len() != shape.len() || perm.iter().any(|&p| p >= shape.len() || std::mem::replace(&mut seen[p], true))
        {
            return Err(Error::Invalid(format!("perm {perm:?} is not a permutation of {} dims", shape.len())));
        }
        let s = contiguous_strides(shape);
        GatherParams::from_dims(0, perm.iter().map(|&p| (shape[p] as i64, s[p])).collect())
    }

    /// Slice of a contiguous `shape`: output dim d has `out[d]` elements starting at
    /// `starts[d]` with step `steps[d]` (already clamped and normalized, as the core op does).
    pub fn slice(shape: &[usize], starts: &[i64], steps: &[i64], out: &[usize]) -> Result<GatherParams> {
        if starts.len() != shape.len() || steps.len() != shape.len() || out.len() != shape.len() {
            return Err(Error::Invalid("slice: starts/steps/output rank differ from the input's".into()));
        }
        let s = contiguous_strides(shape);
        let base = starts.iter().zip(&s).map(|(a, b)| a * b).sum();
        GatherParams::from_dims(base, (0..shape.len()).map(|d| (out[d] as i64, s[d] * steps[d])).collect())
    }

    /// The input offset the kernel reads for output element `i` (its index math, on the host).
    pub fn offset(&self, i: i64) -> i64 {
        let (mut rest, mut off) = (i, self.base);
        for d in (0..self.ndim as usize).rev() {
            off += (rest % self.shape[d]) * self.stride[d];
            rest /= self.shape[d];
        }
        off
    }
}

/// `ResizeParams` in resize.cu.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ResizeParams {
    /// N * C.
    pub planes: i64,
    /// Input height.
    pub h: i32,
    /// Input width.
    pub w: i32,
    /// Output height.
    pub oh: i32,
    /// Output width.
    pub ow: i32,
    /// Output / input (h).
    pub scale_h: f32,
    /// Output / input (w).
    pub scale_w: f32,
    /// 1: bilinear.
    pub linear: i32,
    /// `COORD_*`.
    pub coord_mode: i32,
    /// `NEAREST_*`.
    pub nearest_mode: i32,
    /// Padding.
    pub pad_: i32,
}

/// Kernel arguments packed for `cuLaunchKernel`: each argument's bytes at an aligned offset
/// of an inline buffer, and a pointer to each. Fixed capacity: no heap allocation.
pub struct KernelArgs {
    buf: [u64; 64],
    offsets: [usize; 12],
    len: usize,
    used: usize,
}

impl Default for KernelArgs {
    fn default() -> KernelArgs {
        KernelArgs { buf: [0; 64], offsets: [0; 12], len: 0, used: 0 }
    }
}

/// Marker for types that may be passed by value to a kernel: plain `#[repr(C)]` data.
///
/// # Safety
/// The type must have the same size, alignment and field layout as the kernel's parameter.
pub unsafe trait KernelArg: Copy {}
// SAFETY: primitive types match C's.
unsafe impl KernelArg for u64 {}
unsafe impl KernelArg for i64 {}
unsafe impl KernelArg for i32 {}
unsafe impl KernelArg for f32 {}
// SAFETY: #[repr(C)] mirrors of the kernel structs (checked by the layout tests).
unsafe impl KernelArg for Epilogue {}
unsafe impl KernelArg for GemmParams {}
unsafe impl KernelArg for QGemmParams {}
unsafe impl KernelArg for ConvParams {}
unsafe impl KernelArg for PoolParams {}
unsafe impl KernelArg for BroadcastParams {}
unsafe impl KernelArg for GatherParams {}
unsafe impl KernelArg for ResizeParams {}
unsafe impl KernelArg for crate::preprocess::PreprocessParams {}

impl KernelArgs {
    /// Empty.
    pub fn new() -> KernelArgs {
        KernelArgs::default()
    }

    /// Appends one argument (aligned to 8 bytes, which covers every parameter type here).
    pub fn push<T: KernelArg>(&mut self, v: T) -> Result<&mut KernelArgs> {
        let size = std::mem::size_of::<T>();
        let words = size.div_ceil(8);
        if self.len == self.offsets.len() || self.used + words > self.buf.len() || std::mem::align_of::<T>() > 8 {
            return Err(Error::Invalid(format!("kernel arguments exceed the packing buffer ({size} bytes more)")));
        }
        let off = self.used;
        // SAFETY: `words * 8 >= size` bytes are free at `off`; the buffer is 8-byte aligned,
        // which covers T's alignment (checked above); T is plain data.
        unsafe { std::ptr::write_unaligned(self.buf.as_mut_ptr().add(off) as *mut T, v) };
        self.offsets[self.len] = off;
        self.len += 1;
        self.used += words;
        Ok(self)
    }

    /// Number of arguments.
    pub fn len(&self) -> usize {
        self.len
    }

    /// No arguments.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The argument bytes of argument `i` (for tests and logs).
    pub fn bytes(&self, i: usize) -> &[u8] {
        let start = self.offsets[i] * 8;
        let end = if i + 1 < self.len { self.offsets[i + 1] * 8 } else { self.used * 8 };
        // SAFETY: the buffer is `buf.len() * 8` initialized bytes.
        let all = unsafe { std::slice::from_raw_parts(self.buf.as_ptr() as *const u8, self.buf.len() * 8) };
        &all[start..end]
    }

    /// The pointer array `cuLaunchKernel` takes, valid while `self` is neither moved nor
    /// changed.
    pub fn pointers(&mut self) -> [*mut std::ffi::c_void; 12] {
        let mut p = [std::ptr::null_mut(); 12];
        let base = self.buf.as_mut_ptr();
        for (i, slot) in p.iter_mut().enumerate().take(self.len) {
            // SAFETY: offsets are within the buffer.
            *slot = unsafe { base.add(self.offsets[i]) } as *mut std::ffi::c_void;
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use std::mem::{offset_of, size_of};

    use super::*;

    #[test]
    fn layouts_match_the_cuda_structs() {
        // Sizes and offsets the C rules give the structs in kernels/cuda (all fields are
        // 8-byte pointers/i64 first, then 4-byte ints/floats).
        assert_eq!(size_of::<Epilogue>(), 3 * 8 + 12 * 4);
        assert_eq!(offset_of!(Epilogue, res_block), 60);
        assert_eq!(offset_of!(Epilogue, bias_mode), 24);
        assert_eq!(offset_of!(Epilogue, res_first), 48);
        assert_eq!(offset_of!(Epilogue, clamp_hi), 56);
        assert_eq!(size_of::<GemmParams>(), 11 * 8);
        assert_eq!(size_of::<QGemmParams>(), 7 * 8 + 4 * 4);
        assert_eq!(offset_of!(QGemmParams, scale_a), 56);
        assert_eq!(size_of::<ConvParams>(), 16 * 4);
        assert_eq!(size_of::<PoolParams>(), 16 * 4);
        assert_eq!(size_of::<BroadcastParams>(), 8 + 3 * 6 * 8 + 8);
        assert_eq!(offset_of!(BroadcastParams, ndim), 8 + 3 * 48);
        assert_eq!(size_of::<GatherParams>(), 16 + 2 * 48 + 8);
        assert_eq!(size_of::<ResizeParams>(), 8 + 4 * 4 + 2 * 4 + 4 * 4);
        // The C field order, checked against the header text.
        let common = edgert_kernels::HEADERS.iter().find(|h| h.0 == "common.cuh").unwrap().1;
        let ep = &common[common.find("struct Epilogue {").unwrap()..];
        let order = [
            "bias;",
            "residual;",
            "residual_h;",
            "bias_mode;",
            "act;",
            "alpha;",
            "beta;",
            "act_alpha;",
            "act_beta;",
            "res_first;",
            "clamp_lo;",
            "clamp_hi;",
            "pad_;",
        ];
        let pos: Vec<usize> = order.iter().map(|f| ep.find(f).unwrap()).collect();
        assert!(pos.windows(2).all(|w| w[0] < w[1]), "Epilogue field order differs from common.cuh");
    }

    fn naive_index(out: &[usize], x: &[usize], i: usize) -> usize {
        // NumPy broadcasting by hand: multi-index of i in out, mapped into x.
        let mut idx = vec![0; out.len()];
        let mut r = i;
        for d in (0..out.len()).rev() {
            idx[d] = r % out[d];
            r /= out[d];
        }
        let off = out.len() - x.len();
        let mut o = 0;
        for d in 0..x.len() {
            o = o * x[d] + if x[d] == 1 { 0 } else { idx[off + d] };
        }
        o
    }

    #[test]
    fn broadcast_offsets_match_numpy_rules() {
        let cases: &[(&[usize], &[usize], &[usize])] = &[
            (&[2, 3, 7, 13], &[2, 3, 7, 13], &[2, 3, 7, 13]),
            (&[2, 3, 7, 13], &[3, 1, 1], &[2, 3, 7, 13]),
            (&[2, 1, 7, 1], &[1, 5, 1, 13], &[2, 5, 7, 13]),
            (&[13], &[7, 1], &[7, 13]),
            (&[], &[4, 5], &[4, 5]),
            (&[1, 1], &[1], &[1, 1]),
            (&[2, 1, 3, 1, 5, 1, 7, 1], &[1, 2, 1, 3, 1, 5, 1, 7], &[2, 2, 3, 3, 5, 5, 7, 7]),
        ];
        for (a, b, out) in cases {
            let p = match BroadcastParams::new(a, b, out, Binary::Add) {
                Ok(p) => p,
                Err(e) => {
                    // Only the 8 alternating dims can't be merged into 6.
                    assert_eq!(out.len(), 8, "{e}");
                    continue;
                }
            };
            let n: usize = out.iter().product();
            assert_eq!(p.n as usize, n);
            for i in 0..n {
                let (ia, ib) = p.offsets(i as i64);
                assert_eq!(ia as usize, naive_index(out, a, i), "a {a:?} b {b:?} i {i}");
                assert_eq!(ib as usize, naive_index(out, b, i), "a {a:?} b {b:?} i {i}");
            }
        }
        // Same shapes coalesce to one dim.
        assert_eq!(BroadcastParams::new(&[2, 3, 7, 13], &[2, 3, 7, 13], &[2, 3, 7, 13], Binary::Mul).unwrap().ndim, 1);
        assert!(BroadcastParams::new(&[3], &[4], &[4], Binary::Add).is_err());
    }

    #[test]
    fn transpose_and_slice_offsets() {
        let shape = [2usize, 3, 7, 13];
        let perm = [0usize, 2, 3, 1];
        let p = GatherParams::transpose(&shape, &perm).unwrap();
        let out: Vec<usize> = perm.iter().map(|&d| shape[d]).collect();
        let n: usize = out.iter().product();
        for i in 0..n {
            let mut r = i;
            let mut oi = [0usize; 4];
            for d in (0..4).rev() {
                oi[d] = r % out[d];
                r /= out[d];
            }
            let mut ii = [0usize; 4];
            for d in 0..4 {
                ii[perm[d]] = oi[d];
            }
            let want = ((ii[0] * 3 + ii[1]) * 7 + ii[2]) * 13 + ii[3];
            assert_eq!(p.offset(i as i64) as usize, want);
        }
        assert!(GatherParams::transpose(&shape, &[0, 0, 1, 2]).is_err());
        // Identity perm collapses to one contiguous dim.
        assert_eq!(GatherParams::transpose(&shape, &[0, 1, 2, 3]).unwrap().ndim, 1);
        // x[:, ::-1, 1:7:2] of a 2x3x13 tensor.
        let p = GatherParams::slice(&[2, 3, 13], &[0, 2, 1], &[1, -1, 2], &[2, 3, 3]).unwrap();
        let mut got = Vec::new();
        for i in 0..18 {
            got.push(p.offset(i));
        }
        let mut want = Vec::new();
        for a in 0..2i64 {
            for b in [2i64, 1, 0] {
                for c in [1i64, 3, 5] {
                    want.push((a * 3 + b) * 13 + c);
                }
            }
        }
        assert_eq!(got, want);
    }

    #[test]
    fn conv_geometry_from_attrs() {
        use edgert_core::ops::{Attr, Attrs};
        let attrs = Attrs::new()
            .with("strides", Attr::Ints(vec![2, 2]))
            .with("pads", Attr::Ints(vec![1, 1, 1, 1]))
            .with("group", Attr::Int(8));
        let p = ConvParams::new(&attrs, &[2, 8, 13, 7], &[8, 1, 3, 3], &[2, 8, 7, 4]).unwrap();
        assert_eq!((p.stride_h, p.pad_h, p.dil_w, p.groups), (2, 1, 1, 8));
        assert!(p.is_depthwise());
        let same =
            Attrs::new().with("auto_pad", Attr::String("SAME_UPPER".into())).with("strides", Attr::Ints(vec![2, 2]));
        // in 128, k 5, s 2 -> out 64: total pad = 63*2 + 5 - 128 = 3, begin 1.
        let p = ConvParams::new(&same, &[1, 3, 128, 128], &[24, 3, 5, 5], &[1, 24, 64, 64]).unwrap();
        assert_eq!((p.pad_h, p.pad_w), (1, 1));
        assert!(!p.is_depthwise());
        assert!(ConvParams::new(&Attrs::new(), &[1, 3, 8], &[4, 3, 3], &[1, 4, 6]).is_err());
    }

    #[test]
    fn packing_keeps_bytes_and_pointers() {
        let mut a = KernelArgs::new();
        let ep = Epilogue { bias: 0xdead_beef, act: Act::Relu as i32, ..Default::default() };
        a.push(0x1234_5678_9abc_u64).unwrap().push(7i32).unwrap().push(ep).unwrap().push(2.5f32).unwrap();
        assert_eq!(a.len(), 4);
        assert_eq!(&a.bytes(0)[..8], &0x1234_5678_9abc_u64.to_le_bytes());
        assert_eq!(&a.bytes(1)[..4], &7i32.to_le_bytes());
        assert_eq!(a.bytes(2).len(), size_of::<Epilogue>().next_multiple_of(8));
        let ptrs = a.pointers();
        // SAFETY: the pointers point into `a`, alive and unchanged.
        unsafe {
            assert_eq!(*(ptrs[0] as *const u64), 0x1234_5678_9abc);
            assert_eq!(*(ptrs[1] as *const i32), 7);
            assert_eq!(*(ptrs[2] as *const Epilogue), ep);
            assert_eq!(*(ptrs[3] as *const f32), 2.5);
        }
        assert!(ptrs[4].is_null());
        // Overflow is an error, not a panic.
        let mut b = KernelArgs::new();
        let mut r = Ok(());
        for _ in 0..20 {
            r = b.push(BroadcastParams::default()).map(|_| ());
        }
        assert!(r.is_err());
    }
}
