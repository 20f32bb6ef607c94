//! Or: logical or of two bool tensors, with broadcasting.

use crate::error::Result;
use crate::ops::elementwise::binary;
use crate::ops::elementwise::common::BOOL;
use crate::ops::{Attrs, InferInput, Op, TypeShape};
use crate::tensor::{TensorMut, TensorRef};

/// The ONNX Or op.
#[derive(Clone, Debug)]
pub struct Or;

impl Or {
    /// Builds the op (no attributes from opset 7 on).
    pub fn build(_attrs: &Attrs, _opset: i64) -> Result<Or> {
        Ok(Or)
    }
}

impl Op for Or {
    fn op_type(&self) -> &'static str {
        "Or"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        binary::infer(self.op_type(), inputs, BOOL, None)
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let (a, b, y) = binary::io(inputs, outputs)?;
        binary::zip::<bool, bool, bool>(a, b, y, |p, q| p | q)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::elementwise::testutil::*;
    use crate::ops::eval;
    use crate::tensor::DType;

    #[test]
    fn truth_table() {
        let a = tensor(DType::Bool, &[4], &[0.0, 0.0, 1.0, 1.0]);
        let b = tensor(DType::Bool, &[4], &[0.0, 1.0, 0.0, 1.0]);
        let want: Vec<f64> =
            [(0.0, 0.0), (0.0, 1.0), (1.0, 0.0), (1.0, 1.0)].iter().map(|&(a, b): &(f64, f64)| a.max(b)).collect();
        assert_eq!(values(&run1(&Or, &[&a, &b])), want);
    }

    #[test]
    fn random_matches_reference() {
        check_binary(&Or, DType::Bool, DType::Bool, (0.0, 1.0), |a, b| a.max(b));
    }

    #[test]
    fn rejects_bad_inputs() {
        let f = f32s(&[1], &[1.0]);
        assert!(eval(&Or, &[Some(&f), Some(&f)]).is_err());
        let a = tensor(DType::Bool, &[2], &[0.0, 1.0]);
        assert!(eval(&Or, &[Some(&a), Some(&tensor(DType::Bool, &[3], &[0.0; 3]))]).is_err());
    }
}
