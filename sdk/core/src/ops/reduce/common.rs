//! Shared machinery of the reduce family: axis handling, allocation-free iteration over
//! reduced index sets, the generic `Reduce*` op, and integer element helpers.

use std::marker::PhantomData;

use half::f16;

use crate::error::Result;
use crate::ops::{Attrs, InferInput, Op, TypeShape, optional, required};
use crate::tensor::{DType, DataRef, Element, MAX_RANK, TensorMut, TensorRef, numel, strides_fixed};
use crate::{invalid, invalid_err};

/// Normalizes an axis in `[-rank, rank)` (or `[-rank, rank]` for `rank == 0` with
/// `allow_scalar`) to `[0, rank)`, or errors naming `what`.
pub fn normalize_axis(axis: i64, rank: usize, what: &str) -> Result<usize> {
    let r = rank as i64;
    if axis < -r || axis >= r {
        invalid!("{what} {axis} is out of range for rank {rank} (allowed [{}, {}])", -r, r - 1);
    }
    Ok(if axis < 0 { (axis + r) as usize } else { axis as usize })
}

/// Errors if `shape` has more dims than the kernels keep on the stack.
pub fn check_rank(shape: &[usize], what: &str) -> Result<()> {
    if shape.len() > MAX_RANK {
        invalid!("{what} has rank {}, more than the supported {MAX_RANK}", shape.len());
    }
    Ok(())
}

/// Errors unless a view's element count matches its shape (so indexing below is in range).
pub fn check_len(len: usize, shape: &[usize], what: &str) -> Result<()> {
    if len != numel(shape) {
        invalid!("{what} has {len} elements but shape {shape:?}");
    }
    Ok(())
}

/// Which dims are reduced.
pub type Mask = [bool; MAX_RANK];

/// The reduced-dim mask from a list of axes. An empty list reduces every dim, or none when
/// `noop_with_empty_axes` is set. Duplicate or out-of-range axes are errors.
pub fn reduce_mask(axes: impl Iterator<Item = i64>, rank: usize, noop_with_empty_axes: bool) -> Result<Mask> {
    let mut mask = [false; MAX_RANK];
    let mut any = false;
    for a in axes {
        let d = normalize_axis(a, rank, "axis")?;
        if mask[d] {
            invalid!("axis {a} is listed twice in axes");
        }
        mask[d] = true;
        any = true;
    }
    if !any && !noop_with_empty_axes {
        for m in mask.iter_mut().take(rank) {
            *m = true;
        }
    }
    Ok(mask)
}

/// Whether `mask` reduces exactly the last axes of a rank-`rank` shape (at least one), so
/// each reduced set is one contiguous run.
pub fn reduces_trailing_axes(mask: &Mask, rank: usize) -> bool {
    let first = mask[..rank].iter().position(|&m| m);
    first.is_some_and(|f| mask[f..rank].iter().all(|&m| m))
}

/// The sum of f32 values in f64 with eight independent accumulators (the compiler keeps
/// them in vector registers; one serial f64 chain waited on the add latency per element).
pub fn sum_f64(xs: &[f32]) -> f64 {
    let mut acc = [0f64; 8];
    let chunks = xs.chunks_exact(8);
    let tail: f64 = chunks.remainder().iter().map(|&x| x as f64).sum();
    for c in chunks {
        for l in 0..8 {
            acc[l] += c[l] as f64;
        }
    }
    acc.iter().sum::<f64>() + tail
}

/// The output shape of a reduction.
pub fn reduced_shape(shape: &[usize], mask: &Mask, keepdims: bool) -> Vec<usize> {
    let mut out = Vec::with_capacity(shape.len());
    for (d, &n) in shape.iter().enumerate() {
        if !mask[d] {
            out.push(n);
        } else if keepdims {
            out.push(1);
        }
    }
    out
}

/// Offsets of the elements of one reduced set, in row-major order over the reduced dims.
#[derive(Clone, Debug)]
pub struct ReducedIter {
    dims: [usize; MAX_RANK],
    strides: [usize; MAX_RANK],
    nd: usize,
    idx: [usize; MAX_RANK],
    off: usize,
    left: usize,
}

