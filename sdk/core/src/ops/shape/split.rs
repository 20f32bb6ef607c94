//! Split: cut a tensor into pieces along an axis.

use crate::error::Result;
use crate::ops::shape::util::{Strided, check_inputs, check_rank, const_ints, copy_strided, dispatch, norm_axis};
use crate::ops::{Attrs, InferInput, Op, TypeShape, optional, required};
use crate::tensor::{DType, Element, TensorMut, TensorRef};
use crate::{invalid, invalid_err};

/// ONNX `Split`. Piece sizes come from the `split` attribute (opset < 13), the `split` input
/// (opset ≥ 13), or else an equal split into `num_outputs` pieces, the last one smaller
/// when the dim does not divide evenly.
///
/// `num_outputs` is an attribute from opset 18. Before that the piece count is the node's
/// output count, which the attributes don't carry: the importer passes it as
/// `num_outputs` too.
#[derive(Clone, Debug)]
pub struct Split {
    /// The axis.
    pub axis: i64,
    /// The `split` attribute (opset < 13).
    pub split_attr: Option<Vec<i64>>,
    /// Number of equal pieces when no sizes are given.
    pub num_outputs: Option<usize>,
    /// True when sizes may come from input #1 (opset ≥ 13).
    pub split_input: bool,
}

impl Split {
    /// Builds from attributes.
    pub fn build(attrs: &Attrs, opset: i64) -> Result<Split> {
        let num_outputs = match attrs.int("num_outputs")? {
            Some(n) if n < 1 => invalid!("num_outputs must be at least 1, got {n}"),
            Some(n) => Some(n as usize),
            None => None,
        };
        let split_attr = if opset < 13 { attrs.ints("split")? } else { None };
        Ok(Split { axis: attrs.int_or("axis", 0)?, split_attr, num_outputs, split_input: opset >= 13 })
    }

    /// The piece sizes for a dim of size `dim`, given the sizes requested (if any).
    pub fn sizes(&self, dim: usize, split: Option<&[i64]>) -> Result<Vec<usize>> {
        if let Some(split) = split {
            if let Some(n) = self.num_outputs
                && n != split.len()
            {
                invalid!("split {split:?} has {} sizes but there are {n} outputs", split.len());
            }
            let mut sizes = Vec::with_capacity(split.len());
            let mut sum = 0usize;
            for &s in split {
                if s < 0 {
                    invalid!("split {split:?} has a negative size");
                }
                sizes.push(s as usize);
                sum = sum.checked_add(s as usize).ok_or_else(|| invalid_err!("split sizes overflow"))?;
            }
            if sum != dim || sizes.is_empty() {
                invalid!("split {split:?} does not add up to the dim size {dim}");
            }
            return Ok(sizes);
        }
        let n = self
            .num_outputs
            .ok_or_else(|| invalid_err!("Split needs `split` sizes or the number of outputs (`num_outputs`)"))?;
        let chunk = dim.div_ceil(n);
        let last = dim
            .checked_sub(chunk * (n - 1))
            .ok_or_else(|| invalid_err!("cannot split a dim of size {dim} into {n} pieces"))?;
        let mut sizes = vec![chunk; n];
        sizes[n - 1] = last;
        Ok(sizes)
    }
}

fn run_t<T: Element>(x: TensorRef, outputs: &mut [TensorMut], axis: usize) -> Result<()> {
    let src = x.typed::<T>()?;
    let layout = Strided::row_major(x.shape, 0);
    let mut at = 0usize;
    for out in outputs.iter_mut() {
        let shape = out.shape;
        let s = Strided { offset: at as isize * layout.strides[axis], strides: layout.strides };
        copy_strided(src, &s, out.typed_mut::<T>()?, &Strided::row_major(shape, 0), shape)?;
        at += shape.get(axis).copied().unwrap_or(0);
    }
    if at != x.shape[axis] {
        invalid!("output sizes along axis {axis} add up to {at}, not {}", x.shape[axis]);
    }
    Ok(())
}

impl Op for Split {
    fn op_type(&self) -> &'static str {
        "Split"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        let x = required(inputs, 0, "input")?;
        check_rank(x.shape, "input")?;
        let axis = norm_axis(self.axis, x.shape.len(), "axis")?;
        let split = if self.split_input {
            check_inputs(inputs, 1, 2, "Split")?;
            match optional(inputs, 1) {
                Some(_) => Some(const_ints(inputs, 1, "split", &[DType::I64])?),
                None => None,
            }
        } else {
            check_inputs(inputs, 1, 1, "Split")?;
            self.split_attr.clone()
        };
        let sizes = self.sizes(x.shape[axis], split.as_deref())?;
        Ok(sizes
            .into_iter()
            .map(|s| {
                let mut shape = x.shape.to_vec();
                shape[axis] = s;
                TypeShape::new(x.dtype, shape)
            })
            .collect())
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let x = required(inputs, 0, "input")?;
        let axis = norm_axis(self.axis, x.shape.len(), "axis")?;
        for out in outputs.iter() {
            if out.shape.len() != x.shape.len() {
                invalid!("output rank differs from input rank");
            }
        }
        dispatch!(x.dtype(), run_t(x, outputs, axis))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::Attr;
    use crate::ops::eval;
    use crate::ops::shape::util::testing::*;
    use crate::tensor::Tensor;

