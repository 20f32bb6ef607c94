//! Direct convolution for kernels with long rows: a filter bank or DFT written as a
//! convolution over raw samples (the speech frontend's 400-tap, stride-160 Conv: 514 output
//! channels, 8 frames per call). Each output is a sum of dot products along kernel rows, and
//! along a row both the weights and the input are contiguous, so the sums run in vector
//! registers straight from the input. The GEMM path would first write the im2col (400 x 8
//! here) and then fill a quarter of each 32-column AVX-512 tile.
//!
//! A block of [`MB`] output channels x `PB` output positions accumulates in `MB * PB`
//! vector registers (each weight load feeds `PB` FMAs, each input load `MB`); lanes are
//! summed once per block. Sums are f32 over independent lanes: they differ from the
//! reference's serial sums by rounding only.

use super::Exec;
use super::conv::Conv2d;
use super::epilogue::Epilogue;
use super::gemm::SyncPtr;
use super::isa::Isa;

/// Kernel width from which a dense convolution takes [`conv_row_dot`] on AVX2/AVX-512.
pub const MIN_KW: usize = 64;
/// Output channels per block.
const MB: usize = 4;

/// Whether [`conv_row_dot`] runs `p` on `isa`: one group, contiguous taps (no horizontal
/// dilation), rows of at least [`MIN_KW`] taps, on AVX2 or AVX-512.
pub fn takes(p: &Conv2d, isa: Isa) -> bool {
    cfg!(target_arch = "x86_64")
        && matches!(isa, Isa::Avx2 | Isa::Avx512)
        && p.group == 1
        && p.dilation[1] == 1
        && p.kw >= MIN_KW
}

/// The zero-bordered copy of one input plane the kernel reads, `(rows, cols)`, when the
/// windows reach past the input (padding); `None` when they stay inside it and the kernel
/// reads the input itself.
fn padded(p: &Conv2d) -> Option<(usize, usize)> {
    let (rows, cols) = p.padded_plane();
    (p.pad != [0, 0] || rows > p.h || cols > p.w).then_some((rows, cols))
}

/// Scratch floats [`conv_row_dot`] needs: the padded planes, if any.
pub fn scratch_floats(p: &Conv2d) -> usize {
    padded(p).map_or(0, |(rows, cols)| p.n * p.c * rows * cols)
}

