//! Gather: pick slices along an axis by index.

use crate::error::Result;
use crate::ops::shape::util::{INDEX_TYPES, check_dtype, check_inputs, dispatch, int_at, norm_axis, single_output};
use crate::ops::{Attrs, InferInput, Op, TypeShape, required};
use crate::tensor::{DataRef, Element, TensorMut, TensorRef, numel};
use crate::{invalid, invalid_err};

/// ONNX `Gather`: `out[i.., j.., k..] = data[i.., indices[j..], k..]`; negative indices
/// count from the end.
#[derive(Clone, Debug, Default)]
pub struct Gather {
    /// The axis of `data` that indices select along (default 0).
    pub axis: i64,
}

impl Gather {
    /// Builds from attributes.
    pub fn build(attrs: &Attrs, _opset: i64) -> Result<Gather> {
        Ok(Gather { axis: attrs.int_or("axis", 0)? })
    }
}

/// Index `i` of `indices` resolved against a dim of size `dim`, or an error.
pub(crate) fn resolve_index(indices: DataRef, i: usize, dim: usize) -> Result<usize> {
    let v = int_at(indices, i).ok_or_else(|| invalid_err!("indices has no element #{i}"))?;
    let d = dim as i64;
    if v < -d || v >= d {
        invalid!("index {v} is out of range for a dim of size {dim}");
    }
    Ok(if v < 0 { v + d } else { v } as usize)
}

fn run_t<T: Element>(x: TensorRef, indices: DataRef, out: &mut TensorMut, axis: usize) -> Result<()> {
    let src = x.typed::<T>()?;
    let dst = out.typed_mut::<T>()?;
    let outer = numel(&x.shape[..axis]);
    let dim = x.shape[axis];
    let inner = numel(&x.shape[axis + 1..]);
    let n = indices.len();
    let oob = || invalid_err!("output or input smaller than inferred");
    for o in 0..outer {
        for j in 0..n {
            let k = resolve_index(indices, j, dim)?;
            let s = (o * dim + k) * inner;
            let d = (o * n + j) * inner;
            let from = src.get(s..s + inner).ok_or_else(oob)?;
            dst.get_mut(d..d + inner).ok_or_else(oob)?.copy_from_slice(from);
        }
    }
    Ok(())
}

impl Op for Gather {
    fn op_type(&self) -> &'static str {
        "Gather"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        check_inputs(inputs, 2, 2, "Gather")?;
        let x = required(inputs, 0, "data")?;
        let idx = required(inputs, 1, "indices")?;
        check_dtype(idx.dtype, INDEX_TYPES, "indices")?;
        let axis = norm_axis(self.axis, x.shape.len(), "axis")?;
        if let Some(v) = idx.value {
            for i in 0..v.len() {
                resolve_index(v.view().data, i, x.shape[axis])?;
            }
        }
        let mut shape = x.shape[..axis].to_vec();
        shape.extend_from_slice(idx.shape);
        shape.extend_from_slice(&x.shape[axis + 1..]);
        Ok(vec![TypeShape::new(x.dtype, shape)])
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let x = required(inputs, 0, "data")?;
        let idx = required(inputs, 1, "indices")?;
        let axis = norm_axis(self.axis, x.shape.len(), "axis")?;
        let out = single_output(outputs)?;
        if numel(out.shape) != numel(&x.shape[..axis]) * idx.data.len() * numel(&x.shape[axis + 1..]) {
            invalid!("output shape {:?} differs from inference", out.shape);
        }
        dispatch!(x.dtype(), run_t(x, idx.data, out, axis))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::eval;
    use crate::ops::shape::util::testing::*;
    use crate::tensor::{Tensor, TensorData};

    #[test]
    fn hand_checked() {
        let x = Tensor::from_f32(&[3, 2], vec![1., 2., 3., 4., 5., 6.]).unwrap();
        let i = ints(&[2, 2], &[0, 1, 1, 2]);
        let out = eval(&Gather { axis: 0 }, &[Some(&x), Some(&i)]).unwrap();
        assert_eq!(out[0].shape(), &[2, 2, 2]);
        assert_eq!(f32s(&out[0]), vec![1., 2., 3., 4., 3., 4., 5., 6.]);
        let out = eval(&Gather { axis: -1 }, &[Some(&x), Some(&ints(&[], &[-1]))]).unwrap();
        assert_eq!(out[0].shape(), &[3]);
        assert_eq!(f32s(&out[0]), vec![2., 4., 6.]);
        let i32s = Tensor::new(vec![1], TensorData::I32(vec![2])).unwrap();
        let out = eval(&Gather { axis: 0 }, &[Some(&x), Some(&i32s)]).unwrap();
        assert_eq!(f32s(&out[0]), vec![5., 6.]);
    }

    #[test]
    fn random_against_naive() {
        let mut rng = Rng::new(23);
        for _ in 0..50 {
            let rank = 1 + rng.below(4);
            let mut shape = rng.shape(rank, 4);
            let axis = rng.below(rank);
            shape[axis] = [1, 7, 13][rng.below(3)];
            let d = shape[axis] as i64;
            let iq = rng.below(3);
            let ishape = rng.shape(iq, 4);
            let iv: Vec<i64> = (0..ishape.iter().product::<usize>()).map(|_| rng.range(-d, d - 1)).collect();
            let x = iota(&shape);
            let out = eval(&Gather { axis: axis as i64 }, &[Some(&x), Some(&ints(&ishape, &iv))]).unwrap();
            let mut oshape = shape[..axis].to_vec();
            oshape.extend(&ishape);
            oshape.extend(&shape[axis + 1..]);
            assert_eq!(out[0].shape(), &oshape[..]);
            let want: Vec<f32> = (0..oshape.iter().product())
                .map(|o| {
                    let oi = unravel(o, &oshape);
                    let j = ravel(&oi[axis..axis + iq], &ishape);
                    let mut xi = oi[..axis].to_vec();
                    xi.push(iv[j].rem_euclid(d) as usize);
                    xi.extend(&oi[axis + iq..]);
                    ravel(&xi, &shape) as f32
                })
                .collect();
            assert_eq!(f32s(&out[0]), want);
        }
    }

    #[test]
    fn errors() {
        let x = iota(&[3, 2]);
        assert!(eval(&Gather { axis: 0 }, &[Some(&x), Some(&ints1(&[3]))]).is_err());
        assert!(eval(&Gather { axis: 0 }, &[Some(&x), Some(&ints1(&[-4]))]).is_err());
        assert!(eval(&Gather { axis: 2 }, &[Some(&x), Some(&ints1(&[0]))]).is_err());
        assert!(eval(&Gather { axis: 0 }, &[Some(&x), Some(&iota(&[1]))]).is_err(), "float indices");
        // Out-of-range indices that were not known at inference fail in `run`.
        let op = Gather { axis: 0 };
        let mut out = Tensor::zeros(x.dtype(), &[1, 2]);
        let bad = ints1(&[5]);
        assert!(op.run(&[Some(x.view()), Some(bad.view())], &mut [out.view_mut()], &mut []).is_err());
    }
}
