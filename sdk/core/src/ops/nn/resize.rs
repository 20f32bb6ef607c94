//! Resize: nearest, (multi)linear and cubic interpolation over any subset of axes, with
//! every coordinate transformation mode, antialiasing and aspect-ratio policies.
//!
//! The reference follows ONNX's own (`onnx/reference/ops/op_resize.py`): for each resized
//! axis an output index `x` maps to a source coordinate `x_ori`; the taps around it get
//! 1-D coefficients, and the N-d result is the tensor product of the per-axis taps (the
//! interpolation is separable). Indices outside the input are clamped (edge padding)
//! unless `exclude_outside` drops them. Coordinates and sums are computed in f64.
//!
//! f32 tensors resized along their last two axes only (images, feature maps; no antialias,
//! no tf_crop_and_resize) take a fast path: the same per-axis taps and coefficients, put in
//! tables, then `cpu::resample` (sums in f32).

use crate::cpu::resample::{self, AxisTaps, MAX_TAPS};
use crate::error::Result;
use crate::ops::nn::common::{next_index, read_f32};
use crate::ops::{Attrs, InferInput, Op, TypeShape, const_value, optional, required};
use crate::tensor::{DType, DataRef, Element, MAX_RANK, TensorMut, TensorRef};
use crate::{invalid, invalid_err};

/// Interpolation mode.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Mode {
    /// Nearest neighbour (`nearest_mode` picks the rounding).
    Nearest,
    /// Linear along each axis (bilinear, trilinear, ...).
    Linear,
    /// Cubic convolution with coefficient `cubic_coeff_a`.
    Cubic,
}

/// `coordinate_transformation_mode`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Ctm {
    /// `(x + 0.5) / scale − 0.5` (the default).
    HalfPixel,
    /// Half pixel, centred for non-integer output sizes (opset 19).
    HalfPixelSymmetric,
    /// Half pixel, but a length-1 output samples coordinate −0.5.
    PytorchHalfPixel,
    /// `x · (in − 1) / (out − 1)`.
    AlignCorners,
    /// `x / scale`.
    Asymmetric,
    /// Crop to `roi` then resize with aligned corners; outside the input gives
    /// `extrapolation_value`.
    TfCropAndResize,
    /// `(x + 0.5) / scale` (opset 11 only, for nearest).
    TfHalfPixelForNn,
}

/// `nearest_mode`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum NearestMode {
    /// Round half down (the default).
    RoundPreferFloor,
    /// Round half up.
    RoundPreferCeil,
    /// Floor.
    Floor,
    /// Ceil.
    Ceil,
}

/// `keep_aspect_ratio_policy` (opset 18, with `sizes`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Policy {
    /// Each axis independently.
    Stretch,
    /// One scale for all axes, the result fits inside `sizes`.
    NotLarger,
    /// One scale for all axes, the result covers `sizes`.
    NotSmaller,
}

/// ONNX Resize (opsets 11–21).
#[derive(Clone, PartialEq, Debug)]
pub struct Resize {
    /// Interpolation mode.
    pub mode: Mode,
    /// Coordinate transformation.
    pub ctm: Ctm,
    /// Rounding for nearest.
    pub nearest: NearestMode,
    /// Cubic coefficient A.
    pub cubic_a: f64,
    /// Drop taps outside the input and renormalize.
    pub exclude_outside: bool,
    /// Value for tf_crop_and_resize outside the input.
    pub extrapolation: f64,
    /// Antialiasing filter when downscaling (linear, cubic; opset 18).
    pub antialias: bool,
    /// Axes `scales`/`sizes`/`roi` refer to (opset 18); `None` for all.
    pub axes: Option<Vec<i64>>,
    /// Aspect-ratio policy for `sizes`.
    pub policy: Policy,
}

/// Everything `run` needs, resolved from shapes and the scales/sizes values; fixed size.
#[derive(Clone, Copy, Debug)]
struct ResizePlan {
    rank: usize,
    output: [usize; MAX_RANK],
    /// Scale per axis (1 for axes not resized).
    scale: [f64; MAX_RANK],
    /// Whether the axis is interpolated (false: identity).
    active: [bool; MAX_RANK],
}

