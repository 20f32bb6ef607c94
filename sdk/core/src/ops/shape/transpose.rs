//! Transpose: permute the dims.

use crate::error::Result;
use crate::invalid;
use crate::ops::shape::util::{Strided, check_inputs, check_rank, copy_strided, dispatch, single_output};
use crate::ops::{Attrs, InferInput, Op, TypeShape, required};
use crate::tensor::{Element, MAX_RANK, TensorMut, TensorRef};

/// ONNX `Transpose`: `out.shape[i] = in.shape[perm[i]]`; no `perm` reverses the dims.
#[derive(Clone, Debug, Default)]
pub struct Transpose {
    /// The permutation, if given.
    pub perm: Option<Vec<i64>>,
}

impl Transpose {
    /// Builds from attributes.
    pub fn build(attrs: &Attrs, _opset: i64) -> Result<Transpose> {
        Ok(Transpose { perm: attrs.ints("perm")? })
    }

    /// The permutation for an input of `rank`, validated, in a fixed array.
    fn perm_for(&self, rank: usize) -> Result<[usize; MAX_RANK]> {
        if rank > MAX_RANK {
            invalid!("rank {rank} is more than the supported {MAX_RANK}");
        }
        let mut p = [0usize; MAX_RANK];
        match &self.perm {
            None => {
                for (i, v) in p.iter_mut().take(rank).enumerate() {
                    *v = rank - 1 - i;
                }
            }
            Some(perm) => {
                if perm.len() != rank {
                    invalid!("perm {perm:?} has {} entries for an input of rank {rank}", perm.len());
                }
                let mut seen = [false; MAX_RANK];
                for (i, &a) in perm.iter().enumerate() {
                    if a < 0 || a as usize >= rank || seen[a as usize] {
                        invalid!("perm {perm:?} is not a permutation of 0..{rank}");
                    }
                    seen[a as usize] = true;
                    p[i] = a as usize;
                }
            }
        }
        Ok(p)
    }
}

fn run_t<T: Element>(x: TensorRef, out: &mut TensorMut, perm: &[usize]) -> Result<()> {
    let src_layout = Strided::row_major(x.shape, 0);
    let mut s = Strided { offset: 0, strides: [0; MAX_RANK] };
    for (i, &p) in perm.iter().enumerate() {
        s.strides[i] = src_layout.strides[p];
    }
    let shape = out.shape;
    copy_strided(x.typed::<T>()?, &s, out.typed_mut::<T>()?, &Strided::row_major(shape, 0), shape)
}

impl Op for Transpose {
    fn op_type(&self) -> &'static str {
        "Transpose"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        check_inputs(inputs, 1, 1, "Transpose")?;
        let x = required(inputs, 0, "data")?;
        check_rank(x.shape, "data")?;
        let p = self.perm_for(x.shape.len())?;
        let shape = p[..x.shape.len()].iter().map(|&a| x.shape[a]).collect();
        Ok(vec![TypeShape::new(x.dtype, shape)])
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let x = required(inputs, 0, "data")?;
        let rank = x.shape.len();
        let p = self.perm_for(rank)?;
        let out = single_output(outputs)?;
        if out.shape.len() != rank {
            invalid!("output rank {} differs from input rank {rank}", out.shape.len());
        }
        dispatch!(x.dtype(), run_t(x, out, &p[..rank]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::eval;
    use crate::ops::shape::util::testing::*;
    use crate::tensor::{Tensor, TensorData};

    fn naive(x: &Tensor, perm: &[usize]) -> Tensor {
        let s = x.shape();
        let out_shape: Vec<usize> = perm.iter().map(|&p| s[p]).collect();
        let v = f32s(x);
        let n = v.len();
        let mut out = vec![0.0; n];
        for (o, slot) in out.iter_mut().enumerate() {
            let oi = unravel(o, &out_shape);
            let mut ii = vec![0; s.len()];
            for (k, &p) in perm.iter().enumerate() {
                ii[p] = oi[k];
            }
            *slot = v[ravel(&ii, s)];
        }
        Tensor::from_f32(&out_shape, out).unwrap()
    }

    #[test]
    fn hand_checked() {
        let x = Tensor::from_f32(&[2, 3], vec![1., 2., 3., 4., 5., 6.]).unwrap();
        let out = eval(&Transpose::default(), &[Some(&x)]).unwrap();
        assert_eq!(out[0].shape(), &[3, 2]);
        assert_eq!(f32s(&out[0]), vec![1., 4., 2., 5., 3., 6.]);
        let s = Tensor::scalar_f32(3.0);
        assert_eq!(eval(&Transpose::default(), &[Some(&s)]).unwrap()[0], s);
    }

    #[test]
    fn random_perms() {
        let mut rng = Rng::new(11);
        for _ in 0..60 {
            let rank = 1 + rng.below(5);
            let mut shape = rng.shape(rank, 5);
            if rng.below(3) == 0 {
                shape[rng.below(rank)] = [7, 13][rng.below(2)];
            }
            let mut perm: Vec<usize> = (0..rank).collect();
            for i in (1..rank).rev() {
                perm.swap(i, rng.below(i + 1));
            }
            let x = iota(&shape);
            let op = Transpose { perm: Some(perm.iter().map(|&p| p as i64).collect()) };
            assert_eq!(eval(&op, &[Some(&x)]).unwrap()[0], naive(&x, &perm), "{shape:?} {perm:?}");
        }
    }

    #[test]
    fn other_types() {
        let x = Tensor::new(vec![2, 2], TensorData::Bool(vec![true, true, false, false])).unwrap();
        let out = eval(&Transpose::default(), &[Some(&x)]).unwrap();
        assert_eq!(out[0].data(), &TensorData::Bool(vec![true, false, true, false]));
        let y = Tensor::new(vec![1, 2], TensorData::I64(vec![5, 6])).unwrap();
        assert_eq!(eval(&Transpose::default(), &[Some(&y)]).unwrap()[0].shape(), &[2, 1]);
    }

    #[test]
    fn bad_perm() {
        let x = iota(&[2, 3]);
        for p in [vec![0], vec![0, 0], vec![0, 2], vec![-1, 0], vec![0, 1, 2]] {
            assert!(eval(&Transpose { perm: Some(p) }, &[Some(&x)]).is_err());
        }
        assert!(eval(&Transpose::default(), &[Some(&iota(&[1; 9]))]).is_err(), "rank 9");
    }
}
