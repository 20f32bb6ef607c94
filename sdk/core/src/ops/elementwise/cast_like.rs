//! CastLike (opset 15): Cast to the element type of a second input, `target_type`, whose
//! values are not read. Conversions are those of [`Cast`](super::cast::Cast).

use crate::error::Result;
use crate::ops::elementwise::cast::cast_into;
use crate::ops::elementwise::common::{ALL, check_arity, check_dtype};
use crate::ops::elementwise::unary;
use crate::ops::{Attrs, InferInput, Op, TypeShape, required};
use crate::tensor::{TensorMut, TensorRef};

/// The ONNX CastLike op.
#[derive(Clone, Debug)]
pub struct CastLike;

impl CastLike {
    /// Builds the op; `saturate` (opset 19) only concerns float8 types and is ignored.
    pub fn build(_attrs: &Attrs, _opset: i64) -> Result<CastLike> {
        Ok(CastLike)
    }
}

impl Op for CastLike {
    fn op_type(&self) -> &'static str {
        "CastLike"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        check_arity("CastLike", inputs, 2, 2)?;
        let x = required(inputs, 0, "input")?;
        let like = required(inputs, 1, "target_type")?;
        check_dtype("CastLike", "input", x.dtype, ALL)?;
        Ok(vec![TypeShape::new(like.dtype, x.shape.to_vec())])
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let (x, y) = unary::io(inputs, outputs)?;
        cast_into(x, y)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::elementwise::testutil::*;
    use crate::ops::eval;
    use crate::tensor::DType;

    #[test]
    fn casts_to_the_second_inputs_type() {
        let x = f32s(&[2, 2], &[1.5, -2.5, 0.0, 300.0]);
        let like = tensor(DType::I32, &[0], &[]);
        let y = run1(&CastLike, &[&x, &like]);
        assert_eq!((y.dtype(), y.shape()), (DType::I32, &[2usize, 2][..]));
        assert_eq!(values(&y), vec![1.0, -2.0, 0.0, 300.0]);
        let y = run1(&CastLike, &[&x, &tensor(DType::F16, &[1], &[0.0])]);
        assert_eq!(values(&y), vec![1.5, -2.5, 0.0, 300.0]);
    }

    #[test]
    fn random_matches_cast() {
        let mut rng = Rng::new(19);
        for shape in SHAPES {
            let xs = random_values(&mut rng, DType::F32, shape.iter().product(), -100.0, 100.0);
            let y = run1(&CastLike, &[&tensor(DType::F32, shape, &xs), &tensor(DType::I64, &[], &[0.0])]);
            assert_eq!(values(&y), xs.iter().map(|v| v.trunc()).collect::<Vec<_>>());
        }
    }

    #[test]
    fn rejects_bad_inputs() {
        let x = f32s(&[1], &[1.0]);
        assert!(eval(&CastLike, &[Some(&x)]).is_err());
        assert!(eval(&CastLike, &[Some(&x), None]).is_err());
    }
}
