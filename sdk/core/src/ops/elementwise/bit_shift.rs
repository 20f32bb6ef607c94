//! BitShift (opset 11): shifts each element of X left or right by Y bits, with
//! broadcasting. Of edgert's types only uint8 qualifies. Shifting by 8 or more gives 0.

use crate::error::Result;
use crate::invalid;
use crate::ops::elementwise::binary;
use crate::ops::{Attrs, InferInput, Op, TypeShape};
use crate::tensor::{DType, TensorMut, TensorRef};

/// The ONNX BitShift op.
#[derive(Clone, Debug)]
pub struct BitShift {
    /// True for `direction = "LEFT"`.
    pub left: bool,
}

impl BitShift {
    /// Builds the op from its required `direction` attribute (`"LEFT"` or `"RIGHT"`).
    pub fn build(attrs: &Attrs, _opset: i64) -> Result<BitShift> {
        let left = match attrs.string("direction")?.as_deref() {
            Some("LEFT") => true,
            Some("RIGHT") => false,
            Some(other) => invalid!("BitShift: direction must be \"LEFT\" or \"RIGHT\", got {other:?}"),
            None => invalid!("BitShift: missing required attribute `direction`"),
        };
        Ok(BitShift { left })
    }
}

impl Op for BitShift {
    fn op_type(&self) -> &'static str {
        "BitShift"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        binary::infer(self.op_type(), inputs, &[DType::U8], None)
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let (x, y, z) = binary::io(inputs, outputs)?;
        if self.left {
            binary::zip::<u8, u8, u8>(x, y, z, |v, s| v.checked_shl(s as u32).unwrap_or(0))
        } else {
            binary::zip::<u8, u8, u8>(x, y, z, |v, s| v.checked_shr(s as u32).unwrap_or(0))
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
    fn rejects_bad_inputs() {
        assert!(BitShift::build(&Attrs::new(), 11).is_err());
        assert!(BitShift::build(&Attrs::new().with("direction", Attr::String(b"UP".to_vec())), 11).is_err());
        let i = tensor(DType::I32, &[1], &[1.0]);
        assert!(eval(&op("LEFT"), &[Some(&i), Some(&i)]).is_err());
    }
}
