//! DequantizeLinear (opsets 10–25): `y = (x - x_zero_point) * x_scale` per tensor, per axis
//! (opset 13+) or per block (opset 21+), from uint8, int8 or int32 into the scale's float
//! type (or `output_dtype`, opset 23+).
//!
//! Computed in f64 and rounded once to the output type: for 8-bit inputs that equals ONNX's
//! reference (float32 arithmetic, exact there), and it is the exact value for int32.

use super::common::{Layout, check_zero_point, float_dtype_from_onnx, read_q, read_scale, require_scale_type};
use crate::error::Result;
use crate::ops::{Attrs, InferInput, Op, TypeShape, optional, required};
use crate::tensor::{DType, DataMut, TensorMut, TensorRef, numel};
use crate::{invalid, invalid_err};

/// The DequantizeLinear op.
#[derive(Clone, Debug, PartialEq)]
pub struct DequantizeLinear {
    /// The quantization axis for per-axis and blocked scales (default 1).
    pub axis: i64,
    /// Block size (0: not blocked).
    pub block_size: i64,
    /// The output type asked by `output_dtype` (opset 23+), if any.
    pub output_dtype: Option<DType>,
    /// The opset the node was written for.
    pub opset: i64,
}

impl DequantizeLinear {
    /// Parses the attributes.
    pub fn build(attrs: &Attrs, opset: i64) -> Result<Self> {
        let axis = attrs.int_or("axis", 1)?;
        let block_size = attrs.int_or("block_size", 0)?;
        if block_size < 0 {
            invalid!("block_size must be >= 0, got {block_size}");
        }
        let output_dtype = match attrs.int_or("output_dtype", 0)? {
            0 => None,
            code => Some(float_dtype_from_onnx(code, "output_dtype")?),
        };
        Ok(DequantizeLinear { axis, block_size, output_dtype, opset })
    }

    /// Checks the inputs; returns the output type and the scales' layout.
    fn check(
        &self,
        x: (DType, &[usize]),
        s: (DType, &[usize]),
        zp: Option<(DType, &[usize])>,
    ) -> Result<(DType, Layout)> {
        if !matches!(x.0, DType::U8 | DType::I8 | DType::I32) {
            invalid!(
                "input x must be uint8, int8 or int32, got {} (int4, int16 and float8 inputs are not supported)",
                x.0
            );
        }
        require_scale_type(s.0, "x_scale")?;
        if self.opset < 13 && numel(s.1) != 1 {
            invalid!("x_scale must be a scalar before opset 13 (per-axis scales need opset 13), got shape {:?}", s.1);
        }
        if self.block_size == 0 && s.1.len() > 1 {
            invalid!("x_scale must be a scalar or 1-D (per axis) without block_size, got shape {:?}", s.1);
        }
        let layout = Layout::resolve(x.1, s.1, self.axis, self.block_size)?;
        if let Some(zp) = zp {
            check_zero_point(zp, x.0, s.1, "x_zero_point")?;
        }
        Ok((self.output_dtype.unwrap_or(s.0), layout))
    }
}