impl Iterator for ReducedIter {
    type Item = usize;
    fn next(&mut self) -> Option<usize> {
        if self.left == 0 {
            return None;
        }
        let cur = self.off;
        self.left -= 1;
        let mut d = self.nd;
        while d > 0 {
            d -= 1;
            self.idx[d] += 1;
            self.off += self.strides[d];
            if self.idx[d] < self.dims[d] {
                break;
            }
            self.off -= self.strides[d] * self.dims[d];
            self.idx[d] = 0;
        }
        Some(cur)
    }
}

/// Kept and reduced dims of an input shape, with their strides (all on the stack).
#[derive(Clone, Debug)]
pub struct Geometry {
    kept: [usize; MAX_RANK],
    kept_strides: [usize; MAX_RANK],
    nk: usize,
    red: [usize; MAX_RANK],
    red_strides: [usize; MAX_RANK],
    nr: usize,
    /// Elements in each reduced set.
    pub count: usize,
    /// Number of output elements.
    pub out_len: usize,
}

impl Geometry {
    /// Splits `shape` (rank ≤ [`MAX_RANK`]) by `mask`.
    pub fn new(shape: &[usize], mask: &Mask) -> Geometry {
        let st = strides_fixed(shape);
        let mut g = Geometry {
            kept: [0; MAX_RANK],
            kept_strides: [0; MAX_RANK],
            nk: 0,
            red: [0; MAX_RANK],
            red_strides: [0; MAX_RANK],
            nr: 0,
            count: 1,
            out_len: 1,
        };
        for (d, &n) in shape.iter().enumerate().take(MAX_RANK) {
            if mask[d] {
                g.red[g.nr] = n;
                g.red_strides[g.nr] = st[d];
                g.nr += 1;
                g.count *= n;
            } else {
                g.kept[g.nk] = n;
                g.kept_strides[g.nk] = st[d];
                g.nk += 1;
                g.out_len *= n;
            }
        }
        g
    }

    /// The reduced set starting at input offset `base`.
    pub fn set(&self, base: usize) -> ReducedIter {
        ReducedIter {
            dims: self.red,
            strides: self.red_strides,
            nd: self.nr,
            idx: [0; MAX_RANK],
            off: base,
            left: self.count,
        }
    }

    /// Calls `f(output_index, reduced_set)` for every output element in row-major order.
    pub fn for_each(&self, mut f: impl FnMut(usize, ReducedIter)) {
        let outer = ReducedIter {
            dims: self.kept,
            strides: self.kept_strides,
            nd: self.nk,
            idx: [0; MAX_RANK],
            off: 0,
            left: self.out_len,
        };
        for (o, base) in outer.enumerate() {
            f(o, self.set(base));
        }
    }
}

/// Integer-like element types (and bool), reduced exactly in i64 with wrapping.
pub trait IntElement: Element {
    /// Smallest value (the identity of a max).
    const LO: i64;
    /// Largest value (the identity of a min).
    const HI: i64;
    /// Widens to i64.
    fn to_i64(self) -> i64;
    /// Narrows from i64, wrapping like numpy's `astype`.
    fn wrap(v: i64) -> Self;
}

macro_rules! impl_int {
    ($t:ty) => {
        impl IntElement for $t {
            const LO: i64 = <$t>::MIN as i64;
            const HI: i64 = <$t>::MAX as i64;
            fn to_i64(self) -> i64 {
                self as i64
            }
            fn wrap(v: i64) -> Self {
                v as $t
            }
        }
    };
}
impl_int!(i8);
impl_int!(u8);
impl_int!(i32);
impl_int!(i64);

impl IntElement for bool {
    const LO: i64 = 0;
    const HI: i64 = 1;
    fn to_i64(self) -> i64 {
        self as i64
    }
    fn wrap(v: i64) -> Self {
        v != 0
    }
}

