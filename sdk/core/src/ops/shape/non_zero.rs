//! NonZero: the indices of the non-zero elements, one row per dim.

use crate::error::Result;
use crate::invalid;
use crate::ops::shape::util::{check_inputs, check_rank, dispatch, next_index, single_output};
use crate::ops::{Attrs, InferInput, Op, TypeShape, const_value, required};
use crate::tensor::{DType, Element, MAX_RANK, TensorMut, TensorRef};

/// ONNX `NonZero`: output `[rank, count]` int64, indices in row-major order. The output
/// shape depends on the data, so the input must be known when shapes are planned. A
/// scalar input counts as a one-element 1-D tensor (as onnxruntime does).
#[derive(Clone, Debug, Default)]
pub struct NonZero;

impl NonZero {
    /// Builds the op; NonZero has no attributes.
    pub fn build(_attrs: &Attrs, _opset: i64) -> Result<NonZero> {
        Ok(NonZero)
    }
}

fn count_t<T: Element>(x: TensorRef) -> Result<usize> {
    let zero = T::default();
    Ok(x.typed::<T>()?.iter().filter(|&&v| v != zero).count())
}

fn run_t<T: Element>(x: TensorRef, out: &mut [i64], shape: &[usize]) -> Result<()> {
    let v = x.typed::<T>()?;
    let rank = shape.len();
    let n = out.len() / rank.max(1);
    let zero = T::default();
    let mut idx = [0usize; MAX_RANK];
    let mut j = 0;
    for &e in v {
        if e != zero {
            if j >= n {
                invalid!("more non-zero elements than inferred");
            }
            for k in 0..rank {
                out[k * n + j] = idx[k] as i64;
            }
            j += 1;
        }
        next_index(&mut idx, shape);
    }
    if j != n {
        invalid!("{j} non-zero elements, {n} inferred");
    }
    Ok(())
}

impl Op for NonZero {
    fn op_type(&self) -> &'static str {
        "NonZero"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        check_inputs(inputs, 1, 1, "NonZero")?;
        let x = required(inputs, 0, "X")?;
        check_rank(x.shape, "X")?;
        let v = const_value(inputs, 0, "X")?;
        let n = dispatch!(x.dtype, count_t(v.view()))?;
        Ok(vec![TypeShape::new(DType::I64, vec![x.shape.len().max(1), n])])
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let x = required(inputs, 0, "X")?;
        let shape: &[usize] = if x.shape.is_empty() { &[1] } else { x.shape };
        if shape.len() > MAX_RANK {
            invalid!("rank {} is more than the supported {MAX_RANK}", shape.len());
        }
        let out = single_output(outputs)?.typed_mut::<i64>()?;
        dispatch!(x.dtype(), run_t(x, out, shape))
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
        let x = Tensor::new(vec![2, 2], TensorData::Bool(vec![true, false, true, true])).unwrap();
        let out = eval(&NonZero, &[Some(&x)]).unwrap();
        assert_eq!(out[0].shape(), &[2, 3]);
        assert_eq!(i64s(&out[0]), vec![0, 1, 1, 0, 0, 1]);
        let s = Tensor::scalar_f32(3.0);
        assert_eq!(eval(&NonZero, &[Some(&s)]).unwrap()[0].shape(), &[1, 1]);
        let z = Tensor::from_f32(&[3], vec![0.0; 3]).unwrap();
        assert_eq!(eval(&NonZero, &[Some(&z)]).unwrap()[0].shape(), &[1, 0]);
    }

    #[test]
    fn random_against_naive() {
        let mut rng = Rng::new(8);
        for _ in 0..30 {
            let rank = 1 + rng.below(4);
            let shape = rng.shape(rank, 7);
            let n: usize = shape.iter().product();
            let v: Vec<i64> = (0..n).map(|_| if rng.below(3) == 0 { rng.range(1, 9) } else { 0 }).collect();
            let x = Tensor::from_i64(&shape, v.clone()).unwrap();
            let out = eval(&NonZero, &[Some(&x)]).unwrap();
            let nz: Vec<usize> = (0..n).filter(|&i| v[i] != 0).collect();
            let mut want = vec![];
            for k in 0..shape.len() {
                want.extend(nz.iter().map(|&i| unravel(i, &shape)[k] as i64));
            }
            assert_eq!(out[0].shape(), &[shape.len(), nz.len()]);
            assert_eq!(i64s(&out[0]), want);
        }
    }

    #[test]
    fn needs_a_known_value() {
        let x = iota(&[3]);
        let inp = [Some(InferInput { dtype: x.dtype(), shape: x.shape(), value: None })];
        assert!(NonZero.infer(&inp).is_err());
        // Data that changed since inference is an error in `run`.
        let mut out = Tensor::zeros(DType::I64, &[1, 1]);
        assert!(NonZero.run(&[Some(x.view())], &mut [out.view_mut()], &mut []).is_err());
    }
}
