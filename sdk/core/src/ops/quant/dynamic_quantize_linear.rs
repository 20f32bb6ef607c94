//! DynamicQuantizeLinear (opset 11+): quantizes a float32 tensor to uint8 with a scale and
//! zero point computed from its own range, which always includes 0:
//!
//! ```text
//! min = min(0, min(x)), max = max(0, max(x))
//! y_scale = (max - min) / 255           (1 / 255 when max == min)
//! y_zero_point = round(clamp(0 - min / y_scale, 0, 255))
//! y = saturate(round(x / y_scale) + y_zero_point)
//! ```
//!
//! in float32 arithmetic with rounding half to even, as ONNX's reference.

use super::common::saturate_round;
use crate::error::Result;
use crate::ops::{Attrs, InferInput, Op, TypeShape, required};
use crate::tensor::{DType, TensorMut, TensorRef};
use crate::{invalid, invalid_err};

/// The DynamicQuantizeLinear op (no attributes).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DynamicQuantizeLinear;

impl DynamicQuantizeLinear {
    /// DynamicQuantizeLinear has no attributes.
    pub fn build(_attrs: &Attrs, _opset: i64) -> Result<Self> {
        Ok(DynamicQuantizeLinear)
    }
}

/// The scale and zero point for values in `x` (the op's first two formulas).
pub fn dynamic_params(x: &[f32]) -> (f32, u8) {
    // NaNs are skipped by max/min here; ONNX leaves their effect unspecified.
    let maxx = x.iter().fold(0f32, |m, &v| m.max(v));
    let minx = x.iter().fold(0f32, |m, &v| m.min(v));
    let scale = if maxx == minx { 1.0 } else { maxx - minx } / 255.0;
    let zp = (0.0 - minx / scale).clamp(0.0, 255.0).round_ties_even();
    (scale, zp as u8)
}

impl Op for DynamicQuantizeLinear {
    fn op_type(&self) -> &'static str {
        "DynamicQuantizeLinear"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        if inputs.len() != 1 {
            invalid!("DynamicQuantizeLinear takes 1 input, got {}", inputs.len());
        }
        let x = required(inputs, 0, "x")?;
        if x.dtype != DType::F32 {
            invalid!("input x must be float32, got {}", x.dtype);
        }
        Ok(vec![
            TypeShape::new(DType::U8, x.shape.to_vec()),
            TypeShape::new(DType::F32, vec![]),
            TypeShape::new(DType::U8, vec![]),
        ])
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let x = required(inputs, 0, "x")?.as_f32()?;
        let [y, ys, yz] = outputs else { invalid!("DynamicQuantizeLinear has 3 outputs, got {}", outputs.len()) };
        let (scale, zp) = dynamic_params(x);
        let y = y.typed_mut::<u8>()?;
        if y.len() != x.len() {
            invalid!("DynamicQuantizeLinear: output has {} elements, input {}", y.len(), x.len());
        }
        for (o, &v) in y.iter_mut().zip(x) {
            // round(x / scale) + zp in f32, as the reference; both terms are integers.
            let r = (v / scale).round_ties_even();
            *o = saturate_round(r as f64 + zp as f64, 0, 255) as u8;
        }
        *ys.typed_mut::<f32>()?.first_mut().ok_or_else(|| invalid_err!("y_scale output is empty"))? = scale;
        *yz.typed_mut::<u8>()?.first_mut().ok_or_else(|| invalid_err!("y_zero_point output is empty"))? = zp;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::eval;
    use crate::tensor::{Tensor, TensorData};

    fn run(x: &[f32]) -> Vec<Tensor> {
        eval(&DynamicQuantizeLinear, &[Some(&Tensor::from_f32(&[x.len()], x.to_vec()).unwrap())]).unwrap()
    }

    #[test]
    fn onnx_examples() {
        // ONNX's test_dynamicquantizelinear: range [-1.18, 2] -> scale 3.18/255, zp 95 (94.6).
        let out = run(&[0., 2., -3., -2.5, 1.34, 0.5]);
        let scale = (2.0f32 + 3.0) / 255.0;
        assert_eq!(out[1].as_f32().unwrap(), &[scale]);
        assert_eq!(out[2].data(), &TensorData::U8(vec![153]));
        assert_eq!(out[0].data(), &TensorData::U8(vec![153, 255, 0, 26, 221, 179]));
        // All positive: min is 0, zero point 0.
        let out = run(&[1., 2.55]);
        assert_eq!(out[2].data(), &TensorData::U8(vec![0]));
        assert_eq!(out[0].data(), &TensorData::U8(vec![100, 255]));
        // All zero: scale 1/255, everything 0.
        let out = run(&[0., 0.]);
        assert_eq!(out[1].as_f32().unwrap(), &[1.0 / 255.0]);
        assert_eq!(out[0].data(), &TensorData::U8(vec![0, 0]));
        // Empty input: no panic.
        assert_eq!(run(&[])[0].len(), 0);
    }

    #[test]
    fn non_float_input_is_an_error() {
        let x = Tensor::new(vec![1], TensorData::U8(vec![1])).unwrap();
        assert!(eval(&DynamicQuantizeLinear, &[Some(&x)]).is_err());
    }
}
