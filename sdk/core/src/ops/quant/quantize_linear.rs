//! QuantizeLinear (opsets 10–25): `y = saturate(round_half_even(x / y_scale) + y_zero_point)`
//! per tensor, per axis (opset 13+) or per block (opset 21+), into uint8 or int8.
//!
//! The quotient is computed as ONNX's reference computes it: in float32, or in float16 when
//! `x` and the scale are both float16 (or `precision` says so), then rounded half to even.

use half::f16;

use super::common::{
    Layout, check_zero_point, float_dtype_from_onnx, q_dtype_from_onnx, qrange, read_q, read_scale, require_scale_type,
    saturate_round, write_q,
};
use crate::error::Result;
use crate::ops::{Attrs, InferInput, Op, TypeShape, optional, required};
use crate::tensor::{DType, DataRef, TensorMut, TensorRef, numel};
use crate::{invalid, invalid_err};

/// The QuantizeLinear op.
#[derive(Clone, Debug, PartialEq)]
pub struct QuantizeLinear {
    /// The quantization axis for per-axis and blocked scales (default 1).
    pub axis: i64,
    /// Block size (0: not blocked).
    pub block_size: i64,
    /// The output type asked by `output_dtype` (opset 21+), if any.
    pub output_dtype: Option<DType>,
    /// The type the quotient is computed in (`precision`, opset 23+), if given.
    pub precision: Option<DType>,
    /// The opset the node was written for.
    pub opset: i64,
}

impl QuantizeLinear {
    /// Parses the attributes. float8 `saturate` is accepted and has no effect on integers.
    pub fn build(attrs: &Attrs, opset: i64) -> Result<Self> {
        let axis = attrs.int_or("axis", 1)?;
        let block_size = attrs.int_or("block_size", 0)?;
        if block_size < 0 {
            invalid!("block_size must be >= 0, got {block_size}");
        }
        let output_dtype = match attrs.int_or("output_dtype", 0)? {
            0 => None,
            code => Some(q_dtype_from_onnx(code, "output_dtype")?),
        };
        let precision = match attrs.int_or("precision", 0)? {
            0 => None,
            code => Some(float_dtype_from_onnx(code, "precision")?),
        };
        Ok(QuantizeLinear { axis, block_size, output_dtype, precision, opset })
    }

    /// Checks the inputs; returns the output type and the scales' layout.
    fn check(
        &self,
        x: (DType, &[usize]),
        s: (DType, &[usize]),
        zp: Option<(DType, &[usize])>,
    ) -> Result<(DType, Layout)> {
        if !matches!(x.0, DType::F32 | DType::F16 | DType::I32) {
            invalid!("input x must be float32, float16 or int32, got {}", x.0);
        }
        require_scale_type(s.0, "y_scale")?;
        if self.opset < 13 && numel(s.1) != 1 {
            invalid!("y_scale must be a scalar before opset 13 (per-axis scales need opset 13), got shape {:?}", s.1);
        }
        if self.block_size == 0 && s.1.len() > 1 {
            invalid!("y_scale must be a scalar or 1-D (per axis) without block_size, got shape {:?}", s.1);
        }
        let layout = Layout::resolve(x.1, s.1, self.axis, self.block_size)?;
        let out = match zp {
            Some(zp) => {
                if !matches!(zp.0, DType::U8 | DType::I8) {
                    invalid!(
                        "y_zero_point of type {} is not supported: edgert quantizes to uint8 or int8 (int4, int16 \
                         and float8 outputs are not supported)",
                        zp.0
                    );
                }
                if let Some(want) = self.output_dtype
                    && want != zp.0
                {
                    invalid!("output_dtype {want} differs from y_zero_point's type {}", zp.0);
                }
                check_zero_point(zp, zp.0, s.1, "y_zero_point")?;
                zp.0
            }
            None => self.output_dtype.unwrap_or(DType::U8),
        };
        Ok((out, layout))
    }
}

