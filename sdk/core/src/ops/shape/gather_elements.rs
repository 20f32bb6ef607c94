//! GatherElements: index `data` along an axis, element by element.

use crate::error::Result;
use crate::ops::shape::gather::resolve_index;
use crate::ops::shape::util::{
    INDEX_TYPES, Strided, check_dtype, check_inputs, check_rank, dispatch, next_index, norm_axis, single_output,
};
use crate::ops::{Attrs, InferInput, Op, TypeShape, required};
use crate::tensor::{DataRef, Element, MAX_RANK, TensorMut, TensorRef};
use crate::{invalid, invalid_err};

/// ONNX `GatherElements`: `out[i][j][k] = data[indices[i][j][k]][j][k]` (for axis 0); the
/// output has the shape of `indices`.
#[derive(Clone, Debug, Default)]
pub struct GatherElements {
    /// The axis (default 0).
    pub axis: i64,
}

impl GatherElements {
    /// Builds from attributes.
    pub fn build(attrs: &Attrs, _opset: i64) -> Result<GatherElements> {
        Ok(GatherElements { axis: attrs.int_or("axis", 0)? })
    }
}

/// Checks `indices` fits in `data` on every dim but `axis` (same rank, no larger).
pub(crate) fn check_index_shape(data: &[usize], indices: &[usize], axis: usize, what: &str) -> Result<()> {
    if data.len() != indices.len() {
        invalid!("{what} has rank {}, data has rank {}", indices.len(), data.len());
    }
    for (k, (&d, &i)) in data.iter().zip(indices).enumerate() {
        if k != axis && i > d {
            invalid!("{what} shape {indices:?} exceeds data shape {data:?} on dim {k}");
        }
    }
    Ok(())
}

fn run_t<T: Element>(x: TensorRef, indices: DataRef, out: &mut TensorMut, axis: usize) -> Result<()> {
    let src = x.typed::<T>()?;
    let shape = out.shape;
    let dst = out.typed_mut::<T>()?;
    let layout = Strided::row_major(x.shape, 0);
    let mut idx = [0usize; MAX_RANK];
    for (o, slot) in dst.iter_mut().enumerate() {
        let mut s = 0usize;
        for (k, &ik) in idx.iter().enumerate().take(shape.len()) {
            let i = if k == axis { resolve_index(indices, o, x.shape[axis])? } else { ik };
            s += i * layout.strides[k] as usize;
        }
        *slot = *src.get(s).ok_or_else(|| invalid_err!("index shape exceeds data"))?;
        next_index(&mut idx, shape);
    }
    Ok(())
}

impl Op for GatherElements {
    fn op_type(&self) -> &'static str {
        "GatherElements"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        check_inputs(inputs, 2, 2, "GatherElements")?;
        let x = required(inputs, 0, "data")?;
        let idx = required(inputs, 1, "indices")?;
        check_dtype(idx.dtype, INDEX_TYPES, "indices")?;
        check_rank(x.shape, "data")?;
        let axis = norm_axis(self.axis, x.shape.len(), "axis")?;
        check_index_shape(x.shape, idx.shape, axis, "indices")?;
        if let Some(v) = idx.value {
            for i in 0..v.len() {
                resolve_index(v.view().data, i, x.shape[axis])?;
            }
        }
        Ok(vec![TypeShape::new(x.dtype, idx.shape.to_vec())])
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let x = required(inputs, 0, "data")?;
        let idx = required(inputs, 1, "indices")?;
        let axis = norm_axis(self.axis, x.shape.len(), "axis")?;
        let out = single_output(outputs)?;
        check_rank(x.shape, "data")?;
        check_index_shape(x.shape, out.shape, axis, "output")?;
        if out.shape != idx.shape {
            invalid!("output shape {:?} differs from indices shape {:?}", out.shape, idx.shape);
        }
        dispatch!(x.dtype(), run_t(x, idx.data, out, axis))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::eval;
    use crate::ops::shape::util::testing::*;
    use crate::tensor::Tensor;

    #[test]
    fn hand_checked() {
        // The ONNX doc example, axis 1.
        let x = Tensor::from_f32(&[2, 2], vec![1., 2., 3., 4.]).unwrap();
        let i = ints(&[2, 2], &[0, 0, 1, 0]);
        let out = eval(&GatherElements { axis: 1 }, &[Some(&x), Some(&i)]).unwrap();
        assert_eq!(f32s(&out[0]), vec![1., 1., 4., 3.]);
        // Axis 0 with negative indices and fewer rows than data.
        let x = iota(&[3, 3]);
        let i = ints(&[2, 3], &[1, 2, 0, 2, 0, -3]);
        let out = eval(&GatherElements { axis: 0 }, &[Some(&x), Some(&i)]).unwrap();
        assert_eq!(f32s(&out[0]), vec![3., 7., 2., 6., 1., 2.]);
    }

    #[test]
    fn random_against_naive() {
        let mut rng = Rng::new(31);
        for _ in 0..50 {
            let rank = 1 + rng.below(4);
            let mut shape = rng.shape(rank, 4);
            let axis = rng.below(rank);
            shape[axis] = [1, 7, 13][rng.below(3)];
            let ishape: Vec<usize> = shape
                .iter()
                .enumerate()
                .map(|(k, &d)| if k == axis { 1 + rng.below(5) } else { 1 + rng.below(d) })
                .collect();
            let d = shape[axis] as i64;
            let iv: Vec<i64> = (0..ishape.iter().product::<usize>()).map(|_| rng.range(-d, d - 1)).collect();
            let x = iota(&shape);
            let out = eval(&GatherElements { axis: axis as i64 - rank as i64 }, &[Some(&x), Some(&ints(&ishape, &iv))])
                .unwrap();
            let want: Vec<f32> = (0..iv.len())
                .map(|o| {
                    let mut xi = unravel(o, &ishape);
                    xi[axis] = iv[o].rem_euclid(d) as usize;
                    ravel(&xi, &shape) as f32
                })
                .collect();
            assert_eq!(f32s(&out[0]), want);
        }
    }

    #[test]
    fn errors() {
        let x = iota(&[2, 2]);
        let op = GatherElements { axis: 1 };
        assert!(eval(&op, &[Some(&x), Some(&ints(&[2, 1], &[0, 2]))]).is_err(), "index out of range");
        assert!(eval(&op, &[Some(&x), Some(&ints(&[2], &[0, 1]))]).is_err(), "rank mismatch");
        assert!(eval(&op, &[Some(&x), Some(&ints(&[3, 1], &[0, 1, 0]))]).is_err(), "too many rows");
        assert!(eval(&GatherElements { axis: 2 }, &[Some(&x), Some(&ints(&[2, 2], &[0; 4]))]).is_err());
    }
}
