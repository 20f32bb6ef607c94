//! LRN: local response normalization across channels.

use crate::error::Result;
use crate::ops::nn::common::{Real, require_float};
use crate::ops::{Attrs, InferInput, Op, TypeShape, required};
use crate::tensor::{DType, MAX_RANK, TensorMut, TensorRef};
use crate::{invalid, invalid_err};

/// ONNX LRN (opsets 1–21): `Y = X / (bias + α/size · Σ X²)^β`, the sum over channels
/// `c − ⌊(size−1)/2⌋ ..= c + ⌈(size−1)/2⌉` (clipped to the valid channels).
#[derive(Clone, PartialEq, Debug)]
pub struct Lrn {
    /// α.
    pub alpha: f32,
    /// β.
    pub beta: f32,
    /// bias.
    pub bias: f32,
    /// Number of channels summed over.
    pub size: usize,
}

impl Lrn {
    /// Parses the attributes (`size` is required).
    pub fn build(attrs: &Attrs, _opset: i64) -> Result<Lrn> {
        let size = attrs.int("size")?.ok_or_else(|| invalid_err!("LRN needs the `size` attribute"))?;
        if size < 1 {
            invalid!("LRN size must be >= 1, got {size}");
        }
        Ok(Lrn {
            alpha: attrs.float_or("alpha", 1e-4)?,
            beta: attrs.float_or("beta", 0.75)?,
            bias: attrs.float_or("bias", 1.0)?,
            size: usize::try_from(size).map_err(|_| invalid_err!("LRN size {size} is too large"))?,
        })
    }
}

impl Op for Lrn {
    fn op_type(&self) -> &'static str {
        "LRN"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        if inputs.len() != 1 {
            invalid!("LRN takes 1 input, got {}", inputs.len());
        }
        let x = required(inputs, 0, "X")?;
        require_float(x.dtype, "X")?;
        if x.shape.len() < 2 || x.shape.len() > MAX_RANK {
            invalid!("X must have rank 2 to {MAX_RANK} (N x C x ...), got {:?}", x.shape);
        }
        Ok(vec![TypeShape::new(x.dtype, x.shape.to_vec())])
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let x = required(inputs, 0, "X")?;
        let y = outputs.first_mut().ok_or_else(|| invalid_err!("LRN needs an output"))?;
        match x.dtype() {
            DType::F32 => self.lrn::<f32>(x, y),
            DType::F16 => self.lrn::<half::f16>(x, y),
            other => invalid!("LRN does not support {other}"),
        }
    }
}

impl Lrn {
    fn lrn<T: Real>(&self, x: TensorRef, y: &mut TensorMut) -> Result<()> {
        let xs = x.typed::<T>()?;
        let ys = y.typed_mut::<T>()?;
        if x.shape.len() < 2 {
            invalid!("LRN input must have rank >= 2");
        }
        let (n, c) = (x.shape[0], x.shape[1]);
        let inner: usize = x.shape[2..].iter().product();
        if xs.len() != n * c * inner || ys.len() != xs.len() {
            invalid!("LRN: tensor sizes do not match the inferred shapes");
        }
        let (lo, hi) = ((self.size - 1) / 2, (self.size - 1).div_ceil(2));
        for ni in 0..n {
            for ci in 0..c {
                let (c0, c1) = (ci.saturating_sub(lo), (ci + hi).min(c - 1));
                for i in 0..inner {
                    let mut sq = 0f32;
                    for cj in c0..=c1 {
                        let v = xs[(ni * c + cj) * inner + i].f();
                        sq += v * v;
                    }
                    let at = (ni * c + ci) * inner + i;
                    let denom = (self.bias + self.alpha / self.size as f32 * sq).powf(self.beta);
                    ys[at] = T::r(xs[at].f() / denom);
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::nn::test_util::{Rng, assert_close, to_f16};
    use crate::ops::{Attr, eval};
    use crate::tensor::Tensor;

    #[test]
    fn random_against_naive() {
        let mut rng = Rng::new(6);
        for (size, shape) in [(3usize, [2usize, 7, 3, 5]), (4, [1, 13, 2, 2]), (1, [2, 3, 1, 1])] {
            let x = rng.tensor(&shape);
            let (alpha, beta, bias) = (0.02f32, 0.6f32, 2.0f32);
            let op = Lrn::build(
                &Attrs::new()
                    .with("size", Attr::Int(size as i64))
                    .with("alpha", Attr::Float(alpha))
                    .with("beta", Attr::Float(beta))
                    .with("bias", Attr::Float(bias)),
                17,
            )
            .unwrap();
            let xv = x.as_f32().unwrap();
            let [n, c, h, w] = shape;
            let inner = h * w;
            let mut want = vec![0f32; xv.len()];
            for ni in 0..n {
                for ci in 0..c {
                    for i in 0..inner {
                        let mut sq = 0f32;
                        for cj in 0..c as i64 {
                            if cj >= ci as i64 - ((size as i64 - 1) / 2) && cj <= ci as i64 + (size as i64) / 2 {
                                sq += xv[(ni * c + cj as usize) * inner + i].powi(2);
                            }
                        }
                        let at = (ni * c + ci) * inner + i;
                        want[at] = xv[at] / (bias + alpha / size as f32 * sq).powf(beta);
                    }
                }
            }
            assert_close(&eval(&op, &[Some(&x)]).unwrap()[0], &shape, &want, 1e-5);
            assert_close(&eval(&op, &[Some(&to_f16(&x))]).unwrap()[0], &shape, &want, 1e-2);
        }
    }

    #[test]
    fn errors() {
        assert!(Lrn::build(&Attrs::new(), 17).is_err());
        assert!(Lrn::build(&Attrs::new().with("size", Attr::Int(0)), 17).is_err());
        let op = Lrn::build(&Attrs::new().with("size", Attr::Int(3)), 17).unwrap();
        assert!(eval(&op, &[Some(&Tensor::zeros(DType::F32, &[4]))]).is_err());
        assert!(eval(&op, &[Some(&Tensor::zeros(DType::I32, &[1, 4]))]).is_err());
    }
}
