//! x86-64 INT8 GEMM micro-kernels (see `gemm_i8.rs` for the contract they share). Both are
//! exact: every product and sum is formed in 32-bit lanes without saturation.

use std::arch::x86_64::*;

/// AVX-512 VNNI 8x32 tile: 16 zmm accumulators; per group of 4 K values, two 64-byte
/// weight loads (32 columns x 4 bytes) and, per row, one broadcast of 4 activation bytes
/// and two `vpdpbusd` (u8 x s8, four products summed into each int32 lane, no saturation).
///
/// # Safety
/// The CPU must have AVX-512F and AVX-512 VNNI; pointers as for [`super::gemm_i8::I8KernelFn`]
/// (mr 8, nr 32, kpack 4, int8 weights).
#[target_feature(enable = "avx512f,avx512vnni")]
pub unsafe fn kernel_vnni_8x32(kg: usize, a: *const *const u8, b: *const u8, c: *mut i32, ldc: usize, acc_in: bool) {
    unsafe {
        let r: [*const u8; 8] = std::array::from_fn(|i| *a.add(i));
        let mut acc = [[_mm512_setzero_si512(); 2]; 8];
        let mut bp = b;
        for g in 0..kg {
            let b0 = _mm512_loadu_si512(bp as *const __m512i);
            let b1 = _mm512_loadu_si512(bp.add(64) as *const __m512i);
            for i in 0..8 {
                let av = _mm512_set1_epi32((r[i].add(4 * g) as *const i32).read_unaligned());
                acc[i][0] = _mm512_dpbusd_epi32(acc[i][0], av, b0);
                acc[i][1] = _mm512_dpbusd_epi32(acc[i][1], av, b1);
            }
            bp = bp.add(128);
        }
        for (i, row) in acc.iter().enumerate() {
            let cp = c.add(i * ldc) as *mut __m512i;
            let cp1 = c.add(i * ldc + 16) as *mut __m512i;
            if acc_in {
                _mm512_storeu_si512(cp, _mm512_add_epi32(_mm512_loadu_si512(cp), row[0]));
                _mm512_storeu_si512(cp1, _mm512_add_epi32(_mm512_loadu_si512(cp1), row[1]));
            } else {
                _mm512_storeu_si512(cp, row[0]);
                _mm512_storeu_si512(cp1, row[1]);
            }
        }
    }
}

/// AVX2 `MR`x16 tile without VNNI, exact (used with MR = 4: fewer rows leave registers for
/// two K groups in flight; 4 measured faster than 5 and 6 on this machine). Weights are
/// packed widened to int16, two K values per 32-bit lane; per row, four activation bytes are
/// broadcast and shuffled into two int16 pairs, and `vpmaddwd` forms `a0*w0 + a1*w1` in int32
/// (at most 2 * 255 * 128: no overflow). This avoids `vpmaddubsw`, whose int16 sum of two
/// u8 x s8 products saturates (255 * -128 * 2 < -32768), at the cost of half its products per
/// instruction.
///
/// # Safety
/// The CPU must have AVX2; pointers as for [`super::gemm_i8::I8KernelFn`] (mr `MR`, nr 16,
/// kpack 2, int16 weights).
#[target_feature(enable = "avx2")]
pub unsafe fn kernel_avx2_x16<const MR: usize>(
    kg: usize,
    a: *const *const u8,
    b: *const u8,
    c: *mut i32,
    ldc: usize,
    acc_in: bool,
) {
    unsafe {
        let r: [*const u8; MR] = std::array::from_fn(|i| *a.add(i));
        let mut acc = [[_mm256_setzero_si256(); 2]; MR];
        let mut bp = b;
        // Spreads a broadcast byte pair (a0 a1 a0 a1 ...) into int16 lanes (a0, a1) per
        // 32-bit lane: bytes 0 and 1 of each pair, zero high bytes (0x80 zeroes).
        let spread = _mm256_setr_epi8(
            0, -128, 1, -128, 0, -128, 1, -128, 0, -128, 1, -128, 0, -128, 1, -128, 0, -128, 1, -128, 0, -128, 1, -128,
            0, -128, 1, -128, 0, -128, 1, -128,
        );
        // Two K groups (4 activation bytes) per step: one 32-bit broadcast, two shuffles.
        let spread_hi = _mm256_add_epi8(spread, _mm256_set1_epi32(0x0002_0002));
        let mut g = 0;
        while g + 2 <= kg {
            let b0 = _mm256_loadu_si256(bp as *const __m256i);
            let b1 = _mm256_loadu_si256(bp.add(32) as *const __m256i);
            let b2 = _mm256_loadu_si256(bp.add(64) as *const __m256i);
            let b3 = _mm256_loadu_si256(bp.add(96) as *const __m256i);
            for i in 0..MR {
                let quad = _mm256_set1_epi32((r[i].add(2 * g) as *const i32).read_unaligned());
                let lo = _mm256_shuffle_epi8(quad, spread);
                let hi = _mm256_shuffle_epi8(quad, spread_hi);
                let s0 = _mm256_add_epi32(_mm256_madd_epi16(lo, b0), _mm256_madd_epi16(hi, b2));
                let s1 = _mm256_add_epi32(_mm256_madd_epi16(lo, b1), _mm256_madd_epi16(hi, b3));
                acc[i][0] = _mm256_add_epi32(acc[i][0], s0);
                acc[i][1] = _mm256_add_epi32(acc[i][1], s1);
            }
            bp = bp.add(128);
            g += 2;
        }
        if g < kg {
            let b0 = _mm256_loadu_si256(bp as *const __m256i);
            let b1 = _mm256_loadu_si256(bp.add(32) as *const __m256i);
            for i in 0..MR {
                let pair = (r[i].add(2 * g) as *const i16).read_unaligned();
                let av = _mm256_shuffle_epi8(_mm256_set1_epi16(pair), spread);
                acc[i][0] = _mm256_add_epi32(acc[i][0], _mm256_madd_epi16(av, b0));
                acc[i][1] = _mm256_add_epi32(acc[i][1], _mm256_madd_epi16(av, b1));
            }
        }
        store_tile_avx2(&acc, c, ldc, acc_in);
    }
}

