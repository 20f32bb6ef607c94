//! Vectorized f32 dot product, for matrix-vector work too small for the GEMM (recurrent
//! cells: one gate row times the input or the state, every time step).
//!
//! Sums are in f32 over several independent lanes, so the result differs from a serial or
//! f64 sum by rounding only (relative error about `len * 2^-24` at worst).

use super::Isa;

/// `Σ a[i]·b[i]` over the common length, on the given instruction set.
pub fn dot(isa: Isa, a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 | Isa::Avx512 if Isa::Avx2.supported() => {
            // SAFETY: AVX2 and FMA are present (checked just above); equal lengths.
            unsafe { dot_avx2(a, b) }
        }
        _ => dot_portable(a, b),
    }
}

/// Eight independent accumulators: the compiler keeps them in vector registers (SSE on
/// baseline x86-64, NEON on aarch64) since each lane's sum is its own chain.
fn dot_portable(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let (ac, bc) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ac.remainder().iter().zip(bc.remainder()).map(|(x, y)| x * y).sum();
    for (x, y) in ac.zip(bc) {
        for l in 0..8 {
            acc[l] += x[l] * y[l];
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// Four 8-lane FMA chains (32 products per iteration), then an 8-lane and a scalar tail.
///
/// # Safety
/// The CPU must have AVX2 and FMA; `a` and `b` have the same length.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn dot_avx2(a: &[f32], b: &[f32]) -> f32 {
    use std::arch::x86_64::*;
    let n = a.len();
    let (pa, pb) = (a.as_ptr(), b.as_ptr());
    let mut i = 0;
    // SAFETY: every load reads 8 floats at an index below `n - 7`.
    unsafe {
        let mut acc = [_mm256_setzero_ps(); 4];
        while i + 32 <= n {
            for (k, s) in acc.iter_mut().enumerate() {
                let o = i + 8 * k;
                *s = _mm256_fmadd_ps(_mm256_loadu_ps(pa.add(o)), _mm256_loadu_ps(pb.add(o)), *s);
            }
            i += 32;
        }
        while i + 8 <= n {
            acc[0] = _mm256_fmadd_ps(_mm256_loadu_ps(pa.add(i)), _mm256_loadu_ps(pb.add(i)), acc[0]);
            i += 8;
        }
        let s = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
        let s4 = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
        let s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
        let s1 = _mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1));
        let mut total = _mm_cvtss_f32(s1);
        while i < n {
            total += a[i] * b[i];
            i += 1;
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::nn::test_util::Rng;

    /// Every ISA this CPU has against an f64 sum, at lengths around each loop's edges.
    #[test]
    fn dot_matches_an_f64_sum_on_every_isa() {
        let mut rng = Rng::new(5);
        for n in [0usize, 1, 7, 8, 9, 31, 32, 33, 40, 63, 64, 65, 129, 256, 1000] {
            let a: Vec<f32> = (0..n).map(|_| rng.sym()).collect();
            let b: Vec<f32> = (0..n).map(|_| rng.sym()).collect();
            let want: f64 = a.iter().zip(&b).map(|(&x, &y)| x as f64 * y as f64).sum();
            let scale: f64 = a.iter().zip(&b).map(|(&x, &y)| (x as f64 * y as f64).abs()).sum();
            for isa in Isa::all_supported() {
                let got = dot(isa, &a, &b) as f64;
                assert!((got - want).abs() <= 1e-6 * (1.0 + scale), "{isa} n={n}: {got} vs {want}");
            }
        }
        // Unequal lengths: the common prefix.
        assert_eq!(dot(Isa::best(), &[1.0, 2.0, 3.0], &[4.0, 5.0]), 14.0);
    }
}
