//! INT8 dense convolutions of stride 1 or 2 as an implicit GEMM on AVX-512 VNNI, or on AVX2
//! with 7-bit weights: no im2col.
//!
//! The f32 implicit GEMM's geometry (`conv_implicit`: a bordered copy of X, split into four
//! phase planes at stride 2, one constant offset per tap from an output's grid position)
//! with the quantized input laid out for `vpdpbusd`, which sums four u8 x s8 products into
//! each int32 lane: X is quantized to uint8 straight into *channel quads*, plane `q` holding
//! channels `4q .. 4q+3` interleaved (`[hp][wp][4]` bytes; channels past the last one are
//! the zero point, and so is the border). Sixteen grid positions of one tap and one quad are
//! then 64 contiguous bytes, exactly the B vector the VNNI kernel multiplies, read in place.
//! The weights are prepared once in the same K order (quad, tap, channel in the quad).
//!
//! The activations are the unsigned operand and the weights the signed one, so unlike
//! `conv_i8` nothing is shifted and there are no column sums: with `xq` the uint8 input and
//! `zero` its zero point, `sum w * (xq - zero) = acc - zero * rowsum(w)`, one constant per
//! output channel, added with the bias before the dequantization.
//!
//! Without VNNI (AVX2 CPUs), the same layout feeds `vpmaddubsw` (u8 x s8 pairs into int16)
//! and `vpmaddwd` (pairs into int32): exact where the weights have 7 bits (|w| <= 63, so a
//! pair is at most 2 * 255 * 63 < 2^15), which INT8 builds for AVX2 CPUs give them
//! (`quantize_int8::default_weight_bits`), i.e. where `QConv` picks `I8Kind::Avx2U7`.
//!
//! Replaces, on VNNI CPUs, `conv_i8`'s im2col packing of ResNet-50's 3x3 convolutions (and
//! of the 7x7 stem): that packing was 28% of an INT8 ResNet-50 run, more than half the
//! time of the 3x3 layers at 56x56, which ran no faster than in f32.
//!
//! Tasks are the f32 path's: up to [`gemm::MC`] output channels by a block of grid columns,
//! multiplied into an int32 buffer on the task's stack, whose valid columns are then
//! dequantized into Y and given FusedConv's float epilogue while they are in cache.

use super::conv::Conv2d;
#[cfg(target_arch = "x86_64")]
use super::conv_i8::{QuantConv, quantize_u8};
use super::conv_implicit::{fits, grid, phases};
#[cfg(target_arch = "x86_64")]
use super::conv_implicit::{grid_to_y, row_span, valid_runs};
use super::gemm;
use super::gemm_i8::{I8Kernel, I8Kind};
#[cfg(target_arch = "x86_64")]
use super::{Exec, conv_implicit::Taps, epilogue::Epilogue, gemm::SyncPtr};

/// Rows of the micro-kernel's tile (output channels).
#[cfg(target_arch = "x86_64")]
const MR: usize = 8;
/// Columns of the micro-kernel's tile (grid positions).
const NR: usize = 32;

/// Whether [`conv_i8_implicit`] runs `p` with `kernel` (the kernel `QConv` would otherwise
/// run on the packed im2col): the VNNI one, or the AVX2 one for 7-bit weights, on the f32
/// implicit GEMM's geometry.
pub fn takes(p: &Conv2d, kernel: I8Kernel) -> bool {
    cfg!(target_arch = "x86_64") && matches!(kernel.kind, I8Kind::Vnni512 | I8Kind::Avx2U7) && !opted_out() && fits(p)
}

/// `EDGERT_CONV_I8_IMPLICIT=0`: run these convolutions on `conv_i8`'s im2col packing
/// instead, to compare the two or to work around a fault. Read once (reading the
/// environment allocates).
pub fn opted_out() -> bool {
    static OFF: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *OFF.get_or_init(|| std::env::var("EDGERT_CONV_I8_IMPLICIT").is_ok_and(|v| v.trim() == "0"))
}

/// Channel quads of one group.
fn quads(p: &Conv2d) -> usize {
    (p.c / p.group).div_ceil(4)
}

/// Grid positions of one group's quantized input (every quad and phase) plus the slack the
/// last panel's reads run into (as `conv_implicit`'s `padded_len`).
fn padded_positions(p: &Conv2d) -> usize {
    let (hp, wp) = grid(p);
    quads(p) * phases(p) * hp * wp + (p.kw - 1) * p.dilation[1] / p.stride[1] + NR
}

