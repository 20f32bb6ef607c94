//! Range: `start, start + delta, ...` up to (not including) `limit`.

use crate::error::Result;
use crate::ops::shape::util::{check_dtype, check_inputs, single_output};
use crate::ops::{Attrs, InferInput, Op, TypeShape, const_value, required};
use crate::tensor::{DType, DataMut, DataRef, TensorMut, TensorRef};
use crate::{invalid, invalid_err};

/// ONNX `Range`: `len = max(ceil((limit - start) / delta), 0)`, `out[i] = start + i·delta`.
/// The three inputs are scalars of one type: float32, int32 or int64 (and float16, which
/// opset 27 added; it computes in f32).
#[derive(Clone, Debug, Default)]
pub struct Range;

impl Range {
    /// Builds the op; Range has no attributes.
    pub fn build(_attrs: &Attrs, _opset: i64) -> Result<Range> {
        Ok(Range)
    }
}

/// Number of elements, from the three scalars (same type, checked by the caller).
fn count(start: DataRef, limit: DataRef, delta: DataRef) -> Result<usize> {
    let n: i128 = match (start, limit, delta) {
        (DataRef::F32(s), DataRef::F32(l), DataRef::F32(d)) => float_count(first(s)?, first(l)?, first(d)?)?,
        (DataRef::F16(s), DataRef::F16(l), DataRef::F16(d)) => {
            float_count(first(s)?.to_f32(), first(l)?.to_f32(), first(d)?.to_f32())?
        }
        (DataRef::I32(s), DataRef::I32(l), DataRef::I32(d)) => {
            int_count(first(s)? as i128, first(l)? as i128, first(d)? as i128)?
        }
        (DataRef::I64(s), DataRef::I64(l), DataRef::I64(d)) => {
            int_count(first(s)? as i128, first(l)? as i128, first(d)? as i128)?
        }
        _ => invalid!("start, limit and delta must be one type: float32, float16, int32 or int64"),
    };
    usize::try_from(n.max(0)).map_err(|_| invalid_err!("Range output too large"))
}

fn float_count(s: f32, l: f32, d: f32) -> Result<i128> {
    let (s, l, d) = (s as f64, l as f64, d as f64);
    if d == 0.0 || !s.is_finite() || !l.is_finite() || !d.is_finite() {
        invalid!("Range needs finite inputs and a non-zero delta");
    }
    let n = ((l - s) / d).ceil();
    Ok(if n > 1e15 { i128::MAX } else { n as i128 })
}

fn int_count(s: i128, l: i128, d: i128) -> Result<i128> {
    if d == 0 {
        invalid!("Range delta must not be 0");
    }
    let diff = l - s;
    let (q, r) = (diff / d, diff % d);
    // Round the quotient up (towards +inf) when the division is inexact.
    Ok(if r != 0 && ((r > 0) == (d > 0)) { q + 1 } else { q })
}

fn first<T: Copy>(v: &[T]) -> Result<T> {
    v.first().copied().ok_or_else(|| invalid_err!("Range inputs must be scalars"))
}