/// What a `Reduce*` op computes over one reduced set.
pub trait Reducer: std::fmt::Debug + Send + Sync + 'static {
    /// The ONNX op type.
    const OP_TYPE: &'static str;
    /// First opset in which `axes` is an input rather than an attribute.
    const AXES_INPUT_SINCE: i64 = 18;
    /// Whether the op accepts `dtype` at `opset`.
    fn allows(dtype: DType, _opset: i64) -> bool {
        matches!(dtype, DType::F32 | DType::F16 | DType::I32 | DType::I64)
    }
    /// The reduction of float values (f32/f16 widened to f64) over a set of `n` values.
    fn float(xs: impl Iterator<Item = f64> + Clone, n: usize) -> f64;
    /// For reductions that are a function of the plain sum (Sum, Mean): that function of the
    /// sum and the count. An f32 input whose reduced axes are its last ones then sums each
    /// contiguous set with [`sum_f64`] instead of walking index sets.
    const FROM_SUM: Option<fn(f64, usize) -> f64> = None;
    /// The reduction of integer values; `lo`/`hi` are the element type's bounds. By default
    /// computed as floats and truncated (what the ONNX reference's `astype` does).
    fn int(xs: impl Iterator<Item = i64> + Clone, n: usize, _lo: i64, _hi: i64) -> i64 {
        Self::float(xs.map(|x| x as f64), n) as i64
    }
}

/// Where a reduction's axes come from.
#[derive(Clone, Debug, PartialEq)]
enum AxesFrom {
    /// The `axes` attribute (opsets before [`Reducer::AXES_INPUT_SINCE`]); empty = all.
    Attr(Vec<i64>),
    /// The optional second input.
    Input,
}

/// A `Reduce*` op: the reduction `R` over the axes, with `keepdims` and
/// `noop_with_empty_axes`.
#[derive(Debug)]
pub struct Reduce<R: Reducer> {
    axes: AxesFrom,
    keepdims: bool,
    noop_with_empty_axes: bool,
    opset: i64,
    _r: PhantomData<R>,
}

fn flag(attrs: &Attrs, name: &str, default: i64) -> Result<bool> {
    match attrs.int_or(name, default)? {
        0 => Ok(false),
        1 => Ok(true),
        v => invalid!("attribute `{name}` must be 0 or 1, got {v}"),
    }
}

impl<R: Reducer> Reduce<R> {
    /// Parses the attributes for `opset`.
    pub fn build(attrs: &Attrs, opset: i64) -> Result<Self> {
        let keepdims = flag(attrs, "keepdims", 1)?;
        let noop_with_empty_axes = flag(attrs, "noop_with_empty_axes", 0)?;
        let axes = if opset >= R::AXES_INPUT_SINCE {
            if attrs.get("axes").is_some() {
                invalid!("`axes` is an input, not an attribute, from opset {}", R::AXES_INPUT_SINCE);
            }
            AxesFrom::Input
        } else {
            if noop_with_empty_axes {
                invalid!("attribute `noop_with_empty_axes` needs opset {} or later", R::AXES_INPUT_SINCE);
            }
            AxesFrom::Attr(attrs.ints("axes")?.unwrap_or_default())
        };
        Ok(Reduce { axes, keepdims, noop_with_empty_axes, opset, _r: PhantomData })
    }

    /// The mask from the attribute or from the axes input's elements.
    fn mask(&self, rank: usize, axes_input: Option<&[i64]>) -> Result<Mask> {
        match (&self.axes, axes_input) {
            (AxesFrom::Attr(a), _) => reduce_mask(a.iter().copied(), rank, false),
            (AxesFrom::Input, Some(a)) => reduce_mask(a.iter().copied(), rank, self.noop_with_empty_axes),
            (AxesFrom::Input, None) => reduce_mask(std::iter::empty(), rank, self.noop_with_empty_axes),
        }
    }

    /// [`Reducer::FROM_SUM`] over contiguous sets of `g.count` (the reduced axes are the
    /// last ones).
    fn run_f32_trailing(from_sum: fn(f64, usize) -> f64, xs: &[f32], ys: &mut [f32], g: &Geometry) {
        if g.count == 0 {
            ys.iter_mut().for_each(|y| *y = from_sum(0.0, 0) as f32);
            return;
        }
        for (y, set) in ys.iter_mut().zip(xs.chunks_exact(g.count)) {
            *y = from_sum(sum_f64(set), g.count) as f32;
        }
    }

