//! Flatten: reshape to 2-D around an axis.

use crate::error::Result;
use crate::invalid;
use crate::ops::shape::util::{check_inputs, checked_numel, copy_all, single_output};
use crate::ops::{Attrs, InferInput, Op, TypeShape, required};
use crate::tensor::{TensorMut, TensorRef};

/// ONNX `Flatten`: output `[prod(dims[..axis]), prod(dims[axis..])]`.
#[derive(Clone, Debug)]
pub struct Flatten {
    /// The split axis, in `[-rank, rank]` (default 1).
    pub axis: i64,
}

impl Flatten {
    /// Builds from attributes.
    pub fn build(attrs: &Attrs, _opset: i64) -> Result<Flatten> {
        Ok(Flatten { axis: attrs.int_or("axis", 1)? })
    }
}

impl Op for Flatten {
    fn op_type(&self) -> &'static str {
        "Flatten"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        check_inputs(inputs, 1, 1, "Flatten")?;
        let x = required(inputs, 0, "input")?;
        let r = x.shape.len() as i64;
        if self.axis < -r || self.axis > r {
            invalid!("axis {} is out of range [-{r}, {r}]", self.axis);
        }
        let a = if self.axis < 0 { self.axis + r } else { self.axis } as usize;
        let outer = checked_numel(&x.shape[..a])?;
        let inner = checked_numel(&x.shape[a..])?;
        Ok(vec![TypeShape::new(x.dtype, vec![outer, inner])])
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

    fn flat(axis: i64, shape: &[usize]) -> Result<Vec<usize>> {
        let x = iota(shape);
        let out = eval(&Flatten { axis }, &[Some(&x)])?;
        assert_eq!(f32s(&out[0]), f32s(&x));
        Ok(out[0].shape().to_vec())
    }

    #[test]
    fn axes() {
        assert_eq!(flat(1, &[2, 3, 4, 5]).unwrap(), vec![2, 60]);
        assert_eq!(flat(0, &[2, 3, 4, 5]).unwrap(), vec![1, 120]);
        assert_eq!(flat(4, &[2, 3, 4, 5]).unwrap(), vec![120, 1]);
        assert_eq!(flat(-1, &[2, 3, 4, 5]).unwrap(), vec![24, 5]);
        assert_eq!(flat(-4, &[2, 3, 4, 5]).unwrap(), vec![1, 120]);
        assert_eq!(flat(2, &[7, 13, 1]).unwrap(), vec![91, 1]);
        assert_eq!(flat(0, &[]).unwrap(), vec![1, 1]);
        let op = Flatten::build(&Attrs::new(), 13).unwrap();
        assert_eq!(op.axis, 1);
    }

    #[test]
    fn bad_axis() {
        assert!(flat(5, &[2, 3, 4, 5]).is_err());
        assert!(flat(-5, &[2, 3, 4, 5]).is_err());
    }
}