/// AVX2 `MR`x16 tile for 7-bit A (every A byte at most 127: `conv_i8`'s weights in
/// [-63, 63] shifted by 64), exact: per group of 4 K values, one broadcast of 4 A bytes per
/// row, and per 8 columns `vpmaddubsw` (u8 x s8, pairs summed into int16: at most
/// 2 * 127 * 128 = 32512, so never saturating) then `vpmaddwd` by ones (int16 pairs into
/// int32). Twice the products per instruction of [`kernel_avx2_x16`], whose int16 B
/// operand needs a widening shuffle per row.
///
/// # Safety
/// The CPU must have AVX2; pointers as for [`super::gemm_i8::I8KernelFn`] (mr `MR`, nr 16,
/// kpack 4, int8 B); every A byte must be at most 127 (else sums saturate: wrong, not UB).
#[target_feature(enable = "avx2")]
pub unsafe fn kernel_avx2_u7_x16<const MR: usize>(
    kg: usize,
    a: *const *const u8,
    b: *const u8,
    c: *mut i32,
    ldc: usize,
    acc_in: bool,
) {
    unsafe {
        let r: [*const u8; MR] = std::array::from_fn(|i| *a.add(i));
        let mut acc = [[_mm256_setzero_si256(); 2]; MR];
        let ones = _mm256_set1_epi16(1);
        let mut bp = b;
        for g in 0..kg {
            let b0 = _mm256_loadu_si256(bp as *const __m256i);
            let b1 = _mm256_loadu_si256(bp.add(32) as *const __m256i);
            for i in 0..MR {
                let av = _mm256_set1_epi32((r[i].add(4 * g) as *const i32).read_unaligned());
                let p0 = _mm256_madd_epi16(_mm256_maddubs_epi16(av, b0), ones);
                let p1 = _mm256_madd_epi16(_mm256_maddubs_epi16(av, b1), ones);
                acc[i][0] = _mm256_add_epi32(acc[i][0], p0);
                acc[i][1] = _mm256_add_epi32(acc[i][1], p1);
            }
            bp = bp.add(64);
        }
        store_tile_avx2(&acc, c, ldc, acc_in);
    }
}

/// Stores an `MR`x16 tile of int32 accumulators (two ymm per row) into C with row stride
/// `ldc`, or adds it to C with `acc_in`.
///
/// # Safety
/// The CPU must have AVX2; C must hold `MR` rows of 16 values `ldc` apart.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn store_tile_avx2<const MR: usize>(acc: &[[__m256i; 2]; MR], c: *mut i32, ldc: usize, acc_in: bool) {
    unsafe {
        for (i, row) in acc.iter().enumerate() {
            let cp = c.add(i * ldc) as *mut __m256i;
            let cp1 = c.add(i * ldc + 8) as *mut __m256i;
            if acc_in {
                _mm256_storeu_si256(cp, _mm256_add_epi32(_mm256_loadu_si256(cp), row[0]));
                _mm256_storeu_si256(cp1, _mm256_add_epi32(_mm256_loadu_si256(cp1), row[1]));
            } else {
                _mm256_storeu_si256(cp, row[0]);
                _mm256_storeu_si256(cp1, row[1]);
            }
        }
    }
}
