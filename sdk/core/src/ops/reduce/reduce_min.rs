//! ReduceMin: the minimum over the reduced axes (the type's highest value, +inf for floats, over an empty set).

use super::common::{Reduce, Reducer};
#[allow(unused_imports)]
use crate::tensor::DType;

/// The ReduceMin reduction.
#[derive(Debug)]
pub struct Min;

impl Reducer for Min {
    const OP_TYPE: &'static str = "ReduceMin";
    fn allows(dtype: DType, opset: i64) -> bool {
        match dtype {
            DType::F32 | DType::F16 | DType::I32 | DType::I64 => true,
            DType::I8 | DType::U8 => opset >= 12,
            DType::Bool => opset >= 20,
        }
    }
    fn float(xs: impl Iterator<Item = f64> + Clone, n: usize) -> f64 {
        let _ = n;
        let mut m = f64::INFINITY;
        for x in xs {
            if x.is_nan() {
                return f64::NAN;
            }
            if x < m {
                m = x;
            }
        }
        m
    }
    fn int(xs: impl Iterator<Item = i64> + Clone, _n: usize, _lo: i64, hi: i64) -> i64 {
        xs.fold(hi, i64::min)
    }
}

/// The ReduceMin op.
pub type ReduceMin = Reduce<Min>;

#[cfg(test)]
mod tests {
    use super::super::common::random_check;
    use super::super::common::testutil::*;
    use super::*;
    use crate::ops::{Attrs, eval};
    use crate::tensor::Tensor;

    #[test]
    fn hand_checked() {
        let attrs = int_attrs(&[("keepdims", 0)]);
        let op = ReduceMin::build(&attrs, 18).unwrap();
        let x = Tensor::from_f32(&[2, 2], vec![1., 5., 7., -2.]).unwrap();
        let y = eval(&op, &[Some(&x), Some(&axes(&[0]))]).unwrap().remove(0);
        assert_eq!(y.as_f32().unwrap(), &[1., -2.]);
        let b = Tensor::new(vec![2, 2], crate::TensorData::Bool(vec![true, true, false, true])).unwrap();
        let opb = ReduceMin::build(&attrs, 20).unwrap();
        let y = eval(&opb, &[Some(&b), Some(&axes(&[1]))]).unwrap().remove(0);
        assert_eq!(y.data(), &crate::TensorData::Bool(vec![true, false]));
        let i = Tensor::new(vec![0], crate::TensorData::I8(vec![])).unwrap();
        let y = eval(&op, &[Some(&i), None]).unwrap().remove(0);
        assert_eq!(y.data(), &crate::TensorData::I8(vec![i8::MAX]));
        let e = Tensor::from_f32(&[2, 0], vec![]).unwrap();
        let y = eval(&op, &[Some(&e), Some(&axes(&[1]))]).unwrap().remove(0);
        assert_eq!(y.as_f32().unwrap(), &[f32::INFINITY; 2]);
    }

    #[test]
    fn errors() {
        let x = Tensor::from_f32(&[2, 2], vec![1., 2., 3., 4.]).unwrap();
        let op = ReduceMin::build(&Attrs::new(), 18).unwrap();
        assert!(eval(&op, &[Some(&x), Some(&axes(&[-3]))]).is_err());
        assert!(eval(&op, &[Some(&x), Some(&axes(&[1, 1]))]).is_err());
        assert!(eval(&op, &[None]).is_err());
        let old = ReduceMin::build(&Attrs::new(), 13).unwrap();
        assert!(eval(&old, &[Some(&x), Some(&axes(&[0]))]).is_err());
    }

    #[test]
    fn random_against_naive() {
        random_check("ReduceMin", -3.0, 3.0, |v| v.iter().cloned().fold(f64::INFINITY, f64::min));
    }
}
