//! Helpers shared by the shape ops: axis normalization, reading shape-like inputs, and
//! allocation-free strided copies.

use crate::error::{Error, Result};
use crate::ops::{InferInput, const_value, required};
use crate::tensor::{DType, DataRef, MAX_RANK, Tensor, TensorMut, TensorRef};
use crate::{invalid, invalid_err};

/// Calls `$f::<T>($args...)` with `T` the element type matching `$dtype`.
macro_rules! dispatch {
    ($dtype:expr, $f:ident ( $($arg:expr),* $(,)? )) => {
        match $dtype {
            $crate::tensor::DType::F32 => $f::<f32>($($arg),*),
            $crate::tensor::DType::F16 => $f::<half::f16>($($arg),*),
            $crate::tensor::DType::I8 => $f::<i8>($($arg),*),
            $crate::tensor::DType::U8 => $f::<u8>($($arg),*),
            $crate::tensor::DType::I32 => $f::<i32>($($arg),*),
            $crate::tensor::DType::I64 => $f::<i64>($($arg),*),
            $crate::tensor::DType::Bool => $f::<bool>($($arg),*),
        }
    };
}
pub(crate) use dispatch;

/// Normalizes `axis` from `[-rank, rank)` to `[0, rank)`.
pub(crate) fn norm_axis(axis: i64, rank: usize, what: &str) -> Result<usize> {
    let r = rank as i64;
    if axis < -r || axis >= r {
        invalid!("{what} {axis} is out of range for rank {rank}");
    }
    Ok(if axis < 0 { axis + r } else { axis } as usize)
}

/// Normalizes a list of axes against `rank`, rejecting duplicates.
pub(crate) fn norm_axes(axes: &[i64], rank: usize, what: &str) -> Result<Vec<usize>> {
    let mut out = Vec::with_capacity(axes.len());
    for &a in axes {
        let n = norm_axis(a, rank, what)?;
        if out.contains(&n) {
            invalid!("{what} {axes:?} repeat axis {n}");
        }
        out.push(n);
    }
    Ok(out)
}

/// Errors if `shape` has more dims than the kernels support.
pub(crate) fn check_rank(shape: &[usize], what: &str) -> Result<()> {
    if shape.len() > MAX_RANK {
        invalid!("{what} has rank {}, more than the supported {MAX_RANK}", shape.len());
    }
    Ok(())
}

/// Element count of a shape, erroring on overflow.
pub(crate) fn checked_numel(shape: &[usize]) -> Result<usize> {
    shape
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| invalid_err!("shape {shape:?} has too many elements"))
}

/// Checks that `dtype` is one of `allowed`.
pub(crate) fn check_dtype(dtype: DType, allowed: &[DType], what: &str) -> Result<()> {
    if !allowed.contains(&dtype) {
        let names: Vec<&str> = allowed.iter().map(|d| d.name()).collect();
        invalid!("{what} must be {}, got {dtype}", names.join(" or "));
    }
    Ok(())
}

/// Integer types accepted for index-like inputs (`tensor(int32)`, `tensor(int64)`).
pub(crate) const INDEX_TYPES: &[DType] = &[DType::I32, DType::I64];

/// The constant value of integer input `i` as i64s, checking its element type and that it
/// is a scalar or 1-D.
pub(crate) fn const_ints(inputs: &[Option<InferInput>], i: usize, what: &str, allowed: &[DType]) -> Result<Vec<i64>> {
    let inp = required(inputs, i, what)?;
    check_dtype(inp.dtype, allowed, what)?;
    if inp.shape.len() > 1 {
        invalid!("{what} must be 1-D, got shape {:?}", inp.shape);
    }
    let t: &Tensor = const_value(inputs, i, what)?;
    t.to_i64_vec()
}

/// Element `i` of an integer tensor, widened to i64 (no allocation). `None` for non-integer
/// types or an index past the end.
pub(crate) fn int_at(d: DataRef, i: usize) -> Option<i64> {
    match d {
        DataRef::I64(v) => v.get(i).copied(),
        DataRef::I32(v) => v.get(i).map(|&x| x as i64),
        DataRef::I8(v) => v.get(i).map(|&x| x as i64),
        DataRef::U8(v) => v.get(i).map(|&x| x as i64),
        _ => None,
    }
}