    fn run_float<T: Element>(xs: &[T], ys: &mut [T], g: &Geometry) {
        g.for_each(|o, set| {
            let vals = set.map(|i| xs[i].to_f64());
            ys[o] = T::from_f64(R::float(vals, g.count));
        });
    }

    fn run_int<T: IntElement>(xs: &[T], ys: &mut [T], g: &Geometry) {
        g.for_each(|o, set| {
            let vals = set.map(|i| xs[i].to_i64());
            ys[o] = T::wrap(R::int(vals, g.count, T::LO, T::HI));
        });
    }
}

impl<R: Reducer> Op for Reduce<R> {
    fn op_type(&self) -> &'static str {
        R::OP_TYPE
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        if inputs.len() > 2 {
            invalid!("expects at most 2 inputs, got {}", inputs.len());
        }
        let x = required(inputs, 0, "data")?;
        if !R::allows(x.dtype, self.opset) {
            invalid!("data of type {} is not supported at opset {}", x.dtype, self.opset);
        }
        check_rank(x.shape, "data")?;
        let axes = optional(inputs, 1);
        let axes_vec: Option<Vec<i64>> = match (&self.axes, axes) {
            (AxesFrom::Attr(_), Some(_)) => {
                invalid!("takes `axes` as an attribute before opset {}, not as an input", R::AXES_INPUT_SINCE)
            }
            (AxesFrom::Attr(_), None) => None,
            (AxesFrom::Input, None) => None,
            (AxesFrom::Input, Some(a)) => {
                if a.dtype != DType::I64 {
                    invalid!("axes must be int64, got {}", a.dtype);
                }
                if a.shape.len() != 1 {
                    invalid!("axes must be 1-D, got shape {:?}", a.shape);
                }
                match a.value {
                    Some(v) => Some(v.to_i64_vec()?),
                    // An empty axes tensor has only one possible value.
                    None if a.shape[0] == 0 => Some(Vec::new()),
                    None => invalid!(
                        "input #1 (axes) must be known when shapes are planned (a constant, or \
                         computed only from constants and input shapes)"
                    ),
                }
            }
        };
        let mask = self.mask(x.shape.len(), axes_vec.as_deref())?;
        Ok(vec![TypeShape::new(x.dtype, reduced_shape(x.shape, &mask, self.keepdims))])
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let x = required(inputs, 0, "data")?;
        check_rank(x.shape, "data")?;
        check_len(x.data.len(), x.shape, "data")?;
        let axes = match (&self.axes, optional(inputs, 1)) {
            (AxesFrom::Input, Some(a)) => Some(a.typed::<i64>()?),
            _ => None,
        };
        let mask = self.mask(x.shape.len(), axes)?;
        let g = Geometry::new(x.shape, &mask);
        let y = outputs.first_mut().ok_or_else(|| invalid_err!("missing output"))?;
        if y.data.len() != g.out_len {
            invalid!("output has {} elements, expected {}", y.data.len(), g.out_len);
        }
        if let (DataRef::F32(xs), Some(from_sum)) = (&x.data, R::FROM_SUM)
            && reduces_trailing_axes(&mask, x.shape.len())
        {
            Self::run_f32_trailing(from_sum, xs, y.typed_mut()?, &g);
            return Ok(());
        }
        match x.data {
            DataRef::F32(xs) => Self::run_float::<f32>(xs, y.typed_mut()?, &g),
            DataRef::F16(xs) => Self::run_float::<f16>(xs, y.typed_mut()?, &g),
            DataRef::I8(xs) => Self::run_int::<i8>(xs, y.typed_mut()?, &g),
            DataRef::U8(xs) => Self::run_int::<u8>(xs, y.typed_mut()?, &g),
            DataRef::I32(xs) => Self::run_int::<i32>(xs, y.typed_mut()?, &g),
            DataRef::I64(xs) => Self::run_int::<i64>(xs, y.typed_mut()?, &g),
            DataRef::Bool(xs) => Self::run_int::<bool>(xs, y.typed_mut()?, &g),
        }
        Ok(())
    }
}

/// Test helpers shared by the family's unit tests.
#[cfg(test)]
pub mod testutil {
    use crate::ops::{Attr, Attrs};
    use crate::tensor::{Tensor, TensorData};

