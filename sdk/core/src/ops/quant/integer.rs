//! The integer loops shared by ConvInteger/QLinearConv and MatMulInteger/QLinearMatMul:
//! `sum((x - x_zero_point) * (w - w_zero_point))` in int32 with two's-complement wrapping
//! (ONNX's int32 accumulators), each finished value handed to a sink that stores it (as
//! int32, or requantized). Plain loop nests, the ops' meaning; no heap allocation.

use super::common::read_q;
use crate::error::Result;
use crate::invalid;
use crate::ops::linalg::matmul::Geometry as MatGeometry;
use crate::ops::nn::common::{MAX_SPATIAL, next_index};
use crate::ops::nn::conv::Conv;
use crate::tensor::{DataRef, TensorRef, numel};

/// The shape of an integer convolution: (N, M, output spatial dims product) and the output
/// shape's spatial dims.
pub struct ConvShape {
    /// Batch.
    pub n: usize,
    /// Output channels.
    pub m: usize,
    /// Output spatial dims (`nsp` of them).
    pub spatial: [usize; MAX_SPATIAL],
    /// Number of spatial dims.
    pub nsp: usize,
}

impl ConvShape {
    /// Number of output elements (no allocation: `run` uses it).
    pub fn numel(&self) -> usize {
        self.n * self.m * self.spatial[..self.nsp].iter().product::<usize>()
    }

    /// The output shape `[N, M, spatial...]`.
    pub fn shape(&self) -> Vec<usize> {
        let mut s = vec![self.n, self.m];
        s.extend_from_slice(&self.spatial[..self.nsp]);
        s
    }
}

/// Checks X and W shapes for `conv` and returns the output geometry.
pub fn conv_shape(conv: &Conv, x: &[usize], w: &[usize]) -> Result<ConvShape> {
    let (geo, n, _, m) = conv.check(x, w, None)?;
    Ok(ConvShape { n, m, spatial: geo.output, nsp: geo.nsp })
}

/// Runs the integer convolution: `sink(flat output index, output channel, acc)` for every
/// output, where `acc = bias[m] + sum((x - xzp) * (w - wzp(m)))` wraps in int32.
pub fn conv_i32(
    conv: &Conv,
    x: TensorRef,
    w: TensorRef,
    xzp: i32,
    wzp: impl Fn(usize) -> i32,
    bias: Option<&[i32]>,
    mut sink: impl FnMut(usize, usize, i32),
) -> Result<()> {
    let (geo, n, c, m) = conv.check(x.shape, w.shape, None)?;
    let nsp = geo.nsp;
    let (in_size, out_size, k_size) = (geo.input_size(), geo.output_size(), geo.kernel_size());
    let (cg, mg) = (c / conv.group, m / conv.group);
    if x.data.len() != numel(x.shape) || w.data.len() != numel(w.shape) || bias.is_some_and(|b| b.len() != m) {
        invalid!("integer conv: tensor sizes do not match their shapes");
    }
    for ni in 0..n {
        for mi in 0..m {
            let g = mi / mg;
            let wz = wzp(mi);
            let y_base = (ni * m + mi) * out_size;
            let mut o = [0usize; MAX_SPATIAL];
            for yo in 0..out_size {
                let mut acc: i32 = bias.map_or(0, |b| b[mi]);
                for cl in 0..cg {
                    let x_base = (ni * c + g * cg + cl) * in_size;
                    let w_base = (mi * cg + cl) * k_size;
                    let mut k = [0usize; MAX_SPATIAL];
                    for wk in 0..k_size {
                        // Padding is the zero point: (xzp - xzp) contributes nothing.
                        if let Some(off) = geo.tap_offset(&o, &k) {
                            let xv = read_q(x.data, x_base + off) - xzp;
                            let wv = read_q(w.data, w_base + wk) - wz;
                            acc = acc.wrapping_add(xv.wrapping_mul(wv));
                        }
                        next_index(&mut k[..nsp], &geo.kernel[..nsp]);
                    }
                }
                sink(y_base + yo, mi, acc);
                next_index(&mut o[..nsp], &geo.output[..nsp]);
            }
        }
    }
    Ok(())
}

/// Runs the integer matrix product over every broadcast batch: `sink(flat output index, row
/// i, column j, acc)` with `acc = sum_p (a[i, p] - azp(i)) * (b[p, j] - bzp(j))` (int32,
/// wrapping).
pub fn matmul_i32(
    g: &MatGeometry,
    a: DataRef,
    b: DataRef,
    azp: impl Fn(usize) -> i32,
    bzp: impl Fn(usize) -> i32,
    mut sink: impl FnMut(usize, usize, usize, i32),
) {
    let (m, k, n) = (g.m, g.k, g.n);
    g.for_each_batch(|batch, oa, ob| {
        let (am, bm, ym) = (oa * m * k, ob * k * n, batch * m * n);
        for i in 0..m {
            let az = azp(i);
            for j in 0..n {
                let bz = bzp(j);
                let mut acc = 0i32;
                for p in 0..k {
                    let av = read_q(a, am + i * k + p) - az;
                    let bv = read_q(b, bm + p * n + j) - bz;
                    acc = acc.wrapping_add(av.wrapping_mul(bv));
                }
                sink(ym + i * n + j, i, j, acc);
            }
        }
    });
}
