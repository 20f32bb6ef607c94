//! Erf: the error function, computed in f64 (see `special`). Float types; opsets before 13
//! also allow integer types (the result is truncated back to the integer type).

use crate::error::Result;
use crate::ops::elementwise::common::{FLOATS, NUMERIC, with_numeric};
use crate::ops::elementwise::special::erf;
use crate::ops::elementwise::unary;
use crate::ops::{Attrs, InferInput, Op, TypeShape};
use crate::tensor::{Element, TensorMut, TensorRef};

/// The ONNX Erf op.
#[derive(Clone, Debug)]
pub struct Erf {
    opset: i64,
}

impl Erf {
    /// Builds the op (no attributes).
    pub fn build(_attrs: &Attrs, opset: i64) -> Result<Erf> {
        Ok(Erf { opset })
    }
}

impl Op for Erf {
    fn op_type(&self) -> &'static str {
        "Erf"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        unary::infer(self.op_type(), inputs, if self.opset >= 13 { FLOATS } else { NUMERIC })
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let (x, y) = unary::io(inputs, outputs)?;
        with_numeric!(x.dtype(), T => unary::map::<T, T>(x, y, |v| T::from_f64(erf(v.to_f64()))))
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
        let op = Erf::build(&Attrs::new(), 13).unwrap();
        let y = run1(&op, &[&f32s(&[4], &[0.0, 0.5, -1.0, 3.0])]);
        // Python math.erf, rounded to f32.
        let want = [0.0, 0.5204998778130465, -0.8427007929497149, 0.9999779095030014];
        for (g, w) in values(&y).into_iter().zip(want) {
            assert!((g - w).abs() <= 1e-7, "{g} vs {w}");
        }
    }

    #[test]
    fn random_matches_reference() {
        // Reference: A&S 7.1.26 is too coarse; integrate e^(-t²) with Simpson's rule instead.
        let reference = |x: f64| {
            let n = 2000;
            let h = x / n as f64;
            let f = |t: f64| (-t * t).exp();
            let s: f64 = (0..=n)
                .map(|i| {
                    let w = if i == 0 || i == n {
                        1.0
                    } else if i % 2 == 1 {
                        4.0
                    } else {
                        2.0
                    };
                    w * f(i as f64 * h)
                })
                .sum();
            std::f64::consts::FRAC_2_SQRT_PI * s * h / 3.0
        };
        check_unary_float(&Erf::build(&Attrs::new(), 13).unwrap(), -4.0, 4.0, reference);
    }

    #[test]
    fn integer_types_before_opset_13() {
        let x = tensor(DType::I32, &[3], &[-2.0, 0.0, 5.0]);
        assert_eq!(values(&run1(&Erf::build(&Attrs::new(), 12).unwrap(), &[&x])), vec![0.0, 0.0, 0.0]);
        assert!(eval(&Erf::build(&Attrs::new(), 13).unwrap(), &[Some(&x)]).is_err());
    }
}