    /// A tiny deterministic generator (no external crates).
    pub struct Rng(pub u64);
    impl Rng {
        /// Next value in [0, 1).
        pub fn next_f64(&mut self) -> f64 {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (self.0 >> 11) as f64 / (1u64 << 53) as f64
        }
        /// Uniform in [lo, hi).
        pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
            lo + (hi - lo) * self.next_f64()
        }
        /// Uniform integer in [0, n).
        pub fn below(&mut self, n: usize) -> usize {
            (self.next_f64() * n as f64) as usize % n.max(1)
        }
    }

    /// Random f32 tensor.
    pub fn rand_f32(rng: &mut Rng, shape: &[usize], lo: f64, hi: f64) -> Tensor {
        let n = shape.iter().product();
        Tensor::from_f32(shape, (0..n).map(|_| rng.uniform(lo, hi) as f32).collect()).unwrap()
    }

    /// An i64 axes tensor.
    pub fn axes(v: &[i64]) -> Tensor {
        Tensor::from_i64(&[v.len()], v.to_vec()).unwrap()
    }

    /// Attributes from (name, int) pairs.
    pub fn int_attrs(pairs: &[(&str, i64)]) -> Attrs {
        pairs.iter().fold(Attrs::new(), |a, (k, v)| a.with(k, Attr::Int(*v)))
    }

    /// An i32 tensor.
    pub fn i32s(shape: &[usize], v: Vec<i32>) -> Tensor {
        Tensor::new(shape.to_vec(), TensorData::I32(v)).unwrap()
    }

    /// Asserts two f32 slices agree within 1e-4 relative / 1e-5 absolute.
    pub fn assert_close(got: &[f32], want: &[f32]) {
        assert_eq!(got.len(), want.len(), "lengths");
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            let ok = (g.is_nan() && w.is_nan()) || g == w || (g - w).abs() <= 1e-5 || (g - w).abs() <= 1e-4 * w.abs();
            assert!(ok, "element {i}: got {g}, want {w}");
        }
    }

    /// Naive reference: reduce `x` (row-major, `shape`) over the axes in `mask` with a
    /// closure over the collected values, computing the output index from full coordinates.
    pub fn naive_reduce(x: &[f32], shape: &[usize], mask: &[bool], f: impl Fn(&[f64]) -> f64) -> Vec<f32> {
        let out_shape: Vec<usize> = shape.iter().zip(mask).map(|(&d, &m)| if m { 1 } else { d }).collect();
        let out_n: usize = out_shape.iter().product();
        let mut groups: Vec<Vec<f64>> = vec![Vec::new(); out_n];
        for (flat, &v) in x.iter().enumerate() {
            let mut rem = flat;
            let mut coords = vec![0; shape.len()];
            for d in (0..shape.len()).rev() {
                coords[d] = rem % shape[d];
                rem /= shape[d];
            }
            let mut o = 0;
            for d in 0..shape.len() {
                o = o * out_shape[d] + if mask[d] { 0 } else { coords[d] };
            }
            groups[o].push(v as f64);
        }
        groups.iter().map(|g| f(g) as f32).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::Attrs;

    #[test]
    fn geometry_visits_every_element_once() {
        let shape = [2, 3, 4, 5];
        let mask = [false, true, false, true, false, false, false, false];
        let g = Geometry::new(&shape, &mask);
        assert_eq!((g.count, g.out_len), (15, 8));
        let mut seen = vec![0; 120];
        g.for_each(|_, set| set.for_each(|i| seen[i] += 1));
        assert!(seen.iter().all(|&c| c == 1));
    }

    #[test]
    fn f16_small_ints_and_scalars() {
        use crate::ops::eval;
        use crate::tensor::{Tensor, TensorData};
        use testutil::*;
        let h = |v: &[f32]| TensorData::F16(v.iter().map(|&x| f16::from_f32(x)).collect());
        let x = Tensor::new(vec![2, 3], h(&[1., 2., 3., 4., 5., 7.])).unwrap();
        let mean = super::super::build("ReduceMean", &int_attrs(&[("keepdims", 0)]), 18).unwrap().unwrap();
        let y = eval(mean.as_ref(), &[Some(&x), Some(&axes(&[1]))]).unwrap().remove(0);
        assert_eq!(y.data(), &h(&[2., 16. / 3.]));
        let u = Tensor::new(vec![2, 2], TensorData::U8(vec![200, 7, 255, 9])).unwrap();
        let max = super::super::build("ReduceMax", &int_attrs(&[("keepdims", 0)]), 18).unwrap().unwrap();
        let y = eval(max.as_ref(), &[Some(&u), Some(&axes(&[0]))]).unwrap().remove(0);
        assert_eq!(y.data(), &TensorData::U8(vec![255, 9]));
        let i = Tensor::new(vec![3], TensorData::I8(vec![-128, 5, -3])).unwrap();
        let min = super::super::build("ReduceMin", &Attrs::new(), 12).unwrap().unwrap();
        let y = eval(min.as_ref(), &[Some(&i)]).unwrap().remove(0);
        assert_eq!(y.data(), &TensorData::I8(vec![-128]));
        let old = super::super::build("ReduceMin", &Attrs::new(), 11).unwrap().unwrap();
        assert!(eval(old.as_ref(), &[Some(&i)]).is_err(), "int8 needs opset 12");
        // A scalar reduces to itself, with or without keepdims.
        let s = Tensor::scalar_f32(4.0);
        for k in [0, 1] {
            let l2 = super::super::build("ReduceL2", &int_attrs(&[("keepdims", k)]), 18).unwrap().unwrap();
            let y = eval(l2.as_ref(), &[Some(&s), None]).unwrap().remove(0);
            assert_eq!(y, s);
        }
    }

    #[test]
    fn noop_reduces_each_element_alone() {
        use crate::ops::eval;
        use crate::tensor::Tensor;
        use testutil::*;
        // As in the ONNX reference: each output is the reduction of a one-element set.
        let x = Tensor::from_f32(&[2], vec![-3., 2.]).unwrap();
        let a = int_attrs(&[("noop_with_empty_axes", 1), ("keepdims", 0)]);
        let ss = super::super::build("ReduceSumSquare", &a, 18).unwrap().unwrap();
        let y = eval(ss.as_ref(), &[Some(&x), Some(&axes(&[]))]).unwrap().remove(0);
        assert_eq!(y.as_f32().unwrap(), &[9., 4.]);
        // Without the flag, empty axes reduce everything.
        let all = super::super::build("ReduceSumSquare", &Attrs::new(), 18).unwrap().unwrap();
        let y = eval(all.as_ref(), &[Some(&x), Some(&axes(&[]))]).unwrap().remove(0);
        assert_eq!((y.shape(), y.as_f32().unwrap()), (&[1][..], &[13.][..]));
        // The flag is an opset-18 attribute for these ops (13 for ReduceSum).
        assert!(super::super::build("ReduceL1", &a, 17).unwrap().is_err());
        assert!(super::super::build("ReduceSum", &a, 13).unwrap().is_ok());
    }

    #[test]
    fn unknown_axes_infer() {
        use crate::ops::InferInput;
        use crate::tensor::DType;
        let op = Reduce::<super::super::reduce_sum::Sum>::build(&Attrs::new(), 13).unwrap();
        let x = InferInput { dtype: DType::F32, shape: &[2, 3], value: None };
        let empty = InferInput { dtype: DType::I64, shape: &[0], value: None };
        let one = InferInput { dtype: DType::I64, shape: &[1], value: None };
        assert_eq!(op.infer(&[Some(x), Some(empty)]).unwrap()[0].shape, vec![1, 1]);
        assert!(op.infer(&[Some(x), Some(one)]).is_err());
    }

    #[test]
    fn trailing_axes_and_sums() {
        let m = |bits: &[bool]| {
            let mut mask = [false; MAX_RANK];
            mask[..bits.len()].copy_from_slice(bits);
            mask
        };
        assert!(reduces_trailing_axes(&m(&[false, false, true, true]), 4));
        assert!(reduces_trailing_axes(&m(&[true, true]), 2));
        assert!(!reduces_trailing_axes(&m(&[true, false]), 2));
        assert!(!reduces_trailing_axes(&m(&[false, true, false]), 3));
        assert!(!reduces_trailing_axes(&m(&[false, false]), 2));
        let xs: Vec<f32> = (0..29).map(|i| i as f32 * 0.5 - 3.0).collect();
        for n in [0, 1, 7, 8, 9, 29] {
            let want: f64 = xs[..n].iter().map(|&x| x as f64).sum();
            assert_eq!(sum_f64(&xs[..n]), want, "{n} values");
        }
    }

    #[test]
    fn masks_and_errors() {
        assert_eq!(&reduce_mask([-1i64].into_iter(), 3, false).unwrap()[..3], &[false, false, true]);
        assert_eq!(&reduce_mask(std::iter::empty(), 3, false).unwrap()[..3], &[true; 3]);
        assert_eq!(&reduce_mask(std::iter::empty(), 3, true).unwrap()[..3], &[false; 3]);
        assert!(reduce_mask([3i64].into_iter(), 3, false).is_err());
        assert!(reduce_mask([-4i64].into_iter(), 3, false).is_err());
        assert!(reduce_mask([1i64, -2].into_iter(), 3, false).is_err());
    }
}