/// Scratch bytes [`conv_i8_implicit`] needs where its geometry fits (else 0): one group's
/// quantized input, 4 bytes per position.
pub fn scratch_bytes(p: &Conv2d) -> usize {
    if fits(p) { padded_positions(p) * 4 } else { 0 }
}

/// The weights in the implicit GEMM's K order, prepared once.
#[derive(Clone, Debug)]
pub struct ImplicitWeights {
    /// Bytes of one output channel's row: quads x taps x 4.
    pub k_row: usize,
    /// `m` rows: byte `(q * taps + t) * 4 + i` is the weight of channel `4q + i` (0 past the
    /// group's channels) at tap `t`.
    pub rows: Vec<i8>,
    /// `sum w` of each row.
    pub row_sums: Vec<i32>,
}

impl ImplicitWeights {
    /// Reorders `w` (`[m, c/group, kh, kw]` int8).
    pub fn new(p: &Conv2d, w: &[i8]) -> ImplicitWeights {
        let (cg, taps, nq) = (p.c / p.group, p.kh * p.kw, quads(p));
        let k_row = nq * taps * 4;
        let mut rows = vec![0i8; p.m * k_row];
        let mut row_sums = Vec::with_capacity(p.m);
        for (m, src) in w.chunks_exact(cg * taps).take(p.m).enumerate() {
            let row = &mut rows[m * k_row..(m + 1) * k_row];
            for ci in 0..cg {
                for t in 0..taps {
                    row[((ci / 4) * taps + t) * 4 + ci % 4] = src[ci * taps + t];
                }
            }
            row_sums.push(src.iter().map(|&v| v as i32).sum());
        }
        ImplicitWeights { k_row, rows, row_sums }
    }
}

/// Channel quads per K block: about 1 KiB of each weight row (as the f32 path's 256 floats),
/// so a row block's weights stay in L2 and a panel's input rows in L1.
#[cfg(target_arch = "x86_64")]
fn quads_per_block(taps: usize) -> usize {
    (256 / taps).max(1)
}

