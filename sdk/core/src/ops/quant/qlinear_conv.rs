//! QLinearConv (opset 10+): a quantized convolution with Conv's attributes,
//!
//! ```text
//! acc = B[m] + conv(x - x_zero_point, w - w_zero_point[m])        (int32)
//! y   = saturate(round_half_even(acc * x_scale * w_scale[m] / y_scale) + y_zero_point)
//! ```
//!
//! `x_scale`, `x_zero_point`, `y_scale`, `y_zero_point` are per tensor; `w_scale` and
//! `w_zero_point` per tensor or one per output channel; `B` is int32 with scale
//! `x_scale * w_scale`. The multiplier is computed in float32 as ONNX's reference does.

use super::common::{multiplier, qrange, read_q, read_scale, requantize, require_q8, require_scale_type, write_q};
use super::integer::{ConvShape, conv_i32, conv_shape};
use super::matmul_integer::check_vector_zp;
use crate::error::Result;
use crate::ops::nn::conv::Conv;
use crate::ops::{Attrs, InferInput, Op, TypeShape, optional, required};
use crate::tensor::{DType, TensorMut, TensorRef, numel};
use crate::{invalid, invalid_err};

/// The QLinearConv op.
#[derive(Clone, Debug, PartialEq)]
pub struct QLinearConv {
    /// Conv's window attributes and group.
    pub conv: Conv,
}

const NAMES: [&str; 9] =
    ["x", "x_scale", "x_zero_point", "w", "w_scale", "w_zero_point", "y_scale", "y_zero_point", "B"];

impl QLinearConv {
    /// Parses the attributes (those of Conv).
    pub fn build(attrs: &Attrs, opset: i64) -> Result<Self> {
        Ok(QLinearConv { conv: Conv::build(attrs, opset)? })
    }

    /// Checks the inputs; returns the output shape and type.
    fn check(&self, inputs: &[Option<(DType, &[usize])>]) -> Result<(ConvShape, DType)> {
        if inputs.len() < 8 || inputs.len() > 9 {
            invalid!("QLinearConv takes 8 or 9 inputs ({}), got {}", NAMES.join(", "), inputs.len());
        }
        let mut v = [(DType::F32, &[][..]); 8];
        for (i, name) in NAMES[..8].iter().enumerate() {
            v[i] = required(inputs, i, name)?;
        }
        let [x, sx, zx, w, sw, zw, sy, zy] = v;
        require_q8(x.0, "x")?;
        require_q8(w.0, "w")?;
        require_q8(zy.0, "y_zero_point")?;
        let shape = conv_shape(&self.conv, x.1, w.1)?;
        for (s, what) in [(sx, "x_scale"), (sw, "w_scale"), (sy, "y_scale")] {
            require_scale_type(s.0, what)?;
            if s.0 != DType::F32 {
                invalid!("{what} must be float32 (QLinearConv's scales are float32), got {}", s.0);
            }
        }
        for (s, what) in [(sx, "x_scale"), (sy, "y_scale")] {
            if numel(s.1) != 1 {
                invalid!("{what} must be a scalar (per-tensor), got shape {:?}", s.1);
            }
        }
        if numel(sw.1) != 1 && !(sw.1.len() == 1 && sw.1[0] == shape.m) {
            invalid!("w_scale must be a scalar or 1-D with one value per output channel ({}), got {:?}", shape.m, sw.1);
        }
        check_vector_zp(zx, x.0, 1, "x_zero_point", "tensor")?;
        check_vector_zp(zw, w.0, shape.m, "w_zero_point", "output channel")?;
        check_vector_zp(zy, zy.0, 1, "y_zero_point", "tensor")?;
        if let Some(b) = optional(inputs, 8)
            && (b.0 != DType::I32 || b.1 != [shape.m])
        {
            invalid!("bias B must be int32 of shape [{}], got {} {:?}", shape.m, b.0, b.1);
        }
        Ok((shape, zy.0))
    }
}

impl Op for QLinearConv {
    fn op_type(&self) -> &'static str {
        "QLinearConv"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        let ts: Vec<_> = inputs.iter().map(|i| i.map(|i| (i.dtype, i.shape))).collect();
        let (shape, dtype) = self.check(&ts)?;
        Ok(vec![TypeShape::new(dtype, shape.shape())])
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        if inputs.len() < 8 || inputs.len() > 9 {
            invalid!("QLinearConv takes 8 or 9 inputs, got {}", inputs.len());
        }
        let mut ts = [None; 9];
        for (t, i) in ts.iter_mut().zip(inputs) {
            *t = i.map(|i| (i.dtype(), i.shape));
        }
        let (shape, dtype) = self.check(&ts[..inputs.len()])?;
        let t = |i: usize| required(inputs, i, NAMES[i]);
        let (x, sx, zx, w, sw, zw, sy, zy) = (t(0)?, t(1)?, t(2)?, t(3)?, t(4)?, t(5)?, t(6)?, t(7)?);
        let bias = match optional(inputs, 8) {
            Some(b) => Some(b.typed::<i32>()?),
            None => None,
        };
        let y = outputs.first_mut().ok_or_else(|| invalid_err!("QLinearConv needs one output"))?;
        let (lo, hi) = qrange(dtype)?;
        let (xs, ys) = (read_scale(sx.data, 0), read_scale(sy.data, 0));
        let (xzp, yzp) = (read_q(zx.data, 0), read_q(zy.data, 0));
        let per = |d: crate::tensor::DataRef, m: usize| if d.len() == 1 { 0 } else { m };
        let wzp = |m: usize| read_q(zw.data, per(zw.data, m));
        if y.dtype() != dtype || y.data.len() != shape.numel() {
            invalid!("QLinearConv: output type or size does not match the inferred one");
        }
        let out = &mut y.data;
        conv_i32(&self.conv, x, w, xzp, wzp, bias, |o, m, acc| {
            let mult = multiplier(DType::F32, xs, read_scale(sw.data, per(sw.data, m)), ys);
            write_q(out, o, requantize(acc, mult, yzp, lo, hi));
        })
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
    fn f(v: f32) -> Tensor {
        Tensor::scalar_f32(v)
    }