/// Like [`int_at`], but an error instead of `None`.
pub(crate) fn int_at_or_err(d: DataRef, i: usize, what: &str) -> Result<i64> {
    int_at(d, i).ok_or_else(|| invalid_err!("{what}: no integer element #{i}"))
}

/// The single output of a one-output op, or an error.
pub(crate) fn single_output<'o, 'a>(outputs: &'o mut [TensorMut<'a>]) -> Result<&'o mut TensorMut<'a>> {
    outputs.first_mut().ok_or_else(|| invalid_err!("missing output #0"))
}

/// Copies `src` into `dst` element for element (same type and count; shapes may differ).
/// The `run` of the reinterpreting ops (Reshape, Flatten, ...).
pub(crate) fn copy_all(src: TensorRef, dst: &mut TensorMut) -> Result<()> {
    dispatch!(src.dtype(), copy_all_t(src, dst))
}

fn copy_all_t<T: crate::tensor::Element>(src: TensorRef, dst: &mut TensorMut) -> Result<()> {
    let s = src.typed::<T>()?;
    let d = dst.typed_mut::<T>()?;
    if s.len() != d.len() {
        invalid!("input has {} elements, output {}", s.len(), d.len());
    }
    // When the planner aliased the buffers, source and destination are the same memory.
    if s.as_ptr() != d.as_ptr() {
        d.copy_from_slice(s);
    }
    Ok(())
}

/// A strided view of a buffer: element `idx` is at `offset + Σ idx[k] * strides[k]`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Strided {
    /// Element offset of index 0.
    pub offset: isize,
    /// Per-dim strides in elements (may be 0 or negative).
    pub strides: [isize; MAX_RANK],
}

impl Strided {
    /// The row-major layout of `shape` starting at `offset`.
    pub fn row_major(shape: &[usize], offset: usize) -> Strided {
        let mut strides = [0isize; MAX_RANK];
        let mut acc = 1isize;
        for k in (0..shape.len().min(MAX_RANK)).rev() {
            strides[k] = acc;
            acc = acc.wrapping_mul(shape[k] as isize);
        }
        Strided { offset: offset as isize, strides }
    }
}

/// Copies a `shape`-sized block: `dst[d.offset + Σ idx·d.strides] = src[s.offset + Σ idx·s.strides]`
/// for every index of `shape`. No allocation; an index outside either buffer is an error.
pub(crate) fn copy_strided<T: Copy>(src: &[T], s: &Strided, dst: &mut [T], d: &Strided, shape: &[usize]) -> Result<()> {
    let rank = shape.len();
    if rank > MAX_RANK {
        invalid!("rank {rank} is more than the supported {MAX_RANK}");
    }
    if shape.contains(&0) {
        return Ok(());
    }
    let oob = || Error::Invalid("strided copy out of bounds (shapes differ from inference)".into());
    if rank == 0 {
        let v = *usize::try_from(s.offset).ok().and_then(|i| src.get(i)).ok_or_else(oob)?;
        *usize::try_from(d.offset).ok().and_then(|i| dst.get_mut(i)).ok_or_else(oob)? = v;
        return Ok(());
    }
    // One run of the last dim at a time: its ends are bounds-checked once, then it is a
    // slice copy (both strides 1) or a strided loop.
    let inner = shape[rank - 1];
    let (ss, ds) = (s.strides[rank - 1], d.strides[rank - 1]);
    let span = |start: isize, stride: isize, len: usize| -> Option<(usize, usize)> {
        let end = start + stride * (inner as isize - 1);
        let (lo, hi) = (start.min(end), start.max(end));
        (lo >= 0 && (hi as usize) < len).then_some((lo as usize, hi as usize))
    };
    let mut idx = [0usize; MAX_RANK];
    let (mut si, mut di) = (s.offset, d.offset);
    loop {
        span(si, ss, src.len()).ok_or_else(oob)?;
        span(di, ds, dst.len()).ok_or_else(oob)?;
        if ss == 1 && ds == 1 {
            let (a, b) = (si as usize, di as usize);
            dst[b..b + inner].copy_from_slice(&src[a..a + inner]);
        } else {
            for j in 0..inner as isize {
                dst[(di + j * ds) as usize] = src[(si + j * ss) as usize];
            }
        }
        // Advance the odometer over the outer dims, the last of them fastest.
        let mut k = rank - 1;
        loop {
            if k == 0 {
                return Ok(());
            }
            k -= 1;
            idx[k] += 1;
            si += s.strides[k];
            di += d.strides[k];
            if idx[k] < shape[k] {
                break;
            }
            si -= s.strides[k] * shape[k] as isize;
            di -= d.strides[k] * shape[k] as isize;
            idx[k] = 0;
        }
    }
}

