//! BatchNormalization: per-channel normalization with running (or, in training mode, batch)
//! statistics.

use crate::error::Result;
use crate::ops::nn::common::{Real, read_f32, require_float};
use crate::ops::{Attrs, InferInput, Op, TypeShape, required};
use crate::tensor::{DType, DataMut, MAX_RANK, TensorMut, TensorRef};
use crate::{invalid, invalid_err};

/// ONNX BatchNormalization (opsets 9–21). Inference mode:
/// `Y = (X − mean) / sqrt(var + ε) · scale + B` per channel (dim 1). With
/// `training_mode=1` (opset 14+) the batch statistics (population variance over every dim
/// but 1) replace the inputs, and two more outputs give the updated running statistics
/// `running = input · momentum + batch · (1 − momentum)`. The extra training outputs of
/// opsets 9–13 are not produced.
#[derive(Clone, PartialEq, Debug)]
pub struct BatchNormalization {
    /// ε added to the variance.
    pub epsilon: f32,
    /// Momentum of the running statistics (training mode).
    pub momentum: f32,
    /// `training_mode` (opset 14+).
    pub training: bool,
}

impl BatchNormalization {
    /// Parses the attributes.
    pub fn build(attrs: &Attrs, opset: i64) -> Result<BatchNormalization> {
        let training = if opset >= 14 {
            match attrs.int_or("training_mode", 0)? {
                0 => false,
                1 => true,
                v => invalid!("training_mode must be 0 or 1, got {v}"),
            }
        } else {
            false
        };
        let epsilon = attrs.float_or("epsilon", 1e-5)?;
        if epsilon.is_nan() || epsilon < 0.0 {
            invalid!("epsilon must be non-negative, got {epsilon}");
        }
        Ok(BatchNormalization { epsilon, momentum: attrs.float_or("momentum", 0.9)?, training })
    }
}

impl Op for BatchNormalization {
    fn op_type(&self) -> &'static str {
        "BatchNormalization"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        if inputs.len() != 5 {
            invalid!("BatchNormalization takes 5 inputs (X, scale, B, mean, var), got {}", inputs.len());
        }
        let x = required(inputs, 0, "X")?;
        require_float(x.dtype, "X")?;
        if x.shape.len() < 2 || x.shape.len() > MAX_RANK {
            invalid!("X must have rank 2 to {MAX_RANK} (N x C x ...), got {:?}", x.shape);
        }
        let c = x.shape[1];
        let names = ["X", "scale", "B", "mean", "var"];
        for (i, name) in names.iter().enumerate().skip(1) {
            let p = required(inputs, i, name)?;
            require_float(p.dtype, name)?;
            if p.shape != [c] {
                invalid!("{name} must have shape [{c}] (one value per channel), got {:?}", p.shape);
            }
        }
        let mut out = vec![TypeShape::new(x.dtype, x.shape.to_vec())];
        if self.training {
            if x.shape[0] == 0 || x.shape[2..].contains(&0) {
                invalid!("training-mode statistics of an empty tensor {:?}", x.shape);
            }
            let m = required(inputs, 3, "mean")?;
            let v = required(inputs, 4, "var")?;
            out.push(TypeShape::new(m.dtype, vec![c]));
            out.push(TypeShape::new(v.dtype, vec![c]));
        }
        Ok(out)
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let x = required(inputs, 0, "X")?;
        let mut p = [x; 4];
        for (i, slot) in p.iter_mut().enumerate() {
            *slot = required(inputs, i + 1, "parameter")?;
        }
        match x.dtype() {
            DType::F32 => self.bn::<f32>(x, p, outputs),
            DType::F16 => self.bn::<half::f16>(x, p, outputs),
            other => invalid!("BatchNormalization does not support {other}"),
        }
    }
}

fn write_f32(d: &mut DataMut<'_>, i: usize, v: f32) {
    match d {
        DataMut::F32(s) => s[i] = v,
        DataMut::F16(s) => s[i] = half::f16::from_f32(v),
        _ => {}
    }
}

