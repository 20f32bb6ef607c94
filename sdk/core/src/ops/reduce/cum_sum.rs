//! CumSum: running sums along an axis given as an input, optionally exclusive (each output
//! leaves out its own element) and/or reversed (sums run from the end).

use crate::error::Result;
use crate::ops::{Attrs, InferInput, Op, TypeShape, required};
use crate::tensor::{DType, DataMut, DataRef, Element, TensorMut, TensorRef};
use crate::{invalid, invalid_err};

use super::common::{IntElement, axis_split, check_len, check_rank, normalize_axis};

/// The CumSum op.
#[derive(Debug)]
pub struct CumSum {
    exclusive: bool,
    reverse: bool,
    opset: i64,
}

/// The axis from the `axis` input's value (int32 or int64, one element).
fn axis_of(data: DataRef) -> Result<i64> {
    match data {
        DataRef::I32([a]) => Ok(*a as i64),
        DataRef::I64([a]) => Ok(*a),
        DataRef::I32(_) | DataRef::I64(_) => invalid!("axis must hold exactly one element, got {}", data.len()),
        other => invalid!("axis must be int32 or int64, got {}", other.dtype()),
    }
}

impl CumSum {
    /// Parses `exclusive` and `reverse`.
    pub fn build(attrs: &Attrs, opset: i64) -> Result<Self> {
        let flag = |name: &str| -> Result<bool> {
            match attrs.int_or(name, 0)? {
                0 => Ok(false),
                1 => Ok(true),
                v => invalid!("attribute `{name}` must be 0 or 1, got {v}"),
            }
        };
        Ok(CumSum { exclusive: flag("exclusive")?, reverse: flag("reverse")?, opset })
    }

    /// Visits each line along the axis, calling `f(offset)` in summation order and telling
    /// it where a new line starts.
    fn for_lines(&self, (outer, n, inner): (usize, usize, usize), mut f: impl FnMut(bool, usize)) {
        for o in 0..outer {
            for i in 0..inner {
                let base = o * n * inner + i;
                for j in 0..n {
                    let k = if self.reverse { n - 1 - j } else { j };
                    f(j == 0, base + k * inner);
                }
            }
        }
    }

    fn run_float<T: Element>(&self, xs: &[T], ys: &mut [T], split: (usize, usize, usize)) {
        let mut acc = 0f64;
        self.for_lines(split, |start, at| {
            if start {
                acc = 0.0;
            }
            let x = xs[at].to_f64();
            if self.exclusive {
                ys[at] = T::from_f64(acc);
                acc += x;
            } else {
                acc += x;
                ys[at] = T::from_f64(acc);
            }
        });
    }

    fn run_int<T: IntElement>(&self, xs: &[T], ys: &mut [T], split: (usize, usize, usize)) {
        let mut acc = 0i64;
        self.for_lines(split, |start, at| {
            if start {
                acc = 0;
            }
            let x = xs[at].to_i64();
            if self.exclusive {
                ys[at] = T::wrap(acc);
                acc = acc.wrapping_add(x);
            } else {
                acc = acc.wrapping_add(x);
                ys[at] = T::wrap(acc);
            }
        });
    }
}

