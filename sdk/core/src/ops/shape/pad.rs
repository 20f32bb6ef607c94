//! Pad: grow (or, with negative pads, crop) each dim, filling by a mode.

use crate::error::Result;
use crate::ops::shape::util::{
    INDEX_TYPES, check_dtype, check_inputs, check_rank, dispatch, int_at_or_err, next_index, single_output,
};
use crate::ops::{Attrs, InferInput, Op, TypeShape, const_value, optional, required};
use crate::tensor::{DType, DataRef, Element, MAX_RANK, TensorMut, TensorRef, strides_fixed};
use crate::{invalid, invalid_err};

/// How padded elements are filled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PadMode {
    /// With `constant_value` (default 0).
    Constant,
    /// Mirrored at the edge, the edge element not repeated.
    Reflect,
    /// With the edge element.
    Edge,
    /// Wrapped around (opset 19).
    Wrap,
}

/// ONNX `Pad` (opset 11+ form: `pads`, `constant_value` and, from opset 18, `axes` are
/// inputs). `pads` is `[begin_0, begin_1, ..., end_0, end_1, ...]` over `axes` (all dims by
/// default); a negative pad removes elements.
#[derive(Clone, Debug)]
pub struct Pad {
    /// The fill mode.
    pub mode: PadMode,
    /// Whether the `axes` input exists (opset 18+).
    pub axes_input: bool,
}

impl Pad {
    /// Builds from attributes.
    pub fn build(attrs: &Attrs, opset: i64) -> Result<Pad> {
        if opset < 11 {
            invalid!("Pad before opset 11 (pads as an attribute) is not supported");
        }
        let m = attrs.string_or("mode", "constant")?;
        let mode = match m.as_str() {
            "constant" => PadMode::Constant,
            "reflect" => PadMode::Reflect,
            "edge" => PadMode::Edge,
            "wrap" if opset >= 19 => PadMode::Wrap,
            other => invalid!("pad mode `{other}` is not available in opset {opset}"),
        };
        Ok(Pad { mode, axes_input: opset >= 18 })
    }
}

/// Per-dim (begin, end) pads from the `pads` and `axes` values; no allocation.
fn resolve(rank: usize, pads: DataRef, axes: Option<DataRef>) -> Result<([i64; MAX_RANK], [i64; MAX_RANK])> {
    if rank > MAX_RANK {
        invalid!("rank {rank} is more than the supported {MAX_RANK}");
    }
    let n = axes.map_or(rank, |a| a.len());
    if pads.len() != 2 * n {
        invalid!("pads has {} entries, expected {} (2 per padded axis)", pads.len(), 2 * n);
    }
    let (mut b, mut e) = ([0i64; MAX_RANK], [0i64; MAX_RANK]);
    let mut seen = [false; MAX_RANK];
    for i in 0..n {
        let a = match axes {
            Some(ax) => int_at_or_err(ax, i, "axes")?,
            None => i as i64,
        };
        let r = rank as i64;
        if a < -r || a >= r {
            invalid!("pad axis {a} is out of range for rank {rank}");
        }
        let a = if a < 0 { a + r } else { a } as usize;
        if seen[a] {
            invalid!("pad axis {a} is repeated");
        }
        seen[a] = true;
        b[a] = int_at_or_err(pads, i, "pads")?;
        e[a] = int_at_or_err(pads, n + i, "pads")?;
    }
    Ok((b, e))
}

/// Output dims for `shape` padded by `(b, e)`, validated for `mode`.
fn out_dims(shape: &[usize], b: &[i64], e: &[i64], mode: PadMode) -> Result<[usize; MAX_RANK]> {
    let mut out = [0usize; MAX_RANK];
    for k in 0..shape.len() {
        let d = shape[k] as i64;
        let o = d.checked_add(b[k]).and_then(|v| v.checked_add(e[k])).ok_or_else(|| invalid_err!("pads overflow"))?;
        if o < 0 {
            invalid!("pads ({}, {}) crop dim {k} of size {d} below zero", b[k], e[k]);
        }
        if mode != PadMode::Constant && d == 0 && (b[k] > 0 || e[k] > 0) {
            invalid!("cannot pad the empty dim {k} in {mode:?} mode");
        }
        out[k] = usize::try_from(o).map_err(|_| invalid_err!("padded dim too large"))?;
    }
    Ok(out)
}

/// Source coordinate for output coordinate `o` of a dim of size `d` with begin pad `b`;
/// `None` means the constant fill.
fn source(o: usize, d: usize, b: i64, mode: PadMode) -> Option<usize> {
    let i = o as i64 - b;
    let d = d as i64;
    if (0..d).contains(&i) {
        return Some(i as usize);
    }
    Some(match mode {
        PadMode::Constant => return None,
        PadMode::Edge => i.clamp(0, d - 1) as usize,
        PadMode::Wrap => i.rem_euclid(d) as usize,
        PadMode::Reflect if d == 1 => 0,
        PadMode::Reflect => {
            let p = 2 * (d - 1);
            let m = i.rem_euclid(p);
            (if m >= d { p - m } else { m }) as usize
        }
    })
}

