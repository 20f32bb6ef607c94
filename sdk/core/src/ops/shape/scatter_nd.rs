//! ScatterND: write (or combine) slices of `updates` into a copy of `data` at index tuples.

use half::f16;

use crate::error::Result;
use crate::ops::shape::gather::resolve_index;
use crate::ops::shape::util::{check_dtype, check_inputs, dispatch, single_output};
use crate::ops::{Attrs, InferInput, Op, TypeShape, required};
use crate::tensor::{DType, DataRef, Element, TensorMut, TensorRef, numel, strides_fixed};
use crate::{invalid, invalid_err};

/// How an update combines with the existing element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduction {
    /// Overwrite.
    None,
    /// Add (Bool: or).
    Add,
    /// Multiply (Bool: and).
    Mul,
    /// Maximum.
    Max,
    /// Minimum.
    Min,
}

/// ONNX `ScatterND` (`reduction` from opset 16, `max`/`min` from 18).
#[derive(Clone, Debug)]
pub struct ScatterNd {
    /// The combining rule.
    pub reduction: Reduction,
}

impl ScatterNd {
    /// Builds from attributes.
    pub fn build(attrs: &Attrs, opset: i64) -> Result<ScatterNd> {
        let r = attrs.string_or("reduction", "none")?;
        let reduction = match r.as_str() {
            "none" => Reduction::None,
            "add" if opset >= 16 => Reduction::Add,
            "mul" if opset >= 16 => Reduction::Mul,
            "max" if opset >= 18 => Reduction::Max,
            "min" if opset >= 18 => Reduction::Min,
            other => invalid!("reduction `{other}` is not available in opset {opset}"),
        };
        Ok(ScatterNd { reduction })
    }
}

