//! MatMulInteger (opset 10+): `Y = (A - a_zero_point) · (B - b_zero_point)` in int32, with
//! numpy `matmul` broadcasting. `a_zero_point` is a scalar or one value per row of A (M),
//! `b_zero_point` a scalar or one value per column of B (N).

use super::common::{read_q, require_q8};
use super::integer::matmul_i32;
use crate::error::Result;
use crate::ops::linalg::matmul::Geometry;
use crate::ops::{Attrs, InferInput, Op, TypeShape, optional, required};
use crate::tensor::{DType, TensorMut, TensorRef, numel};
use crate::{invalid, invalid_err};

/// The MatMulInteger op (no attributes).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MatMulInteger;

impl MatMulInteger {
    /// MatMulInteger has no attributes.
    pub fn build(_attrs: &Attrs, _opset: i64) -> Result<Self> {
        Ok(MatMulInteger)
    }
}

/// Checks a zero point against its operand: same type, and a scalar or `len` values
/// (`per` says what they are one per).
pub fn check_vector_zp(zp: (DType, &[usize]), op_type: DType, len: usize, what: &str, per: &str) -> Result<()> {
    if zp.0 != op_type {
        invalid!("{what} has type {}, it must match its operand's type {op_type}", zp.0);
    }
    let count = numel(zp.1);
    if count != 1 && !(zp.1.len() == 1 && count == len) {
        invalid!("{what} must be a scalar or 1-D with one value per {per} ({len}), got shape {:?}", zp.1);
    }
    Ok(())
}

fn check(inputs: &[Option<(DType, &[usize])>]) -> Result<Geometry> {
    if inputs.len() < 2 || inputs.len() > 4 {
        invalid!("MatMulInteger takes 2 to 4 inputs (A, B, a_zero_point, b_zero_point), got {}", inputs.len());
    }
    let a = required(inputs, 0, "A")?;
    let b = required(inputs, 1, "B")?;
    require_q8(a.0, "A")?;
    require_q8(b.0, "B")?;
    let g = Geometry::new(a.1, b.1)?;
    if let Some(z) = optional(inputs, 2) {
        check_vector_zp(z, a.0, g.m, "a_zero_point", "row of A")?;
    }
    if let Some(z) = optional(inputs, 3) {
        check_vector_zp(z, b.0, g.n, "b_zero_point", "column of B")?;
    }
    Ok(g)
}

impl Op for MatMulInteger {
    fn op_type(&self) -> &'static str {
        "MatMulInteger"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        let ts: Vec<_> = inputs.iter().map(|i| i.map(|i| (i.dtype, i.shape))).collect();
        let g = check(&ts)?;
        Ok(vec![TypeShape::new(DType::I32, g.out_shape())])
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        // A fixed array keeps `run` free of heap allocation.
        let mut ts = [None; 4];
        for (t, i) in ts.iter_mut().zip(inputs) {
            *t = i.map(|i| (i.dtype(), i.shape));
        }
        let g = check(&ts[..inputs.len().min(4)])?;
        let (a, b) = (required(inputs, 0, "A")?, required(inputs, 1, "B")?);
        let (az, bz) = (optional(inputs, 2), optional(inputs, 3));
        let y = outputs.first_mut().ok_or_else(|| invalid_err!("MatMulInteger needs one output"))?;
        if a.data.len() != numel(a.shape) || b.data.len() != numel(b.shape) {
            invalid!("MatMulInteger: operand sizes do not match their shapes");
        }
        let out = y.typed_mut::<i32>()?;
        if out.len() != g.batches() * g.m * g.n {
            invalid!("output has {} elements, the product needs {}", out.len(), g.batches() * g.m * g.n);
        }
        let zp =
            |z: Option<TensorRef>, i: usize| z.map_or(0, |z| read_q(z.data, if z.data.len() == 1 { 0 } else { i }));
        matmul_i32(&g, a.data, b.data, |i| zp(az, i), |j| zp(bz, j), |o, _, _, acc| out[o] = acc);
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
    fn i8s(shape: &[usize], v: Vec<i8>) -> Tensor {
        Tensor::new(shape.to_vec(), TensorData::I8(v)).unwrap()
    }