/// Advances a row-major multi-index over `shape`; returns false after the last index.
pub(crate) fn next_index(idx: &mut [usize; MAX_RANK], shape: &[usize]) -> bool {
    let mut k = shape.len();
    while k > 0 {
        k -= 1;
        idx[k] += 1;
        if idx[k] < shape[k] {
            return true;
        }
        idx[k] = 0;
    }
    false
}

/// Checks that inputs `0..min` are present and none past `max` is given.
pub(crate) fn check_inputs<T>(inputs: &[Option<T>], min: usize, max: usize, op: &str) -> Result<()> {
    if inputs.iter().skip(max).any(|i| i.is_some()) {
        invalid!("{op} takes at most {max} inputs, got {}", inputs.len());
    }
    for i in 0..min {
        if inputs.get(i).is_none_or(|x| x.is_none()) {
            invalid!("{op}: missing required input #{i}");
        }
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod testing {
    //! Test helpers shared by the shape ops' unit tests.
    use crate::tensor::{Tensor, TensorData};

    /// A small deterministic PRNG (xorshift64*), so tests need no dependency.
    pub struct Rng(u64);
    impl Rng {
        pub fn new(seed: u64) -> Rng {
            Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
        }
        pub fn next_u64(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
        /// Uniform in `0..n` (`n > 0`).
        pub fn below(&mut self, n: usize) -> usize {
            (self.next_u64() % n as u64) as usize
        }
        /// Uniform in `lo..=hi`.
        pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
            lo + (self.next_u64() % (hi - lo + 1) as u64) as i64
        }
        /// A random shape of the given rank with dims in `1..=max`.
        pub fn shape(&mut self, rank: usize, max: usize) -> Vec<usize> {
            (0..rank).map(|_| 1 + self.below(max)).collect()
        }
    }

    /// An f32 tensor holding 0, 1, 2, ... (distinct values make index errors visible).
    pub fn iota(shape: &[usize]) -> Tensor {
        let n: usize = shape.iter().product();
        Tensor::from_f32(shape, (0..n).map(|i| i as f32).collect()).unwrap()
    }

    /// An i64 tensor.
    pub fn ints(shape: &[usize], v: &[i64]) -> Tensor {
        Tensor::from_i64(shape, v.to_vec()).unwrap()
    }

    /// A 1-D i64 tensor.
    pub fn ints1(v: &[i64]) -> Tensor {
        ints(&[v.len()], v)
    }

    /// The f32 elements of a tensor.
    pub fn f32s(t: &Tensor) -> Vec<f32> {
        t.as_f32().unwrap().to_vec()
    }

    /// The i64 elements of a tensor.
    pub fn i64s(t: &Tensor) -> Vec<i64> {
        match t.data() {
            TensorData::I64(v) => v.clone(),
            other => panic!("expected int64, got {}", other.dtype()),
        }
    }

    /// Row-major multi-index of flat index `i` in `shape`.
    pub fn unravel(mut i: usize, shape: &[usize]) -> Vec<usize> {
        let mut idx = vec![0; shape.len()];
        for k in (0..shape.len()).rev() {
            idx[k] = i % shape[k];
            i /= shape[k];
        }
        idx
    }

    /// Flat index of a multi-index in `shape`.
    pub fn ravel(idx: &[usize], shape: &[usize]) -> usize {
        idx.iter().zip(shape).fold(0, |acc, (&i, &d)| acc * d + i)
    }
}
