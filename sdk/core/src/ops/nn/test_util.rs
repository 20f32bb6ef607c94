//! Test helpers for the nn ops: a deterministic random source and tolerance checks.

use half::f16;

use crate::tensor::{Tensor, TensorData};

/// A small deterministic generator (xorshift64*), so tests need no extra crate.
pub struct Rng(u64);

impl Rng {
    /// Seeded generator.
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f32 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let v = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D);
        (v >> 40) as f32 / (1u64 << 24) as f32
    }
    /// Uniform in [-1, 1).
    pub fn sym(&mut self) -> f32 {
        self.unit() * 2.0 - 1.0
    }
    /// Uniform integer in 0..n.
    #[allow(dead_code)]
    pub fn below(&mut self, n: usize) -> usize {
        ((self.unit() * n as f32) as usize).min(n - 1)
    }
    /// Random f32 tensor in [-1, 1).
    pub fn tensor(&mut self, shape: &[usize]) -> Tensor {
        let n: usize = shape.iter().product();
        Tensor::from_f32(shape, (0..n).map(|_| self.sym()).collect()).unwrap()
    }
}

/// f32 tensor from a shape and values.
pub fn t(shape: &[usize], v: &[f32]) -> Tensor {
    Tensor::from_f32(shape, v.to_vec()).unwrap()
}

/// The same values as float16.
pub fn to_f16(x: &Tensor) -> Tensor {
    let v = x.to_f32_vec().unwrap();
    Tensor::new(x.shape().to_vec(), TensorData::F16(v.iter().map(|&y| f16::from_f32(y)).collect())).unwrap()
}

/// Asserts shapes equal and values within `tol` (relative, or absolute near zero).
pub fn assert_close(got: &Tensor, want_shape: &[usize], want: &[f32], tol: f32) {
    assert_eq!(got.shape(), want_shape, "shape");
    let g = got.to_f32_vec().unwrap();
    assert_eq!(g.len(), want.len(), "element count");
    for (i, (&a, &b)) in g.iter().zip(want).enumerate() {
        let d = (a - b).abs();
        assert!(d <= tol || d <= tol * b.abs(), "element {i}: got {a}, want {b} (tol {tol})");
    }
}
