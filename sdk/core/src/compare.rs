//! Comparing tensors within the tolerances of DESIGN.md (used by tests and `edgert run --check`).

use crate::tensor::{DataRef, Tensor};

/// Tolerance for float comparisons: `|a − b| ≤ rtol · |b|`, or `|a − b| ≤ atol · max(1, S)`
/// where `S` is the largest magnitude in the expected tensor: "near zero" is judged against
/// the tensor's own scale, since f32 rounding error grows with the partial sums that produced
/// an element, not with the element (a logit of 0.1 among logits of 1000 carries the error of
/// sums of size 1000).
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
        let scale = e.iter().filter(|v| v.is_finite()).fold(1.0f64, |m, v| m.max(v.abs()));
        let atol = tol.atol * scale;
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
            if !(d <= atol || d <= tol.rtol * y.abs()) {
                let rel = d / y.abs().max(f64::MIN_POSITIVE);
                if worst.is_none_or(|w| rel > w.3) {
                    worst = Some((i, x, y, rel));
                }
            }
        }
        worst.map(|(i, x, y, rel)| {
            format!("element {i}: {x} vs expected {y} (relative error {rel:.3e}; tolerance {tol:?}, tensor scale {scale:.3e})")
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_zero_is_judged_against_the_tensor_scale() {
        let want = Tensor::from_f32(&[3], vec![1000.0, 0.1, -5.0]).unwrap();
        // 0.1 off by 2e-4: tiny next to 1000, so it passes; off by 2e-2 it does not.
        let close = Tensor::from_f32(&[3], vec![1000.05, 0.1002, -5.0003]).unwrap();
        assert!(mismatch(&close, &want, Tolerance::F32).is_none());
        let far = Tensor::from_f32(&[3], vec![1000.0, 0.12, -5.0]).unwrap();
        assert!(mismatch(&far, &want, Tolerance::F32).is_some());
        // Relative error above 1e-4 on a large element fails.
        let big = Tensor::from_f32(&[3], vec![1000.2, 0.1, -5.0]).unwrap();
        assert!(mismatch(&big, &want, Tolerance::F32).is_some());
        // Types, shapes and integers are exact.
        assert!(
            mismatch(
                &Tensor::from_i64(&[1], vec![1]).unwrap(),
                &Tensor::from_i64(&[1], vec![2]).unwrap(),
                Tolerance::F32
            )
            .is_some()
        );
        assert!(
            mismatch(&want, &Tensor::from_f32(&[1, 3], vec![1000.0, 0.1, -5.0]).unwrap(), Tolerance::F32).is_some()
        );
        let nan = Tensor::from_f32(&[1], vec![f32::NAN]).unwrap();
        assert!(mismatch(&nan, &nan, Tolerance::F32).is_none());
    }
}
