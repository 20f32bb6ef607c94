//! ReduceProd: the product over the reduced axes (1 over an empty set).

use super::common::{Reduce, Reducer};
#[allow(unused_imports)]
use crate::tensor::DType;

/// The ReduceProd reduction.
#[derive(Debug)]
pub struct Prod;

impl Reducer for Prod {
    const OP_TYPE: &'static str = "ReduceProd";
    fn float(xs: impl Iterator<Item = f64> + Clone, n: usize) -> f64 {
        let _ = n;
        xs.product()
    }
    fn int(xs: impl Iterator<Item = i64> + Clone, _n: usize, _lo: i64, _hi: i64) -> i64 {
        xs.fold(1i64, |a, x| a.wrapping_mul(x))
    }
}

/// The ReduceProd op.
pub type ReduceProd = Reduce<Prod>;

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
        let op = ReduceProd::build(&attrs, 18).unwrap();
        let x = Tensor::from_f32(&[2, 2], vec![1., 5., 7., -2.]).unwrap();
        let y = eval(&op, &[Some(&x), Some(&axes(&[0]))]).unwrap().remove(0);
        assert_eq!(y.as_f32().unwrap(), &[7., -10.]);
        let i = Tensor::from_i64(&[3], vec![3, -4, 5]).unwrap();
        let y = eval(&op, &[Some(&i), None]).unwrap().remove(0);
        assert_eq!(y, Tensor::from_i64(&[], vec![-60]).unwrap());
        let e = Tensor::from_f32(&[2, 0], vec![]).unwrap();
        let y = eval(&op, &[Some(&e), Some(&axes(&[1]))]).unwrap().remove(0);
        assert_eq!(y.as_f32().unwrap(), &[1.; 2]);
    }

    #[test]
    fn errors() {
        let x = Tensor::from_f32(&[2, 2], vec![1., 2., 3., 4.]).unwrap();
        let op = ReduceProd::build(&Attrs::new(), 18).unwrap();
        assert!(eval(&op, &[Some(&x), Some(&axes(&[-3]))]).is_err());
        assert!(eval(&op, &[Some(&x), Some(&axes(&[1, 1]))]).is_err());
        assert!(eval(&op, &[None]).is_err());
        let old = ReduceProd::build(&Attrs::new(), 13).unwrap();
        assert!(eval(&old, &[Some(&x), Some(&axes(&[0]))]).is_err());
    }

    #[test]
    fn random_against_naive() {
        random_check("ReduceProd", 0.5, 1.5, |v| v.iter().product());
    }
}
