//! Mean: elementwise mean of one or more inputs, with broadcasting. F16 accumulates in f32.

use crate::error::Result;
use crate::invalid;
use crate::ops::elementwise::common::FLOATS;
use crate::ops::elementwise::sum::{sum_into, sum_scratch};
use crate::ops::elementwise::variadic;
use crate::ops::{Attrs, InferInput, Op, TypeShape};
use crate::tensor::{TensorMut, TensorRef};

/// The ONNX Mean op (float types).
#[derive(Clone, Debug)]
pub struct Mean;

impl Mean {
    /// Builds the op (no attributes).
    pub fn build(_attrs: &Attrs, _opset: i64) -> Result<Mean> {
        Ok(Mean)
    }
}

impl Op for Mean {
    fn op_type(&self) -> &'static str {
        "Mean"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        variadic::infer(self.op_type(), inputs, FLOATS)
    }

    fn scratch_bytes(&self, _inputs: &[Option<TypeShape>], outputs: &[TypeShape]) -> usize {
        sum_scratch(outputs)
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], scratch: &mut [u8]) -> Result<()> {
        let Some(y) = outputs.first_mut() else { invalid!("missing output") };
        let n = inputs.iter().flatten().count();
        sum_into(inputs, y, scratch, n.max(1) as f32)
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
        let a = f32s(&[3], &[3.0, 0.0, 2.0]);
        let b = f32s(&[3], &[1.0, 3.0, 4.0]);
        let c = f32s(&[3], &[2.0, 6.0, 6.0]);
        assert_eq!(values(&run1(&Mean, &[&a, &b, &c])), vec![2.0, 3.0, 4.0]);
        assert_eq!(values(&run1(&Mean, &[&a])), vec![3.0, 0.0, 2.0]);
        let h = tensor(DType::F16, &[2, 1], &[1.0, 3.0]);
        let y = run1(&Mean, &[&h, &tensor(DType::F16, &[2], &[3.0, 5.0])]);
        assert_eq!(y.shape(), &[2, 2]);
        assert_eq!(values(&y), vec![2.0, 3.0, 3.0, 4.0]);
    }

    #[test]
    fn random_matches_reference() {
        check_binary(&Mean, DType::F32, DType::F32, (-10.0, 10.0), |a, b| (a + b) / 2.0);
        check_binary(&Mean, DType::F16, DType::F16, (-10.0, 10.0), |a, b| (a + b) / 2.0);
    }

    #[test]
    fn rejects_bad_inputs() {
        assert!(eval(&Mean, &[Some(&tensor(DType::I64, &[1], &[0.0]))]).is_err());
        assert!(eval(&Mean, &[None]).is_err());
    }
}