impl Op for DequantizeLinear {
    fn op_type(&self) -> &'static str {
        "DequantizeLinear"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        if inputs.len() < 2 || inputs.len() > 3 {
            invalid!("DequantizeLinear takes 2 or 3 inputs (x, x_scale, x_zero_point), got {}", inputs.len());
        }
        let x = required(inputs, 0, "x")?;
        let s = required(inputs, 1, "x_scale")?;
        let zp = optional(inputs, 2);
        let (dtype, _) = self.check((x.dtype, x.shape), (s.dtype, s.shape), zp.map(|z| (z.dtype, z.shape)))?;
        Ok(vec![TypeShape::new(dtype, x.shape.to_vec())])
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let x = required(inputs, 0, "x")?;
        let s = required(inputs, 1, "x_scale")?;
        let zp = optional(inputs, 2);
        let (dtype, layout) =
            self.check((x.dtype(), x.shape), (s.dtype(), s.shape), zp.map(|z| (z.dtype(), z.shape)))?;
        let y = outputs.first_mut().ok_or_else(|| invalid_err!("DequantizeLinear needs one output"))?;
        let n = numel(x.shape);
        if y.dtype() != dtype || y.data.len() != n || x.data.len() != n || s.data.len() != numel(s.shape) {
            invalid!("DequantizeLinear: tensor sizes or types do not match the inferred ones");
        }
        let value = |i: usize| {
            let si = layout.index(i);
            let z = zp.map_or(0, |z| read_q(z.data, si));
            (read_q(x.data, i) as f64 - z as f64) * read_scale(s.data, si) as f64
        };
        match &mut y.data {
            DataMut::F32(out) => out.iter_mut().enumerate().for_each(|(i, o)| *o = value(i) as f32),
            DataMut::F16(out) => out.iter_mut().enumerate().for_each(|(i, o)| *o = half::f16::from_f64(value(i))),
            _ => invalid!("DequantizeLinear output must be float32 or float16, got {}", y.dtype()),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::{Attr, eval};
    use crate::tensor::{Tensor, TensorData};

    fn dq(attrs: Attrs, x: Tensor, s: Tensor, zp: Option<Tensor>) -> Result<Tensor> {
        let op = DequantizeLinear::build(&attrs, 21)?;
        let mut ins = vec![Some(&x), Some(&s)];
        if let Some(z) = zp.as_ref() {
            ins.push(Some(z));
        }
        eval(&op, &ins).map(|mut v| v.remove(0))
    }

    #[test]
    fn per_tensor_per_axis_blocked_and_int32() {
        // ONNX's test_dequantizelinear: (x - 128) * 2.
        let x = Tensor::new(vec![4], TensorData::U8(vec![0, 3, 128, 255])).unwrap();
        let zp = Tensor::new(vec![], TensorData::U8(vec![128])).unwrap();
        let y = dq(Attrs::new(), x, Tensor::scalar_f32(2.0), Some(zp)).unwrap();
        assert_eq!(y.as_f32().unwrap(), &[-256., -250., 0., 254.]);
        // Per axis 0 of [2, 2] int8.
        let x = Tensor::new(vec![2, 2], TensorData::I8(vec![-128, 127, 10, -10])).unwrap();
        let s = Tensor::from_f32(&[2], vec![0.5, 0.25]).unwrap();
        let zp = Tensor::new(vec![2], TensorData::I8(vec![0, 10])).unwrap();
        let y = dq(Attrs::new().with("axis", Attr::Int(0)), x.clone(), s.clone(), Some(zp)).unwrap();
        assert_eq!(y.as_f32().unwrap(), &[-64., 63.5, 0., -5.]);
        // Blocks of 1 on axis 1: every element has its own scale.
        let s2 = Tensor::from_f32(&[2, 2], vec![1., 2., 3., 4.]).unwrap();
        let a = Attrs::new().with("axis", Attr::Int(1)).with("block_size", Attr::Int(1));
        let y = dq(a, x, s2, None).unwrap();
        assert_eq!(y.as_f32().unwrap(), &[-128., 254., 30., -40.]);
        // int32 (a bias), no zero point, float16 scale -> float16 output.
        let x = Tensor::new(vec![2], TensorData::I32(vec![1000, -3])).unwrap();
        let s = Tensor::new(vec![], TensorData::F16(vec![half::f16::from_f32(0.5)])).unwrap();
        let y = dq(Attrs::new(), x.clone(), s, None).unwrap();
        assert_eq!(y.to_f32_vec().unwrap(), vec![500., -1.5]);
        // output_dtype float32 overrides the scale's float16.
        let s = Tensor::new(vec![], TensorData::F16(vec![half::f16::from_f32(0.5)])).unwrap();
        let y = dq(Attrs::new().with("output_dtype", Attr::Int(1)), x, s, None).unwrap();
        assert_eq!(y.as_f32().unwrap(), &[500., -1.5]);
    }

    #[test]
    fn bad_inputs_are_errors() {
        let x = Tensor::new(vec![2, 3], TensorData::U8(vec![0; 6])).unwrap();
        let e = dq(
            Attrs::new(),
            x.clone(),
            Tensor::scalar_f32(1.),
            Some(Tensor::new(vec![], TensorData::I8(vec![0])).unwrap()),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("must match the quantized tensor's type uint8"), "{e}");
        let e =
            dq(Attrs::new(), x.clone(), Tensor::from_f32(&[2], vec![1., 1.]).unwrap(), None).unwrap_err().to_string();
        assert!(e.contains("per-axis scale"), "{e}");
        let e = dq(Attrs::new(), Tensor::scalar_f32(1.), Tensor::scalar_f32(1.), None).unwrap_err().to_string();
        assert!(e.contains("uint8, int8 or int32"), "{e}");
        assert!(DequantizeLinear::build(&Attrs::new().with("output_dtype", Attr::Int(2)), 23).is_err());
        let op = DequantizeLinear::build(&Attrs::new(), 10).unwrap();
        let s = Tensor::from_f32(&[3], vec![1., 1., 1.]).unwrap();
        assert!(eval(&op, &[Some(&x), Some(&s)]).is_err(), "per axis before opset 13");
    }
}
