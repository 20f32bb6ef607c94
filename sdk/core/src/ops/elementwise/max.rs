//! Max: elementwise maximum of one or more inputs, with broadcasting; NaN wins.

use crate::error::Result;
use crate::invalid;
use crate::ops::elementwise::common::{FLOATS, NUMERIC, with_numeric};
use crate::ops::elementwise::num::Num;
use crate::ops::elementwise::variadic;
use crate::ops::{Attrs, InferInput, Op, TypeShape};
use crate::tensor::{TensorMut, TensorRef};

/// The ONNX Max op: float types, every numeric type from opset 12.
#[derive(Clone, Debug)]
pub struct Max {
    opset: i64,
}

impl Max {
    /// Builds the op (no attributes).
    pub fn build(_attrs: &Attrs, opset: i64) -> Result<Max> {
        Ok(Max { opset })
    }
}

impl Op for Max {
    fn op_type(&self) -> &'static str {
        "Max"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        variadic::infer(self.op_type(), inputs, if self.opset >= 12 { NUMERIC } else { FLOATS })
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let Some(y) = outputs.first_mut() else { invalid!("missing output") };
        let shape = y.shape;
        with_numeric!(y.dtype(), T => variadic::fold::<T, T>(inputs, shape, y.typed_mut::<T>()?, |v| v, <T as Num>::max_of))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::elementwise::testutil::*;
    use crate::ops::eval;
    use crate::tensor::DType;

    fn op() -> Max {
        Max::build(&Attrs::new(), 13).unwrap()
    }

    #[test]
    fn known_values() {
        // onnx's test_max_example.
        let a = f32s(&[3], &[3.0, 2.0, 1.0]);
        let b = f32s(&[3], &[1.0, 4.0, 4.0]);
        let c = f32s(&[3], &[2.0, 5.0, 2.0]);
        assert_eq!(values(&run1(&op(), &[&a, &b, &c])), vec![3.0, 5.0, 4.0]);
        // One input: a copy. NaN propagates.
        assert_eq!(values(&run1(&op(), &[&a])), vec![3.0, 2.0, 1.0]);
        let n = values(&run1(&op(), &[&a, &f32s(&[], &[f32::NAN])]));
        assert!(n.iter().all(|v| v.is_nan()));
        let i = values(&run1(&op(), &[&tensor(DType::U8, &[2], &[1.0, 200.0]), &tensor(DType::U8, &[1], &[100.0])]));
        assert_eq!(i, vec![f64::max(1.0, 100.0), f64::max(200.0, 100.0)]);
    }

    #[test]
    fn random_matches_reference() {
        check_binary(&op(), DType::F32, DType::F32, (-10.0, 10.0), f64::max);
        for dtype in [DType::F16, DType::I8, DType::U8, DType::I32, DType::I64] {
            check_binary(&op(), dtype, dtype, (0.0, 100.0), f64::max);
        }
        // Three inputs of different shapes.
        let mut rng = Rng::new(9);
        let shapes: [&[usize]; 3] = [&[2, 1, 7], &[3, 1], &[7]];
        let vals: Vec<Vec<f64>> =
            shapes.iter().map(|s| random_values(&mut rng, DType::F32, s.iter().product(), -5.0, 5.0)).collect();
        let ts: Vec<_> = shapes.iter().zip(&vals).map(|(s, v)| tensor(DType::F32, s, v)).collect();
        let y = run1(&op(), &[&ts[0], &ts[1], &ts[2]]);
        assert_eq!(y.shape(), &[2, 3, 7]);
        for (o, g) in values(&y).into_iter().enumerate() {
            let w = (0..3).map(|k| vals[k][naive_index(&[2, 3, 7], o, shapes[k])]).reduce(f64::max).unwrap();
            assert_eq!(g, w);
        }
    }

    #[test]
    fn rejects_bad_inputs() {
        let a = f32s(&[2], &[0.0; 2]);
        assert!(eval(&op(), &[]).is_err());
        assert!(eval(&op(), &[Some(&a), None, Some(&a)]).is_err());
        assert!(eval(&op(), &[Some(&a), Some(&f32s(&[3], &[0.0; 3]))]).is_err());
        assert!(eval(&op(), &[Some(&a), Some(&tensor(DType::I32, &[2], &[0.0; 2]))]).is_err());
        let i = tensor(DType::I32, &[2], &[0.0; 2]);
        assert!(eval(&Max::build(&Attrs::new(), 11).unwrap(), &[Some(&i)]).is_err());
        let b = tensor(DType::Bool, &[1], &[0.0]);
        assert!(eval(&op(), &[Some(&b)]).is_err());
    }
}
