//! Sqrt: square root (NaN for negative inputs).

use crate::error::Result;
use crate::ops::elementwise::common::FLOATS;
use crate::ops::elementwise::unary;
use crate::ops::{Attrs, InferInput, Op, TypeShape};
use crate::tensor::{TensorMut, TensorRef};

/// The ONNX Sqrt op (float types; F16 computes in f32).
#[derive(Clone, Debug)]
pub struct Sqrt;

impl Sqrt {
    /// Builds the op from its attributes.
    pub fn build(_attrs: &Attrs, _opset: i64) -> Result<Sqrt> {
        Ok(Sqrt)
    }

    /// The element function.
    pub fn apply(&self, x: f32) -> f32 {
        x.sqrt()
    }
}

impl Op for Sqrt {
    fn op_type(&self) -> &'static str {
        "Sqrt"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        unary::infer(self.op_type(), inputs, FLOATS)
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let (x, y) = unary::io(inputs, outputs)?;
        unary::map_float(x, y, |v| self.apply(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::elementwise::testutil::*;
    use crate::ops::eval;
    use crate::tensor::DType;

    fn op() -> Sqrt {
        Sqrt::build(&Attrs::new(), 21).unwrap()
    }

    #[test]
    fn known_values() {
        let cases: &[(f32, f32)] = &[(0.0, 0.0), (4.0, 2.0), (2.0, std::f32::consts::SQRT_2), (-1.0, f32::NAN)];
        let x = f32s(&[cases.len()], &cases.iter().map(|c| c.0).collect::<Vec<_>>());
        let y = run1(&op(), &[&x]);
        for (&(xi, want), got) in cases.iter().zip(values(&y)) {
            assert!(close(DType::F32, got, want as f64), "Sqrt({xi}) = {got}, want {want}");
        }
    }

    #[test]
    fn random_matches_reference() {
        check_unary_float(&op(), 0.0, 100.0, |x: f64| x.sqrt());
    }

    #[test]
    fn rejects_bad_inputs() {
        let x = f32s(&[2], &[1.0, 2.0]);
        assert!(eval(&op(), &[Some(&tensor(DType::I32, &[2], &[1.0, 2.0]))]).is_err());
        assert!(eval(&op(), &[Some(&x), Some(&x)]).is_err());
        assert!(eval(&op(), &[None]).is_err());
        assert!(eval(&op(), &[]).is_err());
    }
}
