//! Tile: repeat a tensor along each dim.

use crate::error::Result;
use crate::ops::shape::util::{check_inputs, check_rank, const_ints, dispatch, next_index, single_output};
use crate::ops::{Attrs, InferInput, Op, TypeShape, required};
use crate::tensor::{DType, Element, MAX_RANK, TensorMut, TensorRef, strides_fixed};
use crate::{invalid, invalid_err};

/// ONNX `Tile`: `out.shape[k] = in.shape[k] * repeats[k]`,
/// `out[i] = in[i mod in.shape]`.
#[derive(Clone, Debug, Default)]
pub struct Tile;

impl Tile {
    /// Builds the op; Tile has no attributes.
    pub fn build(_attrs: &Attrs, _opset: i64) -> Result<Tile> {
        Ok(Tile)
    }
}

fn run_t<T: Element>(x: TensorRef, out: &mut TensorMut) -> Result<()> {
    let src = x.typed::<T>()?;
    let shape = out.shape;
    let st = strides_fixed(x.shape);
    let mut idx = [0usize; MAX_RANK];
    for slot in out.typed_mut::<T>()?.iter_mut() {
        let mut s = 0;
        for k in 0..shape.len() {
            s += (idx[k] % x.shape[k]) * st[k];
        }
        *slot = *src.get(s).ok_or_else(|| invalid_err!("output shape differs from inference"))?;
        next_index(&mut idx, shape);
    }
    Ok(())
}

impl Op for Tile {
    fn op_type(&self) -> &'static str {
        "Tile"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        check_inputs(inputs, 2, 2, "Tile")?;
        let x = required(inputs, 0, "input")?;
        check_rank(x.shape, "input")?;
        let reps = const_ints(inputs, 1, "repeats", &[DType::I64])?;
        if reps.len() != x.shape.len() {
            invalid!("repeats {reps:?} has {} entries for an input of rank {}", reps.len(), x.shape.len());
        }
        let mut shape = Vec::with_capacity(reps.len());
        for (&d, &r) in x.shape.iter().zip(&reps) {
            let r = usize::try_from(r).map_err(|_| invalid_err!("repeats {reps:?} has a negative entry"))?;
            shape.push(d.checked_mul(r).ok_or_else(|| invalid_err!("tiled dim overflows"))?);
        }
        Ok(vec![TypeShape::new(x.dtype, shape)])
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let x = required(inputs, 0, "input")?;
        let out = single_output(outputs)?;
        let ok = out.shape.len() == x.shape.len()
            && x.shape.len() <= MAX_RANK
            && x.shape.iter().zip(out.shape).all(|(&d, &o)| if d == 0 { o == 0 } else { o % d == 0 });
        if !ok {
            invalid!("output shape {:?} is not a tiling of {:?}", out.shape, x.shape);
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

    fn tile(x: &Tensor, reps: &[i64]) -> Result<Tensor> {
        Ok(eval(&Tile, &[Some(x), Some(&ints1(reps))])?.remove(0))
    }

    #[test]
    fn hand_checked() {
        let x = Tensor::from_f32(&[2, 2], vec![1., 2., 3., 4.]).unwrap();
        let out = tile(&x, &[2, 1]).unwrap();
        assert_eq!(f32s(&out), vec![1., 2., 3., 4., 1., 2., 3., 4.]);
        let out = tile(&x, &[1, 2]).unwrap();
        assert_eq!(f32s(&out), vec![1., 2., 1., 2., 3., 4., 3., 4.]);
        assert_eq!(tile(&x, &[0, 3]).unwrap().shape(), &[0, 6]);
        let b = Tensor::new(vec![1], TensorData::Bool(vec![true])).unwrap();
        assert_eq!(tile(&b, &[3]).unwrap().data(), &TensorData::Bool(vec![true; 3]));
    }

    #[test]
    fn random_against_naive() {
        let mut rng = Rng::new(19);
        for _ in 0..40 {
            let rank = 1 + rng.below(4);
            let shape: Vec<usize> = (0..rank).map(|_| [1, 2, 3, 7][rng.below(4)]).collect();
            let reps: Vec<i64> = (0..rank).map(|_| rng.range(1, 3)).collect();
            let x = iota(&shape);
            let out = tile(&x, &reps).unwrap();
            let os: Vec<usize> = shape.iter().zip(&reps).map(|(&d, &r)| d * r as usize).collect();
            assert_eq!(out.shape(), &os[..]);
            let want: Vec<f32> = (0..os.iter().product())
                .map(|o| {
                    let oi = unravel(o, &os);
                    let xi: Vec<usize> = oi.iter().zip(&shape).map(|(&i, &d)| i % d).collect();
                    ravel(&xi, &shape) as f32
                })
                .collect();
            assert_eq!(f32s(&out), want);
        }
    }

    #[test]
    fn errors() {
        let x = iota(&[2, 2]);
        assert!(tile(&x, &[2]).is_err());
        assert!(tile(&x, &[2, -1]).is_err());
        assert!(eval(&Tile, &[Some(&x), Some(&iota(&[2]))]).is_err(), "repeats must be int64");
    }
}
