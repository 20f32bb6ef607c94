//! Epilogues: what a fused kernel applies to its accumulators before storing them, in this
//! order: `+ bias[channel]`, `+ residual[same position]`, the activation, then an optional
//! clamp (a Max/Min/Clip that followed the activation in the model). Computed on
//! each output tile while it is still in cache (so the fusion saves whole passes over memory).

/// An activation applied elementwise after bias and residual.
#[derive(Clone, Copy, PartialEq, Debug, Default)]
pub enum Activation {
    /// Identity.
    #[default]
    None,
    /// `max(x, 0)`.
    Relu,
    /// `x < 0 ? alpha * x : x`.
    LeakyRelu(f32),
    /// `min(max(x, lo), hi)` (Clip, Relu6).
    Clip(f32, f32),
    /// `x * relu6(x + 3) / 6`.
    HardSwish,
    /// `1 / (1 + exp(-x))`.
    Sigmoid,
    /// `x < 0 ? slope[channel] * x : x` (PRelu with one slope per channel).
    PRelu,
}

impl Activation {
    /// Applies the activation to one value; `slope` is the channel's PRelu slope.
    #[inline(always)]
    pub fn apply(self, x: f32, slope: f32) -> f32 {
        match self {
            Activation::None => x,
            Activation::Relu => relu_nan_passing(x),
            Activation::LeakyRelu(a) => {
                if x < 0.0 {
                    a * x
                } else {
                    x
                }
            }
            Activation::Clip(lo, hi) => clamp_nan_passing(x, lo, hi),
            Activation::HardSwish => x * (x + 3.0).clamp(0.0, 6.0) / 6.0,
            Activation::Sigmoid => 1.0 / (1.0 + (-x).exp()),
            Activation::PRelu => {
                if x < 0.0 {
                    slope * x
                } else {
                    x
                }
            }
        }
    }
}

/// The epilogue of one GEMM-shaped computation whose rows are output channels.
#[derive(Clone, Copy, Debug, Default)]
pub struct Epilogue<'a> {
    /// One value per row, added first.
    pub bias: Option<&'a [f32]>,
    /// A tensor shaped like the output (row stride `ld_residual`), added second.
    pub residual: Option<&'a [f32]>,
    /// Row stride of `residual`.
    pub ld_residual: usize,
    /// Rows `0..residual_rows` have a residual row; later rows get none (a residual whose
    /// channels were zero-padded at the end: `passes::fold_channel_pad`).
    pub residual_rows: usize,
    /// Applied last.
    pub activation: Activation,
    /// Per-row slopes for [`Activation::PRelu`].
    pub slope: Option<&'a [f32]>,
    /// `min(max(x, lo), hi)` after the activation (NaN passes through, as ONNX Max/Min).
    pub clamp: Option<(f32, f32)>,
}

/// `max(x, 0)` written with a comparison, so a NaN stays NaN (as ONNX Relu); one `maxps`.
#[inline(always)]
pub fn relu_nan_passing(x: f32) -> f32 {
    if x < 0.0 { 0.0 } else { x }
}

/// `min(max(x, lo), hi)` written with comparisons, so a NaN stays NaN (as ONNX Clip, Max and
/// Min); `f32::max`/`min` would turn NaN into a bound, and cost extra instructions.
#[inline(always)]
pub fn clamp_nan_passing(x: f32, lo: f32, hi: f32) -> f32 {
    let v = if x < lo { lo } else { x };
    if v > hi { hi } else { v }
}

