//! Selu: `y = gamma * x` for x > 0, `gamma * alpha * (e^x - 1)` otherwise.

use crate::error::Result;
use crate::ops::elementwise::common::FLOATS;
use crate::ops::elementwise::unary;
use crate::ops::{Attrs, InferInput, Op, TypeShape};
use crate::tensor::{TensorMut, TensorRef};

/// The ONNX Selu op (float types; F16 computes in f32).
#[derive(Clone, Debug)]
pub struct Selu {
    /// Default 1.67326319217681884765625.
    pub alpha: f32,
    /// Default 1.05070102214813232421875.
    pub gamma: f32,
}

impl Selu {
    /// Builds the op from its attributes.
    pub fn build(attrs: &Attrs, _opset: i64) -> Result<Selu> {
        Ok(Selu { alpha: attrs.float_or("alpha", 1.673_263_2)?, gamma: attrs.float_or("gamma", 1.050_701)? })
    }

    /// The element function.
    pub fn apply(&self, x: f32) -> f32 {
        if x > 0.0 { self.gamma * x } else { self.gamma * self.alpha * x.exp_m1() }
    }
}

impl Op for Selu {
    fn op_type(&self) -> &'static str {
        "Selu"
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

    fn op() -> Selu {
        Selu::build(&Attrs::new(), 21).unwrap()
    }

    #[test]
    fn known_values() {
        let cases: &[(f32, f32)] = &[(1.0, 1.050701), (0.0, 0.0), (-1.0, -1.1113307), (-50.0, -1.7580993)];
        let x = f32s(&[cases.len()], &cases.iter().map(|c| c.0).collect::<Vec<_>>());
        let y = run1(&op(), &[&x]);
        for (&(xi, want), got) in cases.iter().zip(values(&y)) {
            assert!(close(DType::F32, got, want as f64), "Selu({xi}) = {got}, want {want}");
        }
    }

    #[test]
    fn random_matches_reference() {
        check_unary_float(&op(), -6.0, 6.0, |x: f64| {
            if x > 0.0 { 1.0507009873554805 * x } else { 1.0507009873554805 * 1.6732632423543772 * (x.exp() - 1.0) }
        });
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
        let attrs = Attrs::new().with("alpha", Attr::Float(2.0)).with("gamma", Attr::Float(3.0));
        let op = Selu::build(&attrs, 6).unwrap();
        let y = run1(&op, &[&f32s(&[2], &[-1.0, 1.0])]);
        assert_eq!(values(&y), vec![(6.0 * (-1.0f32).exp_m1()) as f64, 3.0]);
    }
}
