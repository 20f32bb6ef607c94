//! ConstantOfShape: a tensor of a given shape filled with one value.

use crate::error::Result;
use crate::ops::shape::util::{check_inputs, const_ints, dispatch, single_output};
use crate::ops::{Attrs, InferInput, Op, TypeShape};
use crate::tensor::{DType, Element, Tensor, TensorMut, TensorRef};
use crate::{invalid, invalid_err};

/// ONNX `ConstantOfShape`: input #0 is the shape (int64, 1-D); `value` is a one-element
/// tensor giving the fill and the element type (default float32 0).
#[derive(Clone, Debug)]
pub struct ConstantOfShape {
    /// The one-element fill value.
    pub value: Tensor,
}

impl ConstantOfShape {
    /// Builds from attributes.
    pub fn build(attrs: &Attrs, _opset: i64) -> Result<ConstantOfShape> {
        let value = match attrs.tensor("value")? {
            Some(t) if t.len() == 1 => t.clone(),
            Some(t) => invalid!("value must hold one element, it has {}", t.len()),
            None => Tensor::scalar_f32(0.0),
        };
        Ok(ConstantOfShape { value })
    }
}

fn fill<T: Element>(value: TensorRef, out: &mut TensorMut) -> Result<()> {
    let v = *value.typed::<T>()?.first().ok_or_else(|| invalid_err!("empty value"))?;
    out.typed_mut::<T>()?.fill(v);
    Ok(())
}

impl Op for ConstantOfShape {
    fn op_type(&self) -> &'static str {
        "ConstantOfShape"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        check_inputs(inputs, 1, 1, "ConstantOfShape")?;
        let dims = const_ints(inputs, 0, "input", &[DType::I64])?;
        let mut shape = Vec::with_capacity(dims.len());
        for &d in &dims {
            if d < 0 {
                invalid!("shape {dims:?} has a negative dim");
            }
            shape.push(usize::try_from(d).map_err(|_| invalid_err!("dim {d} too large"))?);
        }
        Ok(vec![TypeShape::new(self.value.dtype(), shape)])
    }

    fn run(&self, _inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let v = self.value.view();
        dispatch!(v.dtype(), fill(v, single_output(outputs)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::Attr;
    use crate::ops::eval;
    use crate::ops::shape::util::testing::*;
    use crate::tensor::TensorData;

    #[test]
    fn fills() {
        let op = ConstantOfShape::build(&Attrs::new(), 9).unwrap();
        let out = eval(&op, &[Some(&ints1(&[2, 3]))]).unwrap();
        assert_eq!(out[0], Tensor::zeros(DType::F32, &[2, 3]));
        let v = Tensor::new(vec![1], TensorData::I32(vec![7])).unwrap();
        let op = ConstantOfShape::build(&Attrs::new().with("value", Attr::Tensor(v)), 20).unwrap();
        let out = eval(&op, &[Some(&ints1(&[13]))]).unwrap();
        assert_eq!(out[0].data(), &TensorData::I32(vec![7; 13]));
        let out = eval(&op, &[Some(&ints1(&[]))]).unwrap();
        assert_eq!((out[0].shape().len(), out[0].len()), (0, 1));
        assert_eq!(eval(&op, &[Some(&ints1(&[4, 0]))]).unwrap()[0].len(), 0);
        let b = Tensor::new(vec![1], TensorData::Bool(vec![true])).unwrap();
        let op = ConstantOfShape::build(&Attrs::new().with("value", Attr::Tensor(b)), 21).unwrap();
        assert_eq!(eval(&op, &[Some(&ints1(&[2]))]).unwrap()[0].data(), &TensorData::Bool(vec![true, true]));
    }

    #[test]
    fn errors() {
        let op = ConstantOfShape::build(&Attrs::new(), 9).unwrap();
        assert!(eval(&op, &[Some(&ints1(&[2, -1]))]).is_err());
        assert!(eval(&op, &[Some(&iota(&[2]))]).is_err(), "shape must be int64");
        assert!(eval(&op, &[Some(&ints(&[1, 1], &[2]))]).is_err(), "shape must be 1-D");
        assert!(ConstantOfShape::build(&Attrs::new().with("value", Attr::Tensor(iota(&[2]))), 9).is_err());
    }
}
