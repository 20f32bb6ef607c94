//! Constant: a value held in the node's attributes.

use crate::error::Result;
use crate::invalid;
use crate::ops::shape::util::{check_inputs, copy_all, single_output};
use crate::ops::{Attr, Attrs, InferInput, Op, TypeShape};
use crate::tensor::{Tensor, TensorData, TensorMut, TensorRef};

/// ONNX `Constant` from `value`, `value_float(s)` or `value_int(s)`. String and sparse
/// values are not supported (edgert has no string tensors, no sparse tensors).
#[derive(Clone, Debug)]
pub struct Constant {
    /// The value.
    pub value: Tensor,
}

impl Constant {
    /// Builds from attributes; exactly one value attribute must be present.
    pub fn build(attrs: &Attrs, opset: i64) -> Result<Constant> {
        let names = [
            "value",
            "value_float",
            "value_floats",
            "value_int",
            "value_ints",
            "value_string",
            "value_strings",
            "sparse_value",
        ];
        let present: Vec<&str> = names.iter().copied().filter(|n| attrs.get(n).is_some()).collect();
        if present.len() != 1 {
            invalid!("Constant needs exactly one of {names:?}, got {present:?}");
        }
        let name = present[0];
        if name != "value" && name != "sparse_value" && opset < 12 {
            invalid!("Constant attribute `{name}` needs opset 12, the model has {opset}");
        }
        let value = match (name, attrs.get(name)) {
            ("value", Some(Attr::Tensor(t))) => t.clone(),
            ("value_float", Some(Attr::Float(v))) => Tensor::scalar_f32(*v),
            ("value_floats", Some(Attr::Floats(v))) => Tensor::from_f32(&[v.len()], v.clone())?,
            ("value_int", Some(Attr::Int(v))) => Tensor::new(vec![], TensorData::I64(vec![*v]))?,
            ("value_ints", Some(Attr::Ints(v))) => Tensor::from_i64(&[v.len()], v.clone())?,
            ("value_string" | "value_strings", _) => invalid!("string constants are not supported"),
            ("sparse_value", _) => invalid!("sparse constants are not supported"),
            (n, other) => invalid!("Constant attribute `{n}` has the wrong kind: {other:?}"),
        };
        Ok(Constant { value })
    }
}

impl Op for Constant {
    fn op_type(&self) -> &'static str {
        "Constant"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        check_inputs(inputs, 0, 0, "Constant")?;
        Ok(vec![TypeShape::new(self.value.dtype(), self.value.shape().to_vec())])
    }

    fn run(&self, _inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        copy_all(self.value.view(), single_output(outputs)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::eval;
    use crate::ops::shape::util::testing::*;

    fn one(name: &str, v: Attr, opset: i64) -> Result<Tensor> {
        let op = Constant::build(&Attrs::new().with(name, v), opset)?;
        Ok(eval(&op, &[])?.remove(0))
    }

    #[test]
    fn kinds() {
        let t = iota(&[2, 3]);
        assert_eq!(one("value", Attr::Tensor(t.clone()), 11).unwrap(), t);
        assert_eq!(one("value_float", Attr::Float(2.5), 13).unwrap(), Tensor::scalar_f32(2.5));
        assert_eq!(f32s(&one("value_floats", Attr::Floats(vec![1.0, 2.0]), 13).unwrap()), vec![1.0, 2.0]);
        let i = one("value_int", Attr::Int(-3), 13).unwrap();
        assert_eq!((i.shape().len(), i64s(&i)), (0, vec![-3]));
        assert_eq!(one("value_ints", Attr::Ints(vec![4, 5, 6]), 21).unwrap().shape(), &[3]);
        let b = Tensor::new(vec![2], TensorData::Bool(vec![true, false])).unwrap();
        assert_eq!(one("value", Attr::Tensor(b.clone()), 21).unwrap(), b);
    }

    #[test]
    fn errors() {
        assert!(one("value_string", Attr::String(b"x".to_vec()), 13).is_err());
        assert!(one("value_float", Attr::Float(1.0), 11).is_err(), "value_float needs opset 12");
        assert!(one("value_int", Attr::Float(1.0), 13).is_err());
        assert!(Constant::build(&Attrs::new(), 13).is_err());
        let two = Attrs::new().with("value_int", Attr::Int(1)).with("value_float", Attr::Float(1.0));
        assert!(Constant::build(&two, 13).is_err());
        let op = Constant::build(&Attrs::new().with("value_int", Attr::Int(1)), 13).unwrap();
        assert!(eval(&op, &[Some(&iota(&[1]))]).is_err(), "no inputs");
    }
}