fn run_t<T: Element>(
    x: TensorRef,
    value: Option<TensorRef>,
    out: &mut TensorMut,
    b: &[i64],
    mode: PadMode,
) -> Result<()> {
    let src = x.typed::<T>()?;
    let fill = match value {
        Some(v) => v.typed::<T>()?.first().copied().unwrap_or_default(),
        None => T::default(),
    };
    let shape = out.shape;
    let st = strides_fixed(x.shape);
    let dst = out.typed_mut::<T>()?;
    let Some(last) = shape.len().checked_sub(1) else {
        // A scalar: nothing to pad.
        if let (Some(d), Some(s)) = (dst.first_mut(), src.first()) {
            *d = *s;
        }
        return Ok(());
    };
    if shape[last] == 0 {
        return Ok(());
    }
    // Row by row over the last dim: the source offset of a row's leading coordinates is
    // found once, then each element of the row needs one look-up in the last dim only.
    let mut idx = [0usize; MAX_RANK];
    for row in dst.chunks_mut(shape[last]) {
        let mut base = Some(0usize);
        for k in 0..last {
            base = match (base, source(idx[k], x.shape[k], b[k], mode)) {
                (Some(acc), Some(i)) => Some(acc + i * st[k]),
                _ => None,
            };
        }
        match base {
            None => row.fill(fill),
            Some(base) => {
                for (o, slot) in row.iter_mut().enumerate() {
                    *slot = match source(o, x.shape[last], b[last], mode) {
                        Some(i) => {
                            *src.get(base + i).ok_or_else(|| invalid_err!("output shape differs from inference"))?
                        }
                        None => fill,
                    };
                }
            }
        }
        next_index(&mut idx, &shape[..last]);
    }
    Ok(())
}

impl Op for Pad {
    fn op_type(&self) -> &'static str {
        "Pad"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        check_inputs(inputs, 2, if self.axes_input { 4 } else { 3 }, "Pad")?;
        let x = required(inputs, 0, "data")?;
        check_rank(x.shape, "data")?;
        let pads_in = required(inputs, 1, "pads")?;
        check_dtype(pads_in.dtype, &[DType::I64], "pads")?;
        if pads_in.shape.len() != 1 {
            invalid!("pads must be 1-D, got shape {:?}", pads_in.shape);
        }
        if let Some(v) = optional(inputs, 2) {
            if v.dtype != x.dtype {
                invalid!("constant_value is {}, data is {}", v.dtype, x.dtype);
            }
            if v.shape.iter().product::<usize>() != 1 {
                invalid!("constant_value must be a scalar, got shape {:?}", v.shape);
            }
        }
        let axes = match optional(inputs, 3) {
            Some(a) => {
                check_dtype(a.dtype, INDEX_TYPES, "axes")?;
                Some(const_value(inputs, 3, "axes")?.view().data)
            }
            None => None,
        };
        let pads = const_value(inputs, 1, "pads")?.view().data;
        let (b, e) = resolve(x.shape.len(), pads, axes)?;
        let r = x.shape.len();
        let dims = out_dims(x.shape, &b[..r], &e[..r], self.mode)?;
        Ok(vec![TypeShape::new(x.dtype, dims[..r].to_vec())])
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let x = required(inputs, 0, "data")?;
        let pads = required(inputs, 1, "pads")?.data;
        let axes = optional(inputs, 3).map(|a| a.data);
        let r = x.shape.len();
        let (b, e) = resolve(r, pads, axes)?;
        let dims = out_dims(x.shape, &b[..r], &e[..r], self.mode)?;
        let out = single_output(outputs)?;
        if out.shape != &dims[..r] {
            invalid!("output shape {:?} differs from the padded shape", out.shape);
        }
        dispatch!(x.dtype(), run_t(x, optional(inputs, 2), out, &b[..r], self.mode))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::Attr;
    use crate::ops::eval;
    use crate::ops::shape::util::testing::*;
    use crate::tensor::{Tensor, TensorData};

    fn pad(mode: &str, x: &Tensor, pads: &[i64], value: Option<f32>, axes: Option<&[i64]>) -> Result<Tensor> {
        let op = Pad::build(&Attrs::new().with("mode", Attr::String(mode.into())), 19)?;
        let p = ints1(pads);
        let v = value.map(Tensor::scalar_f32);
        let a = axes.map(ints1);
        Ok(eval(&op, &[Some(x), Some(&p), v.as_ref(), a.as_ref()])?.remove(0))
    }

