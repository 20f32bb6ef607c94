//! Identity: the output is the input.

use crate::error::Result;
use crate::ops::shape::util::{check_inputs, copy_all, single_output};
use crate::ops::{Attrs, InferInput, Op, TypeShape, required};
use crate::tensor::{TensorMut, TensorRef};

/// ONNX `Identity` (tensor inputs only; sequences and optionals are not supported).
#[derive(Clone, Debug, Default)]
pub struct Identity;

impl Identity {
    /// Builds the op; Identity has no attributes.
    pub fn build(_attrs: &Attrs, _opset: i64) -> Result<Identity> {
        Ok(Identity)
    }
}

impl Op for Identity {
    fn op_type(&self) -> &'static str {
        "Identity"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        check_inputs(inputs, 1, 1, "Identity")?;
        let x = required(inputs, 0, "input")?;
        Ok(vec![TypeShape::new(x.dtype, x.shape.to_vec())])
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let x = required(inputs, 0, "input")?;
        copy_all(x, single_output(outputs)?)
    }

    fn alias_output(&self, output: usize) -> Option<usize> {
        (output == 0).then_some(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::eval;
    use crate::ops::shape::util::testing::*;
    use crate::tensor::{Tensor, TensorData};

    #[test]
    fn copies_every_type() {
        let op = Identity;
        let a = iota(&[2, 7]);
        assert_eq!(eval(&op, &[Some(&a)]).unwrap()[0], a);
        let b = Tensor::new(vec![3], TensorData::Bool(vec![true, false, true])).unwrap();
        assert_eq!(eval(&op, &[Some(&b)]).unwrap()[0], b);
        let s = Tensor::scalar_f32(4.5);
        assert_eq!(eval(&op, &[Some(&s)]).unwrap()[0], s);
        assert_eq!(op.alias_output(0), Some(0));
    }

    #[test]
    fn run_copies_without_alias() {
        let op = Identity;
        let a = iota(&[13]);
        let mut out = Tensor::zeros(a.dtype(), a.shape());
        op.run(&[Some(a.view())], &mut [out.view_mut()], &mut []).unwrap();
        assert_eq!(out, a);
    }

    #[test]
    fn errors() {
        let op = Identity;
        let a = iota(&[2]);
        assert!(eval(&op, &[]).is_err());
        assert!(eval(&op, &[Some(&a), Some(&a)]).is_err());
    }
}