/// Randomized check of a `Reduce*` op against a naive reduction, over attribute-form
/// (opset 11) and input-form (opset 18) axes, keepdims on and off, odd sizes and batch > 1.
#[cfg(test)]
pub fn random_check(op_type: &str, lo: f64, hi: f64, f: impl Fn(&[f64]) -> f64) {
    use crate::ops::{Attr, eval};
    use testutil::*;
    let mut rng = Rng(op_type.len() as u64 * 7919 + 17);
    let cases: [(&[usize], &[i64]); 8] = [
        (&[7], &[0]),
        // Trailing axes: contiguous sets (the sum-based reductions' fast path), one of
        // 4 x 5 (a global average pool over NCHW) and one of 21 (chunks of 8 and a tail).
        (&[2, 3, 4, 5], &[2, 3]),
        (&[3, 21], &[-1]),
        (&[2, 7, 13], &[1]),
        (&[2, 7, 13], &[0, 2]),
        (&[3, 1, 13], &[-1, 0]),
        (&[2, 3, 4, 5], &[]),
        (&[4, 13], &[-2]),
    ];
    for (shape, ax) in cases {
        let x = rand_f32(&mut rng, shape, lo, hi);
        let mut mask = vec![ax.is_empty(); shape.len()];
        for &a in ax {
            mask[a.rem_euclid(shape.len() as i64) as usize] = true;
        }
        let want = testutil::naive_reduce(x.as_f32().unwrap(), shape, &mask, &f);
        for keepdims in [0, 1] {
            for opset in [11, 18] {
                let mut attrs = int_attrs(&[("keepdims", keepdims)]);
                let axes_t = axes(ax);
                let inputs: Vec<Option<&crate::tensor::Tensor>> = if opset >= 18 {
                    vec![Some(&x), Some(&axes_t)]
                } else {
                    attrs.insert("axes", Attr::Ints(ax.to_vec()));
                    vec![Some(&x)]
                };
                let op = super::build(op_type, &attrs, opset).unwrap().unwrap();
                let y = eval(op.as_ref(), &inputs).unwrap().remove(0);
                let want_shape: Vec<usize> = shape
                    .iter()
                    .zip(&mask)
                    .filter(|(_, m)| keepdims == 1 || !**m)
                    .map(|(&d, &m)| if m { 1 } else { d })
                    .collect();
                assert_eq!(y.shape(), &want_shape[..], "{op_type} {shape:?} {ax:?} keepdims={keepdims}");
                testutil::assert_close(y.as_f32().unwrap(), &want);
            }
        }
    }
}

/// `(outer, n, inner)` of a tensor split at `axis` for a normalization over it: opset < 13
/// coerces to 2-D at `axis` (n = product of the dims from `axis` on, inner = 1); from
/// opset 13 only the single dim `axis` is normalized.
pub fn axis_split(shape: &[usize], axis: usize, coerce_2d: bool) -> (usize, usize, usize) {
    let outer = numel(&shape[..axis]);
    if coerce_2d { (outer, numel(&shape[axis..]), 1) } else { (outer, shape[axis], numel(&shape[axis + 1..])) }
}
