//! Test helpers: tensors of any type from f64 values, a small deterministic RNG, naive
//! broadcasting, and randomized checks against reference formulas written in f64.

use half::f16;

use crate::match_data;
use crate::ops::{Op, eval};
use crate::tensor::{DType, Element, Tensor, TensorData};

/// xorshift64*: deterministic and dependency-free.
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
    /// Uniform in [lo, hi).
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64)
    }
    /// Uniform integer in [lo, hi].
    pub fn int(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next_u64() % ((hi - lo + 1) as u64)) as i64
    }
}

/// A tensor of `dtype` holding `vals` converted with `Element::from_f64`.
pub fn tensor(dtype: DType, shape: &[usize], vals: &[f64]) -> Tensor {
    fn conv<T: Element>(v: &[f64]) -> Vec<T> {
        v.iter().map(|&x| T::from_f64(x)).collect()
    }
    let data = match dtype {
        DType::F32 => TensorData::F32(conv(vals)),
        DType::F16 => TensorData::F16(conv(vals)),
        DType::I8 => TensorData::I8(conv(vals)),
        DType::U8 => TensorData::U8(conv(vals)),
        DType::I32 => TensorData::I32(conv(vals)),
        DType::I64 => TensorData::I64(conv(vals)),
        DType::Bool => TensorData::Bool(conv(vals)),
    };
    Tensor::new(shape.to_vec(), data).unwrap()
}

/// The elements as f64.
pub fn values(t: &Tensor) -> Vec<f64> {
    match_data!(TensorData, t.data(), v => v.iter().map(|x| x.to_f64()).collect())
}

/// Random values for `dtype`: uniform in [lo, hi), rounded to integers for integer types
/// and to the nearest f16 for F16 (so the reference sees exactly what the op sees).
pub fn random_values(rng: &mut Rng, dtype: DType, n: usize, lo: f64, hi: f64) -> Vec<f64> {
    (0..n)
        .map(|_| {
            let v = rng.uniform(lo, hi);
            match dtype {
                DType::F32 => v as f32 as f64,
                DType::F16 => f16::from_f64(v).to_f64(),
                DType::Bool => (v > (lo + hi) / 2.0) as u8 as f64,
                _ => v.round(),
            }
        })
        .collect()
}

/// Flat index into `input` (right-aligned, broadcast) of flat output index `o`, computed
/// independently of `ops::broadcast`.
pub fn naive_index(out: &[usize], o: usize, input: &[usize]) -> usize {
    let mut rem = o;
    let mut multi = vec![0; out.len()];
    for d in (0..out.len()).rev() {
        multi[d] = rem % out[d];
        rem /= out[d];
    }
    let off = out.len() - input.len();
    input.iter().enumerate().fold(0, |acc, (d, &n)| acc * n + if n == 1 { 0 } else { multi[off + d] })
}

/// True if `got` is within the design tolerance of `want` for `dtype`.
pub fn close(dtype: DType, got: f64, want: f64) -> bool {
    if got.is_nan() && want.is_nan() {
        return true;
    }
    if want.is_infinite() || got.is_infinite() {
        return got == want;
    }
    let (atol, rtol): (f64, f64) = match dtype {
        DType::F32 => (1e-5, 1e-4),
        DType::F16 => (1e-3, 1e-2),
        _ => (0.0, 0.0),
    };
    (got - want).abs() <= atol.max(rtol * want.abs())
}

/// Shapes for randomized tests: remainder sizes, batches, a scalar.
pub const SHAPES: &[&[usize]] = &[&[], &[7], &[13], &[2, 7], &[3, 1, 13], &[2, 3, 4, 5]];

/// Broadcasting shape pairs for randomized binary tests.
pub const SHAPE_PAIRS: &[(&[usize], &[usize])] = &[
    (&[7], &[7]),
    (&[2, 13], &[2, 13]),
    (&[2, 3, 7], &[7]),
    (&[2, 3, 7], &[3, 1]),
    (&[3, 1, 13], &[2, 1, 5, 13]),
    (&[], &[2, 7]),
    (&[4, 1], &[]),
    (&[2, 0, 3], &[1, 3]),
];

/// Runs a unary float op on random F32 and F16 tensors of every shape in [`SHAPES`] and
/// checks it against `reference` computed in f64.
pub fn check_unary_float(op: &dyn Op, lo: f64, hi: f64, reference: impl Fn(f64) -> f64) {
    check_unary(op, &[DType::F32, DType::F16], lo, hi, reference);
}

/// Like [`check_unary_float`] for the given types (integer inputs are rounded values).
pub fn check_unary(op: &dyn Op, dtypes: &[DType], lo: f64, hi: f64, reference: impl Fn(f64) -> f64) {
    let mut rng = Rng::new(7);
    for &dtype in dtypes {
        for shape in SHAPES {
            let n = shape.iter().product();
            let xs = random_values(&mut rng, dtype, n, lo, hi);
            let x = tensor(dtype, shape, &xs);
            let y = &eval(op, &[Some(&x)]).unwrap()[0];
            assert_eq!(y.dtype(), dtype);
            assert_eq!(y.shape(), *shape);
            for (i, (&g, &v)) in values(y).iter().zip(&xs).enumerate() {
                let want = reference(v);
                assert!(close(dtype, g, want), "{dtype} {shape:?} [{i}]: f({v}) = {g}, want {want}");
            }
        }
    }
}

/// Runs a binary op on random inputs of `dtype` for every pair in [`SHAPE_PAIRS`] and
/// checks it against `reference` computed in f64 with naive broadcasting.
pub fn check_binary(
    op: &dyn Op,
    dtype: DType,
    out_dtype: DType,
    (lo, hi): (f64, f64),
    reference: impl Fn(f64, f64) -> f64,
) {
    let mut rng = Rng::new(11);
    for (sa, sb) in SHAPE_PAIRS {
        for (sa, sb) in [(sa, sb), (sb, sa)] {
            let av = random_values(&mut rng, dtype, sa.iter().product(), lo, hi);
            let bv = random_values(&mut rng, dtype, sb.iter().product(), lo, hi);
            let (a, b) = (tensor(dtype, sa, &av), tensor(dtype, sb, &bv));
            let y = &eval(op, &[Some(&a), Some(&b)]).unwrap()[0];
            assert_eq!(y.dtype(), out_dtype);
            let out = y.shape().to_vec();
            for (o, &g) in values(y).iter().enumerate() {
                let (x1, x2) = (av[naive_index(&out, o, sa)], bv[naive_index(&out, o, sb)]);
                let want = reference(x1, x2);
                assert!(close(out_dtype, g, want), "{dtype} {sa:?}x{sb:?} [{o}]: f({x1}, {x2}) = {g}, want {want}");
            }
        }
    }
}

/// Runs `op` on inputs and returns the first output's values.
pub fn run1(op: &dyn Op, inputs: &[&Tensor]) -> Tensor {
    let inputs: Vec<Option<&Tensor>> = inputs.iter().map(|&t| Some(t)).collect();
    eval(op, &inputs).unwrap().remove(0)
}

/// An f32 tensor.
pub fn f32s(shape: &[usize], v: &[f32]) -> Tensor {
    Tensor::from_f32(shape, v.to_vec()).unwrap()
}
