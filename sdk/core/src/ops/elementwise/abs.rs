//! Abs: `y = |x|` (every numeric type; `|i8::MIN|` wraps to `i8::MIN` as in numpy).

use crate::error::Result;
use crate::ops::elementwise::common::{NUMERIC, with_numeric};
use crate::ops::elementwise::num::Num;
use crate::ops::elementwise::unary;
use crate::ops::{Attrs, InferInput, Op, TypeShape};
use crate::tensor::{TensorMut, TensorRef};

/// The ONNX Abs op.
#[derive(Clone, Debug)]
pub struct Abs;

impl Abs {
    /// Builds the op (no attributes).
    pub fn build(_attrs: &Attrs, _opset: i64) -> Result<Abs> {
        Ok(Abs)
    }
}

impl Op for Abs {
    fn op_type(&self) -> &'static str {
        "Abs"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        unary::infer(self.op_type(), inputs, NUMERIC)
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let (x, y) = unary::io(inputs, outputs)?;
        with_numeric!(x.dtype(), T => unary::map::<T, T>(x, y, <T as Num>::abs))
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
        let y = run1(&Abs, &[&tensor(DType::I8, &[3], &[-128.0, -5.0, 7.0])]);
        assert_eq!(values(&y), vec![-128.0, 5.0, 7.0]);
        let y = run1(&Abs, &[&tensor(DType::U8, &[2], &[0.0, 255.0])]);
        assert_eq!(values(&y), vec![0.0, 255.0]);
        let y = run1(&Abs, &[&f32s(&[3], &[-1.5, -0.0, 2.0])]);
        assert_eq!(values(&y), vec![1.5, 0.0, 2.0]);
    }

    #[test]
    fn random_matches_reference() {
        let all = [DType::F32, DType::F16, DType::I8, DType::I32, DType::I64];
        check_unary(&Abs, &all, -100.0, 100.0, f64::abs);
        check_unary(&Abs, &[DType::U8], 0.0, 255.0, f64::abs);
    }

    #[test]
    fn rejects_bad_inputs() {
        assert!(eval(&Abs, &[Some(&tensor(DType::Bool, &[1], &[1.0]))]).is_err());
        assert!(eval(&Abs, &[]).is_err());
    }
}
