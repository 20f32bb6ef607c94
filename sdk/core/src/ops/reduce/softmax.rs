//! Softmax and LogSoftmax: `exp(x − max) / Σ exp(x − max)` and its log, along one axis.
//!
//! Before opset 13 the input is coerced to 2-D at `axis` (default 1) and normalized over
//! all dims from `axis` on; from opset 13 only over the single dim `axis` (default −1).

use crate::error::Result;
use crate::ops::{Attrs, InferInput, Op, TypeShape, required};
use crate::tensor::{DataMut, DataRef, Element, TensorMut, TensorRef};
use crate::{invalid, invalid_err};

use super::common::{axis_split, check_len, check_rank, normalize_axis};

/// Softmax or its log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SoftmaxKind {
    /// Softmax.
    Softmax,
    /// LogSoftmax.
    LogSoftmax,
}

/// A Softmax or LogSoftmax op.
#[derive(Debug)]
pub struct Softmax {
    kind: SoftmaxKind,
    axis: i64,
    coerce_2d: bool,
}

impl Softmax {
    /// Parses `axis`, whose default and meaning depend on `opset`.
    pub fn build(kind: SoftmaxKind, attrs: &Attrs, opset: i64) -> Result<Self> {
        let coerce_2d = opset < 13;
        let axis = attrs.int_or("axis", if coerce_2d { 1 } else { -1 })?;
        Ok(Softmax { kind, axis, coerce_2d })
    }

    fn run_typed<T: Element>(&self, xs: &[T], ys: &mut [T], split: (usize, usize, usize)) {
        let (outer, n, inner) = split;
        for o in 0..outer {
            for i in 0..inner {
                let base = o * n * inner + i;
                let at = |k: usize| base + k * inner;
                let m = (0..n).map(|k| xs[at(k)].to_f64()).fold(f64::NEG_INFINITY, f64::max);
                let sum: f64 = (0..n).map(|k| (xs[at(k)].to_f64() - m).exp()).sum();
                for k in 0..n {
                    let d = xs[at(k)].to_f64() - m;
                    ys[at(k)] = T::from_f64(match self.kind {
                        SoftmaxKind::Softmax => d.exp() / sum,
                        SoftmaxKind::LogSoftmax => d - sum.ln(),
                    });
                }
            }
        }
    }
}

/// Validates a float input and returns its `(outer, n, inner)` split (shared with Hardmax).
pub(crate) fn infer_split(
    inputs: &[Option<InferInput>],
    axis: i64,
    coerce_2d: bool,
) -> Result<(TypeShape, (usize, usize, usize))> {
    if inputs.len() != 1 {
        invalid!("expects 1 input, got {}", inputs.len());
    }
    let x = required(inputs, 0, "input")?;
    if !x.dtype.is_float() {
        invalid!("input of type {} is not supported (float32 or float16)", x.dtype);
    }
    check_rank(x.shape, "input")?;
    let a = normalize_axis(axis, x.shape.len(), "axis")?;
    Ok((TypeShape::new(x.dtype, x.shape.to_vec()), axis_split(x.shape, a, coerce_2d)))
}

/// The split of a run-time input, after checking it against its output.
pub(crate) fn run_split(x: &TensorRef, y: &TensorMut, axis: i64, coerce_2d: bool) -> Result<(usize, usize, usize)> {
    check_rank(x.shape, "input")?;
    check_len(x.data.len(), x.shape, "input")?;
    if y.data.len() != x.data.len() || y.dtype() != x.dtype() {
        invalid!("output does not match the input's type and size");
    }
    let a = normalize_axis(axis, x.shape.len(), "axis")?;
    Ok(axis_split(x.shape, a, coerce_2d))
}