impl Op for QuantizeLinear {
    fn op_type(&self) -> &'static str {
        "QuantizeLinear"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        if inputs.len() < 2 || inputs.len() > 3 {
            invalid!("QuantizeLinear takes 2 or 3 inputs (x, y_scale, y_zero_point), got {}", inputs.len());
        }
        let x = required(inputs, 0, "x")?;
        let s = required(inputs, 1, "y_scale")?;
        let zp = optional(inputs, 2);
        let (dtype, _) = self.check((x.dtype, x.shape), (s.dtype, s.shape), zp.map(|z| (z.dtype, z.shape)))?;
        Ok(vec![TypeShape::new(dtype, x.shape.to_vec())])
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let x = required(inputs, 0, "x")?;
        let s = required(inputs, 1, "y_scale")?;
        let zp = optional(inputs, 2);
        let (dtype, layout) =
            self.check((x.dtype(), x.shape), (s.dtype(), s.shape), zp.map(|z| (z.dtype(), z.shape)))?;
        let y = outputs.first_mut().ok_or_else(|| invalid_err!("QuantizeLinear needs one output"))?;
        let n = numel(x.shape);
        if y.dtype() != dtype || y.data.len() != n || x.data.len() != n || s.data.len() != numel(s.shape) {
            invalid!("QuantizeLinear: tensor sizes or types do not match the inferred ones");
        }
        let (lo, hi) = qrange(dtype)?;
        // The quotient's type: `precision`, else float16 only when x and the scale both are.
        let half = match self.precision {
            Some(p) => p == DType::F16,
            None => x.dtype() == DType::F16 && s.dtype() == DType::F16,
        };
        for i in 0..n {
            let si = layout.index(i);
            let sc = read_scale(s.data, si);
            let q = match x.data {
                DataRef::I32(v) => v[i] as f64 / sc as f64,
                _ if half => {
                    let xv = f16::from_f32(read_scale(x.data, i)).to_f32();
                    f16::from_f32(xv / f16::from_f32(sc).to_f32()).to_f64()
                }
                _ => (read_scale(x.data, i) / sc) as f64,
            };
            // rint first, then the zero point, then saturation (ONNX's order): the sum of two
            // integers is exact, so adding before rounding would give the same result.
            let z = zp.map_or(0, |z| read_q(z.data, si));
            let r = q.round_ties_even();
            let v = if r.is_nan() { z as f64 } else { r + z as f64 };
            write_q(&mut y.data, i, saturate_round(v, lo, hi));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::{Attr, eval};
    use crate::tensor::{Tensor, TensorData};

    fn q(attrs: Attrs, opset: i64, x: Tensor, s: Tensor, zp: Option<Tensor>) -> Result<Tensor> {
        let op = QuantizeLinear::build(&attrs, opset)?;
        let mut ins = vec![Some(&x), Some(&s)];
        if let Some(z) = zp.as_ref() {
            ins.push(Some(z));
        }
        eval(&op, &ins).map(|mut v| v.remove(0))
    }

    fn f32t(shape: &[usize], v: &[f32]) -> Tensor {
        Tensor::from_f32(shape, v.to_vec()).unwrap()
    }

    #[test]
    fn per_tensor_uint8_rounds_half_to_even_and_saturates() {
        // ONNX's test_quantizelinear: x / 2 + 128.
        let x = f32t(&[6], &[0., 2., 3., 1000., -254., -1000.]);
        let zp = Tensor::new(vec![], TensorData::U8(vec![128])).unwrap();
        let y = q(Attrs::new(), 13, x, Tensor::scalar_f32(2.0), Some(zp)).unwrap();
        assert_eq!(y.data(), &TensorData::U8(vec![128, 129, 130, 255, 1, 0]));
        // Ties go to even: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, -0.5 -> 0, -1.5 -> -2.
        let x = f32t(&[5], &[0.5, 1.5, 2.5, -0.5, -1.5]);
        let zp = Tensor::new(vec![], TensorData::I8(vec![0])).unwrap();
        let y = q(Attrs::new(), 13, x, Tensor::scalar_f32(1.0), Some(zp)).unwrap();
        assert_eq!(y.data(), &TensorData::I8(vec![0, 2, 2, 0, -2]));
        // No zero point: uint8 with zero point 0.
        let y = q(Attrs::new(), 10, f32t(&[3], &[-1., 3., 600.]), Tensor::scalar_f32(2.0), None).unwrap();
        assert_eq!(y.data(), &TensorData::U8(vec![0, 2, 255]));
    }

    #[test]
    fn per_axis_and_blocked() {
        // Axis 1 of [1, 2, 2]: scales 1 and 10, zero points 0 and -5 (int8).
        let x = f32t(&[1, 2, 2], &[1., 2., 10., 25.]);
        let s = f32t(&[2], &[1., 10.]);
        let zp = Tensor::new(vec![2], TensorData::I8(vec![0, -5])).unwrap();
        let y = q(Attrs::new(), 13, x.clone(), s.clone(), Some(zp)).unwrap();
        assert_eq!(y.data(), &TensorData::I8(vec![1, 2, -4, -3]));
        // Axis -1 uses the last dim instead.
        let y = q(Attrs::new().with("axis", Attr::Int(-1)), 13, x.clone(), s, None).unwrap();
        assert_eq!(y.data(), &TensorData::U8(vec![1, 0, 10, 2]));
        // Blocks of 2 along axis 1 of [2, 3]: scale [2, 2].
        let x = f32t(&[2, 3], &[1., 2., 3., 4., 5., 6.]);
        let s = f32t(&[2, 2], &[1., 0.5, 2., 0.25]);
        let a = Attrs::new().with("axis", Attr::Int(1)).with("block_size", Attr::Int(2));
        let y = q(a.clone().with("output_dtype", Attr::Int(3)), 21, x.clone(), s.clone(), None).unwrap();
        assert_eq!(y.data(), &TensorData::I8(vec![1, 2, 6, 2, 2, 24]));
        // Opset 10 refuses per-axis scales.
        assert!(q(Attrs::new(), 10, f32t(&[1, 2, 2], &[0.; 4]), f32t(&[2], &[1., 1.]), None).is_err());
    }

    #[test]
    fn float16_quotient_is_rounded_to_float16_first() {
        // 0.1 / 0.2 in f16 arithmetic: both rounded to f16 first.
        let x = Tensor::new(vec![2], TensorData::F16(vec![f16::from_f32(300.0), f16::from_f32(-3.0)])).unwrap();
        let s = Tensor::new(vec![], TensorData::F16(vec![f16::from_f32(2.0)])).unwrap();
        let y = q(Attrs::new(), 19, x, s, None).unwrap();
        assert_eq!(y.data(), &TensorData::U8(vec![150, 0]));
    }

    #[test]
    fn bad_inputs_are_errors_that_say_why() {
        let x = f32t(&[2, 3], &[0.; 6]);
        let err = |a: Attrs, s: Tensor, zp: Option<Tensor>| q(a, 21, x.clone(), s, zp).unwrap_err().to_string();
        let e = err(Attrs::new(), f32t(&[2], &[1., 1.]), None);
        assert!(e.contains("axis 1"), "{e}");
        let e = err(Attrs::new(), Tensor::scalar_f32(1.), Some(Tensor::new(vec![], TensorData::I32(vec![0])).unwrap()));
        assert!(e.contains("uint8 or int8"), "{e}");
        let e = err(Attrs::new(), Tensor::new(vec![], TensorData::I32(vec![1])).unwrap(), None);
        assert!(e.contains("y_scale must be float32 or float16"), "{e}");
        let e =
            err(Attrs::new(), f32t(&[3], &[1.; 3]), Some(Tensor::new(vec![2], TensorData::U8(vec![0, 0])).unwrap()));
        assert!(e.contains("scale's shape"), "{e}");
        let e = err(
            Attrs::new().with("output_dtype", Attr::Int(3)),
            Tensor::scalar_f32(1.),
            Some(Tensor::new(vec![], TensorData::U8(vec![0])).unwrap()),
        );
        assert!(e.contains("differs"), "{e}");
        assert!(QuantizeLinear::build(&Attrs::new().with("output_dtype", Attr::Int(22)), 21).is_err(), "int4");
        let e =
            q(Attrs::new(), 21, Tensor::new(vec![1], TensorData::U8(vec![1])).unwrap(), Tensor::scalar_f32(1.), None)
                .unwrap_err()
                .to_string();
        assert!(e.contains("input x"), "{e}");
    }
}
