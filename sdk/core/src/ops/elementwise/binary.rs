//! Helpers for two-input ops with numpy broadcasting (Add, Less, And, ...): inference and a
//! typed `zip` that every such op's `run` calls with its element function.

use crate::error::Result;
use crate::invalid;
use crate::ops::broadcast::for_each_run2;
use crate::ops::elementwise::common::{broadcast_out, check_arity, check_broadcasts, check_dtype, check_same_dtype};
use crate::ops::{InferInput, TypeShape, required};
use crate::tensor::{DType, Element, TensorMut, TensorRef};

/// Infers a binary op whose operands share one type from `allowed`; the output has the
/// broadcast shape and type `out` (the operands' type if `None`).
pub fn infer(op: &str, inputs: &[Option<InferInput>], allowed: &[DType], out: Option<DType>) -> Result<Vec<TypeShape>> {
    check_arity(op, inputs, 2, 2)?;
    let a = required(inputs, 0, "A")?;
    let b = required(inputs, 1, "B")?;
    check_dtype(op, "input A", a.dtype, allowed)?;
    check_same_dtype(op, a.dtype, b.dtype)?;
    let shape = broadcast_out(op, &[a.shape, b.shape])?;
    Ok(vec![TypeShape::new(out.unwrap_or(a.dtype), shape)])
}

/// The two inputs and the first output, for `run`.
pub fn io<'i, 'o, 'a>(
    inputs: &[Option<TensorRef<'i>>],
    outputs: &'o mut [TensorMut<'a>],
) -> Result<(TensorRef<'i>, TensorRef<'i>, &'o mut TensorMut<'a>)> {
    let a = required(inputs, 0, "A")?;
    let b = required(inputs, 1, "B")?;
    let Some(y) = outputs.first_mut() else { invalid!("missing output") };
    Ok((a, b, y))
}

/// `y = f(a, b)` elementwise with broadcasting; `y` has the broadcast shape.
pub fn zip<A: Element, B: Element, O: Element>(
    a: TensorRef,
    b: TensorRef,
    y: &mut TensorMut,
    f: impl Fn(A, B) -> O,
) -> Result<()> {
    let shape = y.shape;
    let (av, bv) = (a.typed::<A>()?, b.typed::<B>()?);
    let ys = y.typed_mut::<O>()?;
    check_broadcasts(shape, ys.len(), a.shape, av.len())?;
    check_broadcasts(shape, ys.len(), b.shape, bv.len())?;
    // A run at a time, with a loop per step pattern so the common ones (equal shapes, one
    // side broadcast along the run) are plain slice loops the compiler vectorizes.
    for_each_run2(shape, a.shape, b.shape, |o, i, sa, j, sb, len| {
        let out = &mut ys[o..o + len];
        match (sa, sb) {
            (1, 1) => out.iter_mut().zip(&av[i..i + len]).zip(&bv[j..j + len]).for_each(|((y, &x), &z)| *y = f(x, z)),
            (1, 0) => {
                let z = bv[j];
                out.iter_mut().zip(&av[i..i + len]).for_each(|(y, &x)| *y = f(x, z))
            }
            (0, 1) => {
                let x = av[i];
                out.iter_mut().zip(&bv[j..j + len]).for_each(|(y, &z)| *y = f(x, z))
            }
            _ => out.iter_mut().for_each(|y| *y = f(av[i], bv[j])),
        }
    });
    Ok(())
}
