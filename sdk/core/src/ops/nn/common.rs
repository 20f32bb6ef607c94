//! Helpers shared by the nn ops: sliding-window geometry (kernel, strides, dilations, pads,
//! `auto_pad`, `ceil_mode`), allocation-free index odometers and float element access.

use half::f16;

use crate::error::Result;
use crate::ops::{Attrs, InferInput, optional, required};
use crate::tensor::{DType, DataRef, Element, MAX_RANK};
use crate::{invalid, invalid_err};

/// Most spatial dims an N x C x D1 x ... tensor can have within [`MAX_RANK`].
pub const MAX_SPATIAL: usize = MAX_RANK - 2;

/// Float element types computed in f32 (F16 is widened).
pub trait Real: Element {
    /// Widens to f32.
    fn f(self) -> f32;
    /// Narrows from f32 (round to nearest).
    fn r(v: f32) -> Self;
}

impl Real for f32 {
    fn f(self) -> f32 {
        self
    }
    fn r(v: f32) -> Self {
        v
    }
}

impl Real for f16 {
    fn f(self) -> f32 {
        self.to_f32()
    }
    fn r(v: f32) -> Self {
        f16::from_f32(v)
    }
}

/// Element `i` of a float tensor as f32 (for per-channel parameters of either float type).
pub fn read_f32(d: DataRef<'_>, i: usize) -> f32 {
    match d {
        DataRef::F32(v) => v.get(i).copied().unwrap_or(0.0),
        DataRef::F16(v) => v.get(i).map(|x| x.to_f32()).unwrap_or(0.0),
        DataRef::I8(v) => v.get(i).map(|&x| x as f32).unwrap_or(0.0),
        DataRef::U8(v) => v.get(i).map(|&x| x as f32).unwrap_or(0.0),
        DataRef::I32(v) => v.get(i).map(|&x| x as f32).unwrap_or(0.0),
        DataRef::I64(v) => v.get(i).map(|&x| x as f32).unwrap_or(0.0),
        DataRef::Bool(v) => v.get(i).map(|&x| x as u8 as f32).unwrap_or(0.0),
    }
}

/// Element `i` of an integer tensor as i64 (0 for float or out-of-range reads).
pub fn read_i64(d: DataRef<'_>, i: usize) -> i64 {
    match d {
        DataRef::I64(v) => v.get(i).copied().unwrap_or(0),
        DataRef::I32(v) => v.get(i).map(|&x| x as i64).unwrap_or(0),
        _ => 0,
    }
}

/// Errors unless `dtype` is F32 or F16.
pub fn require_float(dtype: DType, what: &str) -> Result<()> {
    if !dtype.is_float() {
        invalid!("{what} must be float32 or float16, got {dtype}");
    }
    Ok(())
}

/// The inputs of Conv and ConvTranspose (X, W, optional B), checked to be 2 or 3 and to
/// share one float type.
pub type ConvInputs<'a> = (InferInput<'a>, InferInput<'a>, Option<InferInput<'a>>);

/// Checks and returns the inputs of a Conv-like op named `op`.
pub fn conv_inputs<'a>(op: &str, inputs: &[Option<InferInput<'a>>]) -> Result<ConvInputs<'a>> {
    if inputs.len() > 3 {
        invalid!("{op} takes 2 or 3 inputs, got {}", inputs.len());
    }
    let x = required(inputs, 0, "X")?;
    let w = required(inputs, 1, "W")?;
    let b = optional(inputs, 2);
    require_float(x.dtype, "X")?;
    if w.dtype != x.dtype || b.is_some_and(|b| b.dtype != x.dtype) {
        invalid!("X, W and B must share one type, got {}, {} and {:?}", x.dtype, w.dtype, b.map(|b| b.dtype));
    }
    Ok((x, w, b))
}

/// Errors unless `rank` is within 3..=MAX_RANK (N x C x at least one spatial dim).
pub fn require_spatial_rank(shape: &[usize], what: &str) -> Result<()> {
    if shape.len() < 3 || shape.len() > MAX_RANK {
        invalid!("{what} must have rank 3 to {MAX_RANK} (N x C x D1 x ...), got shape {shape:?}");
    }
    Ok(())
}

