//! QLinearMatMul (opsets 10, 21): a quantized matrix product with numpy `matmul`
//! broadcasting,
//!
//! ```text
//! acc = (a - a_zero_point) · (b - b_zero_point)                 (int32)
//! y   = saturate(round_half_even(acc * a_scale * b_scale / y_scale) + y_zero_point)
//! ```
//!
//! `a_scale`/`a_zero_point` and `y_scale`/`y_zero_point` are scalars or one value per row of
//! A (M); `b_scale`/`b_zero_point` scalars or one value per column of B (N). The multiplier is
//! computed in the scales' type (float32, or float16 from opset 21), as ONNX's reference.

use super::common::{multiplier, qrange, read_q, read_scale, requantize, require_q8, require_scale_type, write_q};
use super::integer::matmul_i32;
use super::matmul_integer::check_vector_zp;
use crate::error::Result;
use crate::ops::linalg::matmul::Geometry;
use crate::ops::{Attrs, InferInput, Op, TypeShape, required};
use crate::tensor::{DType, DataRef, TensorMut, TensorRef, numel};
use crate::{invalid, invalid_err};

/// The QLinearMatMul op (no attributes).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QLinearMatMul;

impl QLinearMatMul {
    /// QLinearMatMul has no attributes.
    pub fn build(_attrs: &Attrs, _opset: i64) -> Result<Self> {
        Ok(QLinearMatMul)
    }
}

/// Checks a scale: float, the given type, a scalar or `len` values (one per `per`).
fn check_vector_scale(s: (DType, &[usize]), scale_type: DType, len: usize, what: &str, per: &str) -> Result<()> {
    require_scale_type(s.0, what)?;
    if s.0 != scale_type {
        invalid!("{what} has type {}, but a_scale has {scale_type}: all scales must share one type", s.0);
    }
    let count = numel(s.1);
    if count != 1 && !(s.1.len() == 1 && count == len) {
        invalid!("{what} must be a scalar or 1-D with one value per {per} ({len}), got shape {:?}", s.1);
    }
    Ok(())
}

