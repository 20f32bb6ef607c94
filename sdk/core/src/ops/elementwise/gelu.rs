//! Gelu (opset 20): `y = x/2 · (1 + erf(x/√2))`, or with `approximate = "tanh"`
//! `y = x/2 · (1 + tanh(√(2/π) · (x + 0.044715 x³)))`. Computed in f64.

use crate::error::Result;
use crate::invalid;
use crate::ops::elementwise::common::FLOATS;
use crate::ops::elementwise::special::erfc;
use crate::ops::elementwise::unary;
use crate::ops::{Attrs, InferInput, Op, TypeShape};
use crate::tensor::{TensorMut, TensorRef};

/// The ONNX Gelu op.
#[derive(Clone, Debug)]
pub struct Gelu {
    /// True for `approximate = "tanh"`.
    pub tanh: bool,
}

impl Gelu {
    /// Builds the op from its `approximate` attribute (`"none"` or `"tanh"`).
    pub fn build(attrs: &Attrs, _opset: i64) -> Result<Gelu> {
        let tanh = match attrs.string_or("approximate", "none")?.as_str() {
            "none" => false,
            "tanh" => true,
            other => invalid!("Gelu: approximate must be \"none\" or \"tanh\", got {other:?}"),
        };
        Ok(Gelu { tanh })
    }

    /// The element function.
    pub fn apply(&self, x: f32) -> f32 {
        let x = x as f64;
        let y = if self.tanh {
            let k = (2.0 / std::f64::consts::PI).sqrt();
            0.5 * x * (1.0 + (k * (x + 0.044715 * x * x * x)).tanh())
        } else {
            // 1 + erf(z) = erfc(-z), which stays accurate for very negative x.
            0.5 * x * erfc(-x / std::f64::consts::SQRT_2)
        };
        y as f32
    }
}

impl Op for Gelu {
    fn op_type(&self) -> &'static str {
        "Gelu"
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

    fn tanh_op() -> Gelu {
        Gelu::build(&Attrs::new().with("approximate", Attr::String(b"tanh".to_vec())), 20).unwrap()
    }

    #[test]
    fn known_values() {
        // From Python's math.erf / math.tanh.
        let x = f32s(&[3], &[-1.0, 0.0, 1.0]);
        let y = values(&run1(&Gelu::build(&Attrs::new(), 20).unwrap(), &[&x]));
        let want = [-0.15865526, 0.0, 0.8413447];
        for (g, w) in y.into_iter().zip(want) {
            assert!((g - w).abs() < 1e-6, "{g} vs {w}");
        }
        let y = values(&run1(&tanh_op(), &[&x]));
        let want = [-0.15880801, 0.0, 0.841192];
        for (g, w) in y.into_iter().zip(want) {
            assert!((g - w).abs() < 1e-6, "{g} vs {w}");
        }
    }

    #[test]
    fn random_matches_reference() {
        // Φ(x) by Simpson integration of the normal density from -10 to x.
        let phi = |x: f64| {
            let (a, n) = (-10.0, 4000);
            let h = (x - a) / n as f64;
            let f = |t: f64| (-t * t / 2.0).exp() / (2.0 * std::f64::consts::PI).sqrt();
            let s: f64 = (0..=n)
                .map(|i| {
                    let w = if i == 0 || i == n {
                        1.0
                    } else if i % 2 == 1 {
                        4.0
                    } else {
                        2.0
                    };
                    w * f(a + i as f64 * h)
                })
                .sum();
            s * h / 3.0
        };
        check_unary_float(&Gelu::build(&Attrs::new(), 20).unwrap(), -6.0, 6.0, |x| x * phi(x));
        let k = (2.0 / std::f64::consts::PI).sqrt();
        check_unary_float(&tanh_op(), -6.0, 6.0, |x| 0.5 * x * (1.0 + (k * (x + 0.044715 * x.powi(3))).tanh()));
    }

    #[test]
    fn rejects_bad_attribute_and_inputs() {
        assert!(Gelu::build(&Attrs::new().with("approximate", Attr::String(b"fast".to_vec())), 20).is_err());
        let op = Gelu::build(&Attrs::new(), 20).unwrap();
        assert!(eval(&op, &[Some(&crate::tensor::Tensor::from_i64(&[1], vec![1]).unwrap())]).is_err());
    }
}
