//! Mod (the ONNX op; `mod` is a Rust keyword): remainder with broadcasting. With `fmod = 0`
//! the result takes the sign of the divisor, as Python's `%`; with `fmod = 1` the sign of
//! the dividend, as C's `fmod`. Floats need `fmod = 1` before opset 28, which defined
//! `fmod = 0` for them too (`x - floor(x / y) * y`, a zero result taking the sign of y).
//! Integer `x mod 0` gives 0 (numpy's result, without its warning).

use crate::error::Result;
use crate::invalid;
use crate::ops::elementwise::binary;
use crate::ops::elementwise::common::{NUMERIC, with_numeric};
use crate::ops::elementwise::num::Num;
use crate::ops::{Attrs, InferInput, Op, TypeShape};
use crate::tensor::{TensorMut, TensorRef};

/// The ONNX Mod op.
#[derive(Clone, Debug)]
pub struct Mod {
    /// True for `fmod = 1` (C semantics).
    pub fmod: bool,
    opset: i64,
}

impl Mod {
    /// Builds the op from its `fmod` attribute (0 or 1, default 0).
    pub fn build(attrs: &Attrs, opset: i64) -> Result<Mod> {
        let fmod = match attrs.int_or("fmod", 0)? {
            0 => false,
            1 => true,
            other => invalid!("Mod: fmod must be 0 or 1, got {other}"),
        };
        Ok(Mod { fmod, opset })
    }
}

impl Op for Mod {
    fn op_type(&self) -> &'static str {
        "Mod"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        let out = binary::infer(self.op_type(), inputs, NUMERIC, None)?;
        if !self.fmod && out[0].dtype.is_float() && self.opset < 28 {
            invalid!("Mod: floating-point inputs ({}) need fmod = 1", out[0].dtype);
        }
        Ok(out)
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let (a, b, y) = binary::io(inputs, outputs)?;
        if self.fmod {
            with_numeric!(a.dtype(), T => binary::zip::<T, T, T>(a, b, y, <T as Num>::fmod))
        } else {
            with_numeric!(a.dtype(), T => binary::zip::<T, T, T>(a, b, y, <T as Num>::floor_mod))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::Attr;
    use crate::ops::elementwise::testutil::*;
    use crate::ops::eval;
    use crate::tensor::DType;

    fn op(fmod: i64) -> Mod {
        Mod::build(&Attrs::new().with("fmod", Attr::Int(fmod)), 13).unwrap()
    }

    #[test]
    fn mixed_signs() {
        // onnx's test_mod_mixed_sign_int32 and _float32.
        let a = tensor(DType::I32, &[6], &[-4.0, 7.0, 5.0, 4.0, -7.0, 8.0]);
        let b = tensor(DType::I32, &[6], &[2.0, -3.0, 8.0, -2.0, 3.0, 5.0]);
        assert_eq!(values(&run1(&op(0), &[&a, &b])), vec![0.0, -2.0, 5.0, 0.0, 2.0, 3.0]);
        assert_eq!(values(&run1(&op(1), &[&a, &b])), vec![0.0, 1.0, 5.0, 0.0, -1.0, 3.0]);
        let a = f32s(&[6], &[-4.3, 7.2, 5.0, 4.3, -7.2, 8.0]);
        let b = f32s(&[6], &[2.1, -3.4, 8.0, -2.1, 3.4, 5.0]);
        let want = [-0.1, 0.4, 5.0, 0.1, -0.4, 3.0];
        for (g, w) in values(&run1(&op(1), &[&a, &b])).into_iter().zip(want) {
            assert!((g - w).abs() < 1e-5, "{g} vs {w}");
        }
        let zero = tensor(DType::I64, &[], &[0.0]);
        assert_eq!(values(&run1(&op(0), &[&tensor(DType::I64, &[1], &[5.0]), &zero])), vec![0.0]);
    }

    #[test]
    fn random_matches_reference() {
        let c_fmod = |a: f64, b: f64| a % b;
        let py_mod = |a: f64, b: f64| a - b * (a / b).floor();
        for dtype in [DType::I8, DType::I32, DType::I64] {
            check_binary(&op(0), dtype, dtype, (1.0, 50.0), py_mod);
            check_binary(&op(0), dtype, dtype, (-50.0, -1.0), py_mod);
            check_binary(&op(1), dtype, dtype, (-50.0, -1.0), c_fmod);
        }
        check_binary(&op(0), DType::U8, DType::U8, (1.0, 250.0), py_mod);
        check_binary(&op(1), DType::F32, DType::F32, (-10.0, 10.0), c_fmod);
        check_binary(&op(1), DType::F16, DType::F16, (1.0, 10.0), c_fmod);
    }

    #[test]
    fn float_floor_mod_from_opset_28() {
        let op = Mod::build(&Attrs::new(), 28).unwrap();
        let a = f32s(&[7], &[-4.0, 7.5, 0.0, -0.0, 5.0, -5.0, 1.0]);
        let b = f32s(&[7], &[3.0, -2.0, -2.0, 2.0, 0.0, f32::INFINITY, f32::INFINITY]);
        let y = values(&run1(&op, &[&a, &b]));
        assert_eq!(y[..2], [2.0, -0.5]);
        assert!(y[2] == 0.0 && y[2].is_sign_negative() && y[3] == 0.0 && y[3].is_sign_positive());
        assert!(y[4].is_nan());
        assert_eq!(y[5..], [f64::INFINITY, 1.0]);
    }

    #[test]
    fn rejects_bad_inputs() {
        let f = f32s(&[1], &[1.0]);
        assert!(eval(&op(0), &[Some(&f), Some(&f)]).is_err());
        assert!(Mod::build(&Attrs::new().with("fmod", Attr::Int(2)), 13).is_err());
        let b = tensor(DType::Bool, &[1], &[1.0]);
        assert!(eval(&op(1), &[Some(&b), Some(&b)]).is_err());
    }
}
