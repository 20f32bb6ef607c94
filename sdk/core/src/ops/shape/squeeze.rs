//! Squeeze: remove size-1 dims.

use crate::error::Result;
use crate::invalid;
use crate::ops::shape::util::{check_inputs, const_ints, copy_all, norm_axes, single_output};
use crate::ops::{Attrs, InferInput, Op, TypeShape, optional, required};
use crate::tensor::{DType, TensorMut, TensorRef};

/// ONNX `Squeeze`: axes from the attribute before opset 13, from input #1 since.
#[derive(Clone, Debug)]
pub struct Squeeze {
    /// The `axes` attribute (opset < 13).
    pub axes_attr: Option<Vec<i64>>,
    /// True when axes come from input #1 (opset ≥ 13).
    pub axes_input: bool,
}

impl Squeeze {
    /// Builds from attributes.
    pub fn build(attrs: &Attrs, opset: i64) -> Result<Squeeze> {
        if opset >= 13 {
            Ok(Squeeze { axes_attr: None, axes_input: true })
        } else {
            Ok(Squeeze { axes_attr: attrs.ints("axes")?, axes_input: false })
        }
    }

    /// The output shape of squeezing `shape` along `axes` (all size-1 dims if `None`).
    pub fn output_shape(shape: &[usize], axes: Option<&[i64]>) -> Result<Vec<usize>> {
        match axes {
            None => Ok(shape.iter().copied().filter(|&d| d != 1).collect()),
            Some(axes) => {
                let axes = norm_axes(axes, shape.len(), "axes")?;
                for &a in &axes {
                    if shape[a] != 1 {
                        invalid!("cannot squeeze axis {a} of shape {shape:?}: its size is not 1");
                    }
                }
                Ok(shape.iter().enumerate().filter(|(i, _)| !axes.contains(i)).map(|(_, &d)| d).collect())
            }
        }
    }
}

impl Op for Squeeze {
    fn op_type(&self) -> &'static str {
        "Squeeze"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        let x = required(inputs, 0, "data")?;
        let axes = if self.axes_input {
            check_inputs(inputs, 1, 2, "Squeeze")?;
            match optional(inputs, 1) {
                Some(_) => Some(const_ints(inputs, 1, "axes", &[DType::I64])?),
                None => None,
            }
        } else {
            check_inputs(inputs, 1, 1, "Squeeze")?;
            self.axes_attr.clone()
        };
        Ok(vec![TypeShape::new(x.dtype, Self::output_shape(x.shape, axes.as_deref())?)])
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let x = required(inputs, 0, "data")?;
        copy_all(x, single_output(outputs)?)
    }

    fn alias_output(&self, output: usize) -> Option<usize> {
        (output == 0).then_some(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::Attr;
    use crate::ops::eval;
    use crate::ops::shape::util::testing::*;

    fn sq13(shape: &[usize], axes: Option<&[i64]>) -> Result<Vec<usize>> {
        let op = Squeeze::build(&Attrs::new(), 13)?;
        let x = iota(shape);
        let a = axes.map(ints1);
        let out = eval(&op, &[Some(&x), a.as_ref()])?;
        assert_eq!(f32s(&out[0]), f32s(&x));
        Ok(out[0].shape().to_vec())
    }

    #[test]
    fn opset13_input() {
        assert_eq!(sq13(&[1, 3, 4, 5], Some(&[0])).unwrap(), vec![3, 4, 5]);
        assert_eq!(sq13(&[1, 3, 1, 5], Some(&[-2])).unwrap(), vec![1, 3, 5]);
        assert_eq!(sq13(&[1, 7, 1, 13, 1], None).unwrap(), vec![7, 13]);
        assert_eq!(sq13(&[1, 1], Some(&[1, 0])).unwrap(), Vec::<usize>::new());
        assert!(sq13(&[1, 3], Some(&[1])).is_err());
        assert!(sq13(&[1, 3], Some(&[2])).is_err());
        assert!(sq13(&[1, 1], Some(&[0, -2])).is_err(), "repeated axis");
    }

    #[test]
    fn opset11_attr() {
        let op = Squeeze::build(&Attrs::new().with("axes", Attr::Ints(vec![0, 2])), 11).unwrap();
        let x = iota(&[1, 3, 1]);
        assert_eq!(eval(&op, &[Some(&x)]).unwrap()[0].shape(), &[3]);
        // The axes input does not exist before opset 13.
        assert!(eval(&op, &[Some(&x), Some(&ints1(&[0]))]).is_err());
        let all = Squeeze::build(&Attrs::new(), 11).unwrap();
        assert_eq!(eval(&all, &[Some(&x)]).unwrap()[0].shape(), &[3]);
    }
}
