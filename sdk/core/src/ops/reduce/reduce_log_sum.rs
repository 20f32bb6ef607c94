//! ReduceLogSum: the natural log of the sum over the reduced axes (-inf over an empty set).

use super::common::{Reduce, Reducer};
#[allow(unused_imports)]
use crate::tensor::DType;

/// The ReduceLogSum reduction.
#[derive(Debug)]
pub struct LogSum;

impl Reducer for LogSum {
    const OP_TYPE: &'static str = "ReduceLogSum";
    fn float(xs: impl Iterator<Item = f64> + Clone, n: usize) -> f64 {
        let _ = n;
        xs.sum::<f64>().ln()
    }
}

/// The ReduceLogSum op.
pub type ReduceLogSum = Reduce<LogSum>;

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
        let op = ReduceLogSum::build(&attrs, 18).unwrap();
        let x = Tensor::from_f32(&[2, 2], vec![1., 0., 2., 5.]).unwrap();
        let y = eval(&op, &[Some(&x), Some(&axes(&[1]))]).unwrap().remove(0);
        assert_close(y.as_f32().unwrap(), &[0., 7f32.ln()]);
        let e = Tensor::from_f32(&[2, 0], vec![]).unwrap();
        let y = eval(&op, &[Some(&e), Some(&axes(&[1]))]).unwrap().remove(0);
        assert_eq!(y.as_f32().unwrap(), &[f32::NEG_INFINITY; 2]);
    }

    #[test]
    fn errors() {
        let x = Tensor::from_f32(&[2, 2], vec![1., 2., 3., 4.]).unwrap();
        let op = ReduceLogSum::build(&Attrs::new(), 18).unwrap();
        assert!(eval(&op, &[Some(&x), Some(&axes(&[-3]))]).is_err());
        assert!(eval(&op, &[Some(&x), Some(&axes(&[1, 1]))]).is_err());
        assert!(eval(&op, &[None]).is_err());
        let old = ReduceLogSum::build(&Attrs::new(), 13).unwrap();
        assert!(eval(&old, &[Some(&x), Some(&axes(&[0]))]).is_err());
    }

    #[test]
    fn random_against_naive() {
        random_check("ReduceLogSum", 0.1, 3.0, |v| v.iter().sum::<f64>().ln());
    }
}
