//! Neg: `y = -x` (signed types; integers wrap, so `-i8::MIN` is `i8::MIN` as in numpy).

use crate::error::Result;
use crate::ops::elementwise::common::{SIGNED, with_numeric};
use crate::ops::elementwise::num::Num;
use crate::ops::elementwise::unary;
use crate::ops::{Attrs, InferInput, Op, TypeShape};
use crate::tensor::{TensorMut, TensorRef};

/// The ONNX Neg op.
#[derive(Clone, Debug)]
pub struct Neg;

impl Neg {
    /// Builds the op (no attributes).
    pub fn build(_attrs: &Attrs, _opset: i64) -> Result<Neg> {
        Ok(Neg)
    }
}

impl Op for Neg {
    fn op_type(&self) -> &'static str {
        "Neg"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        unary::infer(self.op_type(), inputs, SIGNED)
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let (x, y) = unary::io(inputs, outputs)?;
        with_numeric!(x.dtype(), T => unary::map::<T, T>(x, y, <T as Num>::neg))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::elementwise::testutil::*;
    use crate::ops::eval;
    use crate::tensor::DType;

    #[test]
    fn known_values() {
        let y = run1(&Neg, &[&tensor(DType::I8, &[3], &[-128.0, 5.0, 0.0])]);
        assert_eq!(values(&y), vec![-128.0, -5.0, 0.0]);
        let y = run1(&Neg, &[&f32s(&[2], &[1.5, -2.0])]);
        assert_eq!(values(&y), vec![-1.5, 2.0]);
    }

    #[test]
    fn random_matches_reference() {
        check_unary(&Neg, &[DType::F32, DType::F16, DType::I8, DType::I32, DType::I64], -100.0, 100.0, |x| -x);
    }

    #[test]
    fn rejects_bad_inputs() {
        assert!(eval(&Neg, &[Some(&tensor(DType::U8, &[1], &[1.0]))]).is_err());
        assert!(eval(&Neg, &[Some(&tensor(DType::Bool, &[1], &[1.0]))]).is_err());
        assert!(eval(&Neg, &[None]).is_err());
    }
}