/// Runs the convolution: `x` `[n, c, h, w]` f32, `y` `[n, m, oh, ow]` f32; `ep` applies
/// residual and activation (its bias must be `None`: the bias is `q.bias`). `scratch` holds
/// [`scratch_bytes`] bytes. Allocates nothing. `kernel` is one [`takes`] accepts: with
/// [`I8Kind::Avx2U7`] every weight must be within [-63, 63].
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
pub fn conv_i8_implicit(
    exec: &Exec,
    kernel: I8Kernel,
    p: &Conv2d,
    x: &[f32],
    q: &QuantConv<ImplicitWeights>,
    ep: &Epilogue,
    y: &mut [f32],
    scratch: &mut [u8],
) {
    let vnni = kernel.kind == I8Kind::Vnni512;
    debug_assert!(fits(p) && (if vnni { super::gemm_i8::vnni_supported() } else { is_x86_feature_detected!("avx2") }));
    debug_assert!(vnni || kernel.kind == I8Kind::Avx2U7 && q.weights.rows.iter().all(|&w| (-63..=63).contains(&w)));
    debug_assert!(ep.bias.is_none());
    let (cg, mg, np) = (p.c / p.group, p.m / p.group, p.positions());
    let (hp, wp) = grid(p);
    let taps = Taps::of(p);
    let ng = p.oh * wp;
    let panels = ng.div_ceil(NR);
    let padded = &mut scratch[..padded_positions(p) * 4];
    let rb = gemm::MC / MR * MR;
    let row_blocks = mg.div_ceil(rb);
    let col_blocks = gemm::column_blocks(panels, NR, exec.threads().div_ceil(row_blocks));
    let (nq, qpb) = (quads(p), quads_per_block(taps.count));
    let wts = q.weights;
    let zero = q.x_zero;
    for ni in 0..p.n {
        for g in 0..p.group {
            let x_img = &x[(ni * p.c + g * cg) * p.h * p.w..][..cg * p.h * p.w];
            fill_quads(exec, vnni, p, x_img, q.x_scale, zero, hp, wp, padded);
            let padded: &[u8] = padded;
            let row0 = g * mg;
            let sub = ep.for_group(ni, row0, mg, np);
            let y_img = SyncPtr(y[(ni * p.m + row0) * np..][..mg * np].as_mut_ptr());
            let task = |t: usize| {
                let (bi, bj) = (t / col_blocks, t % col_blocks);
                let rows = bi * rb..mg.min((bi + 1) * rb);
                let (p0, p1) = (bj * panels / col_blocks, (bj + 1) * panels / col_blocks);
                // The task's block of the grid output (as in `conv_implicit`), left
                // uninitialized: the kernel writes every value before it is read.
                let mut tile_buf = std::mem::MaybeUninit::<[i32; gemm::MC * gemm::NC]>::uninit();
                let ldt = (p1 - p0) * NR;
                debug_assert!(ldt <= gemm::NC && rb <= gemm::MC);
                let tb = tile_buf.as_mut_ptr() as *mut i32;
                let mut q0 = 0;
                while q0 < nq {
                    let count = qpb.min(nq - q0);
                    let kofs = q0 * taps.count * 4;
                    let b_block = &padded[q0 * taps.plane * 4..];
                    for pi in p0..p1 {
                        let j0 = pi * NR;
                        let mut r0 = rows.start;
                        while r0 < rows.end {
                            let h = MR.min(rows.end - r0);
                            let mut rp = [std::ptr::null::<i8>(); MR];
                            for (i, r) in rp.iter_mut().enumerate() {
                                // Rows past the end repeat the last row: computed into the
                                // buffer's spare rows, never read.
                                *r = wts.rows[(row0 + r0 + i.min(h - 1)) * wts.k_row + kofs..].as_ptr();
                            }
                            let (b, c) =
                                (b_block[j0 * 4..].as_ptr(), tb.wrapping_add((r0 - rows.start) * ldt + j0 - p0 * NR));
                            // SAFETY: the CPU has AVX-512 VNNI or AVX2, as `kernel` says
                            // (`takes`), and with AVX2 the weights have 7 bits; the tile lies
                            // in the task's buffer (at most `rb` rows, whole tiles, by `ldt`
                            // columns); B reads stay inside `padded`, whose slack covers the
                            // last panel and the widest tap; each A row holds
                            // `count * taps * 4` bytes from `kofs`.
                            unsafe {
                                if vnni {
                                    x86::kernel_vnni_8x32(count, &taps, rp.as_ptr(), b, c, ldt, q0 > 0)
                                } else {
                                    x86::kernel_avx2_8x32(count, &taps, rp.as_ptr(), b, c, ldt, q0 > 0)
                                }
                            };
                            r0 += MR;
                        }
                    }
                    q0 += count;
                }
                let (j0, j1) = (p0 * NR, (p1 * NR).min(ng));
                let (o0, o1) = (grid_to_y(p, wp, j0), grid_to_y(p, wp, j1));
                // SAFETY: this task alone writes Y's rows `rows`, columns o0..o1.
                let yg = unsafe { std::slice::from_raw_parts_mut(y_img.get(), mg * np) };
                // SAFETY: every tile of the task's rows and panels was written above.
                let tile = unsafe { std::slice::from_raw_parts(tb, rows.len() * ldt) };
                for r in rows.clone() {
                    let m = row0 + r;
                    // The row's constant: the bias less the zero point's share.
                    let row_add = q.bias.map_or(0, |b| b[m]).wrapping_sub(zero.wrapping_mul(wts.row_sums[m]));
                    let src = &tile[(r - rows.start) * ldt..(r - rows.start + 1) * ldt];
                    let dst = &mut yg[r * np..(r + 1) * np];
                    valid_runs(p, wp, j0, j1, |j, o, len| {
                        let (acc, out) = (&src[j - j0..j - j0 + len], &mut dst[o..o + len]);
                        // SAFETY: the CPU has AVX-512 with VNNI, else AVX2 (`takes`).
                        unsafe {
                            if vnni {
                                dequantize_avx512(acc, row_add, q.mult[m], out)
                            } else {
                                dequantize_avx2(acc, row_add, q.mult[m], out)
                            }
                        }
                    });
                }
                if o1 > o0 {
                    sub.apply_tile(&mut yg[rows.start * np + o0..], np, rows.start, rows.len(), o0, o1 - o0);
                }
            };
            crate::cpu::pool::run_tasks(exec.pool, row_blocks * col_blocks, &task);
        }
    }
}

/// `out[i] = (acc[i] + row_add) * mult` (wrapping int32, as the accumulators are): the one
/// body of [`dequantize_avx512`] and [`dequantize_avx2`], inlined into each so that it is
/// vectorized for that ISA.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn dequantize_row(acc: &[i32], row_add: i32, mult: f32, out: &mut [f32]) {
    for (o, &a) in out.iter_mut().zip(acc) {
        *o = a.wrapping_add(row_add) as f32 * mult;
    }
}

/// [`dequantize_row`] compiled for AVX-512.
///
/// # Safety
/// The CPU must have AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn dequantize_avx512(acc: &[i32], row_add: i32, mult: f32, out: &mut [f32]) {
    dequantize_row(acc, row_add, mult, out)
}

