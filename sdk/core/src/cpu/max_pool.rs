//! Pooling kernels: the 2x2 stride-2 max (the most common downsampling window), two input
//! rows to one output row, with the reference op's tie and NaN order: the first tap, then
//! each later tap that is strictly greater (`max_ps(v, best)` computes exactly that).

use super::isa::Isa;

/// `out[j] = max(r0[2j], r0[2j+1], r1[2j], r1[2j+1])` taken in that order (a later tap wins
/// only when strictly greater). `r0` and `r1` hold at least `2 * out.len()` floats.
pub fn max_2x2_row(isa: Isa, r0: &[f32], r1: &[f32], out: &mut [f32]) {
    let n = out.len();
    assert!(r0.len() >= 2 * n && r1.len() >= 2 * n, "max_2x2_row: rows shorter than the output");
    #[cfg(target_arch = "x86_64")]
    if matches!(isa, Isa::Avx2 | Isa::Avx512) {
        // SAFETY: the ISA was checked as supported when it was chosen; every AVX-512 CPU
        // also has AVX2. Lengths checked above.
        return unsafe { max_2x2_row_avx2(r0, r1, out) };
    }
    let _ = isa;
    max_2x2_tail(r0, r1, out, 0);
}

/// The plain loop from output `j0` on.
fn max_2x2_tail(r0: &[f32], r1: &[f32], out: &mut [f32], j0: usize) {
    let later = |v: f32, best: f32| if v > best { v } else { best };
    for (j, o) in out.iter_mut().enumerate().skip(j0) {
        let best = later(r0[2 * j + 1], r0[2 * j]);
        *o = later(r1[2 * j + 1], later(r1[2 * j], best));
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn max_2x2_row_avx2(r0: &[f32], r1: &[f32], out: &mut [f32]) {
    use std::arch::x86_64::*;
    // [x0 x2 y0 y2 | x4 x6 y4 y6] -> [x0 x2 x4 x6 y0 y2 y4 y6], same for the odd lanes.
    let fix = |v: __m256| _mm256_castpd_ps(_mm256_permute4x64_pd::<0b11_01_10_00>(_mm256_castps_pd(v)));
    let mut j = 0;
    while j + 8 <= out.len() {
        // SAFETY: 16 floats from 2j in each row (2j + 16 <= 2 * out.len() <= row lengths)
        // and 8 to out[j..] are in bounds.
        unsafe {
            let (a0, b0) = (_mm256_loadu_ps(r0.as_ptr().add(2 * j)), _mm256_loadu_ps(r0.as_ptr().add(2 * j + 8)));
            let (a1, b1) = (_mm256_loadu_ps(r1.as_ptr().add(2 * j)), _mm256_loadu_ps(r1.as_ptr().add(2 * j + 8)));
            let (e0, o0) =
                (fix(_mm256_shuffle_ps::<0b10_00_10_00>(a0, b0)), fix(_mm256_shuffle_ps::<0b11_01_11_01>(a0, b0)));
            let (e1, o1) =
                (fix(_mm256_shuffle_ps::<0b10_00_10_00>(a1, b1)), fix(_mm256_shuffle_ps::<0b11_01_11_01>(a1, b1)));
            // max_ps(v, best) = v > best ? v : best: the reference's order.
            let best = _mm256_max_ps(o1, _mm256_max_ps(e1, _mm256_max_ps(o0, e0)));
            _mm256_storeu_ps(out.as_mut_ptr().add(j), best);
        }
        j += 8;
    }
    max_2x2_tail(r0, r1, out, j);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_2x2_matches_the_plain_loop_with_ties_and_nans() {
        let mut seed = 7u32;
        let mut next = || {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            // Few distinct values (ties), some NaN and -0.0.
            match seed >> 28 {
                0 => f32::NAN,
                1 => -0.0,
                v => v as f32 - 8.0,
            }
        };
        for n in [0usize, 1, 7, 8, 9, 16, 31, 64] {
            let r0: Vec<f32> = (0..2 * n + 1).map(|_| next()).collect();
            let r1: Vec<f32> = (0..2 * n + 1).map(|_| next()).collect();
            let mut want = vec![0f32; n];
            max_2x2_tail(&r0, &r1, &mut want, 0);
            for isa in Isa::all_supported() {
                let mut got = vec![1e9f32; n];
                max_2x2_row(isa, &r0, &r1, &mut got);
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&got), bits(&want), "{isa} n {n}");
            }
        }
    }
}
