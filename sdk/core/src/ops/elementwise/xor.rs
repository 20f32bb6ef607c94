//! Xor: logical exclusive or of two bool tensors, with broadcasting.

use crate::error::Result;
use crate::ops::elementwise::binary;
use crate::ops::elementwise::common::BOOL;
use crate::ops::{Attrs, InferInput, Op, TypeShape};
use crate::tensor::{TensorMut, TensorRef};

/// The ONNX Xor op.
#[derive(Clone, Debug)]
pub struct Xor;

impl Xor {
    /// Builds the op (no attributes from opset 7 on).
    pub fn build(_attrs: &Attrs, _opset: i64) -> Result<Xor> {
        Ok(Xor)
    }
}

impl Op for Xor {
    fn op_type(&self) -> &'static str {
        "Xor"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        binary::infer(self.op_type(), inputs, BOOL, None)
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let (a, b, y) = binary::io(inputs, outputs)?;
        binary::zip::<bool, bool, bool>(a, b, y, |p, q| p ^ q)
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
            [(0.0, 0.0), (0.0, 1.0), (1.0, 0.0), (1.0, 1.0)].iter().map(|&(a, b): &(f64, f64)| (a - b).abs()).collect();
        assert_eq!(values(&run1(&Xor, &[&a, &b])), want);
    }

    #[test]
    fn random_matches_reference() {
        check_binary(&Xor, DType::Bool, DType::Bool, (0.0, 1.0), |a, b| (a - b).abs());
    }

    #[test]
    fn rejects_bad_inputs() {
        let f = f32s(&[1], &[1.0]);
        assert!(eval(&Xor, &[Some(&f), Some(&f)]).is_err());
        let a = tensor(DType::Bool, &[2], &[0.0, 1.0]);
        assert!(eval(&Xor, &[Some(&a), Some(&tensor(DType::Bool, &[3], &[0.0; 3]))]).is_err());
    }
}