/// Checks the 8 inputs; returns the geometry and the output type.
fn check(inputs: &[Option<(DType, &[usize])>]) -> Result<(Geometry, DType)> {
    if inputs.len() != 8 {
        invalid!(
            "QLinearMatMul takes 8 inputs (a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, \
             y_zero_point), got {}",
            inputs.len()
        );
    }
    let names = ["a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "y_scale", "y_zero_point"];
    let mut v = [(DType::F32, &[][..]); 8];
    for (i, name) in names.iter().enumerate() {
        v[i] = required(inputs, i, name)?;
    }
    let [a, sa, za, b, sb, zb, sy, zy] = v;
    require_q8(a.0, "a")?;
    require_q8(b.0, "b")?;
    require_q8(zy.0, "y_zero_point")?;
    let g = Geometry::new(a.1, b.1)?;
    require_scale_type(sa.0, "a_scale")?;
    check_vector_scale(sa, sa.0, g.m, "a_scale", "row of a")?;
    check_vector_scale(sb, sa.0, g.n, "b_scale", "column of b")?;
    check_vector_scale(sy, sa.0, g.m, "y_scale", "row of the output")?;
    check_vector_zp(za, a.0, g.m, "a_zero_point", "row of a")?;
    check_vector_zp(zb, b.0, g.n, "b_zero_point", "column of b")?;
    check_vector_zp(zy, zy.0, g.m, "y_zero_point", "row of the output")?;
    for (z, s, what) in [(za, sa, "a"), (zb, sb, "b"), (zy, sy, "y")] {
        if numel(z.1) != numel(s.1) {
            invalid!("{what}_zero_point has shape {:?} but {what}_scale has {:?}: they must match", z.1, s.1);
        }
    }
    Ok((g, zy.0))
}

/// Value `i` of a scalar-or-vector parameter.
#[inline]
fn at(d: DataRef, i: usize) -> usize {
    if d.len() == 1 { 0 } else { i }
}

impl Op for QLinearMatMul {
    fn op_type(&self) -> &'static str {
        "QLinearMatMul"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        let ts: Vec<_> = inputs.iter().map(|i| i.map(|i| (i.dtype, i.shape))).collect();
        let (g, dtype) = check(&ts)?;
        Ok(vec![TypeShape::new(dtype, g.out_shape())])
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let mut ts = [None; 8];
        if inputs.len() != 8 {
            invalid!("QLinearMatMul takes 8 inputs, got {}", inputs.len());
        }
        for (t, i) in ts.iter_mut().zip(inputs) {
            *t = i.map(|i| (i.dtype(), i.shape));
        }
        let (g, dtype) = check(&ts)?;
        let t = |i: usize| required(inputs, i, "input");
        let (a, sa, za, b, sb, zb, sy, zy) = (t(0)?, t(1)?, t(2)?, t(3)?, t(4)?, t(5)?, t(6)?, t(7)?);
        if a.data.len() != numel(a.shape) || b.data.len() != numel(b.shape) {
            invalid!("QLinearMatMul: operand sizes do not match their shapes");
        }
        let y = outputs.first_mut().ok_or_else(|| invalid_err!("QLinearMatMul needs one output"))?;
        if y.dtype() != dtype || y.data.len() != g.batches() * g.m * g.n {
            invalid!("QLinearMatMul: output type or size does not match the inferred one");
        }
        let (lo, hi) = qrange(dtype)?;
        let scale_type = sa.dtype();
        let out = &mut y.data;
        matmul_i32(
            &g,
            a.data,
            b.data,
            |i| read_q(za.data, at(za.data, i)),
            |j| read_q(zb.data, at(zb.data, j)),
            |o, i, j, acc| {
                let mult = multiplier(
                    scale_type,
                    read_scale(sa.data, at(sa.data, i)),
                    read_scale(sb.data, at(sb.data, j)),
                    read_scale(sy.data, at(sy.data, i)),
                );
                write_q(out, o, requantize(acc, mult, read_q(zy.data, at(zy.data, i)), lo, hi));
            },
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::eval;
    use crate::ops::linalg::common::testutil::Rng;
    use crate::tensor::{Tensor, TensorData};

    fn u8s(shape: &[usize], v: Vec<u8>) -> Tensor {
        Tensor::new(shape.to_vec(), TensorData::U8(v)).unwrap()
    }
    fn f(v: f32) -> Tensor {
        Tensor::from_f32(&[1], vec![v]).unwrap()
    }

    #[test]
    fn onnx_example_uint8() {
        // ONNX's QLinearMatMul example (test_qlinearmatmul_2D_uint8_float32).
        let a = u8s(&[2, 4], vec![208, 236, 0, 238, 3, 214, 255, 29]);
        let b = u8s(&[4, 3], vec![152, 51, 244, 60, 26, 255, 0, 127, 246, 127, 254, 247]);
        let ins =
            [a, f(0.0066), u8s(&[1], vec![113]), b, f(0.00705), u8s(&[1], vec![114]), f(0.0107), u8s(&[1], vec![118])];
        let refs: Vec<Option<&Tensor>> = ins.iter().map(Some).collect();
        let y = eval(&QLinearMatMul, &refs).unwrap();
        assert_eq!(y[0].data(), &TensorData::U8(vec![168, 115, 255, 1, 66, 151]));
    }

    /// Against dequantize -> f64 matmul -> quantize, with per-column B scales: the exact
    /// real result is within half a step of the op's rounding of it, so the two agree
    /// within one step.
    #[test]
    fn random_within_one_step_of_float_math() {
        let mut rng = Rng(9);
        let (m, k, n) = (7, 13, 5);
        let av: Vec<u8> = (0..m * k).map(|_| rng.int(0, 256) as u8).collect();
        let bv: Vec<i8> = (0..k * n).map(|_| rng.int(-127, 128) as i8).collect();
        let bs: Vec<f32> = (0..n).map(|_| rng.uniform(0.001, 0.01) as f32).collect();
        let (as_, za, ys, zy) = (0.02f32, 120u8, 0.05f32, 7i8);
        let ins = [
            u8s(&[m, k], av.clone()),
            f(as_),
            u8s(&[], vec![za]),
            Tensor::new(vec![k, n], TensorData::I8(bv.clone())).unwrap(),
            Tensor::from_f32(&[n], bs.clone()).unwrap(),
            Tensor::new(vec![n], TensorData::I8(vec![0; n])).unwrap(),
            f(ys),
            Tensor::new(vec![], TensorData::I8(vec![zy])).unwrap(),
        ];
        let refs: Vec<Option<&Tensor>> = ins.iter().map(Some).collect();
        let y = eval(&QLinearMatMul, &refs).unwrap();
        let TensorData::I8(got) = y[0].data() else { panic!("int8 output") };
        for i in 0..m {
            for j in 0..n {
                let real: f64 = (0..k)
                    .map(|p| (av[i * k + p] as f64 - za as f64) * as_ as f64 * bv[p * n + j] as f64 * bs[j] as f64)
                    .sum();
                let want = (real / ys as f64 + zy as f64).clamp(-128.0, 127.0);
                assert!((got[i * n + j] as f64 - want).abs() <= 0.5 + 1e-3, "({i},{j}): {} vs {want}", got[i * n + j]);
            }
        }
    }

    #[test]
    fn bad_inputs_are_errors() {
        let a = u8s(&[2, 2], vec![0; 4]);
        let z = u8s(&[], vec![0]);
        let good = [a.clone(), f(1.), z.clone(), a.clone(), f(1.), z.clone(), f(1.), z.clone()];
        let run = |ins: &[Tensor]| {
            let refs: Vec<Option<&Tensor>> = ins.iter().map(Some).collect();
            eval(&QLinearMatMul, &refs).map(|_| ()).map_err(|e| e.to_string())
        };
        assert!(run(&good).is_ok());
        assert!(run(&good[..7]).unwrap_err().contains("8 inputs"));
        let mut bad = good.clone();
        bad[4] = Tensor::from_f32(&[3], vec![1.; 3]).unwrap();
        assert!(run(&bad).unwrap_err().contains("one value per column of b (2)"));
        let mut bad = good.clone();
        bad[1] = Tensor::new(vec![], TensorData::F16(vec![half::f16::ONE])).unwrap();
        assert!(run(&bad).unwrap_err().contains("share one type"));
        let mut bad = good.clone();
        bad[2] = Tensor::new(vec![], TensorData::I8(vec![0])).unwrap();
        assert!(run(&bad).unwrap_err().contains("a_zero_point"));
        let mut bad = good;
        bad[5] = u8s(&[2], vec![0, 0]);
        assert!(run(&bad).unwrap_err().contains("must match"));
    }
}
