//! Cast: converts a tensor to the element type named by the `to` attribute, with numpy's
//! `astype` semantics as onnx's reference uses them:
//! * float → integer truncates toward zero; out-of-range values saturate and NaN gives 0
//!   (numpy leaves these undefined; Rust's `as` makes them deterministic);
//! * integer → integer wraps (two's complement);
//! * anything → bool is `x != 0` (NaN is true); bool → number is 0 or 1;
//! * → float16 rounds to nearest even, overflowing to ±inf.
//!
//! The `saturate` attribute (opset 19) only concerns float8 types, which edgert lacks.

use half::f16;

use crate::error::Result;
use crate::invalid;
use crate::ops::elementwise::common::{ALL, with_any};
use crate::ops::elementwise::unary;
use crate::ops::{Attrs, InferInput, Op, TypeShape};
use crate::tensor::{DType, Element, TensorMut, TensorRef};

/// A value in transit between element types.
#[derive(Clone, Copy, Debug)]
pub enum Value {
    /// From a float type (exact in f64).
    Float(f64),
    /// From an integer type (exact in i64).
    Int(i64),
    /// From bool.
    Bool(bool),
}

/// Element types that Cast converts between.
pub trait CastElem: Element {
    /// The value, exactly.
    fn to_value(self) -> Value;
    /// Converts a value to this type.
    fn from_value(v: Value) -> Self;
}

macro_rules! int_cast {
    ($t:ty) => {
        impl CastElem for $t {
            fn to_value(self) -> Value {
                Value::Int(self as i64)
            }
            fn from_value(v: Value) -> Self {
                match v {
                    Value::Float(f) => f as $t,
                    Value::Int(i) => i as $t,
                    Value::Bool(b) => b as $t,
                }
            }
        }
    };
}
int_cast!(i8);
int_cast!(u8);
int_cast!(i32);
int_cast!(i64);

impl CastElem for f32 {
    fn to_value(self) -> Value {
        Value::Float(self as f64)
    }
    fn from_value(v: Value) -> Self {
        match v {
            Value::Float(f) => f as f32,
            Value::Int(i) => i as f32,
            Value::Bool(b) => b as u8 as f32,
        }
    }
}

impl CastElem for f16 {
    fn to_value(self) -> Value {
        Value::Float(self.to_f64())
    }
    fn from_value(v: Value) -> Self {
        match v {
            Value::Float(f) => f16::from_f64(f),
            Value::Int(i) => f16::from_f64(i as f64),
            Value::Bool(b) => f16::from_f32(b as u8 as f32),
        }
    }
}

impl CastElem for bool {
    fn to_value(self) -> Value {
        Value::Bool(self)
    }
    fn from_value(v: Value) -> Self {
        match v {
            Value::Float(f) => f != 0.0,
            Value::Int(i) => i != 0,
            Value::Bool(b) => b,
        }
    }
}

/// Converts `x` into `y` (same element count, any two types).
pub fn cast_into(x: TensorRef, y: &mut TensorMut) -> Result<()> {
    with_any!(x.dtype(), S => with_any!(y.dtype(), D => unary::map::<S, D>(x, y, |v| D::from_value(v.to_value()))))
}

/// The ONNX Cast op.
#[derive(Clone, Debug)]
pub struct Cast {
    /// The target type.
    pub to: DType,
}

impl Cast {
    /// Builds the op from its required `to` attribute (an ONNX `TensorProto.DataType` code).
    pub fn build(attrs: &Attrs, _opset: i64) -> Result<Cast> {
        let Some(code) = attrs.int("to")? else { invalid!("Cast: missing required attribute `to`") };
        let to = i32::try_from(code).ok().and_then(DType::from_onnx);
        let Some(to) = to else {
            invalid!(
                "Cast: target type code {code} is not supported (edgert has float32, float16, int8, uint8, int32, int64, bool)"
            )
        };
        Ok(Cast { to })
    }
}

impl Op for Cast {
    fn op_type(&self) -> &'static str {
        "Cast"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        let mut out = unary::infer(self.op_type(), inputs, ALL)?;
        out[0].dtype = self.to;
        Ok(out)
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let (x, y) = unary::io(inputs, outputs)?;
        cast_into(x, y)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::Attr;
    use crate::ops::elementwise::testutil::*;
    use crate::ops::eval;