/// Taps of one axis for one output index: the first input index, how many, and the data
/// for their coefficients.
#[derive(Clone, Copy, Debug, Default)]
struct Taps {
    first: i64,
    count: usize,
    /// Offset of tap 0 relative to floor(x_ori) in the coefficient formula.
    start: i64,
    ratio: f64,
    /// Effective (antialias) scale.
    aa_scale: f64,
    norm: f64,
    /// Nearest: the one index.
    nearest: i64,
    extrapolate: bool,
}

fn cubic_kernel(x: f64, a: f64) -> f64 {
    let x = x.abs();
    if x <= 1.0 {
        ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
    } else if x < 2.0 {
        ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a
    } else {
        0.0
    }
}

impl Resize {
    /// Parses the attributes.
    pub fn build(attrs: &Attrs, opset: i64) -> Result<Resize> {
        if opset < 11 {
            invalid!("Resize opset {opset} (scales-only form) is not supported; use opset 11 or later");
        }
        let mode = match attrs.string_or("mode", "nearest")?.as_str() {
            "nearest" => Mode::Nearest,
            "linear" => Mode::Linear,
            "cubic" => Mode::Cubic,
            m => invalid!("Resize mode must be nearest, linear or cubic, got `{m}`"),
        };
        let ctm = match attrs.string_or("coordinate_transformation_mode", "half_pixel")?.as_str() {
            "half_pixel" => Ctm::HalfPixel,
            "half_pixel_symmetric" => Ctm::HalfPixelSymmetric,
            "pytorch_half_pixel" => Ctm::PytorchHalfPixel,
            "align_corners" => Ctm::AlignCorners,
            "asymmetric" => Ctm::Asymmetric,
            "tf_crop_and_resize" => Ctm::TfCropAndResize,
            "tf_half_pixel_for_nn" => Ctm::TfHalfPixelForNn,
            m => invalid!("unknown coordinate_transformation_mode `{m}`"),
        };
        let nearest = match attrs.string_or("nearest_mode", "round_prefer_floor")?.as_str() {
            "round_prefer_floor" => NearestMode::RoundPreferFloor,
            "round_prefer_ceil" => NearestMode::RoundPreferCeil,
            "floor" => NearestMode::Floor,
            "ceil" => NearestMode::Ceil,
            m => invalid!("unknown nearest_mode `{m}`"),
        };
        let policy = match attrs.string_or("keep_aspect_ratio_policy", "stretch")?.as_str() {
            "stretch" => Policy::Stretch,
            "not_larger" => Policy::NotLarger,
            "not_smaller" => Policy::NotSmaller,
            m => invalid!("unknown keep_aspect_ratio_policy `{m}`"),
        };
        let flag = |name: &str| -> Result<bool> {
            match attrs.int_or(name, 0)? {
                0 => Ok(false),
                1 => Ok(true),
                v => invalid!("{name} must be 0 or 1, got {v}"),
            }
        };
        let antialias = flag("antialias")?;
        if antialias && mode == Mode::Nearest {
            invalid!("antialias is only defined for linear and cubic modes");
        }
        Ok(Resize {
            mode,
            ctm,
            nearest,
            cubic_a: attrs.float_or("cubic_coeff_a", -0.75)? as f64,
            exclude_outside: flag("exclude_outside")?,
            extrapolation: attrs.float_or("extrapolation_value", 0.0)? as f64,
            antialias,
            axes: attrs.ints("axes")?,
            policy,
        })
    }

    /// Resolved axes as a fixed list, validated against `rank`.
    fn axes(&self, rank: usize) -> Result<([usize; MAX_RANK], usize)> {
        let mut out = [0usize; MAX_RANK];
        match &self.axes {
            None => {
                for (i, a) in out.iter_mut().enumerate().take(rank) {
                    *a = i;
                }
                Ok((out, rank))
            }
            Some(v) => {
                if v.len() > rank {
                    invalid!("axes {v:?} has more entries than the input rank {rank}");
                }
                for (i, &a) in v.iter().enumerate() {
                    let r = rank as i64;
                    if a < -r || a >= r {
                        invalid!("axis {a} is out of range for rank {rank}");
                    }
                    let a = if a < 0 { a + r } else { a } as usize;
                    if out[..i].contains(&a) {
                        invalid!("axes {v:?} repeat an axis");
                    }
                    out[i] = a;
                }
                Ok((out, v.len()))
            }
        }
    }