/// Advances a row-major multi-index over `dims`; returns false after the last one.
pub fn next_index(idx: &mut [usize], dims: &[usize]) -> bool {
    let mut d = idx.len();
    while d > 0 {
        d -= 1;
        idx[d] += 1;
        if idx[d] < dims[d] {
            return true;
        }
        idx[d] = 0;
    }
    false
}

/// The ONNX `auto_pad` attribute.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum AutoPad {
    /// Explicit `pads`.
    NotSet,
    /// Pad so that output = ceil(input / stride), extra padding at the end.
    SameUpper,
    /// Same, extra padding at the beginning.
    SameLower,
    /// No padding.
    Valid,
}

impl AutoPad {
    /// Parses the attribute (default NOTSET).
    pub fn parse(attrs: &Attrs) -> Result<AutoPad> {
        Ok(match attrs.string_or("auto_pad", "NOTSET")?.as_str() {
            "NOTSET" | "" => AutoPad::NotSet,
            "SAME_UPPER" => AutoPad::SameUpper,
            "SAME_LOWER" => AutoPad::SameLower,
            "VALID" => AutoPad::Valid,
            other => invalid!("auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, got `{other}`"),
        })
    }
}

/// Window attributes of Conv, ConvTranspose and the pools, as parsed (lengths unchecked
/// until the spatial rank is known).
#[derive(Clone, PartialEq, Debug)]
pub struct WindowAttrs {
    /// `kernel_shape`, if given.
    pub kernel_shape: Option<Vec<i64>>,
    /// `strides` (default all 1).
    pub strides: Option<Vec<i64>>,
    /// `dilations` (default all 1).
    pub dilations: Option<Vec<i64>>,
    /// `pads` as [x1_begin, x2_begin, ..., x1_end, x2_end, ...] (default all 0).
    pub pads: Option<Vec<i64>>,
    /// `auto_pad`.
    pub auto_pad: AutoPad,
    /// `ceil_mode` (pools only).
    pub ceil_mode: bool,
}

/// Resolved geometry of a sliding window over the spatial dims; fixed size, no heap.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Geometry {
    /// Number of spatial dims.
    pub nsp: usize,
    /// Input spatial dims.
    pub input: [usize; MAX_SPATIAL],
    /// Output spatial dims.
    pub output: [usize; MAX_SPATIAL],
    /// Kernel spatial dims.
    pub kernel: [usize; MAX_SPATIAL],
    /// Strides.
    pub stride: [usize; MAX_SPATIAL],
    /// Dilations.
    pub dilation: [usize; MAX_SPATIAL],
    /// Padding at the beginning of each dim.
    pub pad_begin: [usize; MAX_SPATIAL],
    /// Padding at the end of each dim.
    pub pad_end: [usize; MAX_SPATIAL],
}

impl Geometry {
    /// Input position (may be outside `0..input`) of kernel tap `k` for output `o` in dim `d`.
    #[inline]
    pub fn input_pos(&self, d: usize, o: usize, k: usize) -> isize {
        (o * self.stride[d] + k * self.dilation[d]) as isize - self.pad_begin[d] as isize
    }
    /// Row-major offset into one input plane of the tap at kernel index `k` of the window
    /// at output index `o` (both over the spatial dims), or `None` when it falls in padding.
    #[inline]
    pub fn tap_offset(&self, o: &[usize; MAX_SPATIAL], k: &[usize; MAX_SPATIAL]) -> Option<usize> {
        let mut off = 0usize;
        for d in 0..self.nsp {
            let p = self.input_pos(d, o[d], k[d]);
            if p < 0 || p as usize >= self.input[d] {
                return None;
            }
            off = off * self.input[d] + p as usize;
        }
        Some(off)
    }
    /// Product of the output spatial dims.
    pub fn output_size(&self) -> usize {
        self.output[..self.nsp].iter().product()
    }
    /// Product of the input spatial dims.
    pub fn input_size(&self) -> usize {
        self.input[..self.nsp].iter().product()
    }
    /// Product of the kernel dims.
    pub fn kernel_size(&self) -> usize {
        self.kernel[..self.nsp].iter().product()
    }
}