/// [`dequantize_row`] compiled for AVX2.
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn dequantize_avx2(acc: &[i32], row_add: i32, mult: f32, out: &mut [f32]) {
    dequantize_row(acc, row_add, mult, out)
}

/// Quantizes the `cg` planes of `x` into channel quads with their zero-point border
/// (`hp x wp` positions of 4 bytes each; at stride 2, four phase planes per quad), and
/// fills the slack after the last one. One task per block of (quad, phase) planes.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
fn fill_quads(
    exec: &Exec,
    avx512: bool,
    p: &Conv2d,
    x: &[f32],
    scale: f32,
    zero: i32,
    hp: usize,
    wp: usize,
    dst: &mut [u8],
) {
    let cg = p.c / p.group;
    let [sy, sx] = p.stride;
    let (plane_bytes, per_quad) = (hp * wp * 4, phases(p));
    let count = quads(p) * per_quad;
    let (planes, slack) = dst.split_at_mut(count * plane_bytes);
    slack.fill(zero as u8);
    let per_task = count.div_ceil(2 * exec.threads()).clamp(1, 8);
    let d_ptr = SyncPtr(planes.as_mut_ptr());
    let task = |t: usize| {
        let qs = t * per_task..count.min((t + 1) * per_task);
        // SAFETY: task t alone writes planes `qs`.
        let out =
            unsafe { std::slice::from_raw_parts_mut(d_ptr.get().add(qs.start * plane_bytes), qs.len() * plane_bytes) };
        for (qi, dq) in qs.zip(out.chunks_exact_mut(plane_bytes)) {
            let (quad, phase) = (qi / per_quad, qi % per_quad);
            // The quad's channel planes (fewer than 4 in a last, partial quad).
            let chans = (cg - 4 * quad).min(4);
            let src: [&[f32]; 4] = std::array::from_fn(|i| {
                let ci = 4 * quad + i.min(chans - 1);
                &x[ci * p.h * p.w..(ci + 1) * p.h * p.w]
            });
            let (py, px) = (phase / sx, phase % sx);
            let (left, ix0, n) = row_span(p, px, wp);
            for (qy, row) in dq.chunks_exact_mut(wp * 4).enumerate() {
                let iy = (qy * sy + py).wrapping_sub(p.pad[0]);
                if iy >= p.h || n == 0 {
                    row.fill(zero as u8);
                    continue;
                }
                row[..left * 4].fill(zero as u8);
                let lines: [&[f32]; 4] = std::array::from_fn(|i| &src[i][iy * p.w + ix0..(iy + 1) * p.w]);
                let out = &mut row[left * 4..(left + n) * 4];
                // SAFETY: the CPU has AVX-512 where `avx512`, else AVX2 (`takes`); each line
                // holds the `(n-1)*sx + 1` floats the row reads, and `out` `4 * n` bytes.
                unsafe {
                    if avx512 {
                        quantize_quad_row(&lines, chans, sx, n, scale, zero, out)
                    } else {
                        quantize_quad_row_avx2(&lines, chans, sx, n, scale, zero, out)
                    }
                };
                row[(left + n) * 4..].fill(zero as u8);
            }
        }
    };
    crate::cpu::pool::run_tasks(exec.pool, count.div_ceil(per_task), &task);
}

