//! Relu: `y = max(0, x)` (NaN stays NaN).

use crate::error::Result;
use crate::ops::elementwise::common::{FLOATS, SIGNED, with_numeric};
use crate::ops::elementwise::num::Num;
use crate::ops::elementwise::unary;
use crate::ops::{Attrs, InferInput, Op, TypeShape};
use crate::tensor::{TensorMut, TensorRef};

/// The ONNX Relu op: float types, and signed integers from opset 14.
#[derive(Clone, Debug)]
pub struct Relu {
    opset: i64,
}

impl Relu {
    /// Builds the op (no attributes).
    pub fn build(_attrs: &Attrs, opset: i64) -> Result<Relu> {
        Ok(Relu { opset })
    }
}

impl Op for Relu {
    fn op_type(&self) -> &'static str {
        "Relu"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        unary::infer(self.op_type(), inputs, if self.opset >= 14 { SIGNED } else { FLOATS })
    }

    // `v < 0` is always false for uint8, which `infer` rejects anyway.
    #[allow(clippy::absurd_extreme_comparisons)]
    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let (x, y) = unary::io(inputs, outputs)?;
        with_numeric!(x.dtype(), T => unary::map::<T, T>(x, y, |v| if v < T::ZERO { T::ZERO } else { v }))
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
        let op = Relu::build(&Attrs::new(), 14).unwrap();
        let y = run1(&op, &[&f32s(&[5], &[-1.0, 0.0, 2.5, -0.0, f32::NAN])]);
        let v = values(&y);
        assert_eq!(&v[..4], &[0.0, 0.0, 2.5, -0.0]);
        assert!(v[4].is_nan());
        let y = run1(&op, &[&tensor(DType::I8, &[3], &[-128.0, 0.0, 127.0])]);
        assert_eq!(values(&y), vec![0.0, 0.0, 127.0]);
    }

    #[test]
    fn random_matches_reference() {
        let op = Relu::build(&Attrs::new(), 14).unwrap();
        check_unary(&op, &[DType::F32, DType::F16, DType::I8, DType::I32, DType::I64], -50.0, 50.0, |x| x.max(0.0));
    }

    #[test]
    fn rejects_bad_inputs() {
        let ints = tensor(DType::I32, &[2], &[1.0, -2.0]);
        assert!(eval(&Relu::build(&Attrs::new(), 13).unwrap(), &[Some(&ints)]).is_err());
        let op = Relu::build(&Attrs::new(), 14).unwrap();
        assert!(eval(&op, &[Some(&tensor(DType::U8, &[1], &[1.0]))]).is_err());
        assert!(eval(&op, &[Some(&tensor(DType::Bool, &[1], &[1.0]))]).is_err());
        assert!(eval(&op, &[Some(&ints), Some(&ints)]).is_err());
        assert!(eval(&op, &[]).is_err());
    }
}
