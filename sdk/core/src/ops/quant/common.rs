//! Shared helpers of the quantization ops: the layout of scales and zero points (per
//! tensor, per axis, blocked), rounding and saturation, the integer range of each quantized
//! type, and the requantization arithmetic of QLinearConv/QLinearMatMul as ONNX defines it.

use half::f16;

use crate::error::Result;
use crate::invalid;
use crate::tensor::{DType, DataRef, numel};

/// How a scale (and its zero point) maps onto the elements of the quantized tensor.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Layout {
    /// One scale for the whole tensor.
    PerTensor,
    /// One scale per index of one axis: element `i` uses scale `(i / inner) % dim`.
    PerAxis {
        /// Product of the dims after the axis.
        inner: usize,
        /// The axis' size.
        dim: usize,
    },
    /// One scale per block of `block` consecutive indices along one axis; the scale tensor
    /// has the input's shape with that axis cut to `ceil(dim / block)` (`sdim`).
    Blocked {
        /// Product of the dims after the axis.
        inner: usize,
        /// The axis' size in the input.
        dim: usize,
        /// The block size.
        block: usize,
        /// The axis' size in the scale tensor.
        sdim: usize,
    },
}

impl Layout {
    /// Index of the scale that element `i` (row-major) of the input uses.
    #[inline]
    pub fn index(&self, i: usize) -> usize {
        match *self {
            Layout::PerTensor => 0,
            Layout::PerAxis { inner, dim } => (i / inner) % dim,
            Layout::Blocked { inner, dim, block, sdim } => {
                let outer = i / (inner * dim);
                let a = (i / inner) % dim;
                (outer * sdim + a / block) * inner + i % inner
            }
        }
    }

    /// Works out the layout of a scale of shape `scale` for an input of shape `x`, with the
    /// op's `axis` (possibly negative) and `block_size` (0: not blocked). As ONNX's reference
    /// does, a scale with one element is per tensor whatever its rank.
    pub fn resolve(x: &[usize], scale: &[usize], axis: i64, block_size: i64) -> Result<Layout> {
        if numel(scale) == 1 && block_size <= 0 {
            return Ok(Layout::PerTensor);
        }
        let rank = x.len() as i64;
        let ax = if axis < 0 { axis + rank } else { axis };
        if ax < 0 || ax >= rank {
            invalid!(
                "axis {axis} is out of range for input of shape {x:?} (a scale of shape {scale:?} is per axis \
                 or blocked, so it needs a valid axis)"
            );
        }
        let ax = ax as usize;
        let inner = numel(&x[ax + 1..]);
        let dim = x[ax];
        if block_size <= 0 {
            if scale.len() != 1 || scale[0] != dim {
                invalid!(
                    "a per-axis scale must be 1-D with one value per index of axis {ax} (size {dim}) of input \
                     {x:?}, got shape {scale:?}; hint: use a scalar for per-tensor quantization"
                );
            }
            return Ok(Layout::PerAxis { inner, dim });
        }
        let block = block_size as usize;
        let sdim = dim.div_ceil(block);
        let ok = scale.len() == x.len()
            && scale.iter().zip(x).enumerate().all(|(d, (&s, &n))| s == if d == ax { sdim } else { n });
        if !ok {
            invalid!(
                "a blocked scale (block_size {block}, axis {ax}) for input {x:?} must have the input's shape with \
                 dim {ax} = ceil({dim} / {block}) = {sdim}, got {scale:?}"
            );
        }
        Ok(Layout::Blocked { inner, dim, block, sdim })
    }
}

/// The integer range of a quantized type (uint8, int8, or int32 for DequantizeLinear).
pub fn qrange(dtype: DType) -> Result<(i32, i32)> {
    Ok(match dtype {
        DType::U8 => (0, 255),
        DType::I8 => (-128, 127),
        DType::I32 => (i32::MIN, i32::MAX),
        other => invalid!("quantized type {other} is not supported (uint8 or int8)"),
    })
}

/// Errors unless `dtype` is uint8 or int8 (`what` names the input).
pub fn require_q8(dtype: DType, what: &str) -> Result<()> {
    if !matches!(dtype, DType::U8 | DType::I8) {
        invalid!("{what} must be uint8 or int8, got {dtype}");
    }
    Ok(())
}

