//! Helpers for ops with one input and one output of the same shape.

use half::f16;

use crate::error::Result;
use crate::invalid;
use crate::ops::elementwise::common::{check_arity, check_dtype};
use crate::ops::{InferInput, TypeShape, required};
use crate::tensor::{DType, Element, TensorMut, TensorRef};

/// Infers a unary op: one input whose type is in `allowed`; the output has its type and shape.
pub fn infer(op: &str, inputs: &[Option<InferInput>], allowed: &[DType]) -> Result<Vec<TypeShape>> {
    check_arity(op, inputs, 1, 1)?;
    let x = required(inputs, 0, "X")?;
    check_dtype(op, "input", x.dtype, allowed)?;
    Ok(vec![TypeShape::new(x.dtype, x.shape.to_vec())])
}

/// The sole input and the first output, for `run`.
pub fn io<'i, 'o, 'a>(
    inputs: &[Option<TensorRef<'i>>],
    outputs: &'o mut [TensorMut<'a>],
) -> Result<(TensorRef<'i>, &'o mut TensorMut<'a>)> {
    let x = required(inputs, 0, "X")?;
    let Some(y) = outputs.first_mut() else { invalid!("missing output") };
    Ok((x, y))
}

/// `y[i] = f(x[i])` for typed input and output of the same length.
pub fn map<T: Element, U: Element>(x: TensorRef, y: &mut TensorMut, f: impl Fn(T) -> U) -> Result<()> {
    let xs = x.typed::<T>()?;
    let ys = y.typed_mut::<U>()?;
    if xs.len() != ys.len() {
        invalid!("input has {} elements, output {}", xs.len(), ys.len());
    }
    for (o, &v) in ys.iter_mut().zip(xs) {
        *o = f(v);
    }
    Ok(())
}

/// `y[i] = f(x[i])` for an F32 or F16 tensor; F16 computes in f32.
pub fn map_float(x: TensorRef, y: &mut TensorMut, f: impl Fn(f32) -> f32) -> Result<()> {
    match x.dtype() {
        DType::F32 => map::<f32, f32>(x, y, f),
        DType::F16 => map::<f16, f16>(x, y, |v| f16::from_f32(f(v.to_f32()))),
        other => invalid!("expected a float tensor, got {other}"),
    }
}