    fn cast(to: DType) -> Cast {
        Cast::build(&Attrs::new().with("to", Attr::Int(to.to_onnx() as i64)), 21).unwrap()
    }

    #[test]
    fn float_to_int_truncates_and_saturates() {
        let x = f32s(&[7], &[1.7, -1.7, 0.5, 300.0, -300.0, f32::NAN, f32::INFINITY]);
        assert_eq!(values(&run1(&cast(DType::I8), &[&x])), vec![1.0, -1.0, 0.0, 127.0, -128.0, 0.0, 127.0]);
        assert_eq!(values(&run1(&cast(DType::U8), &[&x])), vec![1.0, 0.0, 0.0, 255.0, 0.0, 0.0, 255.0]);
        let y = values(&run1(&cast(DType::I64), &[&f32s(&[2], &[-2.9, 1e10])]));
        assert_eq!(y, vec![-2.0, 1e10]);
    }

    #[test]
    fn integers_wrap_and_bools() {
        let x = tensor(DType::I32, &[4], &[300.0, -1.0, 0.0, 2.0]);
        assert_eq!(values(&run1(&cast(DType::U8), &[&x])), vec![44.0, 255.0, 0.0, 2.0]);
        assert_eq!(values(&run1(&cast(DType::Bool), &[&x])), vec![1.0, 1.0, 0.0, 1.0]);
        let b = tensor(DType::Bool, &[2], &[1.0, 0.0]);
        assert_eq!(values(&run1(&cast(DType::F16), &[&b])), vec![1.0, 0.0]);
        let f = f32s(&[3], &[0.0, -0.0, f32::NAN]);
        assert_eq!(values(&run1(&cast(DType::Bool), &[&f])), vec![0.0, 0.0, 1.0]);
    }

    #[test]
    fn float16_rounding() {
        // 1 + 2^-11 is halfway between two f16 values: ties to even gives 1.
        let x = f32s(&[4], &[1.0 + 1.0 / 2048.0, 1.0 + 3.0 / 2048.0, 70000.0, 1e-8]);
        let y = values(&run1(&cast(DType::F16), &[&x]));
        assert_eq!(y, vec![1.0, 1.0 + 4.0 / 2048.0, f64::INFINITY, 0.0]);
        let i = tensor(DType::I64, &[1], &[2049.0]);
        assert_eq!(values(&run1(&cast(DType::F16), &[&i])), vec![2048.0]);
        let h = tensor(DType::F16, &[2], &[-3.5, 65504.0]);
        assert_eq!(values(&run1(&cast(DType::I32), &[&h])), vec![-3.0, 65504.0]);
    }

    #[test]
    fn every_pair_round_trips_small_integers() {
        let all = [DType::F32, DType::F16, DType::I8, DType::U8, DType::I32, DType::I64, DType::Bool];
        let mut rng = Rng::new(17);
        for &from in &all {
            for &to in &all {
                for shape in SHAPES {
                    let n = shape.iter().product();
                    let xs = random_values(&mut rng, from, n, 0.0, 100.0);
                    let y = run1(&cast(to), &[&tensor(from, shape, &xs)]);
                    assert_eq!(y.dtype(), to);
                    assert_eq!(y.shape(), *shape);
                    let want: Vec<f64> = xs
                        .iter()
                        .map(|&v| match to {
                            DType::Bool => (v != 0.0) as u8 as f64,
                            DType::F32 => v,
                            DType::F16 => f16::from_f64(v).to_f64(),
                            _ => v.trunc(),
                        })
                        .collect();
                    assert_eq!(values(&y), want, "{from} -> {to} {shape:?}");
                }
            }
        }
    }

    #[test]
    fn rejects_bad_attributes() {
        assert!(Cast::build(&Attrs::new(), 13).is_err());
        // float64 and string have no edgert type.
        assert!(Cast::build(&Attrs::new().with("to", Attr::Int(11)), 13).is_err());
        assert!(Cast::build(&Attrs::new().with("to", Attr::Int(8)), 13).is_err());
        assert!(eval(&cast(DType::F32), &[]).is_err());
    }
}