impl<'a> Epilogue<'a> {
    /// The epilogue of rows `row0..row0 + rows` of image `image`, for an output whose images
    /// each have `self`'s rows of `positions` columns (a convolution group): bias and slope
    /// sliced to those rows, the residual to this image's rows that have one.
    pub fn for_group(&self, image: usize, row0: usize, rows: usize, positions: usize) -> Epilogue<'a> {
        let res_rows = self.residual_rows.saturating_sub(row0).min(rows);
        let res_off = (image * self.residual_rows + row0) * positions;
        Epilogue {
            bias: self.bias.map(|b| &b[row0..row0 + rows]),
            residual: self.residual.filter(|_| res_rows > 0).map(|r| &r[res_off..res_off + res_rows * positions]),
            ld_residual: positions,
            residual_rows: res_rows,
            activation: self.activation,
            slope: self.slope.map(|s| &s[row0..row0 + rows]),
            clamp: self.clamp,
        }
    }
}

impl Epilogue<'_> {
    /// Whether applying it changes nothing.
    pub fn is_identity(&self) -> bool {
        self.bias.is_none() && self.residual.is_none() && self.activation == Activation::None && self.clamp.is_none()
    }

    /// Applies it to `c[r * ldc + j]` for rows `row0..row0 + rows`, columns `col0..col0 + cols`
    /// of the whole output (`c` points at the start of row `row0`, column `col0`).
    /// On x86-64 with AVX2 the loops are compiled for AVX2 (twice the lanes of the baseline
    /// SSE2; no FMA contraction, so the results are the same bits).
    #[inline(always)]
    pub fn apply_tile(&self, c: &mut [f32], ldc: usize, row0: usize, rows: usize, col0: usize, cols: usize) {
        if self.is_identity() {
            return;
        }
        #[cfg(target_arch = "x86_64")]
        if super::isa::active() != super::Isa::Portable && super::Isa::Avx2.supported() {
            // SAFETY: AVX2 is present (checked just above).
            return unsafe { self.apply_tile_avx2(c, ldc, row0, rows, col0, cols) };
        }
        self.apply_tile_plain(c, ldc, row0, rows, col0, cols)
    }

    /// [`Epilogue::apply_tile`] compiled with AVX2 enabled.
    ///
    /// # Safety
    /// The CPU must have AVX2.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn apply_tile_avx2(&self, c: &mut [f32], ldc: usize, row0: usize, rows: usize, col0: usize, cols: usize) {
        self.apply_tile_plain(c, ldc, row0, rows, col0, cols)
    }

    #[inline(always)]
    fn apply_tile_plain(&self, c: &mut [f32], ldc: usize, row0: usize, rows: usize, col0: usize, cols: usize) {
        for r in 0..rows {
            let row = row0 + r;
            let out = &mut c[r * ldc..r * ldc + cols];
            let res = self.residual.filter(|_| row < self.residual_rows).map(|res| {
                let start = row * self.ld_residual + col0;
                &res[start..start + cols]
            });
            // The common chains in one pass over the row (bias, residual, Relu or nothing).
            let b = self.bias.map_or(0.0, |b| b[row]);
            let one_pass = match (res, self.activation) {
                (None, Activation::None) => {
                    out.iter_mut().for_each(|o| *o += b);
                    true
                }
                (None, Activation::Relu) => {
                    out.iter_mut().for_each(|o| *o = relu_nan_passing(*o + b));
                    true
                }
                (Some(res), Activation::None) => {
                    out.iter_mut().zip(res).for_each(|(o, &x)| *o = *o + b + x);
                    true
                }
                (Some(res), Activation::Relu) => {
                    out.iter_mut().zip(res).for_each(|(o, &x)| *o = relu_nan_passing(*o + b + x));
                    true
                }
                _ => false,
            };
            if !one_pass {
                self.apply_row_in_steps(out, res, row);
            }
            if let Some((lo, hi)) = self.clamp {
                out.iter_mut().for_each(|o| *o = clamp_nan_passing(*o, lo, hi));
            }
        }
    }

    /// Bias, residual and the activation as plain loops, one concern each, so each one
    /// vectorizes.
    #[inline(always)]
    fn apply_row_in_steps(&self, out: &mut [f32], res: Option<&[f32]>, row: usize) {
        if let Some(b) = self.bias.map(|b| b[row]) {
            out.iter_mut().for_each(|o| *o += b);
        }
        if let Some(res) = res {
            out.iter_mut().zip(res).for_each(|(o, &x)| *o += x);
        }
        match self.activation {
            Activation::None => {}
            Activation::Relu => out.iter_mut().for_each(|o| *o = relu_nan_passing(*o)),
            Activation::LeakyRelu(a) => out.iter_mut().for_each(|o| *o = if *o < 0.0 { a * *o } else { *o }),
            Activation::Clip(lo, hi) => out.iter_mut().for_each(|o| *o = clamp_nan_passing(*o, lo, hi)),
            Activation::HardSwish => out.iter_mut().for_each(|o| *o = *o * (*o + 3.0).clamp(0.0, 6.0) / 6.0),
            Activation::Sigmoid => out.iter_mut().for_each(|o| *o = 1.0 / (1.0 + (-*o).exp())),
            Activation::PRelu => {
                let s = self.slope.map_or(0.0, |s| s[row]);
                out.iter_mut().for_each(|o| *o = if *o < 0.0 { s * *o } else { *o })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::{Attrs, eval};
    use crate::tensor::Tensor;

    /// Every activation and the clamp, through `apply_tile` (one-pass and stepwise arms),
    /// against the scalar `Activation::apply`; NaN stays NaN as in the reference Relu and
    /// Clip ops, and the reference ops agree with the fused results.
    #[test]
    fn tiles_match_the_scalar_definition_and_the_reference_ops() {
        let vals: Vec<f32> = [f32::NAN, -7.5, -1.0, -0.25, 0.0, 0.3, 2.0, 9.0, f32::INFINITY, f32::NEG_INFINITY]
            .into_iter()
            .cycle()
            .take(37)
            .collect();
        let (rows, cols) = (2, vals.len());
        let bias = [0.5f32, -0.5];
        let slope = [0.1f32, 0.2];
        let acts = [
            Activation::None,
            Activation::Relu,
            Activation::LeakyRelu(0.1),
            Activation::Clip(-0.5, 1.5),
            Activation::HardSwish,
            Activation::Sigmoid,
            Activation::PRelu,
        ];
        for act in acts {
            for clamp in [None, Some((-0.2f32, 3.0f32))] {
                for with_bias in [false, true] {
                    let ep = Epilogue {
                        bias: with_bias.then_some(&bias[..]),
                        activation: act,
                        slope: Some(&slope),
                        clamp,
                        ..Default::default()
                    };
                    let mut c: Vec<f32> = vals.iter().chain(&vals).copied().collect();
                    ep.apply_tile(&mut c, cols, 0, rows, 0, cols);
                    for (i, &got) in c.iter().enumerate() {
                        let r = i / cols;
                        let mut want = act.apply(vals[i % cols] + if with_bias { bias[r] } else { 0.0 }, slope[r]);
                        if let Some((lo, hi)) = clamp {
                            want = clamp_nan_passing(want, lo, hi);
                        }
                        let same = got.to_bits() == want.to_bits() || got.is_nan() && want.is_nan();
                        assert!(same, "{act:?} clamp {clamp:?} bias {with_bias} at {i}: {got} vs {want}");
                    }
                }
            }
        }
        // The reference ops keep NaN, and so do the fused forms.
        let x = Tensor::from_f32(&[vals.len()], vals.clone()).unwrap();
        let relu = crate::ops::build_op("Relu", &Attrs::new(), 17).unwrap().unwrap();
        let y = eval(relu.as_ref(), &[Some(&x)]).unwrap().remove(0);
        for (&v, &r) in vals.iter().zip(y.as_f32().unwrap()) {
            let f = Activation::Relu.apply(v, 0.0);
            assert!(f == r || f.is_nan() && r.is_nan(), "Relu({v}): fused {f}, reference {r}");
        }
        assert!(Activation::Clip(0.0, 6.0).apply(f32::NAN, 0.0).is_nan());
    }
}
