//! Div: `C = A / B` with numpy broadcasting. Integer division truncates toward zero (as
//! onnx's reference does); integer division by zero gives 0 rather than trapping.

use crate::error::Result;
use crate::ops::elementwise::binary;
use crate::ops::elementwise::common::{arith_types, with_numeric};
use crate::ops::elementwise::num::Num;
use crate::ops::{Attrs, InferInput, Op, TypeShape};
use crate::tensor::{TensorMut, TensorRef};

/// The ONNX Div op: float16/32 and int32/64, plus int8/uint8 from opset 14.
#[derive(Clone, Debug)]
pub struct Div {
    opset: i64,
}

impl Div {
    /// Builds the op (no attributes from opset 7 on).
    pub fn build(_attrs: &Attrs, opset: i64) -> Result<Div> {
        Ok(Div { opset })
    }
}

impl Op for Div {
    fn op_type(&self) -> &'static str {
        "Div"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        binary::infer(self.op_type(), inputs, arith_types(self.opset), None)
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let (a, b, y) = binary::io(inputs, outputs)?;
        with_numeric!(a.dtype(), T => binary::zip::<T, T, T>(a, b, y, <T as Num>::div))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::elementwise::testutil::*;
    use crate::ops::eval;
    use crate::tensor::DType;

    fn op() -> Div {
        Div::build(&Attrs::new(), 21).unwrap()
    }

    #[test]
    fn broadcast_example() {
        let a = f32s(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let b = f32s(&[3], &[1.0, 2.0, 4.0]);
        let y = run1(&op(), &[&a, &b]);
        assert_eq!(y.shape(), &[2, 3]);
        let want: Vec<f64> = [(1.0, 1.0), (2.0, 2.0), (3.0, 4.0), (4.0, 1.0), (5.0, 2.0), (6.0, 4.0)]
            .iter()
            .map(|&(a, b): &(f64, f64)| a / b)
            .collect();
        for (g, w) in values(&y).into_iter().zip(want) {
            assert!(close(DType::F32, g, w), "{g} vs {w}");
        }
    }

    #[test]
    fn integer_semantics() {
        let op = Div::build(&Attrs::new(), 14).unwrap();
        let a = tensor(DType::I32, &[4], &[7.0, -7.0, 7.0, 5.0]);
        let b = tensor(DType::I32, &[4], &[2.0, 2.0, -2.0, 0.0]);
        assert_eq!(values(&run1(&op, &[&a, &b])), vec![3.0, -3.0, -3.0, 0.0]);
        let y = values(&run1(&op, &[&f32s(&[3], &[1.0, -1.0, 0.0]), &f32s(&[], &[0.0])]));
        assert_eq!(&y[..2], &[f64::INFINITY, f64::NEG_INFINITY]);
        assert!(y[2].is_nan());
    }

    #[test]
    fn random_matches_reference() {
        let reference = |a: f64, b: f64| a / b;
        check_binary(&op(), DType::F32, DType::F32, (-10.0, 10.0), reference);
        check_binary(&op(), DType::F16, DType::F16, (0.5, 4.0), reference);
        for dtype in [DType::I32, DType::I64] {
            check_binary(&op(), dtype, dtype, (1.0, 100.0), |a, b| (a / b).trunc());
        }
        check_binary(&op(), DType::I8, DType::I8, (1.0, 11.0), |a, b| (a / b).trunc());
    }

    #[test]
    fn rejects_bad_inputs() {
        let a = f32s(&[2, 3], &[0.0; 6]);
        assert!(eval(&op(), &[Some(&a), Some(&f32s(&[2], &[0.0; 2]))]).is_err());
        assert!(eval(&op(), &[Some(&a), Some(&tensor(DType::I32, &[1], &[1.0]))]).is_err());
        assert!(eval(&op(), &[Some(&a)]).is_err());
        let b = tensor(DType::Bool, &[1], &[1.0]);
        assert!(eval(&op(), &[Some(&b), Some(&b)]).is_err());
        let i8s = tensor(DType::I8, &[1], &[1.0]);
        assert!(eval(&Div::build(&Attrs::new(), 13).unwrap(), &[Some(&i8s), Some(&i8s)]).is_err());
        let deep = f32s(&[1; 9], &[0.0]);
        assert!(eval(&op(), &[Some(&deep), Some(&deep)]).is_err());
    }
}
