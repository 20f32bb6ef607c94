//! ReduceL2: the Euclidean norm over the reduced axes (integers truncate).

use super::common::{Reduce, Reducer};
#[allow(unused_imports)]
use crate::tensor::DType;

/// The ReduceL2 reduction.
#[derive(Debug)]
pub struct L2;

impl Reducer for L2 {
    const OP_TYPE: &'static str = "ReduceL2";
    fn float(xs: impl Iterator<Item = f64> + Clone, n: usize) -> f64 {
        let _ = n;
        xs.map(|x| x * x).sum::<f64>().sqrt()
    }
}

/// The ReduceL2 op.
pub type ReduceL2 = Reduce<L2>;

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
        let op = ReduceL2::build(&attrs, 18).unwrap();
        let x = Tensor::from_f32(&[2, 2], vec![3., -4., 5., 12.]).unwrap();
        let y = eval(&op, &[Some(&x), Some(&axes(&[1]))]).unwrap().remove(0);
        assert_eq!(y.as_f32().unwrap(), &[5., 13.]);
        let i = i32s(&[2], vec![1, 1]);
        let y = eval(&op, &[Some(&i), None]).unwrap().remove(0);
        assert_eq!(y, i32s(&[], vec![1]));
        let e = Tensor::from_f32(&[2, 0], vec![]).unwrap();
        let y = eval(&op, &[Some(&e), Some(&axes(&[1]))]).unwrap().remove(0);
        assert_eq!(y.as_f32().unwrap(), &[0.; 2]);
    }

    #[test]
    fn errors() {
        let x = Tensor::from_f32(&[2, 2], vec![1., 2., 3., 4.]).unwrap();
        let op = ReduceL2::build(&Attrs::new(), 18).unwrap();
        assert!(eval(&op, &[Some(&x), Some(&axes(&[-3]))]).is_err());
        assert!(eval(&op, &[Some(&x), Some(&axes(&[1, 1]))]).is_err());
        assert!(eval(&op, &[None]).is_err());
        let old = ReduceL2::build(&Attrs::new(), 13).unwrap();
        assert!(eval(&old, &[Some(&x), Some(&axes(&[0]))]).is_err());
    }

    #[test]
    fn random_against_naive() {
        random_check("ReduceL2", -3.0, 3.0, |v| v.iter().map(|x| x * x).sum::<f64>().sqrt());
    }
}