impl Op for Softmax {
    fn op_type(&self) -> &'static str {
        match self.kind {
            SoftmaxKind::Softmax => "Softmax",
            SoftmaxKind::LogSoftmax => "LogSoftmax",
        }
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        Ok(vec![infer_split(inputs, self.axis, self.coerce_2d)?.0])
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let x = required(inputs, 0, "input")?;
        let y = outputs.first_mut().ok_or_else(|| invalid_err!("missing output"))?;
        let split = run_split(&x, y, self.axis, self.coerce_2d)?;
        match (x.data, &mut y.data) {
            (DataRef::F32(xs), DataMut::F32(ys)) => self.run_typed(xs, ys, split),
            (DataRef::F16(xs), DataMut::F16(ys)) => self.run_typed(xs, ys, split),
            _ => invalid!("input of type {} is not supported (float32 or float16)", x.dtype()),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::testutil::*;
    use super::*;
    use crate::ops::{Attrs, eval};
    use crate::tensor::{Tensor, TensorData};

    fn op(kind: SoftmaxKind, axis: Option<i64>, opset: i64) -> Softmax {
        let a = match axis {
            Some(v) => int_attrs(&[("axis", v)]),
            None => Attrs::new(),
        };
        Softmax::build(kind, &a, opset).unwrap()
    }

    #[test]
    fn hand_checked() {
        // softmax([1, 2, 3]) = [0.09003057, 0.24472847, 0.66524096].
        let x = Tensor::from_f32(&[1, 3], vec![1., 2., 3.]).unwrap();
        let y = eval(&op(SoftmaxKind::Softmax, None, 13), &[Some(&x)]).unwrap().remove(0);
        assert_close(y.as_f32().unwrap(), &[0.09003057, 0.24472847, 0.66524096]);
        let y = eval(&op(SoftmaxKind::LogSoftmax, None, 13), &[Some(&x)]).unwrap().remove(0);
        assert_close(y.as_f32().unwrap(), &[-2.4076061, -1.4076059, -0.40760595]);
        // Large values stay finite.
        let x = Tensor::from_f32(&[2], vec![10000., 10001.]).unwrap();
        let y = eval(&op(SoftmaxKind::Softmax, None, 13), &[Some(&x)]).unwrap().remove(0);
        assert_close(y.as_f32().unwrap(), &[0.26894142, 0.7310586]);
        let h = Tensor::new(vec![2], TensorData::F16(vec![half::f16::from_f32(0.), half::f16::from_f32(0.)])).unwrap();
        let y = eval(&op(SoftmaxKind::Softmax, None, 13), &[Some(&h)]).unwrap().remove(0);
        assert_eq!(y.to_f32_vec().unwrap(), vec![0.5, 0.5]);
    }

    /// Naive: normalize over the index sets of `(outer, n, inner)`.
    fn naive(x: &[f32], (outer, n, inner): (usize, usize, usize), log: bool) -> Vec<f32> {
        let mut y = vec![0f32; x.len()];
        for o in 0..outer {
            for i in 0..inner {
                let idx: Vec<usize> = (0..n).map(|k| (o * n + k) * inner + i).collect();
                let e: Vec<f64> = idx.iter().map(|&j| (x[j] as f64).exp()).collect();
                let s: f64 = e.iter().sum();
                for (&j, &ej) in idx.iter().zip(&e) {
                    y[j] = if log { (ej / s).ln() } else { ej / s } as f32;
                }
            }
        }
        y
    }

    #[test]
    fn random_against_naive_both_opset_semantics() {
        let mut rng = Rng(5);
        let shape = [2, 7, 13];
        let x = rand_f32(&mut rng, &shape, -4.0, 4.0);
        let xs = x.as_f32().unwrap();
        for kind in [SoftmaxKind::Softmax, SoftmaxKind::LogSoftmax] {
            let log = kind == SoftmaxKind::LogSoftmax;
            for axis in -3i64..3 {
                let a = axis.rem_euclid(3) as usize;
                let inner: usize = shape[a + 1..].iter().product();
                let outer: usize = shape[..a].iter().product();
                let y = eval(&op(kind, Some(axis), 13), &[Some(&x)]).unwrap().remove(0);
                assert_close(y.as_f32().unwrap(), &naive(xs, (outer, shape[a], inner), log));
                let y = eval(&op(kind, Some(axis), 11), &[Some(&x)]).unwrap().remove(0);
                assert_close(y.as_f32().unwrap(), &naive(xs, (outer, shape[a] * inner, 1), log));
            }
            // Defaults: axis 1 coerced before 13, -1 from 13.
            let y = eval(&op(kind, None, 11), &[Some(&x)]).unwrap().remove(0);
            assert_close(y.as_f32().unwrap(), &naive(xs, (2, 91, 1), log));
            let y = eval(&op(kind, None, 13), &[Some(&x)]).unwrap().remove(0);
            assert_close(y.as_f32().unwrap(), &naive(xs, (14, 13, 1), log));
        }
    }

    #[test]
    fn errors() {
        let x = Tensor::from_f32(&[2, 3], vec![0.; 6]).unwrap();
        assert!(eval(&op(SoftmaxKind::Softmax, Some(2), 13), &[Some(&x)]).is_err());
        assert!(eval(&op(SoftmaxKind::Softmax, Some(-3), 11), &[Some(&x)]).is_err());
        let i = i32s(&[2], vec![1, 2]);
        assert!(eval(&op(SoftmaxKind::LogSoftmax, None, 13), &[Some(&i)]).is_err());
        let s = Tensor::scalar_f32(1.0);
        assert!(eval(&op(SoftmaxKind::Softmax, None, 13), &[Some(&s)]).is_err());
        assert!(eval(&op(SoftmaxKind::Softmax, None, 13), &[None]).is_err());
    }
}
