//! ReduceL1: the sum of absolute values over the reduced axes.

use super::common::{Reduce, Reducer};
#[allow(unused_imports)]
use crate::tensor::DType;

/// The ReduceL1 reduction.
#[derive(Debug)]
pub struct L1;

impl Reducer for L1 {
    const OP_TYPE: &'static str = "ReduceL1";
    fn float(xs: impl Iterator<Item = f64> + Clone, n: usize) -> f64 {
        let _ = n;
        xs.map(f64::abs).sum()
    }
    fn int(xs: impl Iterator<Item = i64> + Clone, _n: usize, _lo: i64, _hi: i64) -> i64 {
        xs.fold(0i64, |a, x| a.wrapping_add(x.wrapping_abs()))
    }
}

/// The ReduceL1 op.
pub type ReduceL1 = Reduce<L1>;

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
        let op = ReduceL1::build(&attrs, 18).unwrap();
        let x = Tensor::from_f32(&[2, 2], vec![1., -5., 7., -2.]).unwrap();
        let y = eval(&op, &[Some(&x), Some(&axes(&[1]))]).unwrap().remove(0);
        assert_eq!(y.as_f32().unwrap(), &[6., 9.]);
        let i = i32s(&[3], vec![3, -4, 5]);
        let y = eval(&op, &[Some(&i), None]).unwrap().remove(0);
        assert_eq!(y, i32s(&[], vec![12]));
    }

    #[test]
    fn errors() {
        let x = Tensor::from_f32(&[2, 2], vec![1., 2., 3., 4.]).unwrap();
        let op = ReduceL1::build(&Attrs::new(), 18).unwrap();
        assert!(eval(&op, &[Some(&x), Some(&axes(&[-3]))]).is_err());
        assert!(eval(&op, &[Some(&x), Some(&axes(&[1, 1]))]).is_err());
        assert!(eval(&op, &[None]).is_err());
        let old = ReduceL1::build(&Attrs::new(), 13).unwrap();
        assert!(eval(&old, &[Some(&x), Some(&axes(&[0]))]).is_err());
    }

    #[test]
    fn random_against_naive() {
        random_check("ReduceL1", -3.0, 3.0, |v| v.iter().map(|x| x.abs()).sum());
    }
}
