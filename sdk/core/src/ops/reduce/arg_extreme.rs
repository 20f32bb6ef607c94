//! ArgMax and ArgMin: the index of the largest/smallest element along one axis.
//!
//! Ties go to the first index, or the last with `select_last_index`. NaN counts as the
//! extreme (numpy's argmax/argmin return the first NaN).

use crate::error::Result;
use crate::ops::{Attrs, InferInput, Op, TypeShape, required};
use crate::tensor::{DType, DataRef, Element, TensorMut, TensorRef};
use crate::{invalid, invalid_err};

use super::common::{axis_split, check_len, check_rank, normalize_axis};

/// Which extreme.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Extreme {
    /// ArgMax.
    Max,
    /// ArgMin.
    Min,
}

/// An ArgMax or ArgMin op.
#[derive(Debug)]
pub struct ArgExtreme {
    kind: Extreme,
    axis: i64,
    keepdims: bool,
    select_last_index: bool,
}

impl ArgExtreme {
    /// Parses the attributes (`select_last_index` exists from opset 12).
    pub fn build(kind: Extreme, attrs: &Attrs, opset: i64) -> Result<Self> {
        let flag = |name: &str, default: i64| -> Result<bool> {
            match attrs.int_or(name, default)? {
                0 => Ok(false),
                1 => Ok(true),
                v => invalid!("attribute `{name}` must be 0 or 1, got {v}"),
            }
        };
        let select_last_index = flag("select_last_index", 0)?;
        if select_last_index && opset < 12 {
            invalid!("attribute `select_last_index` needs opset 12 or later");
        }
        Ok(ArgExtreme { kind, axis: attrs.int_or("axis", 0)?, keepdims: flag("keepdims", 1)?, select_last_index })
    }

    fn run_typed<T: Element>(&self, xs: &[T], ys: &mut [i64], split: (usize, usize, usize)) {
        let (outer, n, inner) = split;
        #[allow(clippy::eq_op)]
        let is_nan = |v: T| v != v;
        for o in 0..outer {
            for i in 0..inner {
                let base = o * n * inner + i;
                let mut best = xs[base];
                let mut at = 0usize;
                for k in 1..n {
                    let x = xs[base + k * inner];
                    let (xn, bn) = (is_nan(x), is_nan(best));
                    let better = match self.kind {
                        Extreme::Max => x > best,
                        Extreme::Min => x < best,
                    };
                    let take = if self.select_last_index {
                        xn || (!bn && (better || x == best))
                    } else {
                        !bn && (xn || better)
                    };
                    if take {
                        best = x;
                        at = k;
                    }
                }
                ys[o * inner + i] = at as i64;
            }
        }
    }
}