/// Checks an optional per-dim attribute's length and lower bound, returning it as usize.
fn per_dim(v: &Option<Vec<i64>>, nsp: usize, name: &str, default: usize, min: i64) -> Result<[usize; MAX_SPATIAL]> {
    let mut out = [default; MAX_SPATIAL];
    if let Some(v) = v {
        if v.len() != nsp {
            invalid!("`{name}` has {} values, expected {nsp} (one per spatial dim)", v.len());
        }
        for (i, &x) in v.iter().enumerate() {
            if x < min {
                invalid!("`{name}` values must be >= {min}, got {v:?}");
            }
            out[i] = usize::try_from(x).map_err(|_| invalid_err!("`{name}` value {x} is too large"))?;
        }
    }
    Ok(out)
}

impl WindowAttrs {
    /// Parses the window attributes; `ceil_mode` is read only when `with_ceil`.
    pub fn parse(attrs: &Attrs, with_ceil: bool) -> Result<WindowAttrs> {
        let ceil_mode = if with_ceil {
            match attrs.int_or("ceil_mode", 0)? {
                0 => false,
                1 => true,
                v => invalid!("ceil_mode must be 0 or 1, got {v}"),
            }
        } else {
            false
        };
        Ok(WindowAttrs {
            kernel_shape: attrs.ints("kernel_shape")?,
            strides: attrs.ints("strides")?,
            dilations: attrs.ints("dilations")?,
            pads: attrs.ints("pads")?,
            auto_pad: AutoPad::parse(attrs)?,
            ceil_mode,
        })
    }

    /// The kernel shape from the attribute (pools require it).
    pub fn kernel_from_attr(&self, nsp: usize) -> Result<[usize; MAX_SPATIAL]> {
        if self.kernel_shape.is_none() {
            invalid!("attribute `kernel_shape` is required");
        }
        per_dim(&self.kernel_shape, nsp, "kernel_shape", 1, 1)
    }

    /// Strides, dilations and explicit pads (begin, end) for `nsp` spatial dims, validated.
    #[allow(clippy::type_complexity)]
    pub fn basic(
        &self,
        nsp: usize,
    ) -> Result<([usize; MAX_SPATIAL], [usize; MAX_SPATIAL], [usize; MAX_SPATIAL], [usize; MAX_SPATIAL])> {
        if nsp == 0 || nsp > MAX_SPATIAL {
            invalid!("{nsp} spatial dims are not supported (1 to {MAX_SPATIAL})");
        }
        let stride = per_dim(&self.strides, nsp, "strides", 1, 1)?;
        let dilation = per_dim(&self.dilations, nsp, "dilations", 1, 1)?;
        let mut pb = [0usize; MAX_SPATIAL];
        let mut pe = [0usize; MAX_SPATIAL];
        if let Some(p) = &self.pads
            && (self.auto_pad == AutoPad::NotSet || !p.iter().all(|&x| x == 0))
        {
            if p.len() != 2 * nsp {
                invalid!("`pads` has {} values, expected {} (begin and end per spatial dim)", p.len(), 2 * nsp);
            }
            if self.auto_pad != AutoPad::NotSet {
                invalid!("`pads` can't be given together with auto_pad {:?}", self.auto_pad);
            }
            for (i, &x) in p.iter().enumerate() {
                if x < 0 {
                    invalid!("`pads` must be non-negative, got {p:?}");
                }
                let x = usize::try_from(x).map_err(|_| invalid_err!("`pads` value {x} is too large"))?;
                if i < nsp {
                    pb[i] = x;
                } else {
                    pe[i - nsp] = x;
                }
            }
        }
        Ok((stride, dilation, pb, pe))
    }

