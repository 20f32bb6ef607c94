//! ReduceMax: the maximum over the reduced axes (the type's lowest value, -inf for floats, over an empty set).

use super::common::{Reduce, Reducer};
#[allow(unused_imports)]
use crate::tensor::DType;

/// The ReduceMax reduction.
#[derive(Debug)]
pub struct Max;

impl Reducer for Max {
    const OP_TYPE: &'static str = "ReduceMax";
    fn allows(dtype: DType, opset: i64) -> bool {
        match dtype {
            DType::F32 | DType::F16 | DType::I32 | DType::I64 => true,
            DType::I8 | DType::U8 => opset >= 12,
            DType::Bool => opset >= 20,
        }
    }
    fn float(xs: impl Iterator<Item = f64> + Clone, n: usize) -> f64 {
        let _ = n;
        let mut m = f64::NEG_INFINITY;
        for x in xs {
            if x.is_nan() {
                return f64::NAN;
            }
            if x > m {
                m = x;
            }
        }
        m
    }
    fn int(xs: impl Iterator<Item = i64> + Clone, _n: usize, lo: i64, _hi: i64) -> i64 {
        xs.fold(lo, i64::max)
    }
}

/// The ReduceMax op.
pub type ReduceMax = Reduce<Max>;

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
        let op = ReduceMax::build(&attrs, 18).unwrap();
        // [[1, 5], [7, -2]] over axis 1 -> [5, 7]; u8 and bool; empty set -> lowest value.
        let x = Tensor::from_f32(&[2, 2], vec![1., 5., 7., -2.]).unwrap();
        let y = eval(&op, &[Some(&x), Some(&axes(&[1]))]).unwrap().remove(0);
        assert_eq!(y.as_f32().unwrap(), &[5., 7.]);
        let b = Tensor::new(vec![2, 2], crate::TensorData::Bool(vec![false, true, false, false])).unwrap();
        let opb = ReduceMax::build(&attrs, 20).unwrap();
        let y = eval(&opb, &[Some(&b), Some(&axes(&[1]))]).unwrap().remove(0);
        assert_eq!(y.data(), &crate::TensorData::Bool(vec![true, false]));
        assert!(eval(&op, &[Some(&b), Some(&axes(&[1]))]).is_err(), "bool needs opset 20");
        let u = Tensor::new(vec![0, 2], crate::TensorData::U8(vec![])).unwrap();
        let y = eval(&op, &[Some(&u), Some(&axes(&[0]))]).unwrap().remove(0);
        assert_eq!(y.data(), &crate::TensorData::U8(vec![0, 0]));
        let i = i32s(&[0], vec![]);
        let y = eval(&op, &[Some(&i), None]).unwrap().remove(0);
        assert_eq!(y, i32s(&[], vec![i32::MIN]));
        let e = Tensor::from_f32(&[0], vec![]).unwrap();
        let y = eval(&op, &[Some(&e), None]).unwrap().remove(0);
        assert_eq!(y.as_f32().unwrap(), &[f32::NEG_INFINITY]);
        let n = Tensor::from_f32(&[3], vec![1., f32::NAN, 2.]).unwrap();
        assert!(eval(&op, &[Some(&n), None]).unwrap()[0].as_f32().unwrap()[0].is_nan());
    }

    #[test]
    fn errors() {
        let x = Tensor::from_f32(&[2, 2], vec![1., 2., 3., 4.]).unwrap();
        let op = ReduceMax::build(&Attrs::new(), 18).unwrap();
        assert!(eval(&op, &[Some(&x), Some(&axes(&[-3]))]).is_err());
        assert!(eval(&op, &[Some(&x), Some(&axes(&[1, 1]))]).is_err());
        assert!(eval(&op, &[None]).is_err());
        let old = ReduceMax::build(&Attrs::new(), 13).unwrap();
        assert!(eval(&old, &[Some(&x), Some(&axes(&[0]))]).is_err());
    }

    #[test]
    fn random_against_naive() {
        random_check("ReduceMax", -3.0, 3.0, |v| v.iter().cloned().fold(f64::NEG_INFINITY, f64::max));
    }
}
