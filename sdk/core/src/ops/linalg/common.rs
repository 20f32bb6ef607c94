//! Shared helpers of the linalg family: the arithmetic of the element types that the
//! matrix ops accept, shape checks, and test utilities.

use half::f16;

use crate::error::Result;
use crate::invalid;
use crate::tensor::{DType, Element, MAX_RANK, numel};

/// Element types a matrix product accepts, with how they accumulate: floats in f64 (f16
/// inputs are widened, never summed in f16), integers with wrapping two's-complement
/// arithmetic as numpy does.
pub trait MatElem: Element {
    /// The accumulator.
    type Acc: Copy;
    /// The accumulator's zero.
    fn zero() -> Self::Acc;
    /// `acc + a * b`.
    fn mac(acc: Self::Acc, a: Self, b: Self) -> Self::Acc;
    /// The accumulator as an element (wrapping for integers).
    fn finish(acc: Self::Acc) -> Self;
    /// `alpha * acc + beta * c` as an element (Gemm's epilogue). Integers stay exact when
    /// both scales are 1 (or `c` is absent and `alpha` is 1); otherwise they go through f64
    /// and truncate toward zero, as a numpy float result cast back would.
    fn scale(acc: Self::Acc, alpha: f32, c: Option<Self>, beta: f32) -> Self;
}

macro_rules! float_elem {
    ($t:ty) => {
        impl MatElem for $t {
            type Acc = f64;
            fn zero() -> f64 {
                0.0
            }
            fn mac(acc: f64, a: Self, b: Self) -> f64 {
                acc + a.to_f64() * b.to_f64()
            }
            fn finish(acc: f64) -> Self {
                <$t>::from_f64(acc)
            }
            fn scale(acc: f64, alpha: f32, c: Option<Self>, beta: f32) -> Self {
                let mut v = alpha as f64 * acc;
                if let Some(c) = c {
                    v += beta as f64 * c.to_f64();
                }
                <$t>::from_f64(v)
            }
        }
    };
}
float_elem!(f32);
float_elem!(f16);

macro_rules! int_elem {
    ($t:ty) => {
        impl MatElem for $t {
            type Acc = i64;
            fn zero() -> i64 {
                0
            }
            fn mac(acc: i64, a: Self, b: Self) -> i64 {
                acc.wrapping_add((a as i64).wrapping_mul(b as i64))
            }
            fn finish(acc: i64) -> Self {
                acc as $t
            }
            fn scale(acc: i64, alpha: f32, c: Option<Self>, beta: f32) -> Self {
                match c {
                    None if alpha == 1.0 => acc as $t,
                    Some(c) if alpha == 1.0 && beta == 1.0 => acc.wrapping_add(c as i64) as $t,
                    _ => {
                        let mut v = alpha as f64 * (acc as $t) as f64;
                        if let Some(c) = c {
                            v += beta as f64 * c as f64;
                        }
                        <$t>::from_f64(v)
                    }
                }
            }
        }
    };
}
int_elem!(i32);
int_elem!(i64);

/// Errors unless `dtype` is one a matrix op accepts here (float32, float16, int32, int64).
pub fn check_mat_dtype(dtype: DType, what: &str) -> Result<()> {
    match dtype {
        DType::F32 | DType::F16 | DType::I32 | DType::I64 => Ok(()),
        other => invalid!("{what} of type {other} is not supported (float32, float16, int32 or int64)"),
    }
}

/// Errors if `shape` has more dims than the kernels keep on the stack.
pub fn check_rank(shape: &[usize], what: &str) -> Result<()> {
    if shape.len() > MAX_RANK {
        invalid!("{what} has rank {}, more than the supported {MAX_RANK}", shape.len());
    }
    Ok(())
}

/// Errors unless a view's element count matches its shape (so indexing is in range).
pub fn check_len(len: usize, shape: &[usize], what: &str) -> Result<()> {
    if len != numel(shape) {
        invalid!("{what} has {len} elements but shape {shape:?}");
    }
    Ok(())
}

/// Test utilities shared by the linalg and rnn families.
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
        /// Uniform integer in [lo, hi).
        pub fn int(&mut self, lo: i64, hi: i64) -> i64 {
            lo + ((self.next_f64() * (hi - lo) as f64) as i64).min(hi - lo - 1)
        }
    }

    /// Random f32 values.
    pub fn rand_vec(rng: &mut Rng, n: usize, lo: f64, hi: f64) -> Vec<f32> {
        (0..n).map(|_| rng.uniform(lo, hi) as f32).collect()
    }

    /// Random f32 tensor.
    pub fn rand_f32(rng: &mut Rng, shape: &[usize], lo: f64, hi: f64) -> Tensor {
        Tensor::from_f32(shape, rand_vec(rng, shape.iter().product(), lo, hi)).unwrap()
    }

    /// An f32 tensor.
    pub fn f32s(shape: &[usize], v: Vec<f32>) -> Tensor {
        Tensor::from_f32(shape, v).unwrap()
    }

    /// An i32 tensor.
    pub fn i32s(shape: &[usize], v: Vec<i32>) -> Tensor {
        Tensor::new(shape.to_vec(), TensorData::I32(v)).unwrap()
    }

    /// An f16 tensor from f32 values.
    pub fn f16s(shape: &[usize], v: &[f32]) -> Tensor {
        Tensor::new(shape.to_vec(), TensorData::F16(v.iter().map(|&x| half::f16::from_f32(x)).collect())).unwrap()
    }

    /// Attributes from (name, int) pairs.
    pub fn int_attrs(pairs: &[(&str, i64)]) -> Attrs {
        pairs.iter().fold(Attrs::new(), |a, (k, v)| a.with(k, Attr::Int(*v)))
    }

    /// Asserts two f32 slices agree within `rtol` relative or `atol` absolute.
    pub fn assert_close_tol(got: &[f32], want: &[f32], rtol: f32, atol: f32) {
        assert_eq!(got.len(), want.len(), "lengths");
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            let ok = (g.is_nan() && w.is_nan()) || g == w || (g - w).abs() <= atol || (g - w).abs() <= rtol * w.abs();
            assert!(ok, "element {i}: got {g}, want {w}");
        }
    }

    /// Asserts two f32 slices agree within 1e-4 relative / 1e-5 absolute (DESIGN.md).
    pub fn assert_close(got: &[f32], want: &[f32]) {
        assert_close_tol(got, want, 1e-4, 1e-5);
    }
}
