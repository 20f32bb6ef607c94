//! TopK: the `k` largest (or smallest) elements along an axis and their indices.
//!
//! Outputs are always sorted (allowed for `sorted = 0`, where the order is unspecified).
//! Equal values keep index order; NaN ranks above every number.

use std::cmp::Ordering;

use crate::error::Result;
use crate::ops::{Attrs, InferInput, Op, TypeShape, const_value, required};
use crate::tensor::{DType, DataMut, DataRef, Element, TensorMut, TensorRef};
use crate::{invalid, invalid_err};

use super::common::{axis_split, check_len, check_rank, normalize_axis};

/// The TopK op.
#[derive(Debug)]
pub struct TopK {
    axis: i64,
    largest: bool,
}

/// Orders two values with NaN above everything (a total order for sorting).
fn nan_high<T: PartialOrd>(a: &T, b: &T) -> Ordering {
    #[allow(clippy::eq_op)]
    match (a != a, b != b) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        _ => a.partial_cmp(b).unwrap_or(Ordering::Equal),
    }
}

/// The one value of the `K` input.
fn k_of(t: TensorRef) -> Result<i64> {
    match t.data {
        DataRef::I64([k]) => Ok(*k),
        DataRef::I64(v) => invalid!("K must hold exactly one element, got {}", v.len()),
        other => invalid!("K must be int64, got {}", other.dtype()),
    }
}

impl TopK {
    /// Parses `axis`, `largest` and `sorted`.
    pub fn build(attrs: &Attrs, _opset: i64) -> Result<Self> {
        let flag = |name: &str| -> Result<bool> {
            match attrs.int_or(name, 1)? {
                0 => Ok(false),
                1 => Ok(true),
                v => invalid!("attribute `{name}` must be 0 or 1, got {v}"),
            }
        };
        flag("sorted")?;
        Ok(TopK { axis: attrs.int_or("axis", -1)?, largest: flag("largest")? })
    }

    fn run_typed<T: Element>(
        &self,
        xs: &[T],
        vals: &mut [T],
        idxs: &mut [i64],
        order: &mut [usize],
        (outer, n, inner): (usize, usize, usize),
        k: usize,
    ) {
        for o in 0..outer {
            for i in 0..inner {
                let base = o * n * inner + i;
                for (j, slot) in order.iter_mut().enumerate() {
                    *slot = j;
                }
                // `sort_unstable_by` sorts in place; the index tie-break makes it deterministic.
                order.sort_unstable_by(|&a, &b| {
                    let (xa, xb) = (&xs[base + a * inner], &xs[base + b * inner]);
                    let by_value = if self.largest { nan_high(xb, xa) } else { nan_high(xa, xb) };
                    by_value.then(a.cmp(&b))
                });
                for (j, &src) in order.iter().take(k).enumerate() {
                    let at = (o * k + j) * inner + i;
                    vals[at] = xs[base + src * inner];
                    idxs[at] = src as i64;
                }
            }
        }
    }
}

