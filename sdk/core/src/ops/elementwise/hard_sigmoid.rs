//! HardSigmoid: `y = max(0, min(1, alpha * x + beta))`.

use crate::error::Result;
use crate::ops::elementwise::common::FLOATS;
use crate::ops::elementwise::unary;
use crate::ops::{Attrs, InferInput, Op, TypeShape};
use crate::tensor::{TensorMut, TensorRef};

/// The ONNX HardSigmoid op (float types; F16 computes in f32).
#[derive(Clone, Debug)]
pub struct HardSigmoid {
    /// Slope (default 0.2).
    pub alpha: f32,
    /// Offset (default 0.5).
    pub beta: f32,
}

impl HardSigmoid {
    /// Builds the op from its attributes.
    pub fn build(attrs: &Attrs, _opset: i64) -> Result<HardSigmoid> {
        Ok(HardSigmoid { alpha: attrs.float_or("alpha", 0.2)?, beta: attrs.float_or("beta", 0.5)? })
    }

    /// The element function.
    pub fn apply(&self, x: f32) -> f32 {
        (self.alpha * x + self.beta).clamp(0.0, 1.0)
    }
}

impl Op for HardSigmoid {
    fn op_type(&self) -> &'static str {
        "HardSigmoid"
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
    use crate::ops::Attr;
    use crate::ops::elementwise::testutil::*;
    use crate::ops::eval;
    use crate::tensor::DType;

    fn op() -> HardSigmoid {
        HardSigmoid::build(&Attrs::new(), 21).unwrap()
    }

    #[test]
    fn known_values() {
        let cases: &[(f32, f32)] = &[(-3.0, 0.0), (0.0, 0.5), (1.0, 0.7), (3.0, 1.0)];
        let x = f32s(&[cases.len()], &cases.iter().map(|c| c.0).collect::<Vec<_>>());
        let y = run1(&op(), &[&x]);
        for (&(xi, want), got) in cases.iter().zip(values(&y)) {
            assert!(close(DType::F32, got, want as f64), "HardSigmoid({xi}) = {got}, want {want}");
        }
    }

    #[test]
    fn random_matches_reference() {
        check_unary_float(&op(), -4.0, 4.0, |x: f64| (0.2 * x + 0.5).clamp(0.0, 1.0));
    }

    #[test]
    fn rejects_bad_inputs() {
        let x = f32s(&[2], &[1.0, 2.0]);
        assert!(eval(&op(), &[Some(&tensor(DType::I32, &[2], &[1.0, 2.0]))]).is_err());
        assert!(eval(&op(), &[Some(&x), Some(&x)]).is_err());
        assert!(eval(&op(), &[None]).is_err());
        assert!(eval(&op(), &[]).is_err());
    }

    #[test]
    fn attributes() {
        let attrs = Attrs::new().with("alpha", Attr::Float(0.5)).with("beta", Attr::Float(0.6));
        let op = HardSigmoid::build(&attrs, 6).unwrap();
        let y = run1(&op, &[&f32s(&[3], &[-1.0, 0.0, 0.5])]);
        for (g, w) in values(&y).into_iter().zip([0.1, 0.6, 0.85]) {
            assert!(close(DType::F32, g, w), "{g} vs {w}");
        }
    }
}