    #[test]
    fn one_by_one_hand_checked() {
        // y = round((x - 10) * 2 * 0.5 / 0.25) + 3 = 4 (x - 10) + 3, saturated to uint8.
        let x = u8s(&[1, 1, 2, 2], vec![10, 11, 70, 5]);
        let w = u8s(&[1, 1, 1, 1], vec![2 + 4]);
        let ins = [x, f(0.5), u8s(&[], vec![10]), w, f(1.0), u8s(&[], vec![4]), f(0.25), u8s(&[], vec![3])];
        let refs: Vec<Option<&Tensor>> = ins.iter().map(Some).collect();
        let op = QLinearConv::build(&Attrs::new(), 10).unwrap();
        let y = eval(&op, &refs).unwrap();
        assert_eq!(y[0].data(), &TensorData::U8(vec![3, 7, 243, 0]));
    }

    /// Random per-channel u8 x s8 with bias against float conv of the dequantized values,
    /// requantized: within one step.
    #[test]
    fn random_per_channel_within_one_step_of_float_conv() {
        let mut rng = Rng::new(21);
        let (n, c, h, wd, m) = (2, 3, 6, 5, 4);
        let xs: Vec<u8> = (0..n * c * h * wd).map(|_| (rng.sym() * 127.0 + 128.0) as u8).collect();
        let ws: Vec<i8> = (0..m * c * 9).map(|_| (rng.sym() * 127.0) as i8).collect();
        let wsc: Vec<f32> = (0..m).map(|i| 0.002 * (i + 1) as f32).collect();
        let bias: Vec<i32> = (0..m).map(|i| (i as i32 - 2) * 300).collect();
        let (xsc, xz, ysc, yz) = (0.03f32, 128u8, 0.08f32, 100u8);
        let attrs = Attrs::new().with("pads", Attr::Ints(vec![1; 4])).with("strides", Attr::Ints(vec![2, 2]));
        let op = QLinearConv::build(&attrs, 10).unwrap();
        let ins = [
            u8s(&[n, c, h, wd], xs.clone()),
            f(xsc),
            u8s(&[], vec![xz]),
            Tensor::new(vec![m, c, 3, 3], TensorData::I8(ws.clone())).unwrap(),
            Tensor::from_f32(&[m], wsc.clone()).unwrap(),
            Tensor::new(vec![m], TensorData::I8(vec![0; m])).unwrap(),
            f(ysc),
            u8s(&[], vec![yz]),
            Tensor::new(vec![m], TensorData::I32(bias.clone())).unwrap(),
        ];
        let refs: Vec<Option<&Tensor>> = ins.iter().map(Some).collect();
        let y = eval(&op, &refs).unwrap();
        let xf = Tensor::from_f32(&[n, c, h, wd], xs.iter().map(|&v| (v as f32 - xz as f32) * xsc).collect()).unwrap();
        let wf =
            Tensor::from_f32(&[m, c, 3, 3], ws.iter().enumerate().map(|(i, &v)| v as f32 * wsc[i / (c * 9)]).collect())
                .unwrap();
        let bf =
            Tensor::from_f32(&[m], bias.iter().enumerate().map(|(i, &b)| b as f32 * xsc * wsc[i]).collect()).unwrap();
        let want = eval(&op.conv, &[Some(&xf), Some(&wf), Some(&bf)]).unwrap();
        let TensorData::U8(got) = y[0].data() else { panic!("uint8 output") };
        let out_size = want[0].len() / (n * m);
        for (i, (&g, &r)) in got.iter().zip(want[0].as_f32().unwrap()).enumerate() {
            let q = (r / ysc + yz as f32).clamp(0.0, 255.0);
            assert!((g as f32 - q).abs() <= 1.0, "output {i} (channel {}): {g} vs {q}", (i / out_size) % m);
        }
    }

    #[test]
    fn bad_inputs_are_errors() {
        let x = u8s(&[1, 1, 2, 2], vec![0; 4]);
        let w = u8s(&[2, 1, 1, 1], vec![0; 2]);
        let z = u8s(&[], vec![0]);
        let good = vec![x, f(1.), z.clone(), w, f(1.), z.clone(), f(1.), z];
        let op = QLinearConv::build(&Attrs::new(), 10).unwrap();
        let run = |ins: &[Tensor]| {
            let refs: Vec<Option<&Tensor>> = ins.iter().map(Some).collect();
            eval(&op, &refs).map(|_| ()).map_err(|e| e.to_string())
        };
        assert!(run(&good).is_ok());
        let mut bad = good.clone();
        bad[4] = Tensor::from_f32(&[3], vec![1.; 3]).unwrap();
        assert!(run(&bad).unwrap_err().contains("one value per output channel (2)"));
        let mut bad = good.clone();
        bad[1] = Tensor::from_f32(&[2], vec![1.; 2]).unwrap();
        assert!(run(&bad).unwrap_err().contains("x_scale must be a scalar"));
        let mut bad = good.clone();
        bad.push(Tensor::from_f32(&[2], vec![0.; 2]).unwrap());
        assert!(run(&bad).unwrap_err().contains("bias B must be int32"));
        let mut bad = good;
        bad[7] = Tensor::new(vec![], TensorData::I32(vec![0])).unwrap();
        assert!(run(&bad).unwrap_err().contains("y_zero_point must be uint8 or int8"));
    }
}
