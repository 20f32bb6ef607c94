//! ConvInteger (opset 10+): `Y = conv(X - x_zero_point, W - w_zero_point)` in int32, with
//! Conv's attributes (`auto_pad`, `dilations`, `group`, `kernel_shape`, `pads`, `strides`).
//! `x_zero_point` is a scalar; `w_zero_point` a scalar or one value per output channel.
//! Padding is the zero point (it contributes nothing).

use super::common::{read_q, require_q8};
use super::integer::{ConvShape, conv_i32, conv_shape};
use super::matmul_integer::check_vector_zp;
use crate::error::Result;
use crate::ops::nn::conv::Conv;
use crate::ops::{Attrs, InferInput, Op, TypeShape, optional, required};
use crate::tensor::{DType, TensorMut, TensorRef};
use crate::{invalid, invalid_err};

/// The ConvInteger op.
#[derive(Clone, Debug, PartialEq)]
pub struct ConvInteger {
    /// Conv's window attributes and group.
    pub conv: Conv,
}

impl ConvInteger {
    /// Parses the attributes (those of Conv).
    pub fn build(attrs: &Attrs, opset: i64) -> Result<Self> {
        Ok(ConvInteger { conv: Conv::build(attrs, opset)? })
    }

    fn check(&self, inputs: &[Option<(DType, &[usize])>]) -> Result<ConvShape> {
        if inputs.len() < 2 || inputs.len() > 4 {
            invalid!("ConvInteger takes 2 to 4 inputs (x, w, x_zero_point, w_zero_point), got {}", inputs.len());
        }
        let x = required(inputs, 0, "x")?;
        let w = required(inputs, 1, "w")?;
        require_q8(x.0, "x")?;
        require_q8(w.0, "w")?;
        let shape = conv_shape(&self.conv, x.1, w.1)?;
        if let Some(z) = optional(inputs, 2) {
            check_vector_zp(z, x.0, 1, "x_zero_point", "tensor")?;
        }
        if let Some(z) = optional(inputs, 3) {
            check_vector_zp(z, w.0, shape.m, "w_zero_point", "output channel")?;
        }
        Ok(shape)
    }
}

