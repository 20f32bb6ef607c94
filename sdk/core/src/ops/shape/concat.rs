//! Concat: join tensors along an axis.

use crate::error::Result;
use crate::ops::shape::util::{Strided, check_rank, copy_strided, dispatch, norm_axis, single_output};
use crate::ops::{Attrs, InferInput, Op, TypeShape, required};
use crate::tensor::{Element, TensorMut, TensorRef};
use crate::{invalid, invalid_err};

/// ONNX `Concat`.
#[derive(Clone, Debug)]
pub struct Concat {
    /// The axis (negative counts from the end).
    pub axis: i64,
}

impl Concat {
    /// Builds from attributes; `axis` is required.
    pub fn build(attrs: &Attrs, _opset: i64) -> Result<Concat> {
        let axis = attrs.int("axis")?.ok_or_else(|| invalid_err!("Concat needs the `axis` attribute"))?;
        Ok(Concat { axis })
    }
}

fn run_t<T: Element>(inputs: &[Option<TensorRef>], out: &mut TensorMut, axis: usize) -> Result<()> {
    let out_shape = out.shape;
    let dst_layout = Strided::row_major(out_shape, 0);
    let dst = out.typed_mut::<T>()?;
    let mut at = 0usize;
    for (i, x) in inputs.iter().enumerate() {
        let x = x.ok_or_else(|| invalid_err!("missing input #{i}"))?;
        let mut d = dst_layout;
        d.offset = at as isize * dst_layout.strides[axis];
        copy_strided(x.typed::<T>()?, &Strided::row_major(x.shape, 0), dst, &d, x.shape)?;
        at += x.shape.get(axis).copied().unwrap_or(0);
    }
    Ok(())
}

impl Op for Concat {
    fn op_type(&self) -> &'static str {
        "Concat"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        let first = required(inputs, 0, "inputs")?;
        check_rank(first.shape, "input #0")?;
        let axis = norm_axis(self.axis, first.shape.len(), "axis")?;
        let mut shape = first.shape.to_vec();
        shape[axis] = 0;
        for (i, x) in inputs.iter().enumerate() {
            let x = x.ok_or_else(|| invalid_err!("missing input #{i}"))?;
            if x.dtype != first.dtype {
                invalid!("input #{i} is {}, input #0 is {}", x.dtype, first.dtype);
            }
            let same_dims = x.shape.len() == shape.len()
                && x.shape.iter().zip(first.shape).enumerate().all(|(k, (a, b))| k == axis || a == b);
            if !same_dims {
                invalid!("input #{i} has shape {:?}, incompatible with {:?} along axis {axis}", x.shape, first.shape);
            }
            shape[axis] =
                shape[axis].checked_add(x.shape[axis]).ok_or_else(|| invalid_err!("concatenated dim overflows"))?;
        }
        Ok(vec![TypeShape::new(first.dtype, shape)])
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let first = required(inputs, 0, "inputs")?;
        let axis = norm_axis(self.axis, first.shape.len(), "axis")?;
        let out = single_output(outputs)?;
        if out.shape.len() != first.shape.len() {
            invalid!("output rank differs from input rank");
        }
        dispatch!(first.dtype(), run_t(inputs, out, axis))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::eval;
    use crate::ops::shape::util::testing::*;
    use crate::tensor::{Tensor, TensorData};

    /// Independent concat: walk the output and find which input each element comes from.
    fn naive(xs: &[Tensor], axis: usize) -> Tensor {
        let mut out_shape = xs[0].shape().to_vec();
        out_shape[axis] = xs.iter().map(|x| x.shape()[axis]).sum();
        let n: usize = out_shape.iter().product();
        let mut out = Vec::with_capacity(n);
        for o in 0..n {
            let mut idx = unravel(o, &out_shape);
            let mut which = 0;
            while idx[axis] >= xs[which].shape()[axis] {
                idx[axis] -= xs[which].shape()[axis];
                which += 1;
            }
            out.push(f32s(&xs[which])[ravel(&idx, xs[which].shape())]);
        }
        Tensor::from_f32(&out_shape, out).unwrap()
    }

    #[test]
    fn hand_checked() {
        let a = Tensor::from_f32(&[2, 2], vec![1., 2., 3., 4.]).unwrap();
        let b = Tensor::from_f32(&[2, 1], vec![5., 6.]).unwrap();
        let out = eval(&Concat { axis: -1 }, &[Some(&a), Some(&b)]).unwrap();
        assert_eq!(out[0].shape(), &[2, 3]);
        assert_eq!(f32s(&out[0]), vec![1., 2., 5., 3., 4., 6.]);
        let out0 = eval(&Concat { axis: 0 }, &[Some(&a), Some(&a)]).unwrap();
        assert_eq!(f32s(&out0[0]), vec![1., 2., 3., 4., 1., 2., 3., 4.]);
    }

    #[test]
    fn random_against_naive() {
        let mut rng = Rng::new(3);
        for _ in 0..40 {
            let rank = 1 + rng.below(4);
            let base = rng.shape(rank, 4);
            let axis = rng.below(rank);
            let k = 1 + rng.below(4);
            let xs: Vec<Tensor> = (0..k)
                .map(|j| {
                    let mut s = base.clone();
                    s[axis] = [0, 1, 2, 7, 13][rng.below(5)];
                    let t = iota(&s);
                    let v = f32s(&t).iter().map(|x| x + 1000.0 * j as f32).collect();
                    Tensor::from_f32(&s, v).unwrap()
                })
                .collect();
            let refs: Vec<Option<&Tensor>> = xs.iter().map(Some).collect();
            let neg = axis as i64 - rank as i64;
            let op = Concat { axis: if rng.below(2) == 0 { axis as i64 } else { neg } };
            assert_eq!(eval(&op, &refs).unwrap()[0], naive(&xs, axis));
        }
    }

    #[test]
    fn bools_and_errors() {
        let a = Tensor::new(vec![1], TensorData::Bool(vec![true])).unwrap();
        let b = Tensor::new(vec![2], TensorData::Bool(vec![false, true])).unwrap();
        let out = eval(&Concat { axis: 0 }, &[Some(&a), Some(&b)]).unwrap();
        assert_eq!(out[0].data(), &TensorData::Bool(vec![true, false, true]));
        let f = iota(&[2]);
        assert!(eval(&Concat { axis: 0 }, &[Some(&a), Some(&f)]).is_err(), "mixed types");
        assert!(eval(&Concat { axis: 1 }, &[Some(&f), Some(&f)]).is_err(), "axis out of range");
        assert!(eval(&Concat { axis: 1 }, &[Some(&iota(&[2, 2])), Some(&iota(&[3, 2]))]).is_err());
        assert!(eval(&Concat { axis: 0 }, &[Some(&iota(&[2, 2])), Some(&iota(&[2]))]).is_err());
        assert!(eval(&Concat { axis: 0 }, &[]).is_err());
        assert!(Concat::build(&Attrs::new(), 13).is_err());
    }
}