/// The arithmetic the reductions need, per element type.
pub(crate) trait Combine: Element {
    fn add(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
}

macro_rules! combine_int {
    ($($t:ty),*) => {$(
        impl Combine for $t {
            fn add(self, o: Self) -> Self { self.wrapping_add(o) }
            fn mul(self, o: Self) -> Self { self.wrapping_mul(o) }
        }
    )*};
}
combine_int!(i8, u8, i32, i64);
impl Combine for f32 {
    fn add(self, o: Self) -> Self {
        self + o
    }
    fn mul(self, o: Self) -> Self {
        self * o
    }
}
impl Combine for f16 {
    fn add(self, o: Self) -> Self {
        f16::from_f32(self.to_f32() + o.to_f32())
    }
    fn mul(self, o: Self) -> Self {
        f16::from_f32(self.to_f32() * o.to_f32())
    }
}
impl Combine for bool {
    fn add(self, o: Self) -> Self {
        self | o
    }
    fn mul(self, o: Self) -> Self {
        self & o
    }
}

fn run_t<T: Combine>(
    x: TensorRef,
    indices: TensorRef,
    updates: TensorRef,
    out: &mut TensorMut,
    red: Reduction,
) -> Result<()> {
    let dst = out.typed_mut::<T>()?;
    let src = x.typed::<T>()?;
    if dst.len() != src.len() {
        invalid!("output size differs from data");
    }
    if dst.as_ptr() != src.as_ptr() {
        dst.copy_from_slice(src);
    }
    let upd = updates.typed::<T>()?;
    let k = indices.shape.last().copied().unwrap_or(0);
    let tuples = numel(&indices.shape[..indices.shape.len().saturating_sub(1)]);
    let inner = numel(&x.shape[k.min(x.shape.len())..]);
    let strides = strides_fixed(x.shape);
    for t in 0..tuples {
        let mut off = 0usize;
        for (j, (&dim, &st)) in x.shape.iter().zip(&strides).take(k).enumerate() {
            off += resolve_index(indices.data, t * k + j, dim)? * st;
        }
        let from = upd.get(t * inner..(t + 1) * inner).ok_or_else(|| invalid_err!("updates too small"))?;
        let to = dst.get_mut(off..off + inner).ok_or_else(|| invalid_err!("output too small"))?;
        for (d, &u) in to.iter_mut().zip(from) {
            *d = match red {
                Reduction::None => u,
                Reduction::Add => d.add(u),
                Reduction::Mul => d.mul(u),
                Reduction::Max => {
                    if u > *d {
                        u
                    } else {
                        *d
                    }
                }
                Reduction::Min => {
                    if u < *d {
                        u
                    } else {
                        *d
                    }
                }
            };
        }
    }
    Ok(())
}

impl Op for ScatterNd {
    fn op_type(&self) -> &'static str {
        "ScatterND"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        check_inputs(inputs, 3, 3, "ScatterND")?;
        let x = required(inputs, 0, "data")?;
        let idx = required(inputs, 1, "indices")?;
        let upd = required(inputs, 2, "updates")?;
        check_dtype(idx.dtype, &[DType::I64], "indices")?;
        if upd.dtype != x.dtype {
            invalid!("updates is {}, data is {}", upd.dtype, x.dtype);
        }
        if x.shape.is_empty() || idx.shape.is_empty() {
            invalid!("data and indices must have rank ≥ 1");
        }
        if x.shape.len() > crate::tensor::MAX_RANK {
            invalid!("data rank {} is more than the supported {}", x.shape.len(), crate::tensor::MAX_RANK);
        }
        let q = idx.shape.len();
        let k = idx.shape[q - 1];
        if k > x.shape.len() {
            invalid!("indices tuples have {k} entries, data has rank {}", x.shape.len());
        }
        let mut want = idx.shape[..q - 1].to_vec();
        want.extend_from_slice(&x.shape[k..]);
        if upd.shape != want.as_slice() {
            invalid!("updates shape {:?} should be {want:?}", upd.shape);
        }
        if let Some(v) = idx.value {
            let d: DataRef = v.view().data;
            for i in 0..v.len() {
                resolve_index(d, i, x.shape[i % k.max(1)])?;
            }
        }
        Ok(vec![TypeShape::new(x.dtype, x.shape.to_vec())])
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let x = required(inputs, 0, "data")?;
        let idx = required(inputs, 1, "indices")?;
        let upd = required(inputs, 2, "updates")?;
        let Some((&k, tuple_dims)) = idx.shape.split_last() else { invalid!("indices must have rank ≥ 1") };
        if k > x.shape.len() || numel(tuple_dims).saturating_mul(numel(&x.shape[k..])) != upd.data.len() {
            invalid!("indices and updates do not match data");
        }
        dispatch!(x.dtype(), run_t(x, idx, upd, single_output(outputs)?, self.reduction))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::Attr;
    use crate::ops::eval;
    use crate::ops::shape::util::testing::*;
    use crate::tensor::{Tensor, TensorData};

    fn op(red: &str, opset: i64) -> Result<ScatterNd> {
        ScatterNd::build(&Attrs::new().with("reduction", Attr::String(red.into())), opset)
    }

    #[test]
    fn hand_checked() {
        // The ONNX doc example 1.
        let x = Tensor::from_f32(&[8], vec![1., 2., 3., 4., 5., 6., 7., 8.]).unwrap();
        let i = ints(&[4, 1], &[4, 3, 1, 7]);
        let u = Tensor::from_f32(&[4], vec![9., 10., 11., 12.]).unwrap();
        let out = eval(&op("none", 11).unwrap(), &[Some(&x), Some(&i), Some(&u)]).unwrap();
        assert_eq!(f32s(&out[0]), vec![1., 11., 3., 10., 9., 6., 7., 12.]);
        // Slices: replace rows 0 and 2 of a 3x2.
        let x = iota(&[3, 2]);
        let i = ints(&[2, 1], &[0, -1]);
        let u = Tensor::from_f32(&[2, 2], vec![10., 11., 12., 13.]).unwrap();
        let out = eval(&op("add", 16).unwrap(), &[Some(&x), Some(&i), Some(&u)]).unwrap();
        assert_eq!(f32s(&out[0]), vec![10., 12., 2., 3., 16., 18.]);
        // k = 0: the one tuple addresses all of data.
        let out = eval(
            &op("mul", 16).unwrap(),
            &[Some(&iota(&[2])), Some(&ints(&[1, 0], &[])), Some(&Tensor::from_f32(&[1, 2], vec![3., 3.]).unwrap())],
        )
        .unwrap();
        assert_eq!(f32s(&out[0]), vec![0., 3.]);
        let out = eval(
            &op("max", 18).unwrap(),
            &[Some(&iota(&[3, 2])), Some(&ints(&[1, 2], &[1, 1])), Some(&Tensor::from_f32(&[1], vec![-1.]).unwrap())],
        )
        .unwrap();
        assert_eq!(f32s(&out[0]), vec![0., 1., 2., 3., 4., 5.]);
    }