impl Op for ConvInteger {
    fn op_type(&self) -> &'static str {
        "ConvInteger"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        let ts: Vec<_> = inputs.iter().map(|i| i.map(|i| (i.dtype, i.shape))).collect();
        Ok(vec![TypeShape::new(DType::I32, self.check(&ts)?.shape())])
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let x = required(inputs, 0, "x")?;
        let w = required(inputs, 1, "w")?;
        let (xz, wz) = (optional(inputs, 2), optional(inputs, 3));
        if let Some(z) = xz {
            check_vector_zp((z.dtype(), z.shape), x.dtype(), 1, "x_zero_point", "tensor")?;
        }
        let y = outputs.first_mut().ok_or_else(|| invalid_err!("ConvInteger needs one output"))?;
        let out = y.typed_mut::<i32>()?;
        let shape = conv_shape(&self.conv, x.shape, w.shape)?;
        if out.len() != shape.numel() {
            invalid!("ConvInteger: output has {} elements, expected shape {:?}", out.len(), shape.shape());
        }
        if let Some(z) = wz {
            check_vector_zp((z.dtype(), z.shape), w.dtype(), shape.m, "w_zero_point", "output channel")?;
        }
        let xzp = xz.map_or(0, |z| read_q(z.data, 0));
        let wzp = |m: usize| wz.map_or(0, |z| read_q(z.data, if z.data.len() == 1 { 0 } else { m }));
        conv_i32(&self.conv, x, w, xzp, wzp, None, |o, _, acc| out[o] = acc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::nn::test_util::Rng;
    use crate::ops::{Attr, eval};
    use crate::tensor::{Tensor, TensorData};

    fn u8s(shape: &[usize], v: Vec<u8>) -> Tensor {
        Tensor::new(shape.to_vec(), TensorData::U8(v)).unwrap()
    }

    #[test]
    fn onnx_examples() {
        // test_convinteger_without_padding: x = 2..10 (3x3), w = ones 2x2, x_zero_point 1.
        let x = u8s(&[1, 1, 3, 3], (2..11).collect());
        let w = u8s(&[1, 1, 2, 2], vec![1; 4]);
        let op = ConvInteger::build(&Attrs::new(), 10).unwrap();
        let y = eval(&op, &[Some(&x), Some(&w), Some(&u8s(&[], vec![1]))]).unwrap();
        assert_eq!(y[0].data(), &TensorData::I32(vec![12, 16, 24, 28]));
        // With padding 1: corners see one tap.
        let op = ConvInteger::build(&Attrs::new().with("pads", Attr::Ints(vec![1; 4])), 10).unwrap();
        let y = eval(&op, &[Some(&x), Some(&w), Some(&u8s(&[], vec![1]))]).unwrap();
        assert_eq!(y[0].shape(), &[1, 1, 4, 4]);
        assert_eq!(y[0].data(), &TensorData::I32(vec![1, 3, 5, 3, 5, 12, 16, 9, 11, 24, 28, 15, 7, 15, 17, 9]));
    }

    /// Against the float Conv reference on the zero-point-shifted values (exact in f32:
    /// products and sums stay far below 2^24).
    #[test]
    fn random_against_float_conv() {
        let mut rng = Rng::new(3);
        let (n, c, h, wd, m, group) = (2, 4, 7, 6, 6, 2);
        let xs: Vec<u8> = (0..n * c * h * wd).map(|_| (rng.sym() * 127.0 + 128.0) as u8).collect();
        let ws: Vec<i8> = (0..m * (c / group) * 9).map(|_| (rng.sym() * 127.0) as i8).collect();
        let wz: Vec<i8> = (0..m).map(|i| i as i8 - 3).collect();
        let xz = 100u8;
        let attrs = Attrs::new()
            .with("group", Attr::Int(group as i64))
            .with("pads", Attr::Ints(vec![1, 0, 2, 1]))
            .with("strides", Attr::Ints(vec![2, 1]));
        let op = ConvInteger::build(&attrs, 10).unwrap();
        let x = u8s(&[n, c, h, wd], xs.clone());
        let w = Tensor::new(vec![m, c / group, 3, 3], TensorData::I8(ws.clone())).unwrap();
        let y = eval(
            &op,
            &[
                Some(&x),
                Some(&w),
                Some(&u8s(&[1], vec![xz])),
                Some(&Tensor::new(vec![m], TensorData::I8(wz.clone())).unwrap()),
            ],
        )
        .unwrap();
        // Float conv whose padding is 0 = the shifted zero point.
        let xf = Tensor::from_f32(&[n, c, h, wd], xs.iter().map(|&v| v as f32 - xz as f32).collect()).unwrap();
        let kk = (c / group) * 9;
        let wf = Tensor::from_f32(
            &[m, c / group, 3, 3],
            ws.iter().enumerate().map(|(i, &v)| v as f32 - wz[i / kk] as f32).collect(),
        )
        .unwrap();
        let want = eval(&op.conv, &[Some(&xf), Some(&wf)]).unwrap();
        assert_eq!(y[0].shape(), want[0].shape());
        let got: Vec<f32> = y[0].to_f32_vec().unwrap();
        assert_eq!(got, want[0].as_f32().unwrap());
    }

    #[test]
    fn bad_inputs_are_errors() {
        let op = ConvInteger::build(&Attrs::new(), 10).unwrap();
        let x = u8s(&[1, 1, 3, 3], vec![0; 9]);
        let w = u8s(&[2, 1, 2, 2], vec![0; 8]);
        let e = eval(&op, &[Some(&x), Some(&w), None, Some(&u8s(&[3], vec![0; 3]))]).unwrap_err().to_string();
        assert!(e.contains("one value per output channel (2)"), "{e}");
        let f = Tensor::from_f32(&[1, 1, 3, 3], vec![0.; 9]).unwrap();
        assert!(eval(&op, &[Some(&f), Some(&w)]).is_err());
        let e = eval(&op, &[Some(&x), Some(&u8s(&[2, 2, 2, 2], vec![0; 16]))]).unwrap_err().to_string();
        assert!(e.contains("C/group"), "{e}");
    }
}