    /// numpy.pad results for [1, 2, 3] padded by (2, 3), computed with numpy.
    #[test]
    fn modes_1d_against_numpy() {
        let x = Tensor::from_f32(&[3], vec![1., 2., 3.]).unwrap();
        let p = [2, 3];
        assert_eq!(f32s(&pad("constant", &x, &p, Some(9.0), None).unwrap()), vec![9., 9., 1., 2., 3., 9., 9., 9.]);
        assert_eq!(f32s(&pad("edge", &x, &p, None, None).unwrap()), vec![1., 1., 1., 2., 3., 3., 3., 3.]);
        assert_eq!(f32s(&pad("reflect", &x, &p, None, None).unwrap()), vec![3., 2., 1., 2., 3., 2., 1., 2.]);
        assert_eq!(f32s(&pad("wrap", &x, &p, None, None).unwrap()), vec![2., 3., 1., 2., 3., 1., 2., 3.]);
        // np.pad([1, 2, 3], 5, 'reflect') = [2 1 2 3 2 1 2 3 2 1 2 3 2]
        assert_eq!(
            f32s(&pad("reflect", &x, &[5, 5], None, None).unwrap()),
            vec![2., 1., 2., 3., 2., 1., 2., 3., 2., 1., 2., 3., 2.]
        );
        assert_eq!(f32s(&pad("constant", &x, &[-1, 1], None, None).unwrap()), vec![2., 3., 0.]);
        assert_eq!(f32s(&pad("edge", &x, &[1, -2], None, None).unwrap()), vec![1., 1.]);
    }

    #[test]
    fn axes_and_2d() {
        let x = iota(&[2, 3]);
        let out = pad("constant", &x, &[1, 1], Some(-1.0), Some(&[-1])).unwrap();
        assert_eq!(out.shape(), &[2, 5]);
        assert_eq!(f32s(&out), vec![-1., 0., 1., 2., -1., -1., 3., 4., 5., -1.]);
        let out = pad("reflect", &x, &[1, 0, 0, 1], None, None).unwrap();
        assert_eq!(out.shape(), &[3, 4]);
        assert_eq!(f32s(&out), vec![3., 4., 5., 4., 0., 1., 2., 1., 3., 4., 5., 4.]);
        let b = Tensor::new(vec![1], TensorData::Bool(vec![true])).unwrap();
        let op = Pad::build(&Attrs::new(), 11).unwrap();
        let out = eval(&op, &[Some(&b), Some(&ints1(&[1, 1]))]).unwrap();
        assert_eq!(out[0].data(), &TensorData::Bool(vec![false, true, false]));
    }

    #[test]
    fn random_edge_wrap_against_naive() {
        let mut rng = Rng::new(29);
        for _ in 0..40 {
            let rank = 1 + rng.below(3);
            let shape = rng.shape(rank, 7);
            let mut pads = vec![0i64; 2 * rank];
            for k in 0..rank {
                let d = shape[k] as i64;
                pads[k] = rng.range(-(d - 1) / 2, 4);
                pads[rank + k] = rng.range(-(d - 1) / 2, 4);
            }
            let x = iota(&shape);
            for mode in ["edge", "wrap", "constant"] {
                let out = pad(mode, &x, &pads, Some(-7.0), None).unwrap();
                let os: Vec<usize> = (0..rank).map(|k| (shape[k] as i64 + pads[k] + pads[rank + k]) as usize).collect();
                assert_eq!(out.shape(), &os[..]);
                let want: Vec<f32> = (0..os.iter().product())
                    .map(|o| {
                        let oi = unravel(o, &os);
                        let mut xi = vec![];
                        for k in 0..rank {
                            let i = oi[k] as i64 - pads[k];
                            let d = shape[k] as i64;
                            xi.push(match mode {
                                "edge" => i.max(0).min(d - 1),
                                "wrap" => ((i % d) + d) % d,
                                _ if i < 0 || i >= d => return -7.0,
                                _ => i,
                            } as usize);
                        }
                        ravel(&xi, &shape) as f32
                    })
                    .collect();
                assert_eq!(f32s(&out), want, "{mode} {shape:?} {pads:?}");
            }
        }
    }

    #[test]
    fn errors() {
        let x = iota(&[2, 3]);
        assert!(pad("constant", &x, &[1, 1], None, None).is_err(), "pads length");
        assert!(pad("constant", &x, &[0, -4, 0, 0], None, None).is_err(), "crop below zero");
        assert!(pad("constant", &x, &[1, 1], None, Some(&[2])).is_err(), "axis out of range");
        assert!(pad("constant", &x, &[1, 1, 1, 1], None, Some(&[1, -1])).is_err(), "repeated axis");
        assert!(pad("edge", &iota(&[0]), &[1, 0], None, None).is_err());
        assert!(Pad::build(&Attrs::new().with("mode", Attr::String("wrap".into())), 18).is_err());
        assert!(Pad::build(&Attrs::new().with("mode", Attr::String("mirror".into())), 19).is_err());
        let op = Pad::build(&Attrs::new(), 13).unwrap();
        assert!(
            eval(&op, &[Some(&x), Some(&ints1(&[0; 4])), None, Some(&ints1(&[0]))]).is_err(),
            "axes needs opset 18"
        );
        let iv = Tensor::new(vec![], TensorData::I64(vec![1])).unwrap();
        assert!(eval(&op, &[Some(&x), Some(&ints1(&[0; 4])), Some(&iv)]).is_err(), "constant_value type");
    }
}