/// Runs the convolution (`x`: `[n, c, h, w]`, `w`: `[m, c, kh, kw]` f32, `y`:
/// `[n, m, oh, ow]`), one task per (image, block of [`MB`] channels), each applying the
/// epilogue to its rows.
pub fn conv_row_dot(exec: &Exec, p: &Conv2d, x: &[f32], w: &[f32], ep: &Epilogue, y: &mut [f32], scratch: &mut [f32]) {
    debug_assert!(takes(p, exec.isa));
    let (planes, ld, plane): (&[f32], usize, usize) = match padded(p) {
        None => (x, p.w, p.h * p.w),
        Some((rows, cols)) => {
            let plane = rows * cols;
            let s = &mut scratch[..p.n * p.c * plane];
            for (src, dst) in x.chunks_exact(p.h * p.w).zip(s.chunks_exact_mut(plane)) {
                dst.fill(0.0);
                for (iy, row) in src.chunks_exact(p.w).enumerate() {
                    let (py, n) = (iy + p.pad[0], p.w.min(cols.saturating_sub(p.pad[1])));
                    if py < rows {
                        dst[py * cols + p.pad[1]..py * cols + p.pad[1] + n].copy_from_slice(&row[..n]);
                    }
                }
            }
            (&scratch[..p.n * p.c * plane], cols, plane)
        }
    };
    let (np, taps) = (p.positions(), p.k());
    let blocks = p.m.div_ceil(MB);
    let (y_ptr, y_len) = (SyncPtr(y.as_mut_ptr()), y.len());
    let isa = exec.isa;
    let task = |t: usize| {
        // SAFETY: each task writes only its own output rows.
        let y = unsafe { std::slice::from_raw_parts_mut(y_ptr.get(), y_len) };
        let (ni, m0) = (t / blocks, t % blocks * MB);
        let mb = MB.min(p.m - m0);
        let img = &planes[ni * p.c * plane..(ni + 1) * p.c * plane];
        let out = &mut y[(ni * p.m + m0) * np..(ni * p.m + m0 + mb) * np];
        let wb = &w[m0 * taps..(m0 + mb) * taps];
        let geo = Rows { p, ld, plane };
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `takes` admitted only AVX2/AVX-512, checked as supported when the ISA was
        // chosen (every AVX-512 CPU has AVX2 and FMA).
        unsafe {
            match (isa, mb) {
                (Isa::Avx512, 4) => rows_avx512::<4>(&geo, img, wb, out),
                (Isa::Avx512, 3) => rows_avx512::<3>(&geo, img, wb, out),
                (Isa::Avx512, 2) => rows_avx512::<2>(&geo, img, wb, out),
                (Isa::Avx512, _) => rows_avx512::<1>(&geo, img, wb, out),
                (_, 4) => rows_avx2::<4>(&geo, img, wb, out),
                (_, 3) => rows_avx2::<3>(&geo, img, wb, out),
                (_, 2) => rows_avx2::<2>(&geo, img, wb, out),
                _ => rows_avx2::<1>(&geo, img, wb, out),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (isa, geo, img, wb);
        ep.for_group(ni, m0, mb, np).apply_tile(out, np, 0, mb, 0, np);
    };
    crate::cpu::pool::run_tasks(exec.pool, p.n * blocks, &task);
}

/// Where the kernel reads: `p.c` planes of `plane` floats, rows `ld` floats apart.
#[derive(Clone, Copy)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
struct Rows<'a> {
    p: &'a Conv2d,
    ld: usize,
    plane: usize,
}

/// One x86 vector width: what the shared kernel body [`rows`] needs of it.
#[cfg(target_arch = "x86_64")]
trait Lanes: Copy {
    /// Floats per vector.
    const N: usize;
    /// A vector with the first `n` lanes valid (for the tail of a row).
    type Tail: Copy;
    unsafe fn tail(n: usize) -> Self::Tail;
    unsafe fn zero() -> Self;
    unsafe fn load(p: *const f32) -> Self;
    /// Loads the tail's valid lanes only (zeros elsewhere; masked lanes are not read).
    unsafe fn load_tail(p: *const f32, t: Self::Tail) -> Self;
    unsafe fn fma(a: Self, b: Self, c: Self) -> Self;
    unsafe fn sum(self) -> f32;
}

#[cfg(target_arch = "x86_64")]
impl Lanes for std::arch::x86_64::__m256 {
    const N: usize = 8;
    type Tail = std::arch::x86_64::__m256i;
    #[inline(always)]
    unsafe fn tail(n: usize) -> Self::Tail {
        use std::arch::x86_64::*;
        unsafe { _mm256_cmpgt_epi32(_mm256_set1_epi32(n as i32), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)) }
    }
    #[inline(always)]
    unsafe fn zero() -> Self {
        unsafe { std::arch::x86_64::_mm256_setzero_ps() }
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> Self {
        unsafe { std::arch::x86_64::_mm256_loadu_ps(p) }
    }
    #[inline(always)]
    unsafe fn load_tail(p: *const f32, t: Self::Tail) -> Self {
        unsafe { std::arch::x86_64::_mm256_maskload_ps(p, t) }
    }
    #[inline(always)]
    unsafe fn fma(a: Self, b: Self, c: Self) -> Self {
        unsafe { std::arch::x86_64::_mm256_fmadd_ps(a, b, c) }
    }
    #[inline(always)]
    unsafe fn sum(self) -> f32 {
        use std::arch::x86_64::*;
        unsafe {
            let s4 = _mm_add_ps(_mm256_castps256_ps128(self), _mm256_extractf128_ps(self, 1));
            let s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
            _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1)))
        }
    }
}

#[cfg(target_arch = "x86_64")]
impl Lanes for std::arch::x86_64::__m512 {
    const N: usize = 16;
    type Tail = std::arch::x86_64::__mmask16;
    #[inline(always)]
    unsafe fn tail(n: usize) -> Self::Tail {
        ((1u32 << n) - 1) as u16
    }
    #[inline(always)]
    unsafe fn zero() -> Self {
        unsafe { std::arch::x86_64::_mm512_setzero_ps() }
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> Self {
        unsafe { std::arch::x86_64::_mm512_loadu_ps(p) }
    }
    #[inline(always)]
    unsafe fn load_tail(p: *const f32, t: Self::Tail) -> Self {
        unsafe { std::arch::x86_64::_mm512_maskz_loadu_ps(t, p) }
    }
    #[inline(always)]
    unsafe fn fma(a: Self, b: Self, c: Self) -> Self {
        unsafe { std::arch::x86_64::_mm512_fmadd_ps(a, b, c) }
    }
    #[inline(always)]
    unsafe fn sum(self) -> f32 {
        unsafe { std::arch::x86_64::_mm512_reduce_add_ps(self) }
    }
}

/// `M` output channels on AVX2: blocks of 3 positions (`M * 3` accumulators of 16 ymm).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn rows_avx2<const M: usize>(g: &Rows, x: &[f32], w: &[f32], out: &mut [f32]) {
    // SAFETY: AVX2 and FMA are enabled here; the rest is `rows`' contract, passed on.
    unsafe { rows::<std::arch::x86_64::__m256, M, 3>(g, x, w, out) }
}