/// One row of a quad plane: for `j < n`, bytes `4j .. 4j+4` are channels 0..3 of input
/// column `j * sx` of `lines` quantized to uint8 (`conv_i8::quantize_u8`, exactly: NaN to the
/// zero point, round half to even, saturating), channels from `chans` on the zero point.
/// Sixteen columns at a time: masked loads (at stride 2 two, and a permute for the even
/// elements), the quantization in zmm, and a 4 x 16 byte transpose.
///
/// # Safety
/// The CPU must have AVX-512F; `sx` is 1 or 2; `lines[i]` has `(n-1)*sx + 1` floats for
/// `i < chans`; `out` has `4 * n` bytes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn quantize_quad_row(
    lines: &[&[f32]; 4],
    chans: usize,
    sx: usize,
    n: usize,
    scale: f32,
    zero: i32,
    out: &mut [u8],
) {
    use std::arch::x86_64::*;
    debug_assert!(sx == 1 || sx == 2);
    debug_assert!(out.len() >= 4 * n && lines.iter().take(chans).all(|l| n == 0 || l.len() > (n - 1) * sx));
    unsafe {
        let vs = _mm512_set1_ps(scale);
        let (lo, hi) = (_mm512_set1_ps(-512.0), _mm512_set1_ps(512.0));
        let (vz, v0, v255) = (_mm512_set1_epi32(zero), _mm512_setzero_si512(), _mm512_set1_epi32(255));
        let evens = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
        let zero_bytes = _mm_set1_epi8(zero as u8 as i8);
        let mask = |k: usize| -> __mmask16 { if k >= 16 { 0xffff } else { ((1u32 << k) - 1) as __mmask16 } };
        let mut j0 = 0;
        while j0 < n {
            let cnt = (n - j0).min(16);
            let mut q = [zero_bytes; 4];
            for (i, qi) in q.iter_mut().enumerate().take(chans) {
                // Floats the block reads, from element j0 * sx of the line; masked-off
                // elements are not accessed (AVX-512 masked loads do not fault).
                let need = (cnt - 1) * sx + 1;
                let base = lines[i].as_ptr().wrapping_add(j0 * sx);
                let v = if sx == 1 {
                    _mm512_maskz_loadu_ps(mask(need), base)
                } else {
                    let a = _mm512_maskz_loadu_ps(mask(need), base);
                    let b = _mm512_maskz_loadu_ps(mask(need.saturating_sub(16)), base.wrapping_add(16));
                    _mm512_permutex2var_ps(a, evens, b)
                };
                let f = _mm512_div_ps(v, vs);
                let f = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask::<_CMP_ORD_Q>(f, f), f); // NaN -> 0
                let f = _mm512_min_ps(_mm512_max_ps(f, lo), hi);
                let r = _mm512_add_epi32(_mm512_cvtps_epi32(f), vz);
                let r = _mm512_min_epi32(_mm512_max_epi32(r, v0), v255);
                *qi = _mm512_cvtepi32_epi8(r);
            }
            let (a_lo, a_hi) = (_mm_unpacklo_epi8(q[0], q[1]), _mm_unpackhi_epi8(q[0], q[1]));
            let (b_lo, b_hi) = (_mm_unpacklo_epi8(q[2], q[3]), _mm_unpackhi_epi8(q[2], q[3]));
            let quads = [
                _mm_unpacklo_epi16(a_lo, b_lo),
                _mm_unpackhi_epi16(a_lo, b_lo),
                _mm_unpacklo_epi16(a_hi, b_hi),
                _mm_unpackhi_epi16(a_hi, b_hi),
            ];
            if cnt == 16 {
                let d = out.as_mut_ptr().add(4 * j0) as *mut __m128i;
                for (c, &v) in quads.iter().enumerate() {
                    _mm_storeu_si128(d.add(c), v);
                }
            } else {
                let mut tmp = [0u8; 64];
                for (c, &v) in quads.iter().enumerate() {
                    _mm_storeu_si128(tmp.as_mut_ptr().add(16 * c) as *mut __m128i, v);
                }
                out[4 * j0..4 * (j0 + cnt)].copy_from_slice(&tmp[..4 * cnt]);
            }
            j0 += 16;
        }
    }
}

