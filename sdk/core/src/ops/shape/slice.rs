//! Slice: take a strided sub-block (starts/ends/axes/steps as inputs, opset 10+).

use crate::error::Result;
use crate::invalid;
use crate::ops::shape::util::{
    INDEX_TYPES, Strided, check_dtype, check_inputs, check_rank, copy_strided, dispatch, int_at_or_err, single_output,
};
use crate::ops::{Attrs, InferInput, Op, TypeShape, const_value, optional, required};
use crate::tensor::{DataRef, Element, MAX_RANK, TensorMut, TensorRef};

/// ONNX `Slice` (opset 10+ form: every parameter is an input).
#[derive(Clone, Debug, Default)]
pub struct Slice;

impl Slice {
    /// Builds the op; Slice has no attributes from opset 10.
    pub fn build(_attrs: &Attrs, opset: i64) -> Result<Slice> {
        if opset < 10 {
            invalid!("Slice before opset 10 (attribute form) is not supported");
        }
        Ok(Slice)
    }
}

/// The resolved slice: per dim the first element, the step and the element count.
#[derive(Clone, Copy, Debug)]
struct Params {
    start: [i64; MAX_RANK],
    step: [i64; MAX_RANK],
    len: [usize; MAX_RANK],
}

fn clamp(v: i64, lo: i64, hi: i64) -> i64 {
    if v < lo {
        lo
    } else if v > hi {
        hi
    } else {
        v
    }
}

/// Resolves the ONNX rules (negative indices count from the end, out-of-range values clamp,
/// negative steps walk backwards). No allocation; shared by `infer` and `run`.
fn params(
    shape: &[usize],
    starts: DataRef,
    ends: DataRef,
    axes: Option<DataRef>,
    steps: Option<DataRef>,
) -> Result<Params> {
    let rank = shape.len();
    if rank > MAX_RANK {
        invalid!("rank {rank} is more than the supported {MAX_RANK}");
    }
    let mut p = Params { start: [0; MAX_RANK], step: [1; MAX_RANK], len: [0; MAX_RANK] };
    p.len[..rank].copy_from_slice(shape);
    let n = starts.len();
    if ends.len() != n || axes.is_some_and(|a| a.len() != n) || steps.is_some_and(|s| s.len() != n) {
        invalid!("starts, ends, axes and steps must have the same length");
    }
    let mut seen = [false; MAX_RANK];
    for i in 0..n {
        let axis = match axes {
            Some(a) => int_at_or_err(a, i, "axes")?,
            None => i as i64,
        };
        let r = rank as i64;
        if axis < -r || axis >= r {
            invalid!("slice axis {axis} is out of range for rank {rank}");
        }
        let axis = if axis < 0 { axis + r } else { axis } as usize;
        if seen[axis] {
            invalid!("slice axis {axis} is repeated");
        }
        seen[axis] = true;
        let step = match steps {
            Some(s) => int_at_or_err(s, i, "steps")?,
            None => 1,
        };
        if step == 0 {
            invalid!("slice step must not be 0");
        }
        let dim = shape[axis] as i64;
        let mut start = int_at_or_err(starts, i, "starts")?;
        let mut end = int_at_or_err(ends, i, "ends")?;
        if start < 0 {
            start = start.saturating_add(dim);
        }
        if end < 0 {
            end = end.saturating_add(dim);
        }
        let count = if step > 0 {
            start = clamp(start, 0, dim);
            end = clamp(end, 0, dim);
            if end > start { (end - start - 1) / step + 1 } else { 0 }
        } else {
            start = clamp(start, 0, dim - 1);
            end = clamp(end, -1, dim - 1);
            if start > end { (start - end - 1) / step.saturating_neg() + 1 } else { 0 }
        };
        p.start[axis] = if count > 0 { start } else { 0 };
        p.step[axis] = step;
        p.len[axis] = count as usize;
    }
    Ok(p)
}