    /// Resolves the geometry of a forward window (Conv, pools) over `input` spatial dims
    /// with `kernel` dims. Errors if the output would be empty or sizes overflow.
    pub fn resolve(&self, input: &[usize], kernel: &[usize; MAX_SPATIAL]) -> Result<Geometry> {
        let nsp = input.len();
        let (stride, dilation, mut pb, mut pe) = self.basic(nsp)?;
        let mut g = Geometry { nsp, stride, dilation, kernel: *kernel, ..Geometry::default() };
        for d in 0..nsp {
            let n = input[d];
            g.input[d] = n;
            let eff = (kernel[d] - 1)
                .checked_mul(dilation[d])
                .and_then(|x| x.checked_add(1))
                .ok_or_else(|| invalid_err!("kernel extent overflows"))?;
            let s = stride[d];
            let out = match self.auto_pad {
                AutoPad::NotSet => {
                    let padded = n
                        .checked_add(pb[d])
                        .and_then(|x| x.checked_add(pe[d]))
                        .ok_or_else(|| invalid_err!("padded size overflows"))?;
                    if padded < eff {
                        invalid!("spatial dim {d}: padded input {padded} is smaller than the kernel extent {eff}");
                    }
                    let num = padded - eff;
                    if self.ceil_mode {
                        let mut out = num.div_ceil(s) + 1;
                        // The last window must start inside the input or the begin padding.
                        if (out - 1) * s >= n + pb[d] {
                            out -= 1;
                        }
                        out
                    } else {
                        num / s + 1
                    }
                }
                AutoPad::Valid => {
                    if n < eff {
                        invalid!("spatial dim {d}: input {n} is smaller than the kernel extent {eff}");
                    }
                    (n - eff) / s + 1
                }
                AutoPad::SameUpper | AutoPad::SameLower => {
                    let out = n.div_ceil(s);
                    let need = (out.saturating_sub(1))
                        .checked_mul(s)
                        .and_then(|x| x.checked_add(eff))
                        .ok_or_else(|| invalid_err!("padding overflows"))?;
                    let total = need.saturating_sub(n);
                    if self.auto_pad == AutoPad::SameUpper {
                        pb[d] = total / 2;
                        pe[d] = total - total / 2;
                    } else {
                        pe[d] = total / 2;
                        pb[d] = total - total / 2;
                    }
                    out
                }
            };
            g.output[d] = out;
        }
        g.pad_begin = pb;
        g.pad_end = pe;
        Ok(g)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::Attr;

    fn attrs(pairs: &[(&str, Attr)]) -> Attrs {
        let mut a = Attrs::new();
        for (k, v) in pairs {
            a.insert(k, v.clone());
        }
        a
    }

    #[test]
    fn geometry_explicit_and_auto() {
        let w = WindowAttrs::parse(
            &attrs(&[("pads", Attr::Ints(vec![1, 1, 1, 1])), ("strides", Attr::Ints(vec![2, 2]))]),
            false,
        )
        .unwrap();
        let mut k = [1; MAX_SPATIAL];
        k[0] = 3;
        k[1] = 3;
        let g = w.resolve(&[7, 8], &k).unwrap();
        assert_eq!(&g.output[..2], &[4, 4]);
        let w = WindowAttrs::parse(
            &attrs(&[("auto_pad", Attr::String(b"SAME_LOWER".to_vec())), ("strides", Attr::Ints(vec![2, 2]))]),
            false,
        )
        .unwrap();
        let g = w.resolve(&[7, 8], &k).unwrap();
        assert_eq!(&g.output[..2], &[4, 4]);
        // total pad: (4-1)*2+3-7 = 2 -> 1,1 ; (4-1)*2+3-8 = 1 -> lower gets 1
        assert_eq!((g.pad_begin[0], g.pad_end[0], g.pad_begin[1], g.pad_end[1]), (1, 1, 1, 0));
        let w =
            WindowAttrs::parse(&attrs(&[("ceil_mode", Attr::Int(1)), ("strides", Attr::Ints(vec![2]))]), true).unwrap();
        let mut k1 = [1; MAX_SPATIAL];
        k1[0] = 2;
        assert_eq!(w.resolve(&[5], &k1).unwrap().output[0], 3);
        assert!(
            WindowAttrs::parse(&attrs(&[("strides", Attr::Ints(vec![0]))]), false).unwrap().resolve(&[5], &k1).is_err()
        );
        assert!(
            WindowAttrs::parse(&attrs(&[("pads", Attr::Ints(vec![1]))]), false).unwrap().resolve(&[5], &k1).is_err()
        );
        k1[0] = 9;
        assert!(WindowAttrs::parse(&Attrs::new(), false).unwrap().resolve(&[5], &k1).is_err());
    }

    #[test]
    fn odometer() {
        let mut idx = [0usize; 2];
        let mut n = 1;
        while next_index(&mut idx, &[2, 3]) {
            n += 1;
        }
        assert_eq!(n, 6);
        assert_eq!(idx, [0, 0]);
    }
}