impl Op for Range {
    fn op_type(&self) -> &'static str {
        "Range"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        check_inputs(inputs, 3, 3, "Range")?;
        let names = ["start", "limit", "delta"];
        let dtype = required(inputs, 0, "start")?.dtype;
        check_dtype(dtype, &[DType::F32, DType::F16, DType::I32, DType::I64], "start")?;
        for (i, name) in names.iter().enumerate() {
            let inp = required(inputs, i, name)?;
            if inp.dtype != dtype {
                invalid!("{name} is {}, start is {dtype}", inp.dtype);
            }
            if inp.shape.iter().product::<usize>() != 1 || inp.shape.len() > 1 {
                invalid!("{name} must be a scalar, got shape {:?}", inp.shape);
            }
        }
        let v = |i: usize| const_value(inputs, i, names[i]).map(|t| t.view().data);
        let n = count(v(0)?, v(1)?, v(2)?)?;
        Ok(vec![TypeShape::new(dtype, vec![n])])
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let s = required(inputs, 0, "start")?.data;
        let d = required(inputs, 2, "delta")?.data;
        let n = count(s, required(inputs, 1, "limit")?.data, d)?;
        let out = single_output(outputs)?;
        if out.data.len() != n {
            invalid!("output has {} elements, Range gives {n}", out.data.len());
        }
        match (&mut out.data, s, d) {
            (DataMut::F32(o), DataRef::F32(s), DataRef::F32(d)) => {
                let (s, d) = (first(s)?, first(d)?);
                for (i, x) in o.iter_mut().enumerate() {
                    *x = s + i as f32 * d;
                }
            }
            (DataMut::F16(o), DataRef::F16(s), DataRef::F16(d)) => {
                let (s, d) = (first(s)?.to_f32(), first(d)?.to_f32());
                for (i, x) in o.iter_mut().enumerate() {
                    *x = half::f16::from_f32(s + i as f32 * d);
                }
            }
            (DataMut::I32(o), DataRef::I32(s), DataRef::I32(d)) => {
                let (s, d) = (first(s)?, first(d)?);
                for (i, x) in o.iter_mut().enumerate() {
                    *x = s.wrapping_add((i as i32).wrapping_mul(d));
                }
            }
            (DataMut::I64(o), DataRef::I64(s), DataRef::I64(d)) => {
                let (s, d) = (first(s)?, first(d)?);
                for (i, x) in o.iter_mut().enumerate() {
                    *x = s.wrapping_add((i as i64).wrapping_mul(d));
                }
            }
            _ => invalid!("output type differs from the inputs"),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::eval;
    use crate::ops::shape::util::testing::*;
    use crate::tensor::{Tensor, TensorData};

    fn i64r(s: i64, l: i64, d: i64) -> Result<Vec<i64>> {
        let t = |v| Tensor::new(vec![], TensorData::I64(vec![v])).unwrap();
        Ok(i64s(&eval(&Range, &[Some(&t(s)), Some(&t(l)), Some(&t(d))])?[0]))
    }

    #[test]
    fn ints() {
        assert_eq!(i64r(0, 5, 1).unwrap(), vec![0, 1, 2, 3, 4]);
        assert_eq!(i64r(10, 4, -3).unwrap(), vec![10, 7]);
        assert_eq!(i64r(1, 8, 3).unwrap(), vec![1, 4, 7]);
        assert_eq!(i64r(5, 0, 1).unwrap(), Vec::<i64>::new());
        let mut rng = Rng::new(2);
        for _ in 0..200 {
            let (s, l) = (rng.range(-20, 20), rng.range(-20, 20));
            let d = if rng.below(2) == 0 { rng.range(1, 6) } else { -rng.range(1, 6) };
            let mut want = vec![];
            let mut v = s;
            while (d > 0 && v < l) || (d < 0 && v > l) {
                want.push(v);
                v += d;
            }
            assert_eq!(i64r(s, l, d).unwrap(), want, "{s} {l} {d}");
        }
        let t = |v| Tensor::new(vec![], TensorData::I32(vec![v])).unwrap();
        let out = eval(&Range, &[Some(&t(3)), Some(&t(-3)), Some(&t(-2))]).unwrap();
        assert_eq!(out[0].data(), &TensorData::I32(vec![3, 1, -1]));
    }

    #[test]
    fn floats() {
        let t = |v| Tensor::scalar_f32(v);
        let out = eval(&Range, &[Some(&t(1.0)), Some(&t(2.0)), Some(&t(0.25))]).unwrap();
        assert_eq!(f32s(&out[0]), vec![1.0, 1.25, 1.5, 1.75]);
        let out = eval(&Range, &[Some(&t(0.0)), Some(&t(1.0)), Some(&t(0.3))]).unwrap();
        assert_eq!(out[0].len(), 4);
        let h = |v: f32| Tensor::new(vec![], TensorData::F16(vec![half::f16::from_f32(v)])).unwrap();
        let out = eval(&Range, &[Some(&h(1.0)), Some(&h(5.0)), Some(&h(1.5))]).unwrap();
        assert_eq!(out[0].to_f32_vec().unwrap(), vec![1.0, 2.5, 4.0]);
    }

    #[test]
    fn errors() {
        assert!(i64r(0, 5, 0).is_err());
        let f = Tensor::scalar_f32(1.0);
        let i = Tensor::new(vec![], TensorData::I64(vec![1])).unwrap();
        assert!(eval(&Range, &[Some(&f), Some(&i), Some(&i)]).is_err(), "mixed types");
        let v = ints1(&[1, 2]);
        assert!(eval(&Range, &[Some(&v), Some(&i), Some(&i)]).is_err(), "not a scalar");
        let h = Tensor::new(vec![], TensorData::I8(vec![1])).unwrap();
        assert!(eval(&Range, &[Some(&h), Some(&h), Some(&h)]).is_err(), "int8 is not allowed");
        assert!(eval(&Range, &[Some(&f), Some(&Tensor::scalar_f32(f32::INFINITY)), Some(&f)]).is_err());
    }
}