    /// Output shape and per-axis scales from the input shape and the scales or sizes.
    fn plan(
        &self,
        x: &[usize],
        scales: Option<DataRef>,
        sizes: Option<DataRef>,
        roi: Option<DataRef>,
    ) -> Result<ResizePlan> {
        let rank = x.len();
        if rank == 0 || rank > MAX_RANK {
            invalid!("Resize input must have rank 1 to {MAX_RANK}, got {x:?}");
        }
        let (axes, naxes) = self.axes(rank)?;
        let mut p = ResizePlan { rank, output: [0; MAX_RANK], scale: [1.0; MAX_RANK], active: [false; MAX_RANK] };
        p.output[..rank].copy_from_slice(x);
        let scales = scales.filter(|s| !s.is_empty());
        let sizes = sizes.filter(|s| !s.is_empty());
        match (scales, sizes) {
            (Some(_), Some(_)) => invalid!("Resize takes either scales or sizes, not both"),
            (None, None) => invalid!("Resize needs scales or sizes"),
            (Some(s), None) => {
                if !s.dtype().is_float() {
                    invalid!("scales must be float, got {}", s.dtype());
                }
                if s.len() != naxes {
                    invalid!("scales has {} values, expected {naxes}", s.len());
                }
                for (i, &a) in axes[..naxes].iter().enumerate() {
                    let v = read_f32(s, i) as f64;
                    if v.is_nan() || v <= 0.0 || !v.is_finite() {
                        invalid!("scales must be positive, got {v} for axis {a}");
                    }
                    let out = (x[a] as f64 * v).floor();
                    if out > (isize::MAX as f64) {
                        invalid!("scaled size of axis {a} is too large");
                    }
                    p.scale[a] = v;
                    p.output[a] = out as usize;
                }
            }
            (None, Some(s)) => {
                if s.dtype() != DType::I64 {
                    invalid!("sizes must be int64, got {}", s.dtype());
                }
                if s.len() != naxes {
                    invalid!("sizes has {} values, expected {naxes}", s.len());
                }
                let size = |i: usize| -> Result<usize> {
                    let v = crate::ops::nn::common::read_i64(s, i);
                    usize::try_from(v).map_err(|_| invalid_err!("sizes must be non-negative, got {v}"))
                };
                for (i, &a) in axes[..naxes].iter().enumerate() {
                    let o = size(i)?;
                    if x[a] == 0 {
                        invalid!("cannot resize the empty axis {a} to {o}");
                    }
                    p.output[a] = o;
                    p.scale[a] = o as f64 / x[a] as f64;
                }
                if self.policy != Policy::Stretch && naxes > 0 {
                    let pick =
                        |acc: f64, v: f64| if self.policy == Policy::NotLarger { acc.min(v) } else { acc.max(v) };
                    let s = axes[1..naxes].iter().fold(p.scale[axes[0]], |acc, &a| pick(acc, p.scale[a]));
                    for &a in &axes[..naxes] {
                        p.scale[a] = s;
                        p.output[a] = (s * x[a] as f64 + 0.5).floor() as usize;
                    }
                }
            }
        }
        let roi_id = |a: usize| -> (f64, f64) {
            if self.ctm != Ctm::TfCropAndResize {
                return (0.0, 1.0);
            }
            match (roi, axes[..naxes].iter().position(|&b| b == a)) {
                (Some(r), Some(i)) if r.len() == 2 * naxes => (read_f32(r, i) as f64, read_f32(r, naxes + i) as f64),
                _ => (0.0, 1.0),
            }
        };
        for &a in &axes[..naxes] {
            let (r0, r1) = roi_id(a);
            let identity =
                p.output[a] == x[a] && (p.scale[a] - 1.0).abs() <= 1e-9 && r0.abs() <= 1e-9 && (r1 - 1.0).abs() <= 1e-9;
            p.active[a] = !identity && p.output[a] > 0;
            if p.active[a] && x[a] == 0 {
                invalid!("cannot resize the empty axis {a}");
            }
        }
        Ok(p)
    }