    #[test]
    fn random_against_naive() {
        let mut rng = Rng::new(41);
        for red in ["none", "add", "mul", "max", "min"] {
            for _ in 0..20 {
                let rank = 1 + rng.below(3);
                let shape = rng.shape(rank, 7);
                let k = 1 + rng.below(rank);
                let nt = 1 + rng.below(4);
                // Distinct tuples, so "none" has a defined result.
                let mut tuples: Vec<Vec<usize>> = Vec::new();
                for _ in 0..nt {
                    let t: Vec<usize> = (0..k).map(|j| rng.below(shape[j])).collect();
                    if !tuples.contains(&t) {
                        tuples.push(t);
                    }
                }
                let iv: Vec<i64> = tuples.iter().flatten().map(|&v| v as i64).collect();
                let inner: usize = shape[k..].iter().product();
                let mut ushape = vec![tuples.len()];
                ushape.extend(&shape[k..]);
                let uv: Vec<i64> = (0..tuples.len() * inner).map(|_| rng.range(-5, 5)).collect();
                let xv: Vec<i64> = (0..shape.iter().product()).map(|_| rng.range(-5, 5)).collect();
                let x = Tensor::from_i64(&shape, xv.clone()).unwrap();
                let out = eval(
                    &op(red, 18).unwrap(),
                    &[
                        Some(&x),
                        Some(&ints(&[tuples.len(), k], &iv)),
                        Some(&Tensor::from_i64(&ushape, uv.clone()).unwrap()),
                    ],
                )
                .unwrap();
                let mut want = xv.clone();
                for (t, tup) in tuples.iter().enumerate() {
                    for e in 0..inner {
                        let mut full = tup.clone();
                        full.extend(unravel(e, &shape[k..]));
                        let o = ravel(&full, &shape);
                        let u = uv[t * inner + e];
                        want[o] = match red {
                            "none" => u,
                            "add" => want[o] + u,
                            "mul" => want[o] * u,
                            "max" => want[o].max(u),
                            _ => want[o].min(u),
                        };
                    }
                }
                assert_eq!(i64s(&out[0]), want, "{red}");
            }
        }
    }

    #[test]
    fn errors() {
        assert!(op("max", 16).is_err());
        assert!(op("add", 13).is_err());
        assert!(op("sub", 18).is_err());
        let x = iota(&[3, 2]);
        let none = op("none", 13).unwrap();
        let u2 = iota(&[1, 2]);
        assert!(eval(&none, &[Some(&x), Some(&ints(&[1, 1], &[3])), Some(&u2)]).is_err(), "index out of range");
        assert!(eval(&none, &[Some(&x), Some(&ints(&[1, 3], &[0, 0, 0])), Some(&u2)]).is_err(), "tuple too long");
        assert!(eval(&none, &[Some(&x), Some(&ints(&[1, 1], &[0])), Some(&iota(&[1, 3]))]).is_err(), "updates shape");
        let i32s = Tensor::new(vec![1, 1], TensorData::I32(vec![0])).unwrap();
        assert!(eval(&none, &[Some(&x), Some(&i32s), Some(&u2)]).is_err(), "indices must be int64");
    }
}
