//! Comparing tensors within the tolerances of DESIGN.md (used by tests and `edgert run --check`).

use crate::tensor::{DataRef, Tensor};

/// Tolerance for float comparisons: `|a − b| ≤ atol` or `|a − b| ≤ rtol · |b|`.
#[derive(Clone, Copy, Debug)]
pub struct Tolerance {
    /// Absolute tolerance (what counts as "near zero").
    pub atol: f64,
    /// Relative tolerance.
    pub rtol: f64,
}

impl Tolerance {
    /// f32 kernels: relative 1e-4, absolute 1e-5 near zero.
    pub const F32: Tolerance = Tolerance { atol: 1e-5, rtol: 1e-4 };
    /// f16: relative 1e-2.
    pub const F16: Tolerance = Tolerance { atol: 1e-3, rtol: 1e-2 };
}

/// Why two tensors differ, or `None` when they match: shapes and types must be equal,
/// integers and bools exactly, floats within `tol` (NaN matches NaN, infinities must agree).
/// The tolerance for f16 tensors is at least [`Tolerance::F16`].
pub fn mismatch(actual: &Tensor, expected: &Tensor, tol: Tolerance) -> Option<String> {
    if actual.dtype() != expected.dtype() {
        return Some(format!("type {} != expected {}", actual.dtype(), expected.dtype()));
    }
    if actual.shape() != expected.shape() {
        return Some(format!("shape {:?} != expected {:?}", actual.shape(), expected.shape()));
    }
    let (a, e) = (actual.view(), expected.view());
    let floats = |a: Vec<f64>, e: Vec<f64>, tol: Tolerance| -> Option<String> {
        let mut worst: Option<(usize, f64, f64, f64)> = None;
        for (i, (&x, &y)) in a.iter().zip(&e).enumerate() {
            if x.is_nan() && y.is_nan() {
                continue;
            }
            if x.is_infinite() || y.is_infinite() {
                if x != y {
                    return Some(format!("element {i}: {x} != expected {y}"));
                }
                continue;
            }
            let d = (x - y).abs();
            if !(d <= tol.atol || d <= tol.rtol * y.abs()) {
                let rel = d / y.abs().max(f64::MIN_POSITIVE);
                if worst.is_none_or(|w| rel > w.3) {
                    worst = Some((i, x, y, rel));
                }
            }
        }
        worst.map(|(i, x, y, rel)| {
            format!("element {i}: {x} vs expected {y} (relative error {rel:.3e}; tolerance {:?})", tol)
        })
    };
    match (a.data, e.data) {
        (DataRef::F32(x), DataRef::F32(y)) => {
            floats(x.iter().map(|&v| v as f64).collect(), y.iter().map(|&v| v as f64).collect(), tol)
        }
        (DataRef::F16(x), DataRef::F16(y)) => {
            let t = Tolerance { atol: tol.atol.max(Tolerance::F16.atol), rtol: tol.rtol.max(Tolerance::F16.rtol) };
            floats(x.iter().map(|v| v.to_f64()).collect(), y.iter().map(|v| v.to_f64()).collect(), t)
        }
        _ => {
            let (x, y) = (a.data.as_bytes(), e.data.as_bytes());
            if x == y {
                None
            } else {
                let size = actual.dtype().size();
                let i = x.iter().zip(y).position(|(p, q)| p != q).unwrap_or(0) / size;
                let av = actual.to_f32_vec().ok().and_then(|v| v.get(i).copied());
                let ev = expected.to_f32_vec().ok().and_then(|v| v.get(i).copied());
                Some(format!("element {i}: {av:?} != expected {ev:?}"))
            }
        }
    }
}
