//! Expand: broadcast a tensor to a shape (numpy's bidirectional rule).

use crate::error::Result;
use crate::ops::broadcast::{broadcast_shapes, broadcast_strides};
use crate::ops::shape::util::{Strided, check_inputs, check_rank, const_ints, copy_strided, dispatch, single_output};
use crate::ops::{Attrs, InferInput, Op, TypeShape, required};
use crate::tensor::{DType, Element, MAX_RANK, TensorMut, TensorRef};
use crate::{invalid, invalid_err};

/// ONNX `Expand`: the output shape is the broadcast of the input shape and `shape`, so a
/// `shape` dim of 1 keeps the input's dim.
#[derive(Clone, Debug, Default)]
pub struct Expand;

impl Expand {
    /// Builds the op; Expand has no attributes.
    pub fn build(_attrs: &Attrs, _opset: i64) -> Result<Expand> {
        Ok(Expand)
    }
}

fn run_t<T: Element>(x: TensorRef, out: &mut TensorMut) -> Result<()> {
    let shape = out.shape;
    let bs = broadcast_strides(x.shape, shape);
    let mut s = Strided { offset: 0, strides: [0; MAX_RANK] };
    for (d, &b) in s.strides.iter_mut().zip(&bs).take(shape.len()) {
        *d = b as isize;
    }
    copy_strided(x.typed::<T>()?, &s, out.typed_mut::<T>()?, &Strided::row_major(shape, 0), shape)
}

impl Op for Expand {
    fn op_type(&self) -> &'static str {
        "Expand"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        check_inputs(inputs, 2, 2, "Expand")?;
        let x = required(inputs, 0, "input")?;
        let dims = const_ints(inputs, 1, "shape", &[DType::I64])?;
        let mut want = Vec::with_capacity(dims.len());
        for &d in &dims {
            want.push(usize::try_from(d).map_err(|_| invalid_err!("shape {dims:?} has a negative dim"))?);
        }
        let shape = broadcast_shapes(&[x.shape, &want])
            .map_err(|_| invalid_err!("cannot expand shape {:?} to {dims:?}", x.shape))?;
        check_rank(&shape, "output")?;
        Ok(vec![TypeShape::new(x.dtype, shape)])
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let x = required(inputs, 0, "input")?;
        let out = single_output(outputs)?;
        let r = out.shape.len();
        let fits = r <= MAX_RANK
            && x.shape.len() <= r
            && x.shape.iter().zip(&out.shape[r - x.shape.len()..]).all(|(&a, &b)| a == b || a == 1);
        if !fits {
            invalid!("output shape {:?} is not a broadcast of {:?}", out.shape, x.shape);
        }
        dispatch!(x.dtype(), run_t(x, out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::eval;
    use crate::ops::shape::util::testing::*;
    use crate::tensor::{Tensor, TensorData};

    fn expand(x: &Tensor, shape: &[i64]) -> Result<Tensor> {
        Ok(eval(&Expand, &[Some(x), Some(&ints1(shape))])?.remove(0))
    }

    #[test]
    fn hand_checked() {
        let x = Tensor::from_f32(&[3, 1], vec![1., 2., 3.]).unwrap();
        let out = expand(&x, &[2, 1, 6]).unwrap();
        assert_eq!(out.shape(), &[2, 3, 6]);
        assert_eq!(f32s(&out)[..12], [1., 1., 1., 1., 1., 1., 2., 2., 2., 2., 2., 2.]);
        assert_eq!(expand(&x, &[3, 4]).unwrap().shape(), &[3, 4]);
        assert_eq!(expand(&x, &[1]).unwrap().shape(), &[3, 1], "shape smaller than input");
        assert_eq!(expand(&x, &[0, 1, 1]).unwrap().shape(), &[0, 3, 1]);
        let b = Tensor::new(vec![], TensorData::Bool(vec![true])).unwrap();
        assert_eq!(expand(&b, &[2]).unwrap().data(), &TensorData::Bool(vec![true, true]));
    }

    #[test]
    fn random_against_naive() {
        let mut rng = Rng::new(13);
        for _ in 0..50 {
            let rank = 1 + rng.below(4);
            let full: Vec<usize> = (0..rank).map(|_| [1, 2, 3, 7, 13][rng.below(5)]).collect();
            let xr = rng.below(rank + 1);
            let xs: Vec<usize> = full[rank - xr..].iter().map(|&d| if rng.below(2) == 0 { 1 } else { d }).collect();
            let req: Vec<i64> = full
                .iter()
                .zip(0..)
                .map(|(&d, k)| if k >= rank - xr && xs[k + xr - rank] == d && rng.below(2) == 0 { 1 } else { d as i64 })
                .collect();
            let x = iota(&xs);
            let out = expand(&x, &req).unwrap();
            assert_eq!(out.shape(), &full[..]);
            let want: Vec<f32> = (0..full.iter().product())
                .map(|o| {
                    let oi = unravel(o, &full);
                    let xi: Vec<usize> =
                        xs.iter().enumerate().map(|(k, &d)| if d == 1 { 0 } else { oi[k + rank - xr] }).collect();
                    ravel(&xi, &xs) as f32
                })
                .collect();
            assert_eq!(f32s(&out), want);
        }
    }

    #[test]
    fn errors() {
        let x = iota(&[3, 2]);
        assert!(expand(&x, &[4, 2]).is_err());
        assert!(expand(&x, &[-1, 2]).is_err());
        assert!(eval(&Expand, &[Some(&x), Some(&iota(&[2]))]).is_err(), "shape must be int64");
    }
}