    /// The taps of output index `o` along an axis of input length `n`.
    fn taps(&self, o: usize, n: usize, out: usize, scale: f64, roi: (f64, f64)) -> Taps {
        let (x, nf) = (o as f64, n as f64);
        let out_f = scale * nf; // ONNX uses the unrounded output length here.
        let x_ori = match self.ctm {
            Ctm::HalfPixel => (x + 0.5) / scale - 0.5,
            Ctm::HalfPixelSymmetric => {
                let adjustment = out as f64 / out_f;
                let offset = nf / 2.0 * (1.0 - adjustment);
                offset + (x + 0.5) / scale - 0.5
            }
            Ctm::PytorchHalfPixel => {
                if out_f == 1.0 {
                    -0.5
                } else {
                    (x + 0.5) / scale - 0.5
                }
            }
            Ctm::AlignCorners => {
                if out_f == 1.0 {
                    0.0
                } else {
                    x * (nf - 1.0) / (out_f - 1.0)
                }
            }
            Ctm::Asymmetric => x / scale,
            Ctm::TfHalfPixelForNn => (x + 0.5) / scale,
            Ctm::TfCropAndResize => {
                let (r0, r1) = roi;
                let v = if out_f == 1.0 {
                    (r1 - r0) * (nf - 1.0) / 2.0
                } else {
                    x * (r1 - r0) * (nf - 1.0) / (out_f - 1.0)
                };
                v + r0 * (nf - 1.0)
            }
        };
        let mut t = Taps::default();
        if self.ctm == Ctm::TfCropAndResize && (x_ori < 0.0 || x_ori > nf - 1.0) {
            t.extrapolate = true;
            return t;
        }
        let mut f = x_ori.floor();
        let mut r = x_ori - f;
        if r == 0.0 {
            // An exact hit: ONNX's formulas then use the tap below with ratio 1.
            f -= 1.0;
            r = 1.0;
        }
        let f = f as i64;
        t.ratio = r;
        match self.mode {
            Mode::Nearest => {
                let up = match self.nearest {
                    _ if r == 1.0 => true,
                    NearestMode::RoundPreferFloor => r > 0.5,
                    NearestMode::RoundPreferCeil => r >= 0.5,
                    NearestMode::Floor => false,
                    NearestMode::Ceil => true,
                };
                t.nearest = (f + up as i64).clamp(0, n as i64 - 1);
                t.count = 1;
                return t;
            }
            Mode::Linear => {
                let s = if self.antialias { scale.min(1.0) } else { 1.0 };
                t.start = if self.antialias { (-1.0 / s).floor() as i64 + 1 } else { 0 };
                t.aa_scale = s;
            }
            Mode::Cubic => {
                let s = if self.antialias { scale.min(1.0) } else { 1.0 };
                t.start = if self.antialias { (-2.0 / s).floor() as i64 + 1 } else { -1 };
                t.aa_scale = s;
            }
        }
        t.count = (2 - 2 * t.start) as usize;
        t.first = f + t.start;
        let mut norm = 0.0;
        for i in 0..t.count {
            let idx = t.first + i as i64;
            if self.exclude_outside && (idx < 0 || idx >= n as i64) {
                continue;
            }
            norm += self.raw_coeff(&t, i);
        }
        t.norm = if self.antialias || self.exclude_outside { if norm == 0.0 { 1.0 } else { norm } } else { 1.0 };
        t
    }

    /// Unnormalized coefficient of tap `i`.
    fn raw_coeff(&self, t: &Taps, i: usize) -> f64 {
        let d = (t.start + i as i64) as f64 - t.ratio;
        match self.mode {
            Mode::Nearest => 1.0,
            Mode::Linear => (1.0 - (d * t.aa_scale).abs()).clamp(0.0, 1.0),
            Mode::Cubic => cubic_kernel(d * t.aa_scale, self.cubic_a),
        }
    }

    /// Normalized coefficient of tap `i` along an axis of length `n`.
    fn coeff(&self, t: &Taps, i: usize, n: usize) -> f64 {
        let idx = t.first + i as i64;
        if self.exclude_outside && (idx < 0 || idx >= n as i64) {
            return 0.0;
        }
        self.raw_coeff(t, i) / t.norm
    }
}

