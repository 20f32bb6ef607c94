//! Checks and type sets shared by the elementwise ops.

use crate::error::Result;
use crate::invalid;
use crate::ops::InferInput;
use crate::ops::broadcast::broadcast_shapes;
use crate::tensor::{DType, MAX_RANK};

/// F32 and F16.
pub const FLOATS: &[DType] = &[DType::F32, DType::F16];
/// Floats and signed integers.
pub const SIGNED: &[DType] = &[DType::F32, DType::F16, DType::I8, DType::I32, DType::I64];
/// Every numeric type (all but Bool).
pub const NUMERIC: &[DType] = &[DType::F32, DType::F16, DType::I8, DType::U8, DType::I32, DType::I64];
/// Every type.
pub const ALL: &[DType] = &[DType::F32, DType::F16, DType::I8, DType::U8, DType::I32, DType::I64, DType::Bool];
/// Bool only.
pub const BOOL: &[DType] = &[DType::Bool];

/// Types of Add, Sub, Mul and Div: int8 and uint8 joined in opset 14.
pub fn arith_types(opset: i64) -> &'static [DType] {
    if opset >= 14 { NUMERIC } else { &[DType::F32, DType::F16, DType::I32, DType::I64] }
}

/// Checks that inputs `0..min` are present and none at or past `max` is.
pub fn check_arity(op: &str, inputs: &[Option<InferInput>], min: usize, max: usize) -> Result<()> {
    for i in 0..min {
        if inputs.get(i).is_none_or(|x| x.is_none()) {
            invalid!("{op}: missing required input #{i} (needs {min} to {max} inputs)");
        }
    }
    if let Some(i) = inputs.iter().skip(max).position(|x| x.is_some()) {
        invalid!("{op}: unexpected input #{} (takes at most {max})", max + i);
    }
    Ok(())
}

/// Checks that `dtype` is among `allowed`.
pub fn check_dtype(op: &str, what: &str, dtype: DType, allowed: &[DType]) -> Result<()> {
    if !allowed.contains(&dtype) {
        let names: Vec<&str> = allowed.iter().map(|d| d.name()).collect();
        invalid!("{op}: {what} has type {dtype}, expected one of {}", names.join(", "));
    }
    Ok(())
}

/// Checks that two inputs have the same type.
pub fn check_same_dtype(op: &str, a: DType, b: DType) -> Result<()> {
    if a != b {
        invalid!("{op}: inputs have different types {a} and {b}");
    }
    Ok(())
}

/// Element count of a shape, or an error if it overflows.
pub fn checked_numel(op: &str, shape: &[usize]) -> Result<usize> {
    match shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d)) {
        Some(n) => Ok(n),
        None => invalid!("{op}: shape {shape:?} has too many elements"),
    }
}

/// The numpy broadcast of `shapes`, checked for rank (≤ [`MAX_RANK`]) and size.
pub fn broadcast_out(op: &str, shapes: &[&[usize]]) -> Result<Vec<usize>> {
    if let Some(s) = shapes.iter().find(|s| s.len() > MAX_RANK) {
        invalid!("{op}: rank {} exceeds the supported maximum {MAX_RANK} (shape {s:?})", s.len());
    }
    let out = broadcast_shapes(shapes).map_err(|e| crate::invalid_err!("{op}: {e}"))?;
    checked_numel(op, &out)?;
    Ok(out)
}

/// In `run`: checks that an input of shape `input` with `len` elements broadcasts to `out`,
/// so that the indices `broadcast::for_each2`/`for_each3` produce are in bounds. No heap use.
pub fn check_broadcasts(out: &[usize], out_len: usize, input: &[usize], len: usize) -> Result<()> {
    let fits = out.len() <= MAX_RANK
        && input.len() <= out.len()
        && input.iter().zip(&out[out.len() - input.len()..]).all(|(&i, &o)| i == o || i == 1)
        && input.iter().try_fold(1usize, |a, &d| a.checked_mul(d)) == Some(len)
        && out.iter().try_fold(1usize, |a, &d| a.checked_mul(d)) == Some(out_len);
    if !fits {
        invalid!("input of shape {input:?} ({len} elements) does not broadcast to output shape {out:?}");
    }
    Ok(())
}

/// Applies `$body` with `$T` bound to the Rust type of a numeric `DType` (all but Bool);
/// evaluates to an `Err` for Bool.
macro_rules! with_numeric {
    ($dt:expr, $T:ident => $body:expr) => {
        match $dt {
            $crate::tensor::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::tensor::DType::F16 => {
                type $T = half::f16;
                $body
            }
            $crate::tensor::DType::I8 => {
                type $T = i8;
                $body
            }
            $crate::tensor::DType::U8 => {
                type $T = u8;
                $body
            }
            $crate::tensor::DType::I32 => {
                type $T = i32;
                $body
            }
            $crate::tensor::DType::I64 => {
                type $T = i64;
                $body
            }
            other => Err($crate::invalid_err!("unsupported element type {other}")),
        }
    };
}
pub(crate) use with_numeric;

/// Like [`with_numeric`], also binding Bool.
macro_rules! with_any {
    ($dt:expr, $T:ident => $body:expr) => {
        match $dt {
            $crate::tensor::DType::Bool => {
                type $T = bool;
                $body
            }
            other => $crate::ops::elementwise::common::with_numeric!(other, $T => $body),
        }
    };
}
pub(crate) use with_any;