fn run_t<T: Element>(x: TensorRef, out: &mut TensorMut, p: &Params) -> Result<()> {
    let rank = x.shape.len();
    let layout = Strided::row_major(x.shape, 0);
    let mut s = Strided { offset: 0, strides: [0; MAX_RANK] };
    for k in 0..rank {
        s.offset += p.start[k] as isize * layout.strides[k];
        s.strides[k] = p.step[k] as isize * layout.strides[k];
    }
    let shape = out.shape;
    if shape != &p.len[..rank] {
        invalid!("output shape {shape:?} differs from the slice");
    }
    copy_strided(x.typed::<T>()?, &s, out.typed_mut::<T>()?, &Strided::row_major(shape, 0), shape)
}

impl Op for Slice {
    fn op_type(&self) -> &'static str {
        "Slice"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        check_inputs(inputs, 3, 5, "Slice")?;
        let x = required(inputs, 0, "data")?;
        check_rank(x.shape, "data")?;
        let names = ["data", "starts", "ends", "axes", "steps"];
        let mut vals = [None; 5];
        for i in 1..5 {
            if let Some(inp) = optional(inputs, i) {
                check_dtype(inp.dtype, INDEX_TYPES, names[i])?;
                if inp.dtype != required(inputs, 1, "starts")?.dtype {
                    invalid!("{} is {}, starts is another type", names[i], inp.dtype);
                }
                if inp.shape.len() != 1 {
                    invalid!("{} must be 1-D, got shape {:?}", names[i], inp.shape);
                }
                vals[i] = Some(const_value(inputs, i, names[i])?.view().data);
            }
        }
        let (Some(starts), Some(ends)) = (vals[1], vals[2]) else {
            invalid!("Slice needs starts and ends");
        };
        let p = params(x.shape, starts, ends, vals[3], vals[4])?;
        Ok(vec![TypeShape::new(x.dtype, p.len[..x.shape.len()].to_vec())])
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let x = required(inputs, 0, "data")?;
        let starts = required(inputs, 1, "starts")?.data;
        let ends = required(inputs, 2, "ends")?.data;
        let axes = optional(inputs, 3).map(|t| t.data);
        let steps = optional(inputs, 4).map(|t| t.data);
        let p = params(x.shape, starts, ends, axes, steps)?;
        dispatch!(x.dtype(), run_t(x, single_output(outputs)?, &p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::eval;
    use crate::ops::shape::util::testing::*;
    use crate::tensor::{Tensor, TensorData};

    fn slice(x: &Tensor, starts: &[i64], ends: &[i64], axes: Option<&[i64]>, steps: Option<&[i64]>) -> Result<Tensor> {
        let (s, e) = (ints1(starts), ints1(ends));
        let a = axes.map(ints1);
        let st = steps.map(ints1);
        Ok(eval(&Slice, &[Some(x), Some(&s), Some(&e), a.as_ref(), st.as_ref()])?.remove(0))
    }

    /// The spec's slice rules for one axis, written as a loop: the visited indices. (Unlike
    /// numpy, a negative-step start before the first element clamps to 0, as the spec and
    /// onnxruntime do.)
    fn py_range(dim: i64, start: i64, end: i64, step: i64) -> Vec<usize> {
        let norm = |v: i64, lo: i64, hi: i64| {
            let v = if v < 0 { v + dim } else { v };
            v.max(lo).min(hi)
        };
        let mut out = Vec::new();
        if step > 0 {
            let (mut i, e) = (norm(start, 0, dim), norm(end, 0, dim));
            while i < e {
                out.push(i as usize);
                i += step;
            }
        } else {
            let (mut i, e) = (norm(start, 0, dim - 1), norm(end, -1, dim - 1));
            while i > e {
                out.push(i as usize);
                i += step;
            }
        }
        out
    }

    #[test]
    fn hand_checked() {
        let x = iota(&[3, 4]);
        let out = slice(&x, &[1, 0], &[2, 3], None, None).unwrap();
        assert_eq!(out.shape(), &[1, 3]);
        assert_eq!(f32s(&out), vec![4., 5., 6.]);
        let out = slice(&x, &[-1], &[i64::MIN], Some(&[1]), Some(&[-1])).unwrap();
        assert_eq!(f32s(&out), vec![3., 2., 1., 0., 7., 6., 5., 4., 11., 10., 9., 8.]);
        let out = slice(&x, &[0], &[i64::MAX], Some(&[-2]), Some(&[2])).unwrap();
        assert_eq!(f32s(&out), vec![0., 1., 2., 3., 8., 9., 10., 11.]);
        let out = slice(&x, &[1000], &[1000], Some(&[1]), None).unwrap();
        assert_eq!(out.shape(), &[3, 0]);
        let out = slice(&x, &[10], &[-10], Some(&[0]), Some(&[-2])).unwrap();
        assert_eq!(f32s(&out), vec![8., 9., 10., 11., 0., 1., 2., 3.]);
    }

    #[test]
    fn int32_params_and_bool() {
        let x = Tensor::new(vec![4], TensorData::Bool(vec![true, false, false, true])).unwrap();
        let i = |v: Vec<i32>| Tensor::new(vec![v.len()], TensorData::I32(v)).unwrap();
        let out = eval(&Slice, &[Some(&x), Some(&i(vec![1])), Some(&i(vec![4]))]).unwrap();
        assert_eq!(out[0].data(), &TensorData::Bool(vec![false, false, true]));
        // Mixed index types are not allowed.
        assert!(eval(&Slice, &[Some(&x), Some(&i(vec![1])), Some(&ints1(&[4]))]).is_err());
    }

    #[test]
    fn random_against_python_rules() {
        let mut rng = Rng::new(17);
        for _ in 0..200 {
            let rank = 1 + rng.below(4);
            let mut shape = rng.shape(rank, 5);
            shape[rng.below(rank)] = [7, 13, 1][rng.below(3)];
            let x = iota(&shape);
            let n = 1 + rng.below(rank);
            let mut axes: Vec<usize> = (0..rank).collect();
            for i in (1..rank).rev() {
                axes.swap(i, rng.below(i + 1));
            }
            axes.truncate(n);
            let mut starts = vec![];
            let mut ends = vec![];
            let mut steps = vec![];
            for &a in &axes {
                let d = shape[a] as i64;
                starts.push(rng.range(-d - 3, d + 3));
                ends.push(if rng.below(8) == 0 { i64::MAX } else { rng.range(-d - 3, d + 3) });
                let st = rng.range(1, 4);
                steps.push(if rng.below(2) == 0 { st } else { -st });
            }
            let ax: Vec<i64> =
                axes.iter().map(|&a| if rng.below(2) == 0 { a as i64 } else { a as i64 - rank as i64 }).collect();
            let out = slice(&x, &starts, &ends, Some(&ax), Some(&steps)).unwrap();
            // Expected: cartesian product of the visited indices per axis.
            let mut ranges: Vec<Vec<usize>> = (0..rank).map(|k| (0..shape[k]).collect()).collect();
            for (j, &a) in axes.iter().enumerate() {
                ranges[a] = py_range(shape[a] as i64, starts[j], ends[j], steps[j]);
            }
            let out_shape: Vec<usize> = ranges.iter().map(|r| r.len()).collect();
            assert_eq!(out.shape(), &out_shape[..], "{shape:?} {starts:?} {ends:?} {ax:?} {steps:?}");
            let want: Vec<f32> = (0..out_shape.iter().product())
                .map(|o| {
                    let oi = unravel(o, &out_shape);
                    let ii: Vec<usize> = oi.iter().enumerate().map(|(k, &i)| ranges[k][i]).collect();
                    ravel(&ii, &shape) as f32
                })
                .collect();
            assert_eq!(f32s(&out), want);
        }
    }

    #[test]
    fn errors() {
        let x = iota(&[3, 4]);
        assert!(slice(&x, &[0], &[1, 2], None, None).is_err(), "length mismatch");
        assert!(slice(&x, &[0], &[1], Some(&[2]), None).is_err(), "axis out of range");
        assert!(slice(&x, &[0, 0], &[1, 1], Some(&[1, -1]), None).is_err(), "repeated axis");
        assert!(slice(&x, &[0], &[1], None, Some(&[0])).is_err(), "zero step");
        assert!(eval(&Slice, &[Some(&x), Some(&ints1(&[0]))]).is_err());
    }
}