impl BatchNormalization {
    fn bn<T: Real>(&self, x: TensorRef, p: [TensorRef; 4], outputs: &mut [TensorMut]) -> Result<()> {
        let xs = x.typed::<T>()?;
        let (n, c) = (x.shape[0], x.shape[1]);
        let inner: usize = x.shape[2..].iter().product();
        let (first, rest) =
            outputs.split_first_mut().ok_or_else(|| invalid_err!("BatchNormalization needs an output"))?;
        let ys = first.typed_mut::<T>()?;
        if xs.len() != n * c * inner || ys.len() != xs.len() || p.iter().any(|t| t.data.len() != c) {
            invalid!("BatchNormalization: tensor sizes do not match the inferred shapes");
        }
        if self.training && (rest.len() < 2 || rest.iter().take(2).any(|t| t.data.len() != c)) {
            invalid!("BatchNormalization in training mode needs 3 outputs of the inferred shapes");
        }
        for ci in 0..c {
            let (scale, bias) = (read_f32(p[0].data, ci), read_f32(p[1].data, ci));
            let (mut mean, mut var) = (read_f32(p[2].data, ci), read_f32(p[3].data, ci));
            if self.training {
                let count = (n * inner) as f64;
                let mut sum = 0f64;
                for ni in 0..n {
                    sum += xs[(ni * c + ci) * inner..][..inner].iter().map(|v| v.f() as f64).sum::<f64>();
                }
                let bm = sum / count;
                let mut sq = 0f64;
                for ni in 0..n {
                    sq += xs[(ni * c + ci) * inner..][..inner].iter().map(|v| (v.f() as f64 - bm).powi(2)).sum::<f64>();
                }
                let bv = sq / count;
                let m = self.momentum as f64;
                write_f32(&mut rest[0].data, ci, (mean as f64 * m + bm * (1.0 - m)) as f32);
                write_f32(&mut rest[1].data, ci, (var as f64 * m + bv * (1.0 - m)) as f32);
                (mean, var) = (bm as f32, bv as f32);
            }
            let k = scale / (var + self.epsilon).sqrt();
            for ni in 0..n {
                let base = (ni * c + ci) * inner;
                for i in base..base + inner {
                    ys[i] = T::r((xs[i].f() - mean) * k + bias);
                }
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
    fn inference_example() {
        // ONNX's test_batchnorm_example values.
        let x = t(&[1, 2, 1, 3], &[-1., 0., 1., 2., 3., 4.]);
        let s = t(&[2], &[1.0, 1.5]);
        let b = t(&[2], &[0., 1.]);
        let m = t(&[2], &[0., 3.]);
        let v = t(&[2], &[1., 1.5]);
        let op = BatchNormalization::build(&Attrs::new(), 15).unwrap();
        let y = eval(&op, &[Some(&x), Some(&s), Some(&b), Some(&m), Some(&v)]).unwrap();
        assert_eq!(y.len(), 1);
        let e = 1e-5f32;
        let want: Vec<f32> = [-1f32, 0., 1.]
            .iter()
            .map(|&x| x / (1.0 + e).sqrt())
            .chain([2f32, 3., 4.].iter().map(|&x| (x - 3.) / (1.5 + e).sqrt() * 1.5 + 1.))
            .collect();
        assert_close(&y[0], &[1, 2, 1, 3], &want, 1e-6);
    }

    #[test]
    fn random_and_f16() {
        let mut rng = Rng::new(4);
        let x = rng.tensor(&[3, 13, 7]);
        let s = rng.tensor(&[13]);
        let b = rng.tensor(&[13]);
        let m = rng.tensor(&[13]);
        let v = Tensor::from_f32(&[13], (0..13).map(|_| rng.unit() + 0.1).collect()).unwrap();
        let op = BatchNormalization::build(&Attrs::new().with("epsilon", Attr::Float(1e-3)), 9).unwrap();
        let xv = x.as_f32().unwrap();
        let (sv, bv, mv, vv) = (s.as_f32().unwrap(), b.as_f32().unwrap(), m.as_f32().unwrap(), v.as_f32().unwrap());
        let want: Vec<f32> = (0..xv.len())
            .map(|i| {
                let c = (i / 7) % 13;
                (xv[i] - mv[c]) / (vv[c] + 1e-3).sqrt() * sv[c] + bv[c]
            })
            .collect();
        let y = eval(&op, &[Some(&x), Some(&s), Some(&b), Some(&m), Some(&v)]).unwrap();
        assert_close(&y[0], &[3, 13, 7], &want, 1e-5);
        // Opset 15: f16 data with f32 parameters.
        let y = eval(&op, &[Some(&to_f16(&x)), Some(&s), Some(&b), Some(&m), Some(&v)]).unwrap();
        assert_eq!(y[0].dtype(), DType::F16);
        assert_close(&y[0], &[3, 13, 7], &want, 2e-2);
    }

    #[test]
    fn training_mode() {
        let x = t(&[2, 1, 2], &[1., 2., 3., 6.]);
        let one = t(&[1], &[1.]);
        let zero = t(&[1], &[0.]);
        let op = BatchNormalization::build(
            &Attrs::new().with("training_mode", Attr::Int(1)).with("epsilon", Attr::Float(0.0)),
            15,
        )
        .unwrap();
        let y = eval(&op, &[Some(&x), Some(&one), Some(&zero), Some(&zero), Some(&one)]).unwrap();
        // batch mean 3, var (4+1+0+9)/4 = 3.5
        let sd = 3.5f32.sqrt();
        assert_close(&y[0], &[2, 1, 2], &[-2. / sd, -1. / sd, 0., 3. / sd], 1e-6);
        assert_close(&y[1], &[1], &[0.3], 1e-6);
        assert_close(&y[2], &[1], &[0.9 + 0.35], 1e-6);
    }

    #[test]
    fn errors() {
        let op = BatchNormalization::build(&Attrs::new(), 15).unwrap();
        let x = Tensor::zeros(DType::F32, &[1, 2, 3]);
        let p = Tensor::zeros(DType::F32, &[2]);
        let bad = Tensor::zeros(DType::F32, &[3]);
        assert!(eval(&op, &[Some(&x), Some(&p), Some(&p), Some(&p), Some(&bad)]).is_err());
        assert!(eval(&op, &[Some(&x), Some(&p), Some(&p), Some(&p)]).is_err());
        assert!(eval(&op, &[Some(&Tensor::zeros(DType::F32, &[2])), Some(&p), Some(&p), Some(&p), Some(&p)]).is_err());
        assert!(BatchNormalization::build(&Attrs::new().with("training_mode", Attr::Int(3)), 15).is_err());
    }
}