/// Errors unless `dtype` is float32 or float16 (`what` names the input).
pub fn require_scale_type(dtype: DType, what: &str) -> Result<()> {
    if !dtype.is_float() {
        invalid!("{what} must be float32 or float16, got {dtype}");
    }
    Ok(())
}

/// Errors unless a zero point's type matches its quantized tensor's and its shape its scale's.
pub fn check_zero_point(zp: (DType, &[usize]), want: DType, scale: &[usize], what: &str) -> Result<()> {
    if zp.0 != want {
        invalid!("{what} has type {}, it must match the quantized tensor's type {want}", zp.0);
    }
    if zp.1 != scale && !(numel(zp.1) == 1 && numel(scale) == 1) {
        invalid!("{what} has shape {:?}, it must have the scale's shape {scale:?}", zp.1);
    }
    Ok(())
}

/// Element `i` of an integer tensor of the quantized types as i32 (0 outside them).
#[inline]
pub fn read_q(d: DataRef<'_>, i: usize) -> i32 {
    match d {
        DataRef::U8(v) => v[i] as i32,
        DataRef::I8(v) => v[i] as i32,
        DataRef::I32(v) => v[i],
        _ => 0,
    }
}

/// Element `i` of a float tensor as f32 (0 for other types).
#[inline]
pub fn read_scale(d: DataRef<'_>, i: usize) -> f32 {
    match d {
        DataRef::F32(v) => v[i],
        DataRef::F16(v) => v[i].to_f32(),
        _ => 0.0,
    }
}

/// Rounds half to even and saturates into `lo..=hi` (NaN gives 0 clamped into range).
#[inline]
pub fn saturate_round(v: f64, lo: i32, hi: i32) -> i32 {
    let r = v.round_ties_even();
    if r.is_nan() {
        return 0i32.clamp(lo, hi);
    }
    r.clamp(lo as f64, hi as f64) as i32
}

/// The requantization multiplier `a_scale * b_scale / y_scale` of QLinearConv and
/// QLinearMatMul, computed in the scales' own type as ONNX's reference does (each step
/// rounded to float16 when the scales are float16).
#[inline]
pub fn multiplier(scale_type: DType, sa: f32, sb: f32, sy: f32) -> f64 {
    if scale_type == DType::F16 {
        let p = f16::from_f32(sa * sb).to_f32();
        f16::from_f32(p / sy).to_f64()
    } else {
        ((sa * sb) / sy) as f64
    }
}

/// `saturate(round_half_even(acc * mult) + zp)`: one requantized output. The int32
/// accumulator times the multiplier is computed in f64 (exact to well below one step).
#[inline]
pub fn requantize(acc: i32, mult: f64, zp: i32, lo: i32, hi: i32) -> i32 {
    saturate_round(acc as f64 * mult + zp as f64, lo, hi)
}

/// Writes `v` (already in range) into element `i` of an uint8/int8/int32 output.
#[inline]
pub fn write_q(out: &mut crate::tensor::DataMut<'_>, i: usize, v: i32) {
    use crate::tensor::DataMut;
    match out {
        DataMut::U8(o) => o[i] = v as u8,
        DataMut::I8(o) => o[i] = v as i8,
        DataMut::I32(o) => o[i] = v,
        _ => {}
    }
}

/// Maps an ONNX `output_dtype` attribute code to a supported quantized type.
pub fn q_dtype_from_onnx(code: i64, what: &str) -> Result<DType> {
    match code {
        2 => Ok(DType::U8),
        3 => Ok(DType::I8),
        _ => invalid!(
            "{what} {code} ({}) is not supported: edgert quantizes to uint8 (2) or int8 (3) only",
            onnx_type_name(code)
        ),
    }
}

/// Maps an ONNX float type code (output type of DequantizeLinear, `precision`) to a DType.
pub fn float_dtype_from_onnx(code: i64, what: &str) -> Result<DType> {
    match code {
        1 => Ok(DType::F32),
        10 => Ok(DType::F16),
        _ => invalid!("{what} {code} ({}) is not supported: float32 (1) or float16 (10)", onnx_type_name(code)),
    }
}

