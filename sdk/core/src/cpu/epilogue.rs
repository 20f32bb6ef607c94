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
            Activation::Relu => x.max(0.0),
            Activation::LeakyRelu(a) => {
                if x < 0.0 {
                    a * x
                } else {
                    x
                }
            }
            Activation::Clip(lo, hi) => x.max(lo).min(hi),
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

/// `min(max(x, lo), hi)` written with comparisons, so a NaN stays NaN (as ONNX Max and Min).
#[inline(always)]
pub fn clamp_nan_passing(x: f32, lo: f32, hi: f32) -> f32 {
    let v = if x < lo { lo } else { x };
    if v > hi { hi } else { v }
}

impl Epilogue<'_> {
    /// Whether applying it changes nothing.
    pub fn is_identity(&self) -> bool {
        self.bias.is_none() && self.residual.is_none() && self.activation == Activation::None && self.clamp.is_none()
    }

    /// Applies it to `c[r * ldc + j]` for rows `row0..row0 + rows`, columns `col0..col0 + cols`
    /// of the whole output (`c` points at the start of row `row0`, column `col0`).
    #[inline(always)]
    pub fn apply_tile(&self, c: &mut [f32], ldc: usize, row0: usize, rows: usize, col0: usize, cols: usize) {
        if self.is_identity() {
            return;
        }
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
                    out.iter_mut().for_each(|o| *o = (*o + b).max(0.0));
                    true
                }
                (Some(res), Activation::None) => {
                    out.iter_mut().zip(res).for_each(|(o, &x)| *o = *o + b + x);
                    true
                }
                (Some(res), Activation::Relu) => {
                    out.iter_mut().zip(res).for_each(|(o, &x)| *o = (*o + b + x).max(0.0));
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
            Activation::Relu => out.iter_mut().for_each(|o| *o = o.max(0.0)),
            Activation::LeakyRelu(a) => out.iter_mut().for_each(|o| *o = if *o < 0.0 { a * *o } else { *o }),
            Activation::Clip(lo, hi) => out.iter_mut().for_each(|o| *o = o.max(lo).min(hi)),
            Activation::HardSwish => out.iter_mut().for_each(|o| *o = *o * (*o + 3.0).clamp(0.0, 6.0) / 6.0),
            Activation::Sigmoid => out.iter_mut().for_each(|o| *o = 1.0 / (1.0 + (-*o).exp())),
            Activation::PRelu => {
                let s = self.slope.map_or(0.0, |s| s[row]);
                out.iter_mut().for_each(|o| *o = if *o < 0.0 { s * *o } else { *o })
            }
        }
    }
}
