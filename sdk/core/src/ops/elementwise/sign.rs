//! Sign: -1, 0 or 1 by the sign of `x` (NaN stays NaN); every numeric type.

use crate::error::Result;
use crate::ops::elementwise::common::{NUMERIC, with_numeric};
use crate::ops::elementwise::num::Num;
use crate::ops::elementwise::unary;
use crate::ops::{Attrs, InferInput, Op, TypeShape};
use crate::tensor::{TensorMut, TensorRef};

/// The ONNX Sign op.
#[derive(Clone, Debug)]
pub struct Sign;

impl Sign {
    /// Builds the op (no attributes).
    pub fn build(_attrs: &Attrs, _opset: i64) -> Result<Sign> {
        Ok(Sign)
    }
}

impl Op for Sign {
    fn op_type(&self) -> &'static str {
        "Sign"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        unary::infer(self.op_type(), inputs, NUMERIC)
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let (x, y) = unary::io(inputs, outputs)?;
        with_numeric!(x.dtype(), T => unary::map::<T, T>(x, y, <T as Num>::sign))
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
        let y = run1(&Sign, &[&f32s(&[5], &[-3.5, 0.0, 2.0, f32::INFINITY, f32::NAN])]);
        let v = values(&y);
        assert_eq!(&v[..4], &[-1.0, 0.0, 1.0, 1.0]);
        assert!(v[4].is_nan());
        let y = run1(&Sign, &[&tensor(DType::U8, &[2], &[0.0, 200.0])]);
        assert_eq!(values(&y), vec![0.0, 1.0]);
    }

    #[test]
    fn random_matches_reference() {
        let reference = |x: f64| {
            if x > 0.0 {
                1.0
            } else if x < 0.0 {
                -1.0
            } else {
                0.0
            }
        };
        check_unary(&Sign, &[DType::F32, DType::F16, DType::I8, DType::I32, DType::I64], -5.0, 5.0, reference);
    }

    #[test]
    fn rejects_bad_inputs() {
        assert!(eval(&Sign, &[Some(&tensor(DType::Bool, &[1], &[1.0]))]).is_err());
    }
}