/// The ONNX name of a `TensorProto.DataType` code, for messages.
pub fn onnx_type_name(code: i64) -> &'static str {
    match code {
        1 => "FLOAT",
        2 => "UINT8",
        3 => "INT8",
        4 => "UINT16",
        5 => "INT16",
        6 => "INT32",
        7 => "INT64",
        10 => "FLOAT16",
        11 => "DOUBLE",
        16 => "BFLOAT16",
        17 => "FLOAT8E4M3FN",
        18 => "FLOAT8E4M3FNUZ",
        19 => "FLOAT8E5M2",
        20 => "FLOAT8E5M2FNUZ",
        21 => "UINT4",
        22 => "INT4",
        23 => "FLOAT4E2M1",
        _ => "unknown type",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_index_like_numpy_broadcasting() {
        // Per axis 1 of [2, 3, 2]: element (o, a, i) uses scale a.
        let l = Layout::resolve(&[2, 3, 2], &[3], 1, 0).unwrap();
        let got: Vec<usize> = (0..12).map(|i| l.index(i)).collect();
        assert_eq!(got, vec![0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2]);
        // Negative axis.
        assert_eq!(Layout::resolve(&[2, 3, 2], &[2], -1, 0).unwrap(), Layout::PerAxis { inner: 1, dim: 2 });
        // Blocked: [2, 5] along axis 1 in blocks of 2 -> scale [2, 3].
        let l = Layout::resolve(&[2, 5], &[2, 3], 1, 2).unwrap();
        let got: Vec<usize> = (0..10).map(|i| l.index(i)).collect();
        assert_eq!(got, vec![0, 0, 1, 1, 2, 3, 3, 4, 4, 5]);
        // Blocked along axis 0 of [3, 2] in blocks of 2 -> scale [2, 2].
        let l = Layout::resolve(&[3, 2], &[2, 2], 0, 2).unwrap();
        let got: Vec<usize> = (0..6).map(|i| l.index(i)).collect();
        assert_eq!(got, vec![0, 1, 0, 1, 2, 3]);
        // One element is per tensor whatever its rank.
        assert_eq!(Layout::resolve(&[4, 4], &[1], 1, 0).unwrap(), Layout::PerTensor);
        // Mismatches are errors that say what is expected.
        let e = Layout::resolve(&[2, 3], &[2], 1, 0).unwrap_err().to_string();
        assert!(e.contains("one value per index of axis 1"), "{e}");
        assert!(Layout::resolve(&[2, 3], &[3], 2, 0).is_err());
        assert!(Layout::resolve(&[2, 5], &[2, 2], 1, 2).is_err());
        assert!(Layout::resolve(&[2, 3], &[2, 3], 1, 0).is_err());
    }

    #[test]
    fn rounding_is_half_to_even_and_saturates() {
        let r: Vec<i32> = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4999, 300.0, -300.0, f64::NAN]
            .iter()
            .map(|&v| saturate_round(v, -128, 127))
            .collect();
        assert_eq!(r, vec![0, 2, 2, 0, -2, -2, 2, 127, -128, 0]);
        assert_eq!(saturate_round(f64::NAN, 0, 255), 0);
        assert_eq!(saturate_round(f64::INFINITY, 0, 255), 255);
        assert_eq!(requantize(10, 0.25, 3, 0, 255), 6); // 2.5 -> 2, + 3
        assert_eq!(requantize(-1000, 1.0, 0, 0, 255), 0);
    }

    #[test]
    fn f16_multiplier_rounds_each_step() {
        // 0.1 is not exact in f16; the product and quotient round to f16 each time.
        let (a, b, y) = (f16::from_f32(0.1).to_f32(), f16::from_f32(0.3).to_f32(), f16::from_f32(0.7).to_f32());
        let m = multiplier(DType::F16, a, b, y);
        assert_eq!(m, f16::from_f32(f16::from_f32(a * b).to_f32() / y).to_f64());
        assert_eq!(multiplier(DType::F32, 0.5, 0.25, 2.0), 0.0625);
    }
}
