//! Pow: `Z = X ^ Y` with broadcasting. From opset 12 the exponent may have another numeric
//! type than the base; the output has the base's type. As in onnx's reference
//! (`np.power(x, y).astype(x.dtype)`): a float on either side computes in f64 and converts
//! (truncating toward zero for an integer base); integer ^ integer is exact integer
//! arithmetic that wraps on overflow. A negative integer exponent gives `1 / x^-y`
//! truncated: ±1 for x = ±1, else 0 (numpy raises there; 0 keeps `run` infallible).

use crate::error::Result;
use crate::ops::elementwise::binary;
use crate::ops::elementwise::common::{
    FLOATS, NUMERIC, broadcast_out, check_arity, check_dtype, check_same_dtype, with_numeric,
};
use crate::ops::elementwise::num::Num;
use crate::ops::{Attrs, InferInput, Op, TypeShape, required};
use crate::tensor::{DType, TensorMut, TensorRef};

/// The ONNX Pow op.
#[derive(Clone, Debug)]
pub struct Pow {
    opset: i64,
}

impl Pow {
    /// Builds the op (no attributes from opset 7 on).
    pub fn build(_attrs: &Attrs, opset: i64) -> Result<Pow> {
        Ok(Pow { opset })
    }
}

/// `base ^ exp` for integers, wrapping on overflow.
fn int_pow(base: i64, exp: i64) -> i64 {
    if exp < 0 {
        return match base {
            1 => 1,
            -1 => {
                if exp % 2 == 0 {
                    1
                } else {
                    -1
                }
            }
            _ => 0,
        };
    }
    let (mut result, mut b, mut e) = (1i64, base, exp as u64);
    while e > 0 {
        if e & 1 == 1 {
            result = result.wrapping_mul(b);
        }
        b = b.wrapping_mul(b);
        e >>= 1;
    }
    result
}

/// One element of Pow.
fn pow<A: Num, B: Num>(x: A, y: B) -> A {
    if A::DTYPE.is_float() || B::DTYPE.is_float() {
        A::from_f64(x.to_f64().powf(y.to_f64()))
    } else {
        A::from_i64(int_pow(x.to_i64(), y.to_i64()))
    }
}

