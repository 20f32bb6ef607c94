//! Pooling kernels: the 2x2 and 3x3 stride-2 max (the common downsampling windows; 3x3 is
//! ResNet's stem), two or three input rows to one output row, with the reference op's tie and
//! NaN order: the first tap, then each later tap (row by row, left to right) that is strictly
//! greater (`max_ps(v, best)` computes exactly that).

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

/// `out[j]` = the max of `r[2j]`, `r[2j+1]`, `r[2j+2]` for `r` in `r0`, `r1`, `r2`, taken in
/// that order (a later tap wins only when strictly greater). Rows hold at least
/// `2 * out.len() + 1` floats.
pub fn max_3x3_s2_row(isa: Isa, r0: &[f32], r1: &[f32], r2: &[f32], out: &mut [f32]) {
    let n = out.len();
    let need = 2 * n + 1;
    assert!(r0.len() >= need && r1.len() >= need && r2.len() >= need, "max_3x3_s2_row: rows too short");
    #[cfg(target_arch = "x86_64")]
    if matches!(isa, Isa::Avx2 | Isa::Avx512) {
        // SAFETY: the ISA was checked as supported when it was chosen; lengths checked above.
        return unsafe { max_3x3_s2_row_avx2(r0, r1, r2, out) };
    }
    let _ = isa;
    max_3x3_s2_tail(r0, r1, r2, out, 0);
}

/// The plain loop from output `j0` on.
fn max_3x3_s2_tail(r0: &[f32], r1: &[f32], r2: &[f32], out: &mut [f32], j0: usize) {
    let later = |v: f32, best: f32| if v > best { v } else { best };
    for (j, o) in out.iter_mut().enumerate().skip(j0) {
        let mut best = r0[2 * j];
        for (i, r) in [r0, r1, r2].into_iter().enumerate() {
            for kx in usize::from(i == 0)..3 {
                best = later(r[2 * j + kx], best);
            }
        }
        *o = best;
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn max_3x3_s2_row_avx2(r0: &[f32], r1: &[f32], r2: &[f32], out: &mut [f32]) {
    use std::arch::x86_64::*;
    let fix = |v: __m256| _mm256_castpd_ps(_mm256_permute4x64_pd::<0b11_01_10_00>(_mm256_castps_pd(v)));
    // Even lanes of the 16 floats at p: [p[0], p[2], ..., p[14]]; odd lanes: p[1], ..., p[15].
    let even_odd = |p: *const f32| {
        // SAFETY: callers keep p + 16 inside the row.
        let (a, b) = unsafe { (_mm256_loadu_ps(p), _mm256_loadu_ps(p.add(8))) };
        (fix(_mm256_shuffle_ps::<0b10_00_10_00>(a, b)), fix(_mm256_shuffle_ps::<0b11_01_11_01>(a, b)))
    };
    let (n, len) = (out.len(), r0.len().min(r1.len()).min(r2.len()));
    let mut j = 0;
    // Taps 2j..2j+2 for 8 outputs read floats 2j..2j+17 (the third tap's block starts at 2j+2).
    while j + 8 <= n && 2 * j + 18 <= len {
        let mut best = None;
        for r in [r0, r1, r2] {
            let p = r.as_ptr();
            // SAFETY: 2j + 18 <= every row's length (loop condition).
            let ((e, o), (e2, _)) = unsafe { (even_odd(p.add(2 * j)), even_odd(p.add(2 * j + 2))) };
            // max_ps(v, best) = v > best ? v : best: the reference's order.
            best = Some(match best {
                None => _mm256_max_ps(e2, _mm256_max_ps(o, e)),
                Some(b) => _mm256_max_ps(e2, _mm256_max_ps(o, _mm256_max_ps(e, b))),
            });
        }
        if let Some(b) = best {
            // SAFETY: j + 8 <= out.len().
            unsafe { _mm256_storeu_ps(out.as_mut_ptr().add(j), b) };
        }
        j += 8;
    }
    max_3x3_s2_tail(r0, r1, r2, out, j);
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
            // 3x3 stride 2, with rows exactly 2n + 1 long and longer.
            for extra in [0usize, 17] {
                let rows: Vec<Vec<f32>> = (0..3).map(|_| (0..2 * n + 1 + extra).map(|_| next()).collect()).collect();
                let mut want = vec![0f32; n];
                max_3x3_s2_tail(&rows[0], &rows[1], &rows[2], &mut want, 0);
                // The order written out: row by row, left to right, strictly greater wins.
                for (j, &w) in want.iter().enumerate() {
                    let mut best = rows[0][2 * j];
                    for r in &rows {
                        for kx in 0..3 {
                            if r[2 * j + kx] > best {
                                best = r[2 * j + kx];
                            }
                        }
                    }
                    assert_eq!(best.to_bits(), w.to_bits(), "tail n {n} at {j}");
                }
                for isa in Isa::all_supported() {
                    let mut got = vec![1e9f32; n];
                    max_3x3_s2_row(isa, &rows[0], &rows[1], &rows[2], &mut got);
                    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&got), bits(&want), "3x3 {isa} n {n} extra {extra}");
                }
            }
        }
    }
}