impl Op for TopK {
    fn op_type(&self) -> &'static str {
        "TopK"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        if inputs.len() != 2 {
            invalid!("expects 2 inputs (X, K), got {}", inputs.len());
        }
        let x = required(inputs, 0, "X")?;
        if x.dtype == DType::Bool {
            invalid!("X of type bool is not supported");
        }
        check_rank(x.shape, "X")?;
        let axis = normalize_axis(self.axis, x.shape.len(), "axis")?;
        let kin = required(inputs, 1, "K")?;
        if kin.dtype != DType::I64 || kin.shape != [1] {
            invalid!("K must be a 1-D int64 tensor of one element, got {} {:?}", kin.dtype, kin.shape);
        }
        let k = k_of(const_value(inputs, 1, "K")?.view())?;
        if k < 0 || k as u64 > x.shape[axis] as u64 {
            invalid!("K = {k} is out of range for axis {} of size {}", self.axis, x.shape[axis]);
        }
        let mut shape = x.shape.to_vec();
        shape[axis] = k as usize;
        Ok(vec![TypeShape::new(x.dtype, shape.clone()), TypeShape::new(DType::I64, shape)])
    }

    fn scratch_bytes(&self, inputs: &[Option<TypeShape>], _outputs: &[TypeShape]) -> usize {
        let n = match inputs.first() {
            Some(Some(x)) => normalize_axis(self.axis, x.shape.len(), "axis").map(|a| x.shape[a]).unwrap_or(0),
            _ => 0,
        };
        // One spare slot absorbs re-alignment of the byte buffer.
        n.saturating_add(1).saturating_mul(std::mem::size_of::<usize>())
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], scratch: &mut [u8]) -> Result<()> {
        let x = required(inputs, 0, "X")?;
        check_rank(x.shape, "X")?;
        check_len(x.data.len(), x.shape, "X")?;
        let axis = normalize_axis(self.axis, x.shape.len(), "axis")?;
        let (outer, n, inner) = axis_split(x.shape, axis, false);
        let k = k_of(required(inputs, 1, "K")?)?;
        if k < 0 || k as u64 > n as u64 {
            invalid!("K = {k} is out of range for axis {} of size {n}", self.axis);
        }
        let k = k as usize;
        // SAFETY: every bit pattern is a valid usize; align_to_mut only hands out the
        // correctly aligned middle part.
        let (_, order, _) = unsafe { scratch.align_to_mut::<usize>() };
        let order = order.get_mut(..n).ok_or_else(|| invalid_err!("scratch too small for TopK"))?;
        let [values, indices, ..] = outputs else { invalid!("TopK needs 2 outputs, got {}", outputs.len()) };
        let want = outer * k * inner;
        if values.data.len() != want || indices.data.len() != want {
            invalid!("outputs have {} and {} elements, expected {want}", values.data.len(), indices.data.len());
        }
        let idxs = indices.typed_mut::<i64>()?;
        let split = (outer, n, inner);
        match (x.data, &mut values.data) {
            (DataRef::F32(xs), DataMut::F32(vs)) => self.run_typed(xs, vs, idxs, order, split, k),
            (DataRef::F16(xs), DataMut::F16(vs)) => self.run_typed(xs, vs, idxs, order, split, k),
            (DataRef::I8(xs), DataMut::I8(vs)) => self.run_typed(xs, vs, idxs, order, split, k),
            (DataRef::U8(xs), DataMut::U8(vs)) => self.run_typed(xs, vs, idxs, order, split, k),
            (DataRef::I32(xs), DataMut::I32(vs)) => self.run_typed(xs, vs, idxs, order, split, k),
            (DataRef::I64(xs), DataMut::I64(vs)) => self.run_typed(xs, vs, idxs, order, split, k),
            _ => invalid!("X of type {} is not supported, or Values has another type", x.dtype()),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::testutil::*;
    use super::*;
    use crate::ops::eval;
    use crate::tensor::Tensor;

    fn k(v: i64) -> Tensor {
        Tensor::from_i64(&[1], vec![v]).unwrap()
    }

    #[test]
    fn hand_checked() {
        // [[0,1,2,3],[4,5,6,7],[8,9,10,11]], k = 3 along the last axis.
        let x = Tensor::from_f32(&[3, 4], (0..12).map(|v| v as f32).collect()).unwrap();
        let op = TopK::build(&Attrs::new(), 11).unwrap();
        let y = eval(&op, &[Some(&x), Some(&k(3))]).unwrap();
        assert_eq!(y[0].as_f32().unwrap(), &[3., 2., 1., 7., 6., 5., 11., 10., 9.]);
        assert_eq!(y[1], Tensor::from_i64(&[3, 3], vec![3, 2, 1, 3, 2, 1, 3, 2, 1]).unwrap());
        // Smallest, axis 0, with ties keeping index order.
        let x = i32s(&[3, 2], vec![5, 1, 5, 1, 2, 1]);
        let op = TopK::build(&int_attrs(&[("axis", 0), ("largest", 0)]), 11).unwrap();
        let y = eval(&op, &[Some(&x), Some(&k(2))]).unwrap();
        assert_eq!(y[0], i32s(&[2, 2], vec![2, 1, 5, 1]));
        assert_eq!(y[1], Tensor::from_i64(&[2, 2], vec![2, 0, 0, 1]).unwrap());
        let y = eval(&op, &[Some(&x), Some(&k(0))]).unwrap();
        assert_eq!(y[0].shape(), &[0, 2]);
    }

    #[test]
    fn random_against_naive() {
        let mut rng = Rng(21);
        let shape = [2, 7, 13];
        let x = Tensor::from_f32(&shape, (0..182).map(|_| rng.below(9) as f32).collect()).unwrap();
        let xs = x.as_f32().unwrap();
        for axis in 0..3usize {
            for largest in [0, 1] {
                let kk = shape[axis] / 2 + 1;
                let op = TopK::build(&int_attrs(&[("axis", axis as i64), ("largest", largest)]), 11).unwrap();
                let y = eval(&op, &[Some(&x), Some(&k(kk as i64))]).unwrap();
                let outer: usize = shape[..axis].iter().product();
                let inner: usize = shape[axis + 1..].iter().product();
                let n = shape[axis];
                let mut wv = vec![0f32; outer * kk * inner];
                let mut wi = vec![0i64; outer * kk * inner];
                for o in 0..outer {
                    for i in 0..inner {
                        let mut line: Vec<(f32, usize)> = (0..n).map(|j| (xs[(o * n + j) * inner + i], j)).collect();
                        // Stable sort keeps index order among equal values.
                        if largest == 1 {
                            line.sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap());
                        } else {
                            line.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap());
                        }
                        for (j, &(v, src)) in line.iter().take(kk).enumerate() {
                            wv[(o * kk + j) * inner + i] = v;
                            wi[(o * kk + j) * inner + i] = src as i64;
                        }
                    }
                }
                assert_eq!(y[0].as_f32().unwrap(), &wv[..]);
                assert_eq!(y[1].to_i64_vec().unwrap(), wi);
            }
        }
    }

    #[test]
    fn errors() {
        let x = Tensor::from_f32(&[2, 3], vec![0.; 6]).unwrap();
        let op = TopK::build(&Attrs::new(), 11).unwrap();
        assert!(eval(&op, &[Some(&x), Some(&k(4))]).is_err());
        assert!(eval(&op, &[Some(&x), Some(&k(-1))]).is_err());
        assert!(eval(&op, &[Some(&x), Some(&Tensor::from_i64(&[2], vec![1, 1]).unwrap())]).is_err());
        assert!(eval(&op, &[Some(&x), Some(&i32s(&[1], vec![1]))]).is_err());
        assert!(eval(&op, &[Some(&x), None]).is_err());
        let bad_axis = TopK::build(&int_attrs(&[("axis", 2)]), 11).unwrap();
        assert!(eval(&bad_axis, &[Some(&x), Some(&k(1))]).is_err());
        assert!(TopK::build(&int_attrs(&[("largest", 5)]), 11).is_err());
    }

    use crate::ops::Attrs;
}
