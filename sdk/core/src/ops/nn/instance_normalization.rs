//! InstanceNormalization: normalizes each (n, c) plane by its own mean and variance.

use crate::error::Result;
use crate::ops::nn::common::{Real, read_f32, require_float, require_spatial_rank};
use crate::ops::{Attrs, InferInput, Op, TypeShape, required};
use crate::tensor::{DType, TensorMut, TensorRef};
use crate::{invalid, invalid_err};

/// ONNX InstanceNormalization (opsets 6–21):
/// `Y = scale[c] · (X − mean) / sqrt(var + ε) + B[c]` with the mean and population variance
/// of each (n, c) plane over the spatial dims.
#[derive(Clone, PartialEq, Debug)]
pub struct InstanceNormalization {
    /// ε added to the variance.
    pub epsilon: f32,
}

impl InstanceNormalization {
    /// Parses the attributes.
    pub fn build(attrs: &Attrs, _opset: i64) -> Result<InstanceNormalization> {
        let epsilon = attrs.float_or("epsilon", 1e-5)?;
        if epsilon.is_nan() || epsilon < 0.0 {
            invalid!("epsilon must be non-negative, got {epsilon}");
        }
        Ok(InstanceNormalization { epsilon })
    }
}

impl Op for InstanceNormalization {
    fn op_type(&self) -> &'static str {
        "InstanceNormalization"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        if inputs.len() != 3 {
            invalid!("InstanceNormalization takes 3 inputs (input, scale, B), got {}", inputs.len());
        }
        let x = required(inputs, 0, "input")?;
        require_float(x.dtype, "input")?;
        require_spatial_rank(x.shape, "input")?;
        if x.shape[2..].contains(&0) {
            invalid!("input {:?} has an empty spatial extent", x.shape);
        }
        for (i, name) in [(1, "scale"), (2, "B")] {
            let p = required(inputs, i, name)?;
            if p.dtype != x.dtype {
                invalid!("{name} must be {} like the input, got {}", x.dtype, p.dtype);
            }
            if p.shape != [x.shape[1]] {
                invalid!("{name} must have shape [{}], got {:?}", x.shape[1], p.shape);
            }
        }
        Ok(vec![TypeShape::new(x.dtype, x.shape.to_vec())])
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let x = required(inputs, 0, "input")?;
        let s = required(inputs, 1, "scale")?;
        let b = required(inputs, 2, "B")?;
        let y = outputs.first_mut().ok_or_else(|| invalid_err!("InstanceNormalization needs an output"))?;
        match x.dtype() {
            DType::F32 => self.norm::<f32>(x, s, b, y),
            DType::F16 => self.norm::<half::f16>(x, s, b, y),
            other => invalid!("InstanceNormalization does not support {other}"),
        }
    }
}

impl InstanceNormalization {
    fn norm<T: Real>(&self, x: TensorRef, s: TensorRef, b: TensorRef, y: &mut TensorMut) -> Result<()> {
        let xs = x.typed::<T>()?;
        let ys = y.typed_mut::<T>()?;
        let c = x.shape[1];
        let inner: usize = x.shape[2..].iter().product();
        if inner == 0 || ys.len() != xs.len() || xs.len() % inner != 0 || s.data.len() != c || b.data.len() != c {
            invalid!("InstanceNormalization: tensor sizes do not match the inferred shapes");
        }
        for (p, (xp, yp)) in xs.chunks_exact(inner).zip(ys.chunks_exact_mut(inner)).enumerate() {
            let ci = p % c;
            let mean = xp.iter().map(|v| v.f() as f64).sum::<f64>() / inner as f64;
            let var = xp.iter().map(|v| (v.f() as f64 - mean).powi(2)).sum::<f64>() / inner as f64;
            let k = read_f32(s.data, ci) as f64 / (var + self.epsilon as f64).sqrt();
            let bias = read_f32(b.data, ci) as f64;
            for (o, v) in yp.iter_mut().zip(xp) {
                *o = T::r(((v.f() as f64 - mean) * k + bias) as f32);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::nn::test_util::{Rng, assert_close, t, to_f16};
    use crate::ops::{Attr, eval};
    use crate::tensor::Tensor;

    #[test]
    fn small() {
        let x = t(&[1, 2, 2], &[1., 3., 5., 9.]);
        let s = t(&[2], &[2., 1.]);
        let b = t(&[2], &[0., 7.]);
        let op = InstanceNormalization::build(&Attrs::new().with("epsilon", Attr::Float(0.0)), 17).unwrap();
        let y = eval(&op, &[Some(&x), Some(&s), Some(&b)]).unwrap();
        assert_close(&y[0], &[1, 2, 2], &[-2., 2., 6., 8.], 1e-6);
    }

    #[test]
    fn random_against_naive() {
        let mut rng = Rng::new(8);
        let x = rng.tensor(&[2, 3, 7, 13]);
        let s = rng.tensor(&[3]);
        let b = rng.tensor(&[3]);
        let op = InstanceNormalization::build(&Attrs::new(), 17).unwrap();
        let (xv, sv, bv) = (x.as_f32().unwrap(), s.as_f32().unwrap(), b.as_f32().unwrap());
        let mut want = vec![];
        for (p, plane) in xv.chunks(91).enumerate() {
            let m = plane.iter().sum::<f32>() / 91.0;
            let v = plane.iter().map(|x| (x - m) * (x - m)).sum::<f32>() / 91.0;
            want.extend(plane.iter().map(|x| sv[p % 3] * (x - m) / (v + 1e-5).sqrt() + bv[p % 3]));
        }
        assert_close(&eval(&op, &[Some(&x), Some(&s), Some(&b)]).unwrap()[0], &[2, 3, 7, 13], &want, 1e-4);
        let y16 = eval(&op, &[Some(&to_f16(&x)), Some(&to_f16(&s)), Some(&to_f16(&b))]).unwrap();
        assert_close(&y16[0], &[2, 3, 7, 13], &want, 2e-2);
    }

    #[test]
    fn errors() {
        let op = InstanceNormalization::build(&Attrs::new(), 17).unwrap();
        let x = Tensor::zeros(DType::F32, &[1, 2, 3]);
        let p = Tensor::zeros(DType::F32, &[2]);
        assert!(eval(&op, &[Some(&x), Some(&p), Some(&Tensor::zeros(DType::F32, &[1]))]).is_err());
        assert!(eval(&op, &[Some(&Tensor::zeros(DType::F32, &[1, 2])), Some(&p), Some(&p)]).is_err());
        assert!(eval(&op, &[Some(&x), Some(&p)]).is_err());
    }
}