/// `M` output channels on AVX-512: blocks of 4 positions (`M * 4` accumulators of 32 zmm).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn rows_avx512<const M: usize>(g: &Rows, x: &[f32], w: &[f32], out: &mut [f32]) {
    // SAFETY: as in `rows_avx2`, with AVX-512F.
    unsafe { rows::<std::arch::x86_64::__m512, M, 4>(g, x, w, out) }
}

/// `M` output channels (weights `w`: `[M, c, kh, kw]`) of one image (`x`: its planes) into
/// `out` (`M` rows of oh*ow): `PB` positions at a time, `V::N` taps per FMA, the last
/// `kw % V::N` taps by masked loads. Inlined into a wrapper that enables `V`'s ISA.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn rows<V: Lanes, const M: usize, const PB: usize>(g: &Rows, x: &[f32], w: &[f32], out: &mut [f32]) {
    let p = g.p;
    let (kw, np, taps) = (p.kw, p.positions(), p.k());
    let full = kw / V::N * V::N;
    // SAFETY (whole body): the ISA is enabled (the caller's contract); every input read is
    // inside a window row, which lies inside its plane (`padded` made sure), every weight read
    // below `M * taps`, every store inside `out`; masked loads read only the valid lanes.
    unsafe {
        let tail = V::tail(kw - full);
        for oy in 0..p.oh {
            let mut ox = 0;
            while ox < p.ow {
                let pb = PB.min(p.ow - ox);
                let mut acc = [[V::zero(); PB]; M];
                for c in 0..p.c {
                    for ky in 0..p.kh {
                        let row = x.as_ptr().add(c * g.plane + (oy * p.stride[0] + ky * p.dilation[0]) * g.ld);
                        let wr = w.as_ptr().add((c * p.kh + ky) * kw);
                        // Positions past the block's last repeat it (their sums are dropped).
                        let win: [*const f32; PB] =
                            std::array::from_fn(|j| row.add((ox + j.min(pb - 1)) * p.stride[1]));
                        let mut kx = 0;
                        while kx < kw {
                            let (wv, xv): ([V; M], [V; PB]) = if kx < full {
                                (
                                    std::array::from_fn(|mi| V::load(wr.add(mi * taps + kx))),
                                    std::array::from_fn(|j| V::load(win[j].add(kx))),
                                )
                            } else {
                                (
                                    std::array::from_fn(|mi| V::load_tail(wr.add(mi * taps + kx), tail)),
                                    std::array::from_fn(|j| V::load_tail(win[j].add(kx), tail)),
                                )
                            };
                            for (a, wv) in acc.iter_mut().zip(wv) {
                                for (s, xv) in a.iter_mut().zip(xv) {
                                    *s = V::fma(wv, xv, *s);
                                }
                            }
                            kx += V::N;
                        }
                    }
                }
                for (mi, a) in acc.iter().enumerate() {
                    for (j, &s) in a.iter().enumerate().take(pb) {
                        *out.get_unchecked_mut(mi * np + oy * p.ow + ox + j) = s.sum();
                    }
                }
                ox += pb;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Which convolutions take the kernel (its results are checked against the reference,
    /// with padding, tails and partial blocks, in `fused_conv`'s every-ISA test).
    #[test]
    fn long_contiguous_rows_take_it_on_avx2_and_avx512_only() {
        // The speech frontend's DFT: [1, 1, 1, 1520] -> [1, 514, 1, 8].
        let dft = Conv2d {
            n: 1,
            c: 1,
            h: 1,
            w: 1520,
            m: 514,
            group: 1,
            kh: 1,
            kw: 400,
            stride: [160, 160],
            dilation: [1, 1],
            pad: [0, 0],
            oh: 1,
            ow: 8,
        };
        for isa in [Isa::Avx2, Isa::Avx512] {
            assert_eq!(takes(&dft, isa), cfg!(target_arch = "x86_64"), "{isa}");
        }
        assert!(!takes(&dft, Isa::Portable) && !takes(&dft, Isa::Neon));
        assert_eq!(scratch_floats(&dft), 0, "reads the input in place");
        // Short rows, groups or dilated taps: other kernels.
        assert!(!takes(&Conv2d { kw: MIN_KW - 1, ow: 9, ..dft }, Isa::Avx2));
        assert!(!takes(&Conv2d { c: 2, group: 2, m: 514, ..dft }, Isa::Avx2));
        assert!(!takes(&Conv2d { dilation: [1, 2], ow: 6, ..dft }, Isa::Avx2));
        // Padding: a zero-bordered copy of each plane.
        let padded = Conv2d { pad: [0, 3], ow: 9, ..dft };
        assert_eq!(scratch_floats(&padded), (8 * 160 + 400));
        assert!(padded.scratch_floats() >= scratch_floats(&padded));
    }
}
