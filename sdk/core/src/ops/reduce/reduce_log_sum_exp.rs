//! ReduceLogSumExp: log(sum(exp(x))) over the reduced axes, computed stably (-inf over an empty set).

use super::common::{Reduce, Reducer};
#[allow(unused_imports)]
use crate::tensor::DType;

/// The ReduceLogSumExp reduction.
#[derive(Debug)]
pub struct LogSumExp;

impl Reducer for LogSumExp {
    const OP_TYPE: &'static str = "ReduceLogSumExp";
    fn float(xs: impl Iterator<Item = f64> + Clone, n: usize) -> f64 {
        let _ = n;
        let m = xs.clone().fold(f64::NEG_INFINITY, |m, x| if x.is_nan() || m.is_nan() { f64::NAN } else { m.max(x) });
        if m.is_infinite() || m.is_nan() {
            // Empty set or all -inf gives -inf; any +inf gives +inf; NaN propagates.
            return m;
        }
        xs.map(|x| (x - m).exp()).sum::<f64>().ln() + m
    }
}

/// The ReduceLogSumExp op.
pub type ReduceLogSumExp = Reduce<LogSumExp>;

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
        let op = ReduceLogSumExp::build(&attrs, 18).unwrap();
        let x = Tensor::from_f32(&[2, 2], vec![0., 0., 1000., 1000.]).unwrap();
        let y = eval(&op, &[Some(&x), Some(&axes(&[1]))]).unwrap().remove(0);
        assert_close(y.as_f32().unwrap(), &[2f32.ln(), 1000. + 2f32.ln()]);
        let e = Tensor::from_f32(&[2, 0], vec![]).unwrap();
        let y = eval(&op, &[Some(&e), Some(&axes(&[1]))]).unwrap().remove(0);
        assert_eq!(y.as_f32().unwrap(), &[f32::NEG_INFINITY; 2]);
    }

    #[test]
    fn errors() {
        let x = Tensor::from_f32(&[2, 2], vec![1., 2., 3., 4.]).unwrap();
        let op = ReduceLogSumExp::build(&Attrs::new(), 18).unwrap();
        assert!(eval(&op, &[Some(&x), Some(&axes(&[-3]))]).is_err());
        assert!(eval(&op, &[Some(&x), Some(&axes(&[1, 1]))]).is_err());
        assert!(eval(&op, &[None]).is_err());
        let old = ReduceLogSumExp::build(&Attrs::new(), 13).unwrap();
        assert!(eval(&old, &[Some(&x), Some(&axes(&[0]))]).is_err());
    }

    #[test]
    fn random_against_naive() {
        random_check("ReduceLogSumExp", -3.0, 3.0, |v| v.iter().map(|x| x.exp()).sum::<f64>().ln());
    }
}
