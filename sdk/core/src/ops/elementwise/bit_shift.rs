//! BitShift (opset 11): shifts each element of X left or right by Y bits, with
//! broadcasting. Of edgert's types uint8 qualifies, and from opset 28 also the signed
//! int8/int32/int64 (right shifts of those are arithmetic). A shift amount that is negative
//! or at least the bit width gives 0, or -1 for a right shift of a negative value.

use crate::error::Result;
use crate::invalid;
use crate::ops::elementwise::binary;
use crate::ops::{Attrs, InferInput, Op, TypeShape};
use crate::tensor::{DType, Element, TensorMut, TensorRef};

/// Integer types BitShift works on.
pub trait Shift: Element {
    /// Shifts left by `n` bits (out-of-range `n` gives 0).
    fn shift_left(self, n: Self) -> Self;
    /// Shifts right by `n` bits (out-of-range `n` gives the sign fill).
    fn shift_right(self, n: Self) -> Self;
}

macro_rules! impl_shift {
    ($t:ty) => {
        impl Shift for $t {
            fn shift_left(self, n: Self) -> Self {
                match u32::try_from(n) {
                    Ok(n) if n < <$t>::BITS => self.wrapping_shl(n),
                    _ => 0,
                }
            }
            fn shift_right(self, n: Self) -> Self {
                match u32::try_from(n) {
                    Ok(n) if n < <$t>::BITS => self >> n,
                    // All bits become copies of the sign bit.
                    _ => self >> (<$t>::BITS - 1) >> 1,
                }
            }
        }
    };
}
impl_shift!(i8);
impl_shift!(u8);
impl_shift!(i32);
impl_shift!(i64);

/// The ONNX BitShift op.
#[derive(Clone, Debug)]
pub struct BitShift {
    /// True for `direction = "LEFT"`.
    pub left: bool,
    opset: i64,
}

impl BitShift {
    /// Builds the op from its required `direction` attribute (`"LEFT"` or `"RIGHT"`).
    pub fn build(attrs: &Attrs, opset: i64) -> Result<BitShift> {
        let left = match attrs.string("direction")?.as_deref() {
            Some("LEFT") => true,
            Some("RIGHT") => false,
            Some(other) => invalid!("BitShift: direction must be \"LEFT\" or \"RIGHT\", got {other:?}"),
            None => invalid!("BitShift: missing required attribute `direction`"),
        };
        Ok(BitShift { left, opset })
    }
}

impl BitShift {
    fn shift<T: Shift>(&self, x: TensorRef, y: TensorRef, z: &mut TensorMut) -> Result<()> {
        if self.left {
            binary::zip::<T, T, T>(x, y, z, T::shift_left)
        } else {
            binary::zip::<T, T, T>(x, y, z, T::shift_right)
        }
    }
}

impl Op for BitShift {
    fn op_type(&self) -> &'static str {
        "BitShift"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        let types: &[DType] =
            if self.opset >= 28 { &[DType::U8, DType::I8, DType::I32, DType::I64] } else { &[DType::U8] };
        binary::infer(self.op_type(), inputs, types, None)
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let (x, y, z) = binary::io(inputs, outputs)?;
        match x.dtype() {
            DType::U8 => self.shift::<u8>(x, y, z),
            DType::I8 => self.shift::<i8>(x, y, z),
            DType::I32 => self.shift::<i32>(x, y, z),
            DType::I64 => self.shift::<i64>(x, y, z),
            other => invalid!("BitShift: unsupported type {other}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::Attr;
    use crate::ops::elementwise::testutil::*;
    use crate::ops::eval;

    fn op(dir: &str) -> BitShift {
        BitShift::build(&Attrs::new().with("direction", Attr::String(dir.as_bytes().to_vec())), 11).unwrap()
    }

    #[test]
    fn known_values() {
        let x = tensor(DType::U8, &[4], &[16.0, 4.0, 1.0, 255.0]);
        let y = tensor(DType::U8, &[4], &[1.0, 2.0, 3.0, 8.0]);
        assert_eq!(values(&run1(&op("LEFT"), &[&x, &y])), vec![32.0, 16.0, 8.0, 0.0]);
        assert_eq!(values(&run1(&op("RIGHT"), &[&x, &y])), vec![8.0, 1.0, 0.0, 0.0]);
        let y = tensor(DType::U8, &[], &[1.0]);
        assert_eq!(values(&run1(&op("LEFT"), &[&x, &y])), vec![32.0, 8.0, 2.0, 254.0]);
    }

    #[test]
    fn random_matches_reference() {
        let left = |a: f64, b: f64| ((a as u64) << (b as u64)) as u8 as f64;
        let right = |a: f64, b: f64| ((a as u64) >> (b as u64)) as f64;
        check_binary(&op("LEFT"), DType::U8, DType::U8, (0.0, 7.0), left);
        check_binary(&op("RIGHT"), DType::U8, DType::U8, (0.0, 7.0), right);
    }

    #[test]
    fn signed_from_opset_28() {
        let attrs = |d: &str| Attrs::new().with("direction", Attr::String(d.as_bytes().to_vec()));
        let (left, right) =
            (BitShift::build(&attrs("LEFT"), 28).unwrap(), BitShift::build(&attrs("RIGHT"), 28).unwrap());
        let x = tensor(DType::I8, &[5], &[-8.0, 64.0, -1.0, 5.0, -5.0]);
        let y = tensor(DType::I8, &[5], &[1.0, 1.0, 8.0, -1.0, 9.0]);
        assert_eq!(values(&run1(&left, &[&x, &y])), vec![-16.0, -128.0, 0.0, 0.0, 0.0]);
        assert_eq!(values(&run1(&right, &[&x, &y])), vec![-4.0, 32.0, -1.0, 0.0, -1.0]);
        let x = tensor(DType::I64, &[2], &[-1.0, 3.0]);
        let y = tensor(DType::I64, &[2], &[63.0, 62.0]);
        assert_eq!(values(&run1(&left, &[&x, &y])), vec![i64::MIN as f64, (3i64 << 62) as f64]);
        let i = tensor(DType::I32, &[1], &[1.0]);
        assert!(eval(&op("LEFT"), &[Some(&i), Some(&i)]).is_err());
    }

    #[test]
    fn rejects_bad_inputs() {
        assert!(BitShift::build(&Attrs::new(), 11).is_err());
        assert!(BitShift::build(&Attrs::new().with("direction", Attr::String(b"UP".to_vec())), 11).is_err());
        let i = tensor(DType::I32, &[1], &[1.0]);
        assert!(eval(&op("LEFT"), &[Some(&i), Some(&i)]).is_err());
    }
}