impl Op for Pow {
    fn op_type(&self) -> &'static str {
        "Pow"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        check_arity("Pow", inputs, 2, 2)?;
        let x = required(inputs, 0, "X")?;
        let y = required(inputs, 1, "Y")?;
        if self.opset >= 12 {
            check_dtype("Pow", "base X", x.dtype, &[DType::F32, DType::F16, DType::I32, DType::I64])?;
            check_dtype("Pow", "exponent Y", y.dtype, NUMERIC)?;
        } else {
            check_dtype("Pow", "base X", x.dtype, FLOATS)?;
            check_same_dtype("Pow", x.dtype, y.dtype)?;
        }
        Ok(vec![TypeShape::new(x.dtype, broadcast_out("Pow", &[x.shape, y.shape])?)])
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let (x, e, z) = binary::io(inputs, outputs)?;
        // Squaring (a norm, an STFT's power): `x * x` is the correctly rounded square, as is
        // the f64 `powf` rounded to f32, so this shortcut changes no bit.
        if x.dtype() == DType::F32 && e.dtype() == DType::F32 && e.shape.iter().product::<usize>() == 1 {
            let (xs, es) = (x.as_f32()?, e.as_f32()?);
            if es[0] == 2.0 && z.shape == x.shape {
                for (o, &v) in z.as_f32_mut()?.iter_mut().zip(xs) {
                    *o = v * v;
                }
                return Ok(());
            }
        }
        with_numeric!(x.dtype(), A => with_numeric!(e.dtype(), B => binary::zip::<A, B, A>(x, e, z, pow::<A, B>)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::elementwise::testutil::*;
    use crate::ops::eval;

    fn op() -> Pow {
        Pow::build(&Attrs::new(), 15).unwrap()
    }

    #[test]
    fn known_values() {
        let y = run1(&op(), &[&f32s(&[3], &[2.0, 4.0, -2.0]), &f32s(&[3], &[3.0, 0.5, 2.0])]);
        assert_eq!(values(&y), vec![8.0, 2.0, 4.0]);
        // int base, int exponent, with negative exponents.
        let x = tensor(DType::I64, &[5], &[2.0, -3.0, 1.0, -1.0, 2.0]);
        let e = tensor(DType::I32, &[5], &[10.0, 3.0, -2.0, -3.0, -1.0]);
        assert_eq!(values(&run1(&op(), &[&x, &e])), vec![1024.0, -27.0, 1.0, -1.0, 0.0]);
        // int base, float exponent: truncates.
        let x = tensor(DType::I32, &[2], &[2.0, 10.0]);
        assert_eq!(values(&run1(&op(), &[&x, &f32s(&[1], &[0.5])])), vec![1.0, 3.0]);
        // float base, int exponent; i32 overflow wraps.
        let y = run1(&op(), &[&f32s(&[2], &[1.5, -2.0]), &tensor(DType::U8, &[], &[2.0])]);
        assert_eq!(values(&y), vec![2.25, 4.0]);
        let y = run1(&op(), &[&tensor(DType::I32, &[1], &[2.0]), &tensor(DType::I64, &[1], &[32.0])]);
        assert_eq!(values(&y), vec![0.0]);
        assert_eq!(int_pow(3, 40), 3i64.wrapping_pow(40));
    }

    /// The f32 squaring shortcut gives the bits of the general path (f64 `powf`), specials too.
    #[test]
    fn squaring_shortcut_matches_the_general_path() {
        let mut v: Vec<f32> = (0..2000).map(|i| (i as f32 - 1000.0) * 0.37e-3 * (1.0 + i as f32)).collect();
        v.extend([0.0, -0.0, f32::MAX, f32::MIN_POSITIVE, 1e-30, f32::INFINITY, f32::NEG_INFINITY, f32::NAN]);
        let x = f32s(&[v.len()], &v);
        let got = run1(&op(), &[&x, &f32s(&[], &[2.0])]);
        let got = got.as_f32().unwrap();
        for (i, (&g, &a)) in got.iter().zip(&v).enumerate() {
            let want = pow::<f32, f32>(a, 2.0);
            assert!(g.to_bits() == want.to_bits() || g.is_nan() && want.is_nan(), "{i}: {a}^2 = {g} vs {want}");
        }
    }

    #[test]
    fn random_matches_reference() {
        check_binary(&op(), DType::F32, DType::F32, (0.1, 3.0), f64::powf);
        check_binary(&op(), DType::F16, DType::F16, (0.5, 2.0), f64::powf);
        let int_ref = |a: f64, b: f64| if b >= 0.0 || a.abs() == 1.0 { a.powf(b) } else { 0.0 };
        check_binary(&op(), DType::I64, DType::I64, (-6.0, 6.0), int_ref);
        check_binary(&op(), DType::I32, DType::I32, (-6.0, 6.0), int_ref);
    }

    #[test]
    fn rejects_bad_inputs() {
        let u = tensor(DType::U8, &[1], &[1.0]);
        assert!(eval(&op(), &[Some(&u), Some(&u)]).is_err());
        let f = f32s(&[2], &[1.0, 2.0]);
        assert!(eval(&op(), &[Some(&f), Some(&tensor(DType::Bool, &[1], &[1.0]))]).is_err());
        assert!(eval(&op(), &[Some(&f), Some(&f32s(&[3], &[0.0; 3]))]).is_err());
        let old = Pow::build(&Attrs::new(), 11).unwrap();
        assert!(eval(&old, &[Some(&f), Some(&tensor(DType::I64, &[1], &[1.0]))]).is_err());
    }
}
