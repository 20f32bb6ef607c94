//! Clip: `y = min(max(x, min), max)`; a missing bound does not clip. Opset 11 moved the
//! bounds from attributes to optional scalar inputs; opset 12 allowed every numeric type.
//! When `min > max` every value becomes `max` (as the spec says); NaN stays NaN.

use crate::error::Result;
use crate::invalid;
use crate::ops::elementwise::common::{FLOATS, NUMERIC, check_arity, check_dtype, check_same_dtype, with_numeric};
use crate::ops::elementwise::unary;
use crate::ops::{Attrs, InferInput, Op, TypeShape, optional, required};
use crate::tensor::{Element, TensorMut, TensorRef, numel};

/// The ONNX Clip op.
#[derive(Clone, Debug)]
pub struct Clip {
    opset: i64,
    /// Bounds from the attributes (opset < 11).
    attr_bounds: (f32, f32),
}

impl Clip {
    /// Builds the op; before opset 11 the bounds are the `min`/`max` attributes.
    pub fn build(attrs: &Attrs, opset: i64) -> Result<Clip> {
        let attr_bounds = (attrs.float_or("min", f32::MIN)?, attrs.float_or("max", f32::MAX)?);
        Ok(Clip { opset, attr_bounds })
    }

    fn bound<T: Element>(t: Option<TensorRef>) -> Result<Option<T>> {
        match t {
            None => Ok(None),
            Some(t) => match t.typed::<T>()?.first() {
                Some(&v) => Ok(Some(v)),
                None => invalid!("Clip: bound is empty"),
            },
        }
    }
}

/// Clamps one value; `lo` first, so `min > max` gives `max`.
fn clamp<T: Element>(v: T, lo: Option<T>, hi: Option<T>) -> T {
    let v = match lo {
        Some(l) if v < l => l,
        _ => v,
    };
    match hi {
        Some(h) if v > h => h,
        _ => v,
    }
}

impl Op for Clip {
    fn op_type(&self) -> &'static str {
        "Clip"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        if self.opset < 11 {
            return unary::infer("Clip", inputs, FLOATS);
        }
        check_arity("Clip", inputs, 1, 3)?;
        let x = required(inputs, 0, "input")?;
        check_dtype("Clip", "input", x.dtype, if self.opset >= 12 { NUMERIC } else { FLOATS })?;
        for (i, what) in [(1, "min"), (2, "max")] {
            if let Some(b) = optional(inputs, i) {
                check_same_dtype("Clip", x.dtype, b.dtype)?;
                if numel(b.shape) != 1 {
                    invalid!("Clip: {what} must be a scalar, got shape {:?}", b.shape);
                }
            }
        }
        Ok(vec![TypeShape::new(x.dtype, x.shape.to_vec())])
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let (x, y) = unary::io(inputs, outputs)?;
        with_numeric!(x.dtype(), T => {
            let (lo, hi) = if self.opset < 11 {
                let (l, h) = self.attr_bounds;
                (Some(T::from_f64(l as f64)), Some(T::from_f64(h as f64)))
            } else {
                (Self::bound::<T>(optional(inputs, 1))?, Self::bound::<T>(optional(inputs, 2))?)
            };
            unary::map::<T, T>(x, y, |v| clamp(v, lo, hi))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::Attr;
    use crate::ops::elementwise::testutil::*;
    use crate::ops::eval;
    use crate::tensor::{DType, Tensor};

    fn op(opset: i64) -> Clip {
        Clip::build(&Attrs::new(), opset).unwrap()
    }

    #[test]
    fn known_values() {
        let x = f32s(&[5], &[-3.0, -1.0, 0.5, 2.0, f32::NAN]);
        let (lo, hi) = (Tensor::scalar_f32(-1.0), Tensor::scalar_f32(1.0));
        let y = values(&run1(&op(13), &[&x, &lo, &hi]));
        assert_eq!(&y[..4], &[-1.0, -1.0, 0.5, 1.0]);
        assert!(y[4].is_nan());
        // Only max (min omitted).
        let y = eval(&op(13), &[Some(&x), None, Some(&hi)]).unwrap();
        assert_eq!(&values(&y[0])[..4], &[-3.0, -1.0, 0.5, 1.0]);
        // No bounds: a copy.
        assert_eq!(&values(&run1(&op(13), &[&x]))[..4], &[-3.0, -1.0, 0.5, 2.0]);
        // min > max: everything is max.
        let y = values(&run1(&op(13), &[&x, &hi, &lo]));
        assert_eq!(&y[..4], &[-1.0, -1.0, -1.0, -1.0]);
    }

    #[test]
    fn attribute_bounds_before_opset_11() {
        let attrs = Attrs::new().with("min", Attr::Float(0.0)).with("max", Attr::Float(6.0));
        let op = Clip::build(&attrs, 6).unwrap();
        let y = run1(&op, &[&f32s(&[3], &[-1.0, 3.0, 7.0])]);
        assert_eq!(values(&y), vec![0.0, 3.0, 6.0]);
    }

    #[test]
    fn integer_types_from_opset_12() {
        let x = tensor(DType::I8, &[4], &[-128.0, -5.0, 5.0, 127.0]);
        let (lo, hi) = (tensor(DType::I8, &[], &[-10.0]), tensor(DType::I8, &[1], &[10.0]));
        assert_eq!(values(&run1(&op(12), &[&x, &lo, &hi])), vec![-10.0, -5.0, 5.0, 10.0]);
        assert!(eval(&op(11), &[Some(&x), Some(&lo), Some(&hi)]).is_err());
    }

    #[test]
    fn random_matches_reference() {
        let mut rng = Rng::new(3);
        for dtype in [DType::F32, DType::F16, DType::U8, DType::I32, DType::I64] {
            for shape in SHAPES {
                let xs = random_values(&mut rng, dtype, shape.iter().product(), 0.0, 200.0);
                let (l, h) = (rng.int(0, 100) as f64, rng.int(50, 200) as f64);
                let (lo, hi) = (tensor(dtype, &[], &[l]), tensor(dtype, &[], &[h]));
                let y = run1(&op(13), &[&tensor(dtype, shape, &xs), &lo, &hi]);
                let want: Vec<f64> = xs.iter().map(|&v| v.max(l).min(h)).collect();
                assert_eq!(values(&y), want, "{dtype} {shape:?}");
            }
        }
    }

    #[test]
    fn rejects_bad_inputs() {
        let x = f32s(&[2], &[1.0, 2.0]);
        let two = f32s(&[2], &[0.0, 1.0]);
        assert!(eval(&op(13), &[Some(&x), Some(&two)]).is_err());
        let int_bound = Tensor::from_i64(&[], vec![0]).unwrap();
        assert!(eval(&op(13), &[Some(&x), Some(&int_bound)]).is_err());
        assert!(eval(&op(13), &[Some(&x), None, None, Some(&x)]).is_err());
        assert!(eval(&op(13), &[Some(&tensor(DType::Bool, &[1], &[1.0]))]).is_err());
    }
}