impl Op for Resize {
    fn op_type(&self) -> &'static str {
        "Resize"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        if inputs.len() > 4 {
            invalid!("Resize takes up to 4 inputs (X, roi, scales, sizes), got {}", inputs.len());
        }
        let x = required(inputs, 0, "X")?;
        if x.dtype == DType::Bool && self.mode != Mode::Nearest {
            invalid!("Resize {:?} mode does not apply to bool tensors", self.mode);
        }
        let value = |i: usize, what: &str| -> Result<Option<DataRef>> {
            match optional(inputs, i) {
                None => Ok(None),
                Some(inp) if inp.shape.contains(&0) => Ok(None),
                Some(_) => Ok(Some(const_value(inputs, i, what)?.view().data)),
            }
        };
        let roi = optional(inputs, 1);
        if let Some(r) = roi
            && (!r.dtype.is_float() || r.shape.len() != 1)
        {
            invalid!("roi must be a 1-D float tensor, got {} {:?}", r.dtype, r.shape);
        }
        let roi_data = roi.and_then(|r| r.value).map(|t| t.view().data);
        if self.ctm == Ctm::TfCropAndResize
            && roi.is_none_or(|r| r.shape != [2 * self.axes(x.shape.len()).map(|a| a.1).unwrap_or(0)])
        {
            invalid!("tf_crop_and_resize needs roi with 2 values (start, end) per resized axis");
        }
        let p = self.plan(x.shape, value(2, "scales")?, value(3, "sizes")?, roi_data)?;
        Ok(vec![TypeShape::new(x.dtype, p.output[..p.rank].to_vec())])
    }

    fn scratch_bytes(&self, inputs: &[Option<TypeShape>], outputs: &[TypeShape]) -> usize {
        match (inputs.first(), outputs.first()) {
            (Some(Some(x)), Some(y)) if x.dtype == DType::F32 && self.fast_path_applies(x.shape.len()) => {
                fast_scratch_bytes(&x.shape, &y.shape)
            }
            _ => 0,
        }
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], scratch: &mut [u8]) -> Result<()> {
        let x = required(inputs, 0, "X")?;
        let data = |i: usize| optional(inputs, i).map(|t| t.data).filter(|d| !d.is_empty());
        let p = self.plan(x.shape, data(2), data(3), data(1))?;
        let y = outputs.first_mut().ok_or_else(|| invalid_err!("Resize needs an output"))?;
        let roi = data(1);
        if x.dtype() == DType::F32
            && self.fast_path_applies(p.rank)
            && (0..p.rank.saturating_sub(2)).all(|a| !p.active[a])
            && scratch.len() >= fast_scratch_bytes(x.shape, &p.output[..p.rank])
        {
            return self.resize_fast(&p, x, y, scratch);
        }
        match x.dtype() {
            DType::F32 => self.resize::<f32>(&p, x, y, roi),
            DType::F16 => self.resize::<half::f16>(&p, x, y, roi),
            DType::I8 => self.resize::<i8>(&p, x, y, roi),
            DType::U8 => self.resize::<u8>(&p, x, y, roi),
            DType::I32 => self.resize::<i32>(&p, x, y, roi),
            DType::I64 => self.resize::<i64>(&p, x, y, roi),
            DType::Bool => self.resize::<bool>(&p, x, y, roi),
        }
    }
}

/// Scratch for the fast path: a tap table per output row and column, and one input row.
fn fast_scratch_bytes(x: &[usize], y: &[usize]) -> usize {
    let r = x.len();
    if r < 2 || y.len() != r {
        return 0;
    }
    (y[r - 2] + y[r - 1]) * std::mem::size_of::<AxisTaps>() + x[r - 1] * 4 + 64
}

impl Resize {
    /// Whether the separable f32 fast path can run this op on rank `rank` (the axes resized
    /// are checked against the plan at run time).
    fn fast_path_applies(&self, rank: usize) -> bool {
        rank >= 2 && !self.antialias && self.ctm != Ctm::TfCropAndResize
    }

    /// The tap table of one of the last two axes, and its tap count.
    fn axis_table(&self, p: &ResizePlan, a: usize, n: usize, table: &mut [AxisTaps]) -> usize {
        let out = p.output[a];
        if !p.active[a] {
            for (o, t) in table.iter_mut().enumerate() {
                *t = AxisTaps { idx: [o as u32; MAX_TAPS], w: [1.0, 0.0, 0.0, 0.0] };
            }
            return 1;
        }
        let mut count = 1;
        for (o, t) in table.iter_mut().enumerate() {
            let taps = self.taps(o, n, out, p.scale[a], (0.0, 1.0));
            *t = AxisTaps::default();
            if self.mode == Mode::Nearest {
                t.idx[0] = taps.nearest as u32;
                t.w[0] = 1.0;
                continue;
            }
            count = taps.count.min(MAX_TAPS);
            for k in 0..count {
                t.idx[k] = (taps.first + k as i64).clamp(0, n as i64 - 1) as u32;
                t.w[k] = self.coeff(&taps, k, n) as f32;
            }
        }
        count
    }

