//! x86-64 GEMM micro-kernels (see `gemm.rs` for the contract they share).

use std::arch::x86_64::*;

/// AVX-512 8x32 tile: 16 zmm accumulators, two B loads and eight broadcasts per k.
///
/// # Safety
/// The CPU must have AVX-512F and FMA; pointers as for [`super::gemm::KernelFn`] (mr 8, nr 32).
#[target_feature(enable = "avx512f,fma")]
pub unsafe fn kernel_avx512_8x32(
    kc: usize,
    a: *const *const f32,
    b: *const f32,
    ldb: usize,
    c: *mut f32,
    ldc: usize,
    accumulate: bool,
) {
    unsafe { kernel_avx512_rows_x32::<8>(kc, a, b, ldb, c, ldc, accumulate) }
}

/// AVX-512 7x32 tile, for GEMMs whose rows come in multiples of 7 (the positions of a 7x7
/// or 14x14 plane: `conv_1x1_swapped`), which the 8-row tile would leave partly empty.
///
/// # Safety
/// As for [`kernel_avx512_8x32`], with mr 7.
#[target_feature(enable = "avx512f,fma")]
pub unsafe fn kernel_avx512_7x32(
    kc: usize,
    a: *const *const f32,
    b: *const f32,
    ldb: usize,
    c: *mut f32,
    ldc: usize,
    accumulate: bool,
) {
    unsafe { kernel_avx512_rows_x32::<7>(kc, a, b, ldb, c, ldc, accumulate) }
}

/// The AVX-512 `MR x 32` tile: `2*MR` zmm accumulators, two B loads and `MR` broadcasts per k.
///
/// # Safety
/// The CPU must have AVX-512F and FMA; pointers as for [`super::gemm::KernelFn`] (mr `MR`, nr 32).
#[target_feature(enable = "avx512f,fma")]
#[inline]
unsafe fn kernel_avx512_rows_x32<const MR: usize>(
    kc: usize,
    a: *const *const f32,
    b: *const f32,
    ldb: usize,
    c: *mut f32,
    ldc: usize,
    accumulate: bool,
) {
    unsafe {
        let r: [*const f32; MR] = std::array::from_fn(|i| *a.add(i));
        let mut acc = [[_mm512_setzero_ps(); 2]; MR];
        let mut bp = b;
        for kk in 0..kc {
            let b0 = _mm512_loadu_ps(bp);
            let b1 = _mm512_loadu_ps(bp.add(16));
            for i in 0..MR {
                let av = _mm512_set1_ps(*r[i].add(kk));
                acc[i][0] = _mm512_fmadd_ps(av, b0, acc[i][0]);
                acc[i][1] = _mm512_fmadd_ps(av, b1, acc[i][1]);
            }
            bp = bp.add(ldb);
        }
        for (i, row) in acc.iter().enumerate() {
            let cp = c.add(i * ldc);
            if accumulate {
                _mm512_storeu_ps(cp, _mm512_add_ps(_mm512_loadu_ps(cp), row[0]));
                _mm512_storeu_ps(cp.add(16), _mm512_add_ps(_mm512_loadu_ps(cp.add(16)), row[1]));
            } else {
                _mm512_storeu_ps(cp, row[0]);
                _mm512_storeu_ps(cp.add(16), row[1]);
            }
        }
    }
}

/// AVX2 6x16 tile: 12 ymm accumulators, two B loads and six broadcasts per k.
///
/// # Safety
/// The CPU must have AVX2 and FMA; pointers as for [`super::gemm::KernelFn`] (mr 6, nr 16).
#[target_feature(enable = "avx2,fma")]
pub unsafe fn kernel_avx2_6x16(
    kc: usize,
    a: *const *const f32,
    b: *const f32,
    ldb: usize,
    c: *mut f32,
    ldc: usize,
    accumulate: bool,
) {
    unsafe {
        let r: [*const f32; 6] = std::array::from_fn(|i| *a.add(i));
        let mut acc = [[_mm256_setzero_ps(); 2]; 6];
        let mut bp = b;
        for kk in 0..kc {
            let b0 = _mm256_loadu_ps(bp);
            let b1 = _mm256_loadu_ps(bp.add(8));
            for i in 0..6 {
                let av = _mm256_broadcast_ss(&*r[i].add(kk));
                acc[i][0] = _mm256_fmadd_ps(av, b0, acc[i][0]);
                acc[i][1] = _mm256_fmadd_ps(av, b1, acc[i][1]);
            }
            bp = bp.add(ldb);
        }
        for (i, row) in acc.iter().enumerate() {
            let cp = c.add(i * ldc);
            if accumulate {
                _mm256_storeu_ps(cp, _mm256_add_ps(_mm256_loadu_ps(cp), row[0]));
                _mm256_storeu_ps(cp.add(8), _mm256_add_ps(_mm256_loadu_ps(cp.add(8)), row[1]));
            } else {
                _mm256_storeu_ps(cp, row[0]);
                _mm256_storeu_ps(cp.add(8), row[1]);
            }
        }
    }
}
