//! Not: logical negation of a bool tensor.

use crate::error::Result;
use crate::ops::elementwise::common::BOOL;
use crate::ops::elementwise::unary;
use crate::ops::{Attrs, InferInput, Op, TypeShape};
use crate::tensor::{TensorMut, TensorRef};

/// The ONNX Not op.
#[derive(Clone, Debug)]
pub struct Not;

impl Not {
    /// Builds the op (no attributes).
    pub fn build(_attrs: &Attrs, _opset: i64) -> Result<Not> {
        Ok(Not)
    }
}

impl Op for Not {
    fn op_type(&self) -> &'static str {
        "Not"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        unary::infer(self.op_type(), inputs, BOOL)
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let (x, y) = unary::io(inputs, outputs)?;
        unary::map::<bool, bool>(x, y, |v| !v)
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
        let y = run1(&Not, &[&tensor(DType::Bool, &[2, 2], &[1.0, 0.0, 0.0, 1.0])]);
        assert_eq!(values(&y), vec![0.0, 1.0, 1.0, 0.0]);
    }

    #[test]
    fn random_matches_reference() {
        check_unary(&Not, &[DType::Bool], 0.0, 1.0, |x| 1.0 - x);
    }

    #[test]
    fn rejects_bad_inputs() {
        assert!(eval(&Not, &[Some(&f32s(&[1], &[1.0]))]).is_err());
    }
}