    /// f32, resized along the last two axes only: tap tables in `scratch`, then
    /// [`resample::resample_planes`].
    fn resize_fast(&self, p: &ResizePlan, x: TensorRef, y: &mut TensorMut, scratch: &mut [u8]) -> Result<()> {
        let (xs, ys) = (x.as_f32()?, y.as_f32_mut()?);
        let r = p.rank;
        let (ih, iw, oh, ow) = (x.shape[r - 2], x.shape[r - 1], p.output[r - 2], p.output[r - 1]);
        if ys.len() != p.output[..r].iter().product::<usize>() || xs.len() != x.shape.iter().product::<usize>() {
            invalid!("Resize: tensor sizes do not match the inferred shapes");
        }
        if ys.is_empty() {
            return Ok(());
        }
        // SAFETY: AxisTaps is plain old data (u32s and f32s); align_to_mut keeps alignment.
        let (_, tables, _) = unsafe { scratch.align_to_mut::<AxisTaps>() };
        if tables.len() < oh + ow + iw.div_ceil(std::mem::size_of::<AxisTaps>() / 4) {
            invalid!("Resize: scratch too small for the fast path");
        }
        let (row_t, rest) = tables.split_at_mut(oh);
        let (col_t, rest) = rest.split_at_mut(ow);
        let rows = resample::Axis { input: ih, count: self.axis_table(p, r - 2, ih, row_t), taps: row_t };
        let cols = resample::Axis { input: iw, count: self.axis_table(p, r - 1, iw, col_t), taps: col_t };
        // SAFETY: the rest of the AxisTaps storage, viewed as the f32 row buffer (same alignment).
        let tmp =
            unsafe { std::slice::from_raw_parts_mut(rest.as_mut_ptr() as *mut f32, std::mem::size_of_val(rest) / 4) };
        let planes = x.shape[..r - 2].iter().product::<usize>();
        resample::resample_planes(planes, rows, cols, xs, ys, tmp);
        Ok(())
    }

