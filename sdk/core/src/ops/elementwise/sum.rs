//! Sum: elementwise sum of one or more inputs, with broadcasting. F16 accumulates in f32
//! (in scratch) and rounds once.

use half::f16;

use crate::error::Result;
use crate::invalid;
use crate::ops::elementwise::common::FLOATS;
use crate::ops::elementwise::variadic;
use crate::ops::{Attrs, InferInput, Op, TypeShape};
use crate::tensor::{DType, TensorMut, TensorRef, numel};

/// The ONNX Sum op (float types).
#[derive(Clone, Debug)]
pub struct Sum;

impl Sum {
    /// Builds the op (no attributes).
    pub fn build(_attrs: &Attrs, _opset: i64) -> Result<Sum> {
        Ok(Sum)
    }
}

/// Sums `inputs` into `y`, then divides by `divisor` (1 for Sum, n for Mean).
pub(crate) fn sum_into(
    inputs: &[Option<TensorRef>],
    y: &mut TensorMut,
    scratch: &mut [u8],
    divisor: f32,
) -> Result<()> {
    let shape = y.shape;
    match y.dtype() {
        DType::F32 => {
            let ys = y.typed_mut::<f32>()?;
            variadic::fold::<f32, f32>(inputs, shape, ys, |v| v, |a, b| a + b)?;
            if divisor != 1.0 {
                ys.iter_mut().for_each(|v| *v /= divisor);
            }
        }
        DType::F16 => {
            let ys = y.typed_mut::<f16>()?;
            let acc = variadic::scratch_f32(scratch, ys.len())?;
            variadic::fold::<f16, f32>(inputs, shape, acc, f16::to_f32, |a, b| a + b)?;
            for (o, &a) in ys.iter_mut().zip(acc.iter()) {
                *o = f16::from_f32(a / divisor);
            }
        }
        other => invalid!("expected a float tensor, got {other}"),
    }
    Ok(())
}

/// Scratch for [`sum_into`]: an f32 accumulator for F16 outputs.
pub(crate) fn sum_scratch(outputs: &[TypeShape]) -> usize {
    match outputs.first() {
        Some(t) if t.dtype == DType::F16 => numel(&t.shape) * 4,
        _ => 0,
    }
}

impl Op for Sum {
    fn op_type(&self) -> &'static str {
        "Sum"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        variadic::infer(self.op_type(), inputs, FLOATS)
    }

    fn scratch_bytes(&self, _inputs: &[Option<TypeShape>], outputs: &[TypeShape]) -> usize {
        sum_scratch(outputs)
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], scratch: &mut [u8]) -> Result<()> {
        let Some(y) = outputs.first_mut() else { invalid!("missing output") };
        sum_into(inputs, y, scratch, 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::elementwise::testutil::*;
    use crate::ops::eval;

    #[test]
    fn known_values() {
        let a = f32s(&[3], &[3.0, 0.0, 2.0]);
        let b = f32s(&[3], &[1.0, 3.0, 4.0]);
        let c = f32s(&[3], &[2.0, 6.0, 6.0]);
        assert_eq!(values(&run1(&Sum, &[&a, &b, &c])), vec![6.0, 9.0, 12.0]);
        assert_eq!(values(&run1(&Sum, &[&a])), vec![3.0, 0.0, 2.0]);
        let x = tensor(DType::F16, &[2], &[1.0, 3.0]);
        let y = run1(&Sum, &[&x, &tensor(DType::F16, &[], &[2048.0]), &x]);
        // f32 accumulation is exact here; rounding to f16 after each step would give 2048, 2056.
        assert_eq!(values(&y), vec![2050.0, 2054.0]);
    }

    #[test]
    fn random_matches_reference() {
        check_binary(&Sum, DType::F32, DType::F32, (-10.0, 10.0), |a, b| a + b);
        check_binary(&Sum, DType::F16, DType::F16, (-10.0, 10.0), |a, b| a + b);
    }

    #[test]
    fn rejects_bad_inputs() {
        let i = tensor(DType::I32, &[2], &[0.0; 2]);
        assert!(eval(&Sum, &[Some(&i)]).is_err());
        assert!(eval(&Sum, &[]).is_err());
        let a = f32s(&[2], &[0.0; 2]);
        assert!(eval(&Sum, &[Some(&a), Some(&f32s(&[3], &[0.0; 3]))]).is_err());
    }
}