/// [`quantize_quad_row`] for AVX2: eight columns at a time where the lines hold all the
/// floats they read (at stride 2, 16), the rest with `quantize_u8`; the four channels'
/// bytes are shifted into each column's int32 lane.
///
/// # Safety
/// The CPU must have AVX2; otherwise as [`quantize_quad_row`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn quantize_quad_row_avx2(
    lines: &[&[f32]; 4],
    chans: usize,
    sx: usize,
    n: usize,
    scale: f32,
    zero: i32,
    out: &mut [u8],
) {
    use std::arch::x86_64::*;
    debug_assert!(sx == 1 || sx == 2);
    debug_assert!(out.len() >= 4 * n && lines.iter().take(chans).all(|l| n == 0 || l.len() > (n - 1) * sx));
    let len = lines[..chans].iter().map(|l| l.len()).min().unwrap_or(0);
    let mut j0 = 0;
    // SAFETY: the vector loads read `8 * sx` floats from `j0 * sx`, within every line
    // (`len`); the stores write 32 bytes from `4 * j0`, within `out` (`j0 + 8 <= n`).
    unsafe {
        let vs = _mm256_set1_ps(scale);
        let (lo, hi) = (_mm256_set1_ps(-512.0), _mm256_set1_ps(512.0));
        let (vz, v0, v255) = (_mm256_set1_epi32(zero), _mm256_setzero_si256(), _mm256_set1_epi32(255));
        let evens = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
        while j0 + 8 <= n && (j0 + 8) * sx <= len {
            let mut packed = _mm256_set1_epi32(0);
            for (i, line) in lines.iter().enumerate() {
                let r = if i < chans {
                    let base = line.as_ptr().add(j0 * sx);
                    let v = if sx == 1 {
                        _mm256_loadu_ps(base)
                    } else {
                        // The even elements of 16: each half's evens, then the halves joined.
                        let a = _mm256_permutevar8x32_ps(_mm256_loadu_ps(base), evens);
                        let b = _mm256_permutevar8x32_ps(_mm256_loadu_ps(base.add(8)), evens);
                        _mm256_permute2f128_ps::<0x20>(a, b)
                    };
                    let f = _mm256_div_ps(v, vs);
                    let f = _mm256_and_ps(f, _mm256_cmp_ps::<_CMP_ORD_Q>(f, f)); // NaN -> 0
                    let f = _mm256_min_ps(_mm256_max_ps(f, lo), hi);
                    let r = _mm256_add_epi32(_mm256_cvtps_epi32(f), vz);
                    _mm256_min_epi32(_mm256_max_epi32(r, v0), v255)
                } else {
                    vz
                };
                packed = _mm256_or_si256(packed, _mm256_sllv_epi32(r, _mm256_set1_epi32(8 * i as i32)));
            }
            _mm256_storeu_si256(out.as_mut_ptr().add(4 * j0) as *mut __m256i, packed);
            j0 += 8;
        }
    }
    for j in j0..n {
        for i in 0..4 {
            out[4 * j + i] = if i < chans { quantize_u8(lines[i][j * sx], scale, zero) } else { zero as u8 };
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::Taps;
    use std::arch::x86_64::*;

    /// AVX-512 VNNI 8x32 tile over `quads` channel quads: per quad and tap, two 64-byte B
    /// loads (32 grid positions x 4 channels, at the tap's offset), and per row one
    /// broadcast of the 4 weight bytes and two `vpdpbusd` (u8 activations x s8 weights).
    ///
    /// # Safety
    /// The CPU must have AVX-512F and VNNI. `a` points to 8 row pointers with
    /// `quads * taps.count * 4` bytes each; B reads `b + (q * plane + offset[t]) * 4 ..` for
    /// 128 bytes; `c` is an 8 x 32 int32 tile with row stride `ldc`.
    #[target_feature(enable = "avx512f,avx512vnni")]
    pub unsafe fn kernel_vnni_8x32(
        quads: usize,
        taps: &Taps,
        a: *const *const i8,
        b: *const u8,
        c: *mut i32,
        ldc: usize,
        accumulate: bool,
    ) {
        unsafe {
            if taps.count == 9 {
                kernel_t::<9>(quads, taps, a, b, c, ldc, accumulate)
            } else {
                kernel_t::<0>(quads, taps, a, b, c, ldc, accumulate)
            }
        }
    }

    /// AVX2 8x32 tile, as [`kernel_vnni_8x32`], in four 4x16 blocks: per quad and tap, two
    /// 32-byte B loads, and per row one broadcast of the 4 weight bytes, two `vpmaddubsw`
    /// (u8 activations x s8 weights, pairs into int16) and two `vpmaddwd` by ones (into
    /// int32).
    ///
    /// # Safety
    /// The CPU must have AVX2, and every weight must be within [-63, 63] (no int16
    /// saturation); otherwise as [`kernel_vnni_8x32`].
    #[target_feature(enable = "avx2")]
    pub unsafe fn kernel_avx2_8x32(
        quads: usize,
        taps: &Taps,
        a: *const *const i8,
        b: *const u8,
        c: *mut i32,
        ldc: usize,
        accumulate: bool,
    ) {
        unsafe {
            for rh in 0..2 {
                for ch in 0..2 {
                    let (a, b, c) = (a.add(4 * rh), b.add(64 * ch), c.add(4 * rh * ldc + 16 * ch));
                    if taps.count == 9 {
                        avx2_4x16::<9>(quads, taps, a, b, c, ldc, accumulate)
                    } else {
                        avx2_4x16::<0>(quads, taps, a, b, c, ldc, accumulate)
                    }
                }
            }
        }
    }

    #[target_feature(enable = "avx2")]
    unsafe fn avx2_4x16<const NT: usize>(
        quads: usize,
        taps: &Taps,
        a: *const *const i8,
        b: *const u8,
        c: *mut i32,
        ldc: usize,
        accumulate: bool,
    ) {
        unsafe {
            let r: [*const i8; 4] = std::array::from_fn(|i| *a.add(i));
            let ones = _mm256_set1_epi16(1);
            let mut acc = [[_mm256_setzero_si256(); 2]; 4];
            let offsets = &taps.offset[..if NT > 0 { NT } else { taps.count }];
            let mut kk = 0;
            for qi in 0..quads {
                let bq = b.add(qi * taps.plane * 4);
                for &off in offsets {
                    let bp = bq.add(off * 4);
                    let b0 = _mm256_loadu_si256(bp as *const __m256i);
                    let b1 = _mm256_loadu_si256(bp.add(32) as *const __m256i);
                    for i in 0..4 {
                        let av = _mm256_set1_epi32((r[i].add(4 * kk) as *const i32).read_unaligned());
                        let p0 = _mm256_madd_epi16(_mm256_maddubs_epi16(b0, av), ones);
                        let p1 = _mm256_madd_epi16(_mm256_maddubs_epi16(b1, av), ones);
                        acc[i][0] = _mm256_add_epi32(acc[i][0], p0);
                        acc[i][1] = _mm256_add_epi32(acc[i][1], p1);
                    }
                    kk += 1;
                }
            }
            for (i, row) in acc.iter().enumerate() {
                for (h, &v) in row.iter().enumerate() {
                    let cp = c.add(i * ldc + 8 * h) as *mut __m256i;
                    let v = if accumulate { _mm256_add_epi32(_mm256_loadu_si256(cp), v) } else { v };
                    _mm256_storeu_si256(cp, v);
                }
            }
        }
    }

    #[target_feature(enable = "avx512f,avx512vnni")]
    unsafe fn kernel_t<const NT: usize>(
        quads: usize,
        taps: &Taps,
        a: *const *const i8,
        b: *const u8,
        c: *mut i32,
        ldc: usize,
        accumulate: bool,
    ) {
        unsafe {
            let r: [*const i8; 8] = std::array::from_fn(|i| *a.add(i));
            let mut acc = [[_mm512_setzero_si512(); 2]; 8];
            let offsets = &taps.offset[..if NT > 0 { NT } else { taps.count }];
            let mut kk = 0;
            for qi in 0..quads {
                let bq = b.add(qi * taps.plane * 4);
                for &off in offsets {
                    let bp = bq.add(off * 4);
                    let b0 = _mm512_loadu_si512(bp as *const __m512i);
                    let b1 = _mm512_loadu_si512(bp.add(64) as *const __m512i);
                    for i in 0..8 {
                        let av = _mm512_set1_epi32((r[i].add(4 * kk) as *const i32).read_unaligned());
                        acc[i][0] = _mm512_dpbusd_epi32(acc[i][0], b0, av);
                        acc[i][1] = _mm512_dpbusd_epi32(acc[i][1], b1, av);
                    }
                    kk += 1;
                }
            }
            for (i, row) in acc.iter().enumerate() {
                let cp = c.add(i * ldc) as *mut __m512i;
                let cp1 = c.add(i * ldc + 16) as *mut __m512i;
                if accumulate {
                    _mm512_storeu_si512(cp, _mm512_add_epi32(_mm512_loadu_si512(cp), row[0]));
                    _mm512_storeu_si512(cp1, _mm512_add_epi32(_mm512_loadu_si512(cp1), row[1]));
                } else {
                    _mm512_storeu_si512(cp, row[0]);
                    _mm512_storeu_si512(cp1, row[1]);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::conv_i8::quantize_u8;

    fn conv(c: usize, hw: usize, m: usize, k: usize, stride: usize, pad: usize) -> Conv2d {
        let o = (hw + 2 * pad - k) / stride + 1;
        Conv2d {
            n: 1,
            c,
            h: hw,
            w: hw,
            m,
            group: 1,
            kh: k,
            kw: k,
            stride: [stride; 2],
            dilation: [1, 1],
            pad: [pad; 2],
            oh: o,
            ow: o,
        }
    }

    /// ResNet's 3x3 convolutions and its stem take the implicit GEMM with the VNNI kernel and
    /// with the AVX2 one for 7-bit weights; other kernels, 1x1 and depthwise convolutions do
    /// not. (Its values are checked against FusedConv by
    /// `qconv`'s `qconv_matches_fused_conv_on_dequantized_values`.)
    #[test]
    fn vnni_and_avx2_u7_take_the_f32_implicit_geometry() {
        let vnni = I8Kernel::of(I8Kind::Vnni512);
        let x86 = cfg!(target_arch = "x86_64");
        for p in [
            conv(64, 56, 64, 3, 1, 1),
            conv(512, 7, 512, 3, 1, 1),
            conv(128, 56, 128, 3, 2, 1),
            conv(3, 224, 64, 7, 2, 3),
        ] {
            assert_eq!(takes(&p, vnni), x86 && !opted_out(), "{p:?}");
            assert_eq!(takes(&p, I8Kernel::of(I8Kind::Avx2U7)), x86 && !opted_out(), "{p:?}");
            assert!(!takes(&p, I8Kernel::of(I8Kind::Avx2)) && !takes(&p, I8Kernel::of(I8Kind::Portable)));
            // One byte per channel (rounded up to quads), phase and padded position.
            let (hp, wp) = grid(&p);
            assert!(scratch_bytes(&p) >= p.c.div_ceil(4) * 4 * phases(&p) * hp * wp);
        }
        assert!(!takes(&conv(64, 56, 64, 1, 1, 0), vnni), "1x1");
        let mut dw = conv(64, 56, 64, 3, 1, 1);
        dw.group = 64;
        assert!(!takes(&dw, vnni), "depthwise");
    }

    /// The weights' K order: quad, tap, channel in the quad, zero past the last channel.
    #[test]
    fn weights_are_reordered_by_quad_then_tap() {
        let p = conv(5, 8, 2, 3, 1, 1);
        let w: Vec<i8> = (0..2 * 5 * 9).map(|i| (i % 251) as i8).collect();
        let iw = ImplicitWeights::new(&p, &w);
        assert_eq!(iw.k_row, 2 * 9 * 4);
        for m in 0..2 {
            for ci in 0..8 {
                for t in 0..9 {
                    let got = iw.rows[m * iw.k_row + ((ci / 4) * 9 + t) * 4 + ci % 4];
                    let want = if ci < 5 { w[(m * 5 + ci) * 9 + t] } else { 0 };
                    assert_eq!(got, want, "m {m} channel {ci} tap {t}");
                }
            }
            assert_eq!(iw.row_sums[m], w[m * 45..(m + 1) * 45].iter().map(|&v| v as i32).sum::<i32>());
        }
    }

    /// A quad row equals `quantize_u8` value by value at strides 1 and 2, for every length
    /// up to three 16-column blocks and partial quads, with ties, NaN and saturation, in its
    /// AVX-512 and its AVX2 form.
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn quad_rows_quantize_exactly() {
        let avx512 = is_x86_feature_detected!("avx512f");
        if !avx512 {
            println!("skipped: quad rows, AVX-512 form: this CPU lacks AVX-512");
        }
        if !is_x86_feature_detected!("avx2") {
            println!("skipped: quad rows, AVX2 form: this CPU lacks AVX2");
            return;
        }
        let mut s = 0x9e37_79b9u32;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            s
        };
        let lines: Vec<Vec<f32>> = (0..4)
            .map(|_| {
                (0..100)
                    .map(|i| match i % 11 {
                        0 => f32::NAN,
                        1 => 1e9,
                        2 => -1e9,
                        3 => ((next() % 200) as f32 - 100.0) * 0.5 * 0.25, // exact ties at scale 0.25
                        _ => (next() as f32 / u32::MAX as f32 - 0.5) * 80.0,
                    })
                    .collect()
            })
            .collect();
        for (form, (scale, zero)) in [false, true]
            .into_iter()
            .filter(|&f| !f || avx512)
            .flat_map(|f| [(0.25f32, 128), (0.3, 0), (0.07, 255), (1.0, 77)].map(|v| (f, v)))
        {
            for sx in [1, 2] {
                for chans in 1..=4 {
                    for n in 0..=48usize {
                        let refs: [&[f32]; 4] =
                            std::array::from_fn(|i| &lines[i.min(chans - 1)][..(n.max(1) - 1) * sx + 1]);
                        let mut out = vec![0xa5u8; 4 * n + 4];
                        // SAFETY: AVX-512F (for that form) and AVX2 checked above; lines and out
                        // are as large as required.
                        unsafe {
                            if form {
                                quantize_quad_row(&refs, chans, sx, n, scale, zero, &mut out[..4 * n])
                            } else {
                                quantize_quad_row_avx2(&refs, chans, sx, n, scale, zero, &mut out[..4 * n])
                            }
                        };
                        for j in 0..n {
                            for i in 0..4 {
                                let want =
                                    if i < chans { quantize_u8(lines[i][j * sx], scale, zero) } else { zero as u8 };
                                assert_eq!(
                                    out[4 * j + i],
                                    want,
                                    "avx512 {form} scale {scale} zero {zero} stride {sx} chans {chans} n {n} col {j} ch {i}"
                                );
                            }
                        }
                        assert_eq!(&out[4 * n..], &[0xa5; 4], "wrote past the row");
                    }
                }
            }
        }
    }
}
