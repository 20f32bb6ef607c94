//! Size: the input's element count as an int64 scalar.

use crate::error::Result;
use crate::invalid_err;
use crate::ops::shape::util::{check_inputs, single_output};
use crate::ops::{Attrs, InferInput, Op, TypeShape, required};
use crate::tensor::{DType, TensorMut, TensorRef};

/// ONNX `Size`.
#[derive(Clone, Debug, Default)]
pub struct Size;

impl Size {
    /// Builds the op; Size has no attributes.
    pub fn build(_attrs: &Attrs, _opset: i64) -> Result<Size> {
        Ok(Size)
    }
}

impl Op for Size {
    fn op_type(&self) -> &'static str {
        "Size"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        check_inputs(inputs, 1, 1, "Size")?;
        required(inputs, 0, "data")?;
        Ok(vec![TypeShape::new(DType::I64, vec![])])
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let x = required(inputs, 0, "data")?;
        let out = single_output(outputs)?.typed_mut::<i64>()?;
        *out.first_mut().ok_or_else(|| invalid_err!("empty output"))? = x.data.len() as i64;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::eval;
    use crate::ops::shape::util::testing::*;
    use crate::tensor::{Tensor, TensorData};

    #[test]
    fn counts() {
        let out = eval(&Size, &[Some(&iota(&[7, 13, 2]))]).unwrap();
        assert_eq!(out[0].shape(), &[] as &[usize]);
        assert_eq!(i64s(&out[0]), vec![182]);
        assert_eq!(i64s(&eval(&Size, &[Some(&iota(&[3, 0]))]).unwrap()[0]), vec![0]);
        assert_eq!(i64s(&eval(&Size, &[Some(&Tensor::scalar_f32(2.0))]).unwrap()[0]), vec![1]);
        let b = Tensor::new(vec![2], TensorData::Bool(vec![true, false])).unwrap();
        assert_eq!(i64s(&eval(&Size, &[Some(&b)]).unwrap()[0]), vec![2]);
        assert!(eval(&Size, &[]).is_err());
    }
}