impl Op for CumSum {
    fn op_type(&self) -> &'static str {
        "CumSum"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        if inputs.len() != 2 {
            invalid!("expects 2 inputs (x, axis), got {}", inputs.len());
        }
        let x = required(inputs, 0, "x")?;
        let ok = match x.dtype {
            DType::F32 | DType::I32 | DType::I64 => true,
            DType::F16 => self.opset >= 14,
            _ => false,
        };
        if !ok {
            invalid!("x of type {} is not supported at opset {}", x.dtype, self.opset);
        }
        check_rank(x.shape, "x")?;
        let axis = required(inputs, 1, "axis")?;
        if !matches!(axis.dtype, DType::I32 | DType::I64) {
            invalid!("axis must be int32 or int64, got {}", axis.dtype);
        }
        if axis.shape.len() > 1 || axis.shape.iter().product::<usize>() != 1 {
            invalid!("axis must be a scalar, got shape {:?}", axis.shape);
        }
        if let Some(v) = axis.value {
            normalize_axis(axis_of(v.view().data)?, x.shape.len(), "axis")?;
        } else if x.shape.is_empty() {
            invalid!("x must have rank ≥ 1");
        }
        Ok(vec![TypeShape::new(x.dtype, x.shape.to_vec())])
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let x = required(inputs, 0, "x")?;
        check_rank(x.shape, "x")?;
        check_len(x.data.len(), x.shape, "x")?;
        let axis = normalize_axis(axis_of(required(inputs, 1, "axis")?.data)?, x.shape.len(), "axis")?;
        let split = axis_split(x.shape, axis, false);
        let y = outputs.first_mut().ok_or_else(|| invalid_err!("missing output"))?;
        if y.data.len() != x.data.len() {
            invalid!("output has {} elements, expected {}", y.data.len(), x.data.len());
        }
        match (x.data, &mut y.data) {
            (DataRef::F32(xs), DataMut::F32(ys)) => self.run_float(xs, ys, split),
            (DataRef::F16(xs), DataMut::F16(ys)) => self.run_float(xs, ys, split),
            (DataRef::I32(xs), DataMut::I32(ys)) => self.run_int(xs, ys, split),
            (DataRef::I64(xs), DataMut::I64(ys)) => self.run_int(xs, ys, split),
            _ => invalid!("x of type {} is not supported", x.dtype()),
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

    fn op(exclusive: i64, reverse: i64) -> CumSum {
        CumSum::build(&int_attrs(&[("exclusive", exclusive), ("reverse", reverse)]), 14).unwrap()
    }

    #[test]
    fn hand_checked() {
        let x = Tensor::from_f32(&[5], vec![1., 2., 3., 4., 5.]).unwrap();
        let ax = i32s(&[], vec![0]);
        let run = |e, r| eval(&op(e, r), &[Some(&x), Some(&ax)]).unwrap().remove(0).as_f32().unwrap().to_vec();
        assert_eq!(run(0, 0), [1., 3., 6., 10., 15.]);
        assert_eq!(run(1, 0), [0., 1., 3., 6., 10.]);
        assert_eq!(run(0, 1), [15., 14., 12., 9., 5.]);
        assert_eq!(run(1, 1), [14., 12., 9., 5., 0.]);
        // 2-D along axis 0 and -1 (int64 axis), and int32 data.
        let x = i32s(&[2, 3], vec![1, 2, 3, 4, 5, 6]);
        let y = eval(&op(0, 0), &[Some(&x), Some(&Tensor::from_i64(&[1], vec![0]).unwrap())]).unwrap();
        assert_eq!(y[0], i32s(&[2, 3], vec![1, 2, 3, 5, 7, 9]));
        let y = eval(&op(0, 0), &[Some(&x), Some(&Tensor::from_i64(&[], vec![-1]).unwrap())]).unwrap();
        assert_eq!(y[0], i32s(&[2, 3], vec![1, 3, 6, 4, 9, 15]));
    }

    #[test]
    fn random_against_naive() {
        let mut rng = Rng(3);
        let shape = [2, 7, 13];
        let x = rand_f32(&mut rng, &shape, -1.0, 1.0);
        let xs = x.as_f32().unwrap();
        for axis in 0..3usize {
            for (e, r) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
                let y = eval(&op(e, r), &[Some(&x), Some(&Tensor::from_i64(&[], vec![axis as i64]).unwrap())]).unwrap();
                let st = [91usize, 13, 1];
                let mut want = vec![0f32; xs.len()];
                for (j, w) in want.iter_mut().enumerate() {
                    let pos = (j / st[axis]) % shape[axis];
                    let line0 = j - pos * st[axis];
                    let mut s = 0f64;
                    for k in 0..shape[axis] {
                        let inc =
                            if r == 1 { k > pos || (e == 0 && k == pos) } else { k < pos || (e == 0 && k == pos) };
                        if inc {
                            s += xs[line0 + k * st[axis]] as f64;
                        }
                    }
                    *w = s as f32;
                }
                assert_close(y[0].as_f32().unwrap(), &want);
            }
        }
    }

    #[test]
    fn errors() {
        let x = Tensor::from_f32(&[2, 3], vec![0.; 6]).unwrap();
        let bad_axis = Tensor::from_i64(&[], vec![2]).unwrap();
        assert!(eval(&op(0, 0), &[Some(&x), Some(&bad_axis)]).is_err());
        let two = Tensor::from_i64(&[2], vec![0, 1]).unwrap();
        assert!(eval(&op(0, 0), &[Some(&x), Some(&two)]).is_err());
        assert!(eval(&op(0, 0), &[Some(&x), Some(&Tensor::scalar_f32(0.))]).is_err());
        assert!(eval(&op(0, 0), &[Some(&x), None]).is_err());
        let u = Tensor::new(vec![1], crate::TensorData::U8(vec![1])).unwrap();
        assert!(eval(&op(0, 0), &[Some(&u), Some(&i32s(&[], vec![0]))]).is_err());
        let h = Tensor::new(vec![1], crate::TensorData::F16(vec![half::f16::ONE])).unwrap();
        let old = CumSum::build(&Attrs::new(), 11).unwrap();
        assert!(eval(&old, &[Some(&h), Some(&i32s(&[], vec![0]))]).is_err());
        assert!(CumSum::build(&int_attrs(&[("reverse", 2)]), 14).is_err());
    }

    use crate::ops::Attrs;
}
