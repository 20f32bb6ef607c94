//! Where (`where` is a Rust keyword): `output = condition ? X : Y` elementwise, with all
//! three inputs broadcast together.

use crate::error::Result;
use crate::invalid;
use crate::ops::broadcast::for_each3;
use crate::ops::elementwise::common::{
    ALL, BOOL, broadcast_out, check_arity, check_broadcasts, check_dtype, check_same_dtype, with_any,
};
use crate::ops::{Attrs, InferInput, Op, TypeShape, required};
use crate::tensor::{Element, TensorMut, TensorRef};

/// The ONNX Where op.
#[derive(Clone, Debug)]
pub struct Where;

impl Where {
    /// Builds the op (no attributes).
    pub fn build(_attrs: &Attrs, _opset: i64) -> Result<Where> {
        Ok(Where)
    }
}

fn select<T: Element>(c: TensorRef, x: TensorRef, y: TensorRef, out: &mut TensorMut) -> Result<()> {
    let shape = out.shape;
    let (cs, xs, ys) = (c.typed::<bool>()?, x.typed::<T>()?, y.typed::<T>()?);
    let os = out.typed_mut::<T>()?;
    for (t, v) in [(c.shape, cs.len()), (x.shape, xs.len()), (y.shape, ys.len())] {
        check_broadcasts(shape, os.len(), t, v)?;
    }
    for_each3(shape, c.shape, x.shape, y.shape, |o, i, j, k| os[o] = if cs[i] { xs[j] } else { ys[k] });
    Ok(())
}

impl Op for Where {
    fn op_type(&self) -> &'static str {
        "Where"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        check_arity("Where", inputs, 3, 3)?;
        let c = required(inputs, 0, "condition")?;
        let x = required(inputs, 1, "X")?;
        let y = required(inputs, 2, "Y")?;
        check_dtype("Where", "condition", c.dtype, BOOL)?;
        check_dtype("Where", "X", x.dtype, ALL)?;
        check_same_dtype("Where", x.dtype, y.dtype)?;
        Ok(vec![TypeShape::new(x.dtype, broadcast_out("Where", &[c.shape, x.shape, y.shape])?)])
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let c = required(inputs, 0, "condition")?;
        let x = required(inputs, 1, "X")?;
        let y = required(inputs, 2, "Y")?;
        let Some(out) = outputs.first_mut() else { invalid!("missing output") };
        with_any!(x.dtype(), T => select::<T>(c, x, y, out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::elementwise::testutil::*;
    use crate::ops::eval;
    use crate::tensor::DType;

    #[test]
    fn known_values() {
        // onnx's test_where_example.
        let c = tensor(DType::Bool, &[2, 2], &[1.0, 0.0, 1.0, 1.0]);
        let x = f32s(&[2, 2], &[1.0, 2.0, 3.0, 4.0]);
        let y = f32s(&[2, 2], &[9.0, 8.0, 7.0, 6.0]);
        assert_eq!(values(&run1(&Where, &[&c, &x, &y])), vec![1.0, 8.0, 3.0, 4.0]);
        // Broadcast: condition per column, scalar Y.
        let c = tensor(DType::Bool, &[3], &[1.0, 0.0, 1.0]);
        let x = tensor(DType::I64, &[2, 1], &[10.0, 20.0]);
        let y = tensor(DType::I64, &[], &[-1.0]);
        let out = run1(&Where, &[&c, &x, &y]);
        assert_eq!(out.shape(), &[2, 3]);
        assert_eq!(values(&out), vec![10.0, -1.0, 10.0, 20.0, -1.0, 20.0]);
    }

    #[test]
    fn random_matches_reference() {
        let mut rng = Rng::new(13);
        let cases: [[&[usize]; 3]; 4] = [
            [&[7], &[7], &[7]],
            [&[2, 1, 13], &[13], &[3, 1]],
            [&[], &[2, 7], &[7]],
            [&[4, 1, 1], &[1, 5, 1], &[1, 1, 6]],
        ];
        for dtype in [DType::F32, DType::F16, DType::U8, DType::I32, DType::Bool] {
            for shapes in cases {
                let cv = random_values(&mut rng, DType::Bool, shapes[0].iter().product(), 0.0, 1.0);
                let xv = random_values(&mut rng, dtype, shapes[1].iter().product(), 0.0, 100.0);
                let yv = random_values(&mut rng, dtype, shapes[2].iter().product(), 0.0, 100.0);
                let out = run1(
                    &Where,
                    &[
                        &tensor(DType::Bool, shapes[0], &cv),
                        &tensor(dtype, shapes[1], &xv),
                        &tensor(dtype, shapes[2], &yv),
                    ],
                );
                let os = out.shape().to_vec();
                for (o, g) in values(&out).into_iter().enumerate() {
                    let idx = |k: usize| naive_index(&os, o, shapes[k]);
                    let want = if cv[idx(0)] != 0.0 { xv[idx(1)] } else { yv[idx(2)] };
                    assert_eq!(g, want, "{dtype} {shapes:?} [{o}]");
                }
            }
        }
    }

    #[test]
    fn rejects_bad_inputs() {
        let c = tensor(DType::Bool, &[2], &[1.0, 0.0]);
        let x = f32s(&[2], &[1.0, 2.0]);
        assert!(eval(&Where, &[Some(&x), Some(&x), Some(&x)]).is_err());
        assert!(eval(&Where, &[Some(&c), Some(&x), Some(&tensor(DType::I32, &[2], &[0.0; 2]))]).is_err());
        assert!(eval(&Where, &[Some(&c), Some(&x), Some(&f32s(&[3], &[0.0; 3]))]).is_err());
        assert!(eval(&Where, &[Some(&c), Some(&x)]).is_err());
    }
}