impl Op for ArgExtreme {
    fn op_type(&self) -> &'static str {
        match self.kind {
            Extreme::Max => "ArgMax",
            Extreme::Min => "ArgMin",
        }
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        if inputs.len() != 1 {
            invalid!("expects 1 input, got {}", inputs.len());
        }
        let x = required(inputs, 0, "data")?;
        if x.dtype == DType::Bool {
            invalid!("data of type bool is not supported");
        }
        check_rank(x.shape, "data")?;
        let axis = normalize_axis(self.axis, x.shape.len(), "axis")?;
        if x.shape[axis] == 0 {
            invalid!("the reduced axis {} has size 0 (no index to return)", self.axis);
        }
        let mut shape = x.shape.to_vec();
        if self.keepdims {
            shape[axis] = 1;
        } else {
            shape.remove(axis);
        }
        Ok(vec![TypeShape::new(DType::I64, shape)])
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let x = required(inputs, 0, "data")?;
        check_rank(x.shape, "data")?;
        check_len(x.data.len(), x.shape, "data")?;
        let axis = normalize_axis(self.axis, x.shape.len(), "axis")?;
        let split = axis_split(x.shape, axis, false);
        let y = outputs.first_mut().ok_or_else(|| invalid_err!("missing output"))?;
        let ys = y.typed_mut::<i64>()?;
        if split.1 == 0 || ys.len() != split.0 * split.2 {
            invalid!("output has {} elements, expected {}", ys.len(), split.0 * split.2);
        }
        match x.data {
            DataRef::F32(xs) => self.run_typed(xs, ys, split),
            DataRef::F16(xs) => self.run_typed(xs, ys, split),
            DataRef::I8(xs) => self.run_typed(xs, ys, split),
            DataRef::U8(xs) => self.run_typed(xs, ys, split),
            DataRef::I32(xs) => self.run_typed(xs, ys, split),
            DataRef::I64(xs) => self.run_typed(xs, ys, split),
            DataRef::Bool(_) => invalid!("data of type bool is not supported"),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::testutil::*;
    use super::*;
    use crate::ops::eval;
    use crate::tensor::Tensor;

    fn op(kind: Extreme, axis: i64, keepdims: i64, last: i64) -> ArgExtreme {
        let a = int_attrs(&[("axis", axis), ("keepdims", keepdims), ("select_last_index", last)]);
        ArgExtreme::build(kind, &a, 13).unwrap()
    }

    #[test]
    fn hand_checked() {
        // [[2, 1], [3, 10]]: argmax axis 0 -> [1, 1]; axis 1 -> [0, 1]; argmin axis 1 -> [1, 0].
        let x = Tensor::from_f32(&[2, 2], vec![2., 1., 3., 10.]).unwrap();
        let y = eval(&op(Extreme::Max, 0, 1, 0), &[Some(&x)]).unwrap().remove(0);
        assert_eq!(y, Tensor::from_i64(&[1, 2], vec![1, 1]).unwrap());
        let y = eval(&op(Extreme::Max, -1, 0, 0), &[Some(&x)]).unwrap().remove(0);
        assert_eq!(y, Tensor::from_i64(&[2], vec![0, 1]).unwrap());
        let y = eval(&op(Extreme::Min, 1, 0, 0), &[Some(&x)]).unwrap().remove(0);
        assert_eq!(y, Tensor::from_i64(&[2], vec![1, 0]).unwrap());
    }

    #[test]
    fn ties_and_nan() {
        let x = i32s(&[5], vec![1, 4, 0, 4, 0]);
        let y = eval(&op(Extreme::Max, 0, 0, 0), &[Some(&x)]).unwrap().remove(0);
        assert_eq!(y, Tensor::from_i64(&[], vec![1]).unwrap());
        let y = eval(&op(Extreme::Max, 0, 0, 1), &[Some(&x)]).unwrap().remove(0);
        assert_eq!(y, Tensor::from_i64(&[], vec![3]).unwrap());
        let y = eval(&op(Extreme::Min, 0, 0, 1), &[Some(&x)]).unwrap().remove(0);
        assert_eq!(y, Tensor::from_i64(&[], vec![4]).unwrap());
        let n = Tensor::from_f32(&[4], vec![1., f32::NAN, 9., f32::NAN]).unwrap();
        let y = eval(&op(Extreme::Max, 0, 0, 0), &[Some(&n)]).unwrap().remove(0);
        assert_eq!(y, Tensor::from_i64(&[], vec![1]).unwrap());
        let y = eval(&op(Extreme::Min, 0, 0, 1), &[Some(&n)]).unwrap().remove(0);
        assert_eq!(y, Tensor::from_i64(&[], vec![3]).unwrap());
    }

    #[test]
    fn random_against_naive() {
        let mut rng = Rng(99);
        for shape in [vec![7], vec![2, 7, 13], vec![3, 13, 1], vec![2, 3, 4, 5]] {
            // Coarse values so that ties occur.
            let x = {
                let n: usize = shape.iter().product();
                let v = (0..n).map(|_| (rng.below(5) as f32) - 2.0).collect();
                Tensor::from_f32(&shape, v).unwrap()
            };
            let xs = x.as_f32().unwrap();
            for axis in 0..shape.len() {
                for (kind, last) in [(Extreme::Max, 0), (Extreme::Max, 1), (Extreme::Min, 0), (Extreme::Min, 1)] {
                    let y = eval(&op(kind, axis as i64, 1, last), &[Some(&x)]).unwrap().remove(0);
                    let outer: usize = shape[..axis].iter().product();
                    let inner: usize = shape[axis + 1..].iter().product();
                    let n = shape[axis];
                    let mut want = vec![];
                    for o in 0..outer {
                        for i in 0..inner {
                            let vals: Vec<f32> = (0..n).map(|k| xs[(o * n + k) * inner + i]).collect();
                            let ext = match kind {
                                Extreme::Max => vals.iter().cloned().fold(f32::MIN, f32::max),
                                Extreme::Min => vals.iter().cloned().fold(f32::MAX, f32::min),
                            };
                            let pos = if last == 1 {
                                vals.iter().rposition(|&v| v == ext)
                            } else {
                                vals.iter().position(|&v| v == ext)
                            };
                            want.push(pos.unwrap() as i64);
                        }
                    }
                    let mut ws = shape.clone();
                    ws[axis] = 1;
                    assert_eq!(y, Tensor::from_i64(&ws, want).unwrap(), "{shape:?} axis {axis} {kind:?} {last}");
                }
            }
        }
    }

    #[test]
    fn errors() {
        let x = Tensor::from_f32(&[2, 0], vec![]).unwrap();
        assert!(eval(&op(Extreme::Max, 1, 1, 0), &[Some(&x)]).is_err());
        assert!(eval(&op(Extreme::Max, 2, 1, 0), &[Some(&x)]).is_err());
        assert!(eval(&op(Extreme::Max, -3, 1, 0), &[Some(&x)]).is_err());
        let b = Tensor::new(vec![1], crate::TensorData::Bool(vec![true])).unwrap();
        assert!(eval(&op(Extreme::Min, 0, 1, 0), &[Some(&b)]).is_err());
        let s = Tensor::scalar_f32(1.0);
        assert!(eval(&op(Extreme::Min, 0, 1, 0), &[Some(&s)]).is_err());
        let a = int_attrs(&[("select_last_index", 1)]);
        assert!(ArgExtreme::build(Extreme::Max, &a, 11).is_err());
        assert!(ArgExtreme::build(Extreme::Max, &int_attrs(&[("keepdims", 3)]), 13).is_err());
    }
}