    fn resize<T: Element>(&self, p: &ResizePlan, x: TensorRef, y: &mut TensorMut, roi: Option<DataRef>) -> Result<()> {
        let xs = x.typed::<T>()?;
        let ys = y.typed_mut::<T>()?;
        let rank = p.rank;
        let out = &p.output[..rank];
        let inp = x.shape;
        if ys.len() != out.iter().product::<usize>() || xs.len() != inp.iter().product::<usize>() {
            invalid!("Resize: tensor sizes do not match the inferred shapes");
        }
        if ys.is_empty() {
            return Ok(());
        }
        let (axes, naxes) = self.axes(rank)?;
        let roi_of = |a: usize| -> (f64, f64) {
            match (roi, axes[..naxes].iter().position(|&b| b == a)) {
                (Some(r), Some(i)) if r.len() == 2 * naxes => (read_f32(r, i) as f64, read_f32(r, naxes + i) as f64),
                _ => (0.0, 1.0),
            }
        };
        let in_strides = crate::tensor::strides_fixed(inp);
        let is_float = T::DTYPE.is_float();
        let mut o = [0usize; MAX_RANK];
        for yo in ys.iter_mut() {
            let mut taps = [Taps::default(); MAX_RANK];
            let mut extrapolate = false;
            let mut counts = [1usize; MAX_RANK];
            for a in 0..rank {
                if p.active[a] {
                    taps[a] = self.taps(o[a], inp[a], out[a], p.scale[a], roi_of(a));
                    extrapolate |= taps[a].extrapolate;
                    counts[a] = taps[a].count;
                }
            }
            if extrapolate {
                *yo = T::from_f64(self.extrapolation);
                next_index(&mut o[..rank], out);
                continue;
            }
            let mut acc = 0f64;
            let mut k = [0usize; MAX_RANK];
            loop {
                let mut w = 1f64;
                let mut off = 0usize;
                for a in 0..rank {
                    let idx = if !p.active[a] {
                        o[a]
                    } else if self.mode == Mode::Nearest {
                        taps[a].nearest as usize
                    } else {
                        w *= self.coeff(&taps[a], k[a], inp[a]);
                        (taps[a].first + k[a] as i64).clamp(0, inp[a] as i64 - 1) as usize
                    };
                    off += idx * in_strides[a];
                }
                if self.mode == Mode::Nearest {
                    *yo = xs[off];
                    break;
                }
                if w != 0.0 {
                    acc += w * xs[off].to_f64();
                }
                if !next_index(&mut k[..rank], &counts[..rank]) {
                    break;
                }
            }
            if self.mode != Mode::Nearest {
                // Integers round to nearest and saturate (Element casts saturate).
                *yo = T::from_f64(if is_float { acc } else { acc.round() });
            }
            next_index(&mut o[..rank], out);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::nn::resize_test_data::cases;
    use crate::ops::nn::test_util::{assert_close, t, to_f16};
    use crate::ops::{Attr, eval};
    use crate::tensor::{Tensor, TensorData};

    fn s(v: &str) -> Attr {
        Attr::String(v.as_bytes().to_vec())
    }

    fn scales(v: &[f32]) -> Tensor {
        t(&[v.len()], v)
    }

    #[test]
    fn nearest_upsample_by_two() {
        let x = t(&[1, 1, 2, 2], &[1., 2., 3., 4.]);
        let op = Resize::build(&Attrs::new(), 13).unwrap();
        let y = eval(&op, &[Some(&x), None, Some(&scales(&[1., 1., 2., 2.]))]).unwrap();
        let want = [1., 1., 2., 2., 1., 1., 2., 2., 3., 3., 4., 4., 3., 3., 4., 4.];
        assert_close(&y[0], &[1, 1, 4, 4], &want, 0.0);
        // Integers resize too (nearest copies, linear rounds).
        let xi = Tensor::new(vec![1, 3], TensorData::I32(vec![0, 10, 20])).unwrap();
        let op = Resize::build(
            &Attrs::new().with("mode", s("linear")).with("coordinate_transformation_mode", s("align_corners")),
            13,
        )
        .unwrap();
        let sizes = Tensor::from_i64(&[2], vec![1, 5]).unwrap();
        let y = eval(&op, &[Some(&xi), None, None, Some(&sizes)]).unwrap();
        assert_eq!(y[0].data(), &TensorData::I32(vec![0, 5, 10, 15, 20]));
    }

    #[test]
    fn bilinear_align_corners_by_hand() {
        let x = t(&[1, 1, 2, 2], &[0., 1., 2., 3.]);
        let op = Resize::build(
            &Attrs::new().with("mode", s("linear")).with("coordinate_transformation_mode", s("align_corners")),
            13,
        )
        .unwrap();
        let sizes = Tensor::from_i64(&[4], vec![1, 1, 3, 3]).unwrap();
        let y = eval(&op, &[Some(&x), None, None, Some(&sizes)]).unwrap();
        assert_close(&y[0], &[1, 1, 3, 3], &[0., 0.5, 1., 1., 1.5, 2., 2., 2.5, 3.], 1e-6);
        // Opset 11 form: empty roi and scales inputs next to sizes.
        let empty = t(&[0], &[]);
        let y = eval(&op, &[Some(&x), Some(&empty), Some(&empty), Some(&sizes)]).unwrap();
        assert_eq!(y[0].shape(), &[1, 1, 3, 3]);
    }

    #[test]
    fn against_onnx_reference() {
        for (i, (attrs, xs, xv, roi, sc, sz, ys, yv)) in cases().into_iter().enumerate() {
            let op = Resize::build(&attrs, 19).unwrap();
            let x = t(&xs, &xv);
            let roi = roi.map(|r| t(&[r.len()], &r));
            let sc = sc.map(|v| scales(&v));
            let sz = sz.map(|v| Tensor::from_i64(&[v.len()], v).unwrap());
            let y = eval(&op, &[Some(&x), roi.as_ref(), sc.as_ref(), sz.as_ref()])
                .unwrap_or_else(|e| panic!("case {i}: {e}"));
            assert_close(&y[0], &ys, &yv, 1e-4);
            let y16 = eval(&op, &[Some(&to_f16(&x)), roi.as_ref(), sc.as_ref(), sz.as_ref()]).unwrap();
            assert_close(&y16[0], &ys, &yv, 2e-2);
        }
    }

    /// The f32 fast path (what `eval` takes: it gives the scratch) against the reference
    /// (run with no scratch) over modes, coordinate modes, rounding, up- and downscaling,
    /// one axis or two, rank 3 to 5, and exclude_outside.
    #[test]
    fn fast_path_matches_reference() {
        use crate::ops::nn::test_util::Rng;
        let mut rng = Rng::new(9);
        let ctms = ["half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric"];
        let nearest = ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"];
        let shapes: &[(&[usize], &[f32])] = &[
            (&[1, 3, 6, 7], &[1., 1., 2., 2.]),
            (&[2, 2, 9, 5], &[1., 1., 0.5, 1.7]),
            (&[2, 11, 4], &[1., 1., 2.5]),
            (&[1, 1, 2, 5, 3], &[1., 1., 1., 1., 3.]),
            (&[1, 2, 16, 16], &[1., 1., 0.3, 0.25]),
            (&[1, 2, 7, 8], &[1., 1., 3., 1.]),
        ];
        let mut checked = 0;
        for (si, &(shape, sc)) in shapes.iter().enumerate() {
            let x = rng.tensor(shape);
            for mode in ["nearest", "linear", "cubic"] {
                for (ci, ctm) in ctms.iter().enumerate() {
                    let attrs = Attrs::new()
                        .with("mode", s(mode))
                        .with("coordinate_transformation_mode", s(ctm))
                        .with("nearest_mode", s(nearest[(ci + si) % 4]))
                        .with("exclude_outside", Attr::Int(((ci + si) % 2) as i64));
                    let op = Resize::build(&attrs, 19).unwrap();
                    let sc = scales(sc);
                    let fast = eval(&op, &[Some(&x), None, Some(&sc)]).unwrap().remove(0);
                    let in_types = [Some(TypeShape::new(DType::F32, shape.to_vec())), None, None];
                    let out_type = TypeShape::new(DType::F32, fast.shape().to_vec());
                    assert!(op.scratch_bytes(&in_types, std::slice::from_ref(&out_type)) > 0, "fast path not taken");
                    let mut slow = Tensor::zeros(DType::F32, fast.shape());
                    op.run(&[Some(x.view()), None, Some(sc.view())], &mut [slow.view_mut()], &mut []).unwrap();
                    assert_close(&fast, fast.shape(), slow.as_f32().unwrap(), 1e-5);
                    checked += 1;
                }
            }
        }
        assert_eq!(checked, 6 * 3 * 5);
    }

    #[test]
    fn errors() {
        let x = t(&[1, 1, 2, 2], &[0., 1., 2., 3.]);
        let op = Resize::build(&Attrs::new(), 13).unwrap();
        let sizes = Tensor::from_i64(&[4], vec![1, 1, 3, 3]).unwrap();
        assert!(eval(&op, &[Some(&x)]).is_err());
        assert!(eval(&op, &[Some(&x), None, Some(&scales(&[1., 2.]))]).is_err());
        assert!(eval(&op, &[Some(&x), None, Some(&scales(&[1., 1., 0., 2.]))]).is_err());
        assert!(eval(&op, &[Some(&x), None, Some(&scales(&[1., 1., 2., 2.])), Some(&sizes)]).is_err());
        assert!(eval(&op, &[Some(&x), None, None, Some(&Tensor::from_i64(&[4], vec![1, 1, -3, 3]).unwrap())]).is_err());
        assert!(Resize::build(&Attrs::new().with("mode", s("bicubic")), 13).is_err());
        assert!(Resize::build(&Attrs::new().with("antialias", Attr::Int(1)), 18).is_err());
        assert!(Resize::build(&Attrs::new().with("coordinate_transformation_mode", s("bad")), 13).is_err());
        let op = Resize::build(&Attrs::new().with("axes", Attr::Ints(vec![4])), 18).unwrap();
        assert!(eval(&op, &[Some(&x), None, Some(&scales(&[2.]))]).is_err());
        let op =
            Resize::build(&Attrs::new().with("coordinate_transformation_mode", s("tf_crop_and_resize")), 13).unwrap();
        assert!(eval(&op, &[Some(&x), None, None, Some(&sizes)]).is_err());
        // A non-constant sizes input can't be planned.
        let inputs = [
            Some(InferInput { dtype: DType::F32, shape: &[1, 1, 2, 2], value: None }),
            None,
            None,
            Some(InferInput { dtype: DType::I64, shape: &[4], value: None }),
        ];
        assert!(Resize::build(&Attrs::new(), 13).unwrap().infer(&inputs).is_err());
    }
}
