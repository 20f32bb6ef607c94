//! GlobalAveragePool and GlobalMaxPool: one generic struct, the reduction is the kind.

use crate::error::Result;
use crate::ops::nn::common::{Real, require_float, require_spatial_rank};
use crate::ops::{InferInput, Op, TypeShape, required};
use crate::tensor::{DType, TensorMut, TensorRef};
use crate::{invalid, invalid_err};

/// Which reduction over the spatial dims.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum GlobalKind {
    /// GlobalAveragePool: the mean.
    Average,
    /// GlobalMaxPool: the maximum.
    Max,
}

/// ONNX GlobalAveragePool / GlobalMaxPool (opsets 1–21): N x C x D1... -> N x C x 1 x 1...
#[derive(Clone, PartialEq, Debug)]
pub struct GlobalPool {
    /// The reduction.
    pub kind: GlobalKind,
}

impl GlobalPool {
    /// Builds one (these ops have no attributes).
    pub fn build(kind: GlobalKind) -> Result<GlobalPool> {
        Ok(GlobalPool { kind })
    }
}

impl Op for GlobalPool {
    fn op_type(&self) -> &'static str {
        match self.kind {
            GlobalKind::Average => "GlobalAveragePool",
            GlobalKind::Max => "GlobalMaxPool",
        }
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        if inputs.len() != 1 {
            invalid!("{} takes 1 input, got {}", self.op_type(), inputs.len());
        }
        let x = required(inputs, 0, "X")?;
        require_float(x.dtype, "X")?;
        require_spatial_rank(x.shape, "input X")?;
        let mut shape = x.shape.to_vec();
        if shape[2..].contains(&0) {
            invalid!("{} of an empty spatial extent {:?}", self.op_type(), x.shape);
        }
        for d in &mut shape[2..] {
            *d = 1;
        }
        Ok(vec![TypeShape::new(x.dtype, shape)])
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let x = required(inputs, 0, "X")?;
        let y = outputs.first_mut().ok_or_else(|| invalid_err!("{} needs an output", self.op_type()))?;
        match x.dtype() {
            DType::F32 => global::<f32>(self.kind, x, y),
            DType::F16 => global::<half::f16>(self.kind, x, y),
            other => invalid!("{} does not support {other}", self.op_type()),
        }
    }
}

fn global<T: Real>(kind: GlobalKind, x: TensorRef, y: &mut TensorMut) -> Result<()> {
    let xs = x.typed::<T>()?;
    let ys = y.typed_mut::<T>()?;
    let planes = x.shape.len().min(2);
    let planes: usize = x.shape[..planes].iter().product();
    let size: usize = x.shape.iter().skip(2).product();
    if size == 0 || xs.len() != planes * size || ys.len() != planes {
        invalid!("global pool: tensor sizes do not match the inferred shapes");
    }
    for (p, out) in ys.iter_mut().enumerate() {
        let vals = &xs[p * size..(p + 1) * size];
        *out = T::r(match kind {
            // f64 keeps large planes accurate.
            GlobalKind::Average => (vals.iter().map(|v| v.f() as f64).sum::<f64>() / size as f64) as f32,
            GlobalKind::Max => {
                vals.iter().map(|v| v.f()).fold(f32::NEG_INFINITY, |a, b| if b > a || b.is_nan() { b } else { a })
            }
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::eval;
    use crate::ops::nn::test_util::{Rng, assert_close, t, to_f16};
    use crate::tensor::Tensor;

    #[test]
    fn small() {
        let x = t(&[1, 2, 2, 2], &[1., 2., 3., 4., -1., -5., -2., -3.]);
        let avg = GlobalPool::build(GlobalKind::Average).unwrap();
        let max = GlobalPool::build(GlobalKind::Max).unwrap();
        assert_close(&eval(&avg, &[Some(&x)]).unwrap()[0], &[1, 2, 1, 1], &[2.5, -2.75], 1e-6);
        assert_close(&eval(&max, &[Some(&x)]).unwrap()[0], &[1, 2, 1, 1], &[4., -1.], 0.0);
    }

    #[test]
    fn random_against_naive() {
        let mut rng = Rng::new(2);
        for shape in [[2usize, 3, 7, 13], [3, 13, 7, 1]] {
            let x = rng.tensor(&shape);
            let v = x.as_f32().unwrap();
            let size = shape[2] * shape[3];
            let avg: Vec<f32> = v.chunks(size).map(|c| c.iter().sum::<f32>() / size as f32).collect();
            let max: Vec<f32> = v.chunks(size).map(|c| c.iter().cloned().fold(f32::MIN, f32::max)).collect();
            let out = [shape[0], shape[1], 1, 1];
            let a = GlobalPool::build(GlobalKind::Average).unwrap();
            let m = GlobalPool::build(GlobalKind::Max).unwrap();
            assert_close(&eval(&a, &[Some(&x)]).unwrap()[0], &out, &avg, 1e-5);
            assert_close(&eval(&m, &[Some(&x)]).unwrap()[0], &out, &max, 0.0);
            assert_close(&eval(&a, &[Some(&to_f16(&x))]).unwrap()[0], &out, &avg, 1e-2);
        }
        let x = rng.tensor(&[2, 3, 4, 5, 3]);
        assert_eq!(
            eval(&GlobalPool::build(GlobalKind::Max).unwrap(), &[Some(&x)]).unwrap()[0].shape(),
            &[2, 3, 1, 1, 1]
        );
    }

    #[test]
    fn errors() {
        let a = GlobalPool::build(GlobalKind::Average).unwrap();
        assert!(eval(&a, &[Some(&Tensor::zeros(DType::F32, &[2, 3]))]).is_err());
        assert!(eval(&a, &[Some(&Tensor::zeros(DType::I32, &[2, 3, 4]))]).is_err());
        assert!(eval(&a, &[Some(&Tensor::zeros(DType::F32, &[2, 3, 0]))]).is_err());
    }
}