    fn op(opset: i64, attrs: &[(&str, Attr)]) -> Split {
        let mut a = Attrs::new();
        for (k, v) in attrs {
            a.insert(k, v.clone());
        }
        Split::build(&a, opset).unwrap()
    }

    #[test]
    fn equal_and_uneven() {
        let x = iota(&[7]);
        let s = op(18, &[("num_outputs", Attr::Int(3))]);
        let out = eval(&s, &[Some(&x)]).unwrap();
        assert_eq!(out.iter().map(f32s).collect::<Vec<_>>(), vec![vec![0., 1., 2.], vec![3., 4., 5.], vec![6.]]);
        let s4 = op(18, &[("num_outputs", Attr::Int(4))]);
        assert!(eval(&s4, &[Some(&iota(&[2, 6]))]).is_err(), "2 rows can't make 4 pieces of ceil(2/4)");
        let s4a1 = op(18, &[("num_outputs", Attr::Int(4)), ("axis", Attr::Int(-1))]);
        let out = eval(&s4a1, &[Some(&iota(&[2, 6]))]).unwrap();
        assert_eq!(out.iter().map(|t| t.shape()[1]).collect::<Vec<_>>(), vec![2, 2, 2, 0]);
        assert_eq!(f32s(&out[1]), vec![2., 3., 8., 9.]);
        // 5 into 4 pieces of ceil(5/4) = 2 leaves nothing for the last two.
        assert!(eval(&op(18, &[("num_outputs", Attr::Int(4))]), &[Some(&iota(&[5]))]).is_err());
    }

    #[test]
    fn sizes_from_input_and_attr() {
        let x = iota(&[2, 6]);
        let s13 = op(13, &[("axis", Attr::Int(1))]);
        let out = eval(&s13, &[Some(&x), Some(&ints1(&[2, 4]))]).unwrap();
        assert_eq!(f32s(&out[0]), vec![0., 1., 6., 7.]);
        assert_eq!(f32s(&out[1]), vec![2., 3., 4., 5., 8., 9., 10., 11.]);
        let out = eval(&s13, &[Some(&x), Some(&ints1(&[0, 6, 0]))]).unwrap();
        assert_eq!(out.iter().map(|t| t.shape()[1]).collect::<Vec<_>>(), vec![0, 6, 0]);
        let s11 = op(11, &[("axis", Attr::Int(1)), ("split", Attr::Ints(vec![3, 3]))]);
        let out = eval(&s11, &[Some(&x)]).unwrap();
        assert_eq!(f32s(&out[1]), vec![3., 4., 5., 9., 10., 11.]);
        // Without sizes or a count there is no way to know the piece count.
        assert!(eval(&op(13, &[]), &[Some(&x)]).is_err());
        let s13n = op(13, &[("num_outputs", Attr::Int(2))]);
        assert_eq!(eval(&s13n, &[Some(&x)]).unwrap().len(), 2);
    }

    #[test]
    fn random_against_slicing() {
        let mut rng = Rng::new(9);
        for _ in 0..40 {
            let rank = 1 + rng.below(4);
            let mut shape = rng.shape(rank, 4);
            let axis = rng.below(rank);
            shape[axis] = [1, 7, 13][rng.below(3)];
            let k = 1 + rng.below(shape[axis]);
            let mut cuts: Vec<usize> = (0..k - 1).map(|_| rng.below(shape[axis] + 1)).collect();
            cuts.push(0);
            cuts.push(shape[axis]);
            cuts.sort();
            let sizes: Vec<i64> = cuts.windows(2).map(|w| (w[1] - w[0]) as i64).collect();
            let x = iota(&shape);
            let out = eval(&op(13, &[("axis", Attr::Int(axis as i64))]), &[Some(&x), Some(&ints1(&sizes))]).unwrap();
            for (j, t) in out.iter().enumerate() {
                let want: Vec<f32> = (0..x.len())
                    .filter(|&i| {
                        let a = unravel(i, &shape)[axis];
                        a >= cuts[j] && a < cuts[j + 1]
                    })
                    .map(|i| i as f32)
                    .collect();
                assert_eq!(f32s(t), want);
            }
        }
    }

    #[test]
    fn errors() {
        let x = iota(&[6]);
        let s13 = op(13, &[]);
        assert!(eval(&s13, &[Some(&x), Some(&ints1(&[2, 2]))]).is_err());
        assert!(eval(&s13, &[Some(&x), Some(&ints1(&[-1, 7]))]).is_err());
        assert!(eval(&op(13, &[("axis", Attr::Int(1))]), &[Some(&x), Some(&ints1(&[6]))]).is_err());
        assert!(Split::build(&Attrs::new().with("num_outputs", Attr::Int(0)), 18).is_err());
        let s = Tensor::new(vec![1], crate::tensor::TensorData::I32(vec![6])).unwrap();
        assert!(eval(&s13, &[Some(&x), Some(&s)]).is_err(), "split must be int64");
    }
}
