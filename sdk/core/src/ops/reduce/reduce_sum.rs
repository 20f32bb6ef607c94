//! ReduceSum: the sum over the reduced axes (0 over an empty set).

use super::common::{Reduce, Reducer};

/// The ReduceSum reduction.
#[derive(Debug)]
pub struct Sum;

impl Reducer for Sum {
    const OP_TYPE: &'static str = "ReduceSum";
    // ReduceSum took `axes` as an input six opsets before the other reductions.
    const AXES_INPUT_SINCE: i64 = 13;
    const FROM_SUM: Option<fn(f64, usize) -> f64> = Some(|s, _| s);
    fn float(xs: impl Iterator<Item = f64> + Clone, _n: usize) -> f64 {
        xs.sum()
    }
    fn int(xs: impl Iterator<Item = i64> + Clone, _n: usize, _lo: i64, _hi: i64) -> i64 {
        xs.fold(0i64, |a, x| a.wrapping_add(x))
    }
}

/// The ReduceSum op.
pub type ReduceSum = Reduce<Sum>;

#[cfg(test)]
mod tests {
    use super::super::common::random_check;
    use super::super::common::testutil::*;
    use super::*;
    use crate::ops::{Attr, eval};
    use crate::tensor::Tensor;

    #[test]
    fn hand_checked() {
        // [[1,2],[3,4]] over axis 1 -> [3, 7]; over all -> 10.
        let x = Tensor::from_f32(&[2, 2], vec![1., 2., 3., 4.]).unwrap();
        let op = ReduceSum::build(&int_attrs(&[("keepdims", 0)]), 13).unwrap();
        let y = eval(&op, &[Some(&x), Some(&axes(&[1]))]).unwrap().remove(0);
        assert_eq!((y.shape(), y.as_f32().unwrap()), (&[2][..], &[3., 7.][..]));
        let y = eval(&op, &[Some(&x), None]).unwrap().remove(0);
        assert_eq!((y.shape(), y.as_f32().unwrap()), (&[][..], &[10.][..]));
        let keep = ReduceSum::build(&Attrs::new(), 13).unwrap();
        let y = eval(&keep, &[Some(&x), Some(&axes(&[]))]).unwrap().remove(0);
        assert_eq!(y.shape(), &[1, 1]);
    }

    #[test]
    fn noop_with_empty_axes_is_identity() {
        let x = Tensor::from_f32(&[2, 2], vec![1., -2., 3., 4.]).unwrap();
        let op = ReduceSum::build(&int_attrs(&[("noop_with_empty_axes", 1)]), 13).unwrap();
        let y = eval(&op, &[Some(&x), Some(&axes(&[]))]).unwrap().remove(0);
        assert_eq!(y, x);
    }

    #[test]
    fn empty_set_and_ints() {
        let x = Tensor::from_f32(&[2, 0, 4], vec![]).unwrap();
        let op = ReduceSum::build(&Attrs::new(), 13).unwrap();
        let y = eval(&op, &[Some(&x), Some(&axes(&[1]))]).unwrap().remove(0);
        assert_eq!((y.shape(), y.as_f32().unwrap()), (&[2, 1, 4][..], &[0.0; 8][..]));
        let xi = i32s(&[3], vec![i32::MAX, 1, 5]);
        let y = eval(&op, &[Some(&xi), None]).unwrap().remove(0);
        assert_eq!(y, i32s(&[1], vec![i32::MIN.wrapping_add(5)]));
        let x64 = Tensor::from_i64(&[2], vec![1 << 60, 3]).unwrap();
        let y = eval(&op, &[Some(&x64), None]).unwrap().remove(0);
        assert_eq!(y, Tensor::from_i64(&[1], vec![(1 << 60) + 3]).unwrap());
    }

    #[test]
    fn errors() {
        let x = Tensor::from_f32(&[2, 2], vec![1., 2., 3., 4.]).unwrap();
        let op = ReduceSum::build(&Attrs::new(), 13).unwrap();
        assert!(eval(&op, &[Some(&x), Some(&axes(&[2]))]).is_err());
        assert!(eval(&op, &[Some(&x), Some(&axes(&[0, -2]))]).is_err());
        assert!(eval(&op, &[Some(&x), Some(&i32s(&[1], vec![0]))]).is_err());
        assert!(eval(&op, &[Some(&x), Some(&Tensor::from_i64(&[1, 1], vec![0]).unwrap())]).is_err());
        let u8s = Tensor::new(vec![1], crate::TensorData::U8(vec![1])).unwrap();
        assert!(eval(&op, &[Some(&u8s), None]).is_err());
        let old = ReduceSum::build(&Attrs::new(), 11).unwrap();
        assert!(eval(&old, &[Some(&x), Some(&axes(&[0]))]).is_err());
        assert!(ReduceSum::build(&Attrs::new().with("axes", Attr::Ints(vec![0])), 13).is_err());
        assert!(ReduceSum::build(&int_attrs(&[("keepdims", 2)]), 13).is_err());
        let r9 = Tensor::zeros(crate::DType::F32, &[1; 9]);
        assert!(eval(&op, &[Some(&r9), None]).is_err());
    }

    #[test]
    fn random_against_naive() {
        random_check("ReduceSum", -2.0, 2.0, |v| v.iter().sum());
    }

    use crate::ops::Attrs;
}
