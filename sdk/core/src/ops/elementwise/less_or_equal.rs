//! LessOrEqual (opset 12): `C = (A <= B)` with broadcasting; the output is bool.

use crate::error::Result;
use crate::ops::elementwise::binary;
use crate::ops::elementwise::common::{NUMERIC, with_any};
use crate::ops::{Attrs, InferInput, Op, TypeShape};
use crate::tensor::{DType, TensorMut, TensorRef};

/// The ONNX LessOrEqual op (numeric types). NaN compares unequal and unordered.
#[derive(Clone, Debug)]
pub struct LessOrEqual;

impl LessOrEqual {
    /// Builds the op (no attributes).
    pub fn build(_attrs: &Attrs, _opset: i64) -> Result<LessOrEqual> {
        Ok(LessOrEqual)
    }
}

impl Op for LessOrEqual {
    fn op_type(&self) -> &'static str {
        "LessOrEqual"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        binary::infer(self.op_type(), inputs, NUMERIC, Some(DType::Bool))
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let (a, b, y) = binary::io(inputs, outputs)?;
        with_any!(a.dtype(), T => binary::zip::<T, T, bool>(a, b, y, |p, q| p <= q))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::elementwise::testutil::*;
    use crate::ops::eval;

    fn op() -> LessOrEqual {
        LessOrEqual::build(&Attrs::new(), 21).unwrap()
    }

    #[test]
    fn known_values() {
        let a = f32s(&[2, 3], &[1.0, 2.0, 3.0, f32::NAN, 5.0, -0.0]);
        let b = f32s(&[3], &[2.0, 2.0, 2.0]);
        let y = run1(&op(), &[&a, &b]);
        assert_eq!(y.dtype(), DType::Bool);
        let want: Vec<f64> = [1.0, 2.0, 3.0, f64::NAN, 5.0, -0.0]
            .iter()
            .map(|&a: &f64| {
                let b = 2.0;
                (a <= b) as u8 as f64
            })
            .collect();
        assert_eq!(values(&y), want);
        let zeros = run1(&op(), &[&f32s(&[1], &[0.0]), &f32s(&[1], &[-0.0])]);
        let (a, b) = (0.0, -0.0);
        assert_eq!(values(&zeros), vec![(a <= b) as u8 as f64]);
    }

    #[test]
    fn random_matches_reference() {
        let reference = |a: f64, b: f64| (a <= b) as u8 as f64;
        for dtype in [DType::F32, DType::F16, DType::I8, DType::U8, DType::I32, DType::I64] {
            check_binary(&op(), dtype, DType::Bool, (0.0, 4.0), reference);
        }
    }

    #[test]
    fn rejects_bad_inputs() {
        let a = f32s(&[2, 3], &[0.0; 6]);
        assert!(eval(&op(), &[Some(&a), Some(&f32s(&[2], &[0.0; 2]))]).is_err());
        assert!(eval(&op(), &[Some(&a), Some(&tensor(DType::I64, &[1], &[1.0]))]).is_err());
        assert!(eval(&op(), &[Some(&a), Some(&a), Some(&a)]).is_err());
    }

    #[test]
    fn rejects_bool() {
        let a = tensor(DType::Bool, &[1], &[1.0]);
        assert!(eval(&op(), &[Some(&a), Some(&a)]).is_err());
    }
}
