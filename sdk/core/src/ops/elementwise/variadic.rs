//! Helpers for the variadic broadcasting ops Max, Min, Sum and Mean: the output is the
//! broadcast of all inputs, folded left to right.

use crate::error::Result;
use crate::invalid;
use crate::ops::broadcast::for_each_run2;
use crate::ops::elementwise::common::{broadcast_out, check_broadcasts, check_dtype, check_same_dtype};
use crate::ops::{InferInput, TypeShape};
use crate::tensor::{DType, Element, MAX_RANK, TensorRef};

/// Infers a variadic op: one or more inputs (none omitted) of one type from `allowed`.
pub fn infer(op: &str, inputs: &[Option<InferInput>], allowed: &[DType]) -> Result<Vec<TypeShape>> {
    let Some(Some(first)) = inputs.first() else { invalid!("{op}: needs at least one input") };
    for (i, x) in inputs.iter().enumerate() {
        let Some(x) = x else { invalid!("{op}: input #{i} is missing (variadic inputs can't be omitted)") };
        check_dtype(op, "input", x.dtype, allowed)?;
        check_same_dtype(op, first.dtype, x.dtype)?;
        if x.shape.len() > MAX_RANK {
            invalid!("{op}: rank {} exceeds the supported maximum {MAX_RANK}", x.shape.len());
        }
    }
    let shapes: Vec<&[usize]> = inputs.iter().flatten().map(|x| x.shape).collect();
    Ok(vec![TypeShape::new(first.dtype, broadcast_out(op, &shapes)?)])
}

/// Folds the inputs into `acc` (laid out as the broadcast `shape`): `acc = load(x0)`, then
/// `acc = f(acc, load(xk))` for each further input.
pub fn fold<T: Element, A: Copy>(
    inputs: &[Option<TensorRef>],
    shape: &[usize],
    acc: &mut [A],
    load: impl Fn(T) -> A,
    f: impl Fn(A, A) -> A,
) -> Result<()> {
    for (k, x) in inputs.iter().enumerate() {
        let Some(x) = x else { invalid!("input #{k} is missing") };
        let xs = x.typed::<T>()?;
        check_broadcasts(shape, acc.len(), x.shape, xs.len())?;
        // A run at a time: slice loops for a contiguous or a broadcast input.
        for_each_run2(shape, shape, x.shape, |o, _, _, i, si, len| {
            let out = &mut acc[o..o + len];
            match (k, si) {
                (0, 1) => out.iter_mut().zip(&xs[i..i + len]).for_each(|(a, &v)| *a = load(v)),
                (0, _) => out.fill(load(xs[i])),
                (_, 1) => out.iter_mut().zip(&xs[i..i + len]).for_each(|(a, &v)| *a = f(*a, load(v))),
                _ => {
                    let v = load(xs[i]);
                    out.iter_mut().for_each(|a| *a = f(*a, v))
                }
            }
        });
    }
    Ok(())
}

/// An f32 view of `n` elements at the start of `scratch` (which is 8-byte aligned).
pub fn scratch_f32(scratch: &mut [u8], n: usize) -> Result<&mut [f32]> {
    // SAFETY: every bit pattern is a valid f32; `align_to_mut` handles alignment.
    let (head, body, _) = unsafe { scratch.align_to_mut::<f32>() };
    if !head.is_empty() || body.len() < n {
        invalid!("scratch buffer too small or misaligned for {n} f32 values");
    }
    Ok(&mut body[..n])
}
