//! ReduceMean: the arithmetic mean over the reduced axes (integers truncate, as numpy's astype).

use super::common::{Reduce, Reducer};
#[allow(unused_imports)]
use crate::tensor::DType;

/// The ReduceMean reduction.
#[derive(Debug)]
pub struct Mean;

impl Reducer for Mean {
    const OP_TYPE: &'static str = "ReduceMean";
    const FROM_SUM: Option<fn(f64, usize) -> f64> = Some(|s, n| s / n as f64);
    fn float(xs: impl Iterator<Item = f64> + Clone, n: usize) -> f64 {
        let _ = n;
        xs.sum::<f64>() / n as f64
    }
    fn int(xs: impl Iterator<Item = i64> + Clone, n: usize, _lo: i64, _hi: i64) -> i64 {
        let s = xs.fold(0i64, |a, x| a.wrapping_add(x));
        if n == 0 { 0 } else { s.wrapping_div(n as i64) }
    }
}

/// The ReduceMean op.
pub type ReduceMean = Reduce<Mean>;

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
        let op = ReduceMean::build(&attrs, 18).unwrap();
        let x = Tensor::from_f32(&[2, 2], vec![1., 5., 7., -2.]).unwrap();
        let y = eval(&op, &[Some(&x), Some(&axes(&[1]))]).unwrap().remove(0);
        assert_eq!(y.as_f32().unwrap(), &[3., 2.5]);
        let i = i32s(&[2, 2], vec![1, 2, -1, -2]);
        let y = eval(&op, &[Some(&i), Some(&axes(&[1]))]).unwrap().remove(0);
        assert_eq!(y, i32s(&[2], vec![1, -1]));
    }

    #[test]
    fn errors() {
        let x = Tensor::from_f32(&[2, 2], vec![1., 2., 3., 4.]).unwrap();
        let op = ReduceMean::build(&Attrs::new(), 18).unwrap();
        assert!(eval(&op, &[Some(&x), Some(&axes(&[-3]))]).is_err());
        assert!(eval(&op, &[Some(&x), Some(&axes(&[1, 1]))]).is_err());
        assert!(eval(&op, &[None]).is_err());
        let old = ReduceMean::build(&Attrs::new(), 13).unwrap();
        assert!(eval(&old, &[Some(&x), Some(&axes(&[0]))]).is_err());
    }

    #[test]
    fn random_against_naive() {
        random_check("ReduceMean", -3.0, 3.0, |v| v.iter().sum::<f64>() / v.len() as f64);
    }
}
