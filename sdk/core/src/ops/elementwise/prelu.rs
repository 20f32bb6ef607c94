//! PRelu: `y = x` for x ≥ 0, `slope * x` below, with `slope` unidirectionally broadcast to
//! the shape of `x` (the output has the shape of `x`).

use crate::error::Result;
use crate::invalid;
use crate::ops::elementwise::binary;
use crate::ops::elementwise::common::{
    FLOATS, broadcast_out, check_arity, check_dtype, check_same_dtype, with_numeric,
};
use crate::ops::elementwise::num::Num;
use crate::ops::{Attrs, InferInput, Op, TypeShape, required};
use crate::tensor::{DType, TensorMut, TensorRef};

/// The ONNX PRelu op: float types, and int32/int64 from opset 9.
#[derive(Clone, Debug)]
pub struct PRelu {
    opset: i64,
}

impl PRelu {
    /// Builds the op (no attributes).
    pub fn build(_attrs: &Attrs, opset: i64) -> Result<PRelu> {
        Ok(PRelu { opset })
    }
}

impl Op for PRelu {
    fn op_type(&self) -> &'static str {
        "PRelu"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        check_arity("PRelu", inputs, 2, 2)?;
        let x = required(inputs, 0, "X")?;
        let slope = required(inputs, 1, "slope")?;
        let types: &[DType] = if self.opset >= 9 { &[DType::F32, DType::F16, DType::I32, DType::I64] } else { FLOATS };
        check_dtype("PRelu", "X", x.dtype, types)?;
        check_same_dtype("PRelu", x.dtype, slope.dtype)?;
        if broadcast_out("PRelu", &[x.shape, slope.shape])? != x.shape {
            invalid!("PRelu: slope of shape {:?} does not broadcast to X's shape {:?}", slope.shape, x.shape);
        }
        Ok(vec![TypeShape::new(x.dtype, x.shape.to_vec())])
    }

    // `v < 0` is always false for uint8, which `infer` rejects anyway.
    #[allow(clippy::absurd_extreme_comparisons)]
    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let (x, slope, y) = binary::io(inputs, outputs)?;
        with_numeric!(x.dtype(), T => binary::zip::<T, T, T>(x, slope, y, |v, s| if v < T::ZERO { v.mul(s) } else { v }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::elementwise::testutil::*;
    use crate::ops::eval;

    fn op() -> PRelu {
        PRelu::build(&Attrs::new(), 16).unwrap()
    }

    #[test]
    fn per_channel_slope() {
        let x = f32s(&[2, 3, 1], &[-1.0, -2.0, 3.0, -4.0, 5.0, -6.0]);
        let slope = f32s(&[3, 1], &[0.1, 0.2, 0.3]);
        let y = values(&run1(&op(), &[&x, &slope]));
        let want = [-0.1, -0.4, 3.0, -0.4, 5.0, -1.8];
        for (g, w) in y.into_iter().zip(want) {
            assert!(close(DType::F32, g, w), "{g} vs {w}");
        }
        let x = tensor(DType::I32, &[3], &[-4.0, 0.0, 4.0]);
        let y = run1(&op(), &[&x, &tensor(DType::I32, &[1], &[3.0])]);
        assert_eq!(values(&y), vec![-12.0, 0.0, 4.0]);
    }

    #[test]
    fn random_matches_reference() {
        let mut rng = Rng::new(5);
        for dtype in [DType::F32, DType::F16, DType::I64] {
            for (xs_shape, s_shape) in
                [(&[2, 3, 7][..], &[3, 1][..]), (&[13], &[13]), (&[2, 13], &[]), (&[4, 5, 6, 7], &[7])]
            {
                let xv = random_values(&mut rng, dtype, xs_shape.iter().product(), -10.0, 10.0);
                let sv = random_values(&mut rng, dtype, s_shape.iter().product(), 0.0, 3.0);
                let y = run1(&op(), &[&tensor(dtype, xs_shape, &xv), &tensor(dtype, s_shape, &sv)]);
                assert_eq!(y.shape(), xs_shape);
                for (o, g) in values(&y).into_iter().enumerate() {
                    let (v, s) = (xv[o], sv[naive_index(xs_shape, o, s_shape)]);
                    let want = if v < 0.0 { v * s } else { v };
                    assert!(close(dtype, g, want), "{dtype} [{o}] {g} vs {want}");
                }
            }
        }
    }

    #[test]
    fn rejects_bad_inputs() {
        let x = f32s(&[2, 3], &[0.0; 6]);
        // Slope that would grow the output.
        assert!(eval(&op(), &[Some(&x), Some(&f32s(&[4, 2, 3], &[0.0; 24]))]).is_err());
        assert!(eval(&op(), &[Some(&x), Some(&f32s(&[2], &[0.0; 2]))]).is_err());
        assert!(eval(&op(), &[Some(&x), Some(&tensor(DType::I32, &[1], &[1.0]))]).is_err());
        assert!(eval(&op(), &[Some(&x)]).is_err());
    }
}
