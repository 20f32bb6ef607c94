//! Shape: the input's shape as an int64 tensor (optionally a `start..end` part, opset 15).

use crate::error::Result;
use crate::invalid;
use crate::ops::shape::util::{check_inputs, single_output};
use crate::ops::{Attrs, InferInput, Op, TypeShape, required};
use crate::tensor::{DType, TensorMut, TensorRef};

/// ONNX `Shape`.
#[derive(Clone, Debug, Default)]
pub struct Shape {
    /// First dim to report (opset 15+; negative counts from the end).
    pub start: i64,
    /// One past the last dim to report (opset 15+), or all.
    pub end: Option<i64>,
}

impl Shape {
    /// Builds from attributes; `start`/`end` exist from opset 15.
    pub fn build(attrs: &Attrs, opset: i64) -> Result<Shape> {
        if opset < 15 {
            return Ok(Shape::default());
        }
        Ok(Shape { start: attrs.int_or("start", 0)?, end: attrs.int("end")? })
    }

    /// The reported dim range for an input of `rank` (clamped as the spec says).
    fn range(&self, rank: usize) -> (usize, usize) {
        let r = rank as i64;
        let fix = |v: i64| (if v < 0 { v.saturating_add(r) } else { v }).clamp(0, r) as usize;
        let (s, e) = (fix(self.start), fix(self.end.unwrap_or(r)));
        (s, e.max(s))
    }
}

impl Op for Shape {
    fn op_type(&self) -> &'static str {
        "Shape"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        check_inputs(inputs, 1, 1, "Shape")?;
        let x = required(inputs, 0, "data")?;
        let (s, e) = self.range(x.shape.len());
        Ok(vec![TypeShape::new(DType::I64, vec![e - s])])
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let x = required(inputs, 0, "data")?;
        let (s, e) = self.range(x.shape.len());
        let out = single_output(outputs)?.typed_mut::<i64>()?;
        if out.len() != e - s {
            invalid!("output has {} elements, expected {}", out.len(), e - s);
        }
        for (o, &d) in out.iter_mut().zip(&x.shape[s..e]) {
            *o = d as i64;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::Attr;
    use crate::ops::eval;
    use crate::ops::shape::util::testing::*;
    use crate::tensor::{Tensor, TensorData};

    fn shape(start: Option<i64>, end: Option<i64>, opset: i64, x: &Tensor) -> Vec<i64> {
        let mut a = Attrs::new();
        if let Some(s) = start {
            a.insert("start", Attr::Int(s));
        }
        if let Some(e) = end {
            a.insert("end", Attr::Int(e));
        }
        let out = eval(&Shape::build(&a, opset).unwrap(), &[Some(x)]).unwrap();
        assert_eq!(out[0].dtype(), DType::I64);
        i64s(&out[0])
    }

    #[test]
    fn ranges() {
        let x = iota(&[3, 4, 5]);
        assert_eq!(shape(None, None, 13, &x), vec![3, 4, 5]);
        assert_eq!(shape(Some(1), None, 15, &x), vec![4, 5]);
        assert_eq!(shape(None, Some(-1), 15, &x), vec![3, 4]);
        assert_eq!(shape(Some(-1), None, 15, &x), vec![5]);
        assert_eq!(shape(Some(-10), Some(10), 15, &x), vec![3, 4, 5]);
        assert_eq!(shape(Some(2), Some(1), 15, &x), Vec::<i64>::new());
        // Ignored before opset 15.
        assert_eq!(shape(Some(1), None, 13, &x), vec![3, 4, 5]);
        assert_eq!(shape(None, None, 15, &Tensor::scalar_f32(1.0)), Vec::<i64>::new());
        let b = Tensor::new(vec![7, 13], TensorData::Bool(vec![false; 91])).unwrap();
        assert_eq!(shape(None, None, 21, &b), vec![7, 13]);
    }

    #[test]
    fn errors() {
        assert!(eval(&Shape::default(), &[]).is_err());
    }
}
