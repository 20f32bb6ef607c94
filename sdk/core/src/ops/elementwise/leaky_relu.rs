//! LeakyRelu: `y = x` for x ≥ 0, `alpha * x` below.

use crate::error::Result;
use crate::ops::elementwise::common::FLOATS;
use crate::ops::elementwise::unary;
use crate::ops::{Attrs, InferInput, Op, TypeShape};
use crate::tensor::{TensorMut, TensorRef};

/// The ONNX LeakyRelu op (float types; F16 computes in f32).
#[derive(Clone, Debug)]
pub struct LeakyRelu {
    /// Slope of the negative part (default 0.01).
    pub alpha: f32,
}

impl LeakyRelu {
    /// Builds the op from its attributes.
    pub fn build(attrs: &Attrs, _opset: i64) -> Result<LeakyRelu> {
        Ok(LeakyRelu { alpha: attrs.float_or("alpha", 0.01)? })
    }

    /// The element function.
    pub fn apply(&self, x: f32) -> f32 {
        if x >= 0.0 { x } else { self.alpha * x }
    }
}

impl Op for LeakyRelu {
    fn op_type(&self) -> &'static str {
        "LeakyRelu"
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

    fn op() -> LeakyRelu {
        LeakyRelu::build(&Attrs::new(), 21).unwrap()
    }

    #[test]
    fn known_values() {
        let cases: &[(f32, f32)] = &[(2.0, 2.0), (0.0, 0.0), (-2.0, -0.02), (f32::NAN, f32::NAN)];
        let x = f32s(&[cases.len()], &cases.iter().map(|c| c.0).collect::<Vec<_>>());
        let y = run1(&op(), &[&x]);
        for (&(xi, want), got) in cases.iter().zip(values(&y)) {
            assert!(close(DType::F32, got, want as f64), "LeakyRelu({xi}) = {got}, want {want}");
        }
    }

    #[test]
    fn random_matches_reference() {
        check_unary_float(&op(), -10.0, 10.0, |x: f64| if x >= 0.0 { x } else { 0.01 * x });
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
    fn alpha() {
        let op = LeakyRelu::build(&Attrs::new().with("alpha", Attr::Float(0.1)), 16).unwrap();
        let y = run1(&op, &[&f32s(&[3], &[-1.0, 0.0, 1.0])]);
        assert_eq!(values(&y), vec![-0.10000000149011612, 0.0, 1.0]);
    }
}
