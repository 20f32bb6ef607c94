//! Unsqueeze: insert size-1 dims.

use crate::error::Result;
use crate::invalid;
use crate::ops::shape::util::{check_inputs, const_ints, copy_all, norm_axes, single_output};
use crate::ops::{Attrs, InferInput, Op, TypeShape, required};
use crate::tensor::{DType, TensorMut, TensorRef};

/// ONNX `Unsqueeze`: axes (positions in the output) from the attribute before opset 13,
/// from input #1 since.
#[derive(Clone, Debug)]
pub struct Unsqueeze {
    /// The `axes` attribute (opset < 13).
    pub axes_attr: Option<Vec<i64>>,
}

impl Unsqueeze {
    /// Builds from attributes; before opset 13 `axes` is required.
    pub fn build(attrs: &Attrs, opset: i64) -> Result<Unsqueeze> {
        if opset >= 13 {
            return Ok(Unsqueeze { axes_attr: None });
        }
        match attrs.ints("axes")? {
            Some(a) => Ok(Unsqueeze { axes_attr: Some(a) }),
            None => invalid!("Unsqueeze before opset 13 needs the `axes` attribute"),
        }
    }

    /// The output shape of inserting size-1 dims at `axes` (output positions).
    pub fn output_shape(shape: &[usize], axes: &[i64]) -> Result<Vec<usize>> {
        let rank = shape.len() + axes.len();
        let axes = norm_axes(axes, rank, "axes")?;
        let mut src = shape.iter();
        Ok((0..rank).map(|i| if axes.contains(&i) { 1 } else { src.next().copied().unwrap_or(1) }).collect())
    }
}

impl Op for Unsqueeze {
    fn op_type(&self) -> &'static str {
        "Unsqueeze"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        let x = required(inputs, 0, "data")?;
        let axes = match &self.axes_attr {
            Some(a) => {
                check_inputs(inputs, 1, 1, "Unsqueeze")?;
                a.clone()
            }
            None => {
                check_inputs(inputs, 2, 2, "Unsqueeze")?;
                const_ints(inputs, 1, "axes", &[DType::I64])?
            }
        };
        Ok(vec![TypeShape::new(x.dtype, Self::output_shape(x.shape, &axes)?)])
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

    fn unsq(shape: &[usize], axes: &[i64]) -> Result<Vec<usize>> {
        let op = Unsqueeze::build(&Attrs::new(), 13)?;
        let x = iota(shape);
        let out = eval(&op, &[Some(&x), Some(&ints1(axes))])?;
        assert_eq!(f32s(&out[0]), f32s(&x));
        Ok(out[0].shape().to_vec())
    }

    #[test]
    fn positions() {
        assert_eq!(unsq(&[3, 4, 5], &[0]).unwrap(), vec![1, 3, 4, 5]);
        assert_eq!(unsq(&[3, 4, 5], &[3]).unwrap(), vec![3, 4, 5, 1]);
        assert_eq!(unsq(&[3, 4, 5], &[1, 4]).unwrap(), vec![3, 1, 4, 5, 1]);
        assert_eq!(unsq(&[3, 4, 5], &[5, 4, 2]).unwrap(), vec![3, 4, 1, 5, 1, 1]);
        assert_eq!(unsq(&[7, 13], &[-1]).unwrap(), vec![7, 13, 1]);
        assert_eq!(unsq(&[], &[0]).unwrap(), vec![1]);
    }

    #[test]
    fn errors() {
        assert!(unsq(&[3], &[2]).is_err());
        assert!(unsq(&[3], &[0, 0]).is_err());
        assert!(unsq(&[3], &[1, -2]).is_err(), "1 and -2 name the same output axis");
        assert!(Unsqueeze::build(&Attrs::new(), 11).is_err());
        let op = Unsqueeze::build(&Attrs::new().with("axes", Attr::Ints(vec![0])), 11).unwrap();
        assert_eq!(eval(&op, &[Some(&iota(&[2]))]).unwrap()[0].shape(), &[1, 2]);
        let op13 = Unsqueeze::build(&Attrs::new(), 13).unwrap();
        assert!(eval(&op13, &[Some(&iota(&[2]))]).is_err(), "axes input required");
    }
}