    #[test]
    fn onnx_example_and_per_row_zero_points() {
        // ONNX's test_matmulinteger.
        let a = u8s(&[4, 3], vec![11, 7, 3, 10, 6, 2, 9, 5, 1, 8, 4, 0]);
        let b = u8s(&[3, 2], vec![1, 4, 2, 5, 3, 6]);
        let y =
            eval(&MatMulInteger, &[Some(&a), Some(&b), Some(&u8s(&[1], vec![12])), Some(&u8s(&[1], vec![0]))]).unwrap();
        assert_eq!(y[0].data(), &TensorData::I32(vec![-38, -83, -44, -98, -50, -113, -56, -128]));
        // Per-row A zero points and per-column B zero points, int8 x uint8.
        let a = i8s(&[2, 2], vec![1, 2, 3, 4]);
        let b = u8s(&[2, 2], vec![10, 20, 30, 40]);
        let y =
            eval(&MatMulInteger, &[Some(&a), Some(&b), Some(&i8s(&[2], vec![1, -1])), Some(&u8s(&[2], vec![10, 0]))])
                .unwrap();
        // rows (0, 1) and (4, 5); columns (0, 20) and (20, 40).
        assert_eq!(y[0].data(), &TensorData::I32(vec![20, 40, 100, 280]));
    }

    #[test]
    fn random_batched_against_widened_loop() {
        let mut rng = Rng(5);
        for &(ash, bsh) in &[(&[3, 7, 13][..], &[13, 5][..]), (&[2, 1, 4, 9][..], &[3, 9, 7][..])] {
            let na: usize = ash.iter().product();
            let nb: usize = bsh.iter().product();
            let av: Vec<u8> = (0..na).map(|_| rng.int(0, 256) as u8).collect();
            let bv: Vec<i8> = (0..nb).map(|_| rng.int(-128, 128) as i8).collect();
            let (za, zb) = (rng.int(0, 256) as u8, rng.int(-128, 128) as i8);
            let y = eval(
                &MatMulInteger,
                &[
                    Some(&u8s(ash, av.clone())),
                    Some(&i8s(bsh, bv.clone())),
                    Some(&u8s(&[], vec![za])),
                    Some(&i8s(&[], vec![zb])),
                ],
            )
            .unwrap();
            // Same products through MatMul on int64 (independent batching code).
            let a64 = Tensor::from_i64(ash, av.iter().map(|&v| v as i64 - za as i64).collect()).unwrap();
            let b64 = Tensor::from_i64(bsh, bv.iter().map(|&v| v as i64 - zb as i64).collect()).unwrap();
            let want = eval(&crate::ops::linalg::matmul::MatMul, &[Some(&a64), Some(&b64)]).unwrap();
            assert_eq!(y[0].shape(), want[0].shape());
            assert_eq!(y[0].to_i64_vec().unwrap(), want[0].to_i64_vec().unwrap());
        }
    }

    #[test]
    fn bad_inputs_are_errors() {
        let a = u8s(&[2, 2], vec![0; 4]);
        let f = Tensor::from_f32(&[2, 2], vec![0.; 4]).unwrap();
        assert!(eval(&MatMulInteger, &[Some(&f), Some(&a)]).is_err());
        let e = eval(&MatMulInteger, &[Some(&a), Some(&a), Some(&i8s(&[], vec![0]))]).unwrap_err().to_string();
        assert!(e.contains("must match its operand's type uint8"), "{e}");
        let e = eval(&MatMulInteger, &[Some(&a), Some(&a), Some(&u8s(&[3], vec![0; 3]))]).unwrap_err().to_string();
        assert!(e.contains("one value per row of A (2)"), "{e}");
        assert!(eval(&MatMulInteger, &[Some(&a), Some(&u8s(&[3, 2], vec![0; 6]))]).is_err(), "K mismatch");
    }
}
