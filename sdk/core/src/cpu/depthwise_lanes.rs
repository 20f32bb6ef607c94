//! Depthwise convolution with channels in the vector lanes (AVX-512), for small planes.
//!
//! The per-plane kernels in [`super::conv`] put output columns in the lanes, so a plane of
//! 7 columns fills 7 of 16 lanes and every tap pays a masked load. Here one task takes 16
//! channels of one image and transposes them into a zero-bordered `[row][col][16]` block in
//! scratch (16x16 register transposes), so each output position is one zmm of 16 channels:
//! a tap is one weight vector times one input vector, with no masks and every lane used,
//! whatever the plane's width. A row of up to [`OB`] outputs accumulates in registers
//! (each weight load feeds `OB` FMAs); the results go back to the `[c][oh][ow]` planes
//! through the same transpose, and the epilogue runs on the group's rows. This is the
//! channel-blocked (NCHWc) layout onnxruntime's MLAS uses, confined to one node: the
//! transposes in and out are the price of keeping the graph in NCHW.
//!
//! Sums start at the bias and add taps in the reference's order, in f32.

use super::conv::Conv2d;
use super::isa::Isa;
#[cfg(target_arch = "x86_64")]
use super::{Exec, epilogue::Epilogue, gemm::SyncPtr};

/// Channels per task: one zmm of f32.
pub const LANES: usize = 16;
/// Output positions of one row accumulated at once.
#[cfg(target_arch = "x86_64")]
pub const OB: usize = 8;
/// Output width below which [`takes`] chooses this kernel: planes whose rows fill few of
/// the per-plane kernel's 16 lanes (MediaPipe's 7x7, 14x14 and 28x28 stages; measured,
/// see the `depthwise_lanes` rows in tests/bench/RESULTS.md).
pub const MAX_OW: usize = 32;

/// Whether [`depthwise_lanes`] runs `p` on `isa`: a depthwise convolution on AVX-512 whose
/// output rows are narrower than [`MAX_OW`] and that has at least [`LANES`] channels (with
/// fewer, most lanes would carry zeros).
pub fn takes(p: &Conv2d, isa: Isa) -> bool {
    cfg!(target_arch = "x86_64") && isa == Isa::Avx512 && p.is_depthwise() && p.ow < MAX_OW && p.c >= LANES
}

/// Floats of one task's scratch: the padded input block, the output block and the weights,
/// each 16 channels wide.
fn task_floats(p: &Conv2d) -> usize {
    let (ph, pw) = p.padded_plane();
    (ph * pw + p.positions() + p.kh * p.kw) * LANES
}

/// Scratch floats [`depthwise_lanes`] needs: one region per (image, group of 16 channels).
pub fn scratch_floats(p: &Conv2d) -> usize {
    p.n * p.c.div_ceil(LANES) * task_floats(p)
}

/// Runs the depthwise convolution (`x`: `[n, c, h, w]`, `w`: `[c, 1, kh, kw]`, `y`:
/// `[n, c, oh, ow]`), one task per (image, group of 16 channels), each applying the epilogue
/// to its rows. `scratch` has [`scratch_floats`] floats. x86-64 only ([`takes`] is false
/// elsewhere).
#[cfg(target_arch = "x86_64")]
pub fn depthwise_lanes(
    exec: &Exec,
    p: &Conv2d,
    x: &[f32],
    w: &[f32],
    ep: &Epilogue,
    y: &mut [f32],
    scratch: &mut [f32],
) {
    debug_assert!(takes(p, exec.isa));
    debug_assert!(scratch.len() >= scratch_floats(p));
    let groups = p.c.div_ceil(LANES);
    let (in_img, out_img, per_task) = (p.c * p.h * p.w, p.c * p.positions(), task_floats(p));
    let (y_ptr, y_len) = (SyncPtr(y.as_mut_ptr()), y.len());
    let (s_ptr, s_len) = (SyncPtr(scratch.as_mut_ptr()), scratch.len());
    let task = |t: usize| {
        // SAFETY: each task writes only its own output rows and its own scratch region.
        let y = unsafe { std::slice::from_raw_parts_mut(y_ptr.get(), y_len) };
        let scratch = unsafe { std::slice::from_raw_parts_mut(s_ptr.get(), s_len) };
        let (ni, c0) = (t / groups, t % groups * LANES);
        let cb = LANES.min(p.c - c0);
        let y_img = &mut y[ni * out_img..(ni + 1) * out_img];
        let region = &mut scratch[t * per_task..(t + 1) * per_task];
        // SAFETY: `takes` checked for AVX-512 (the ISA is only ever one the CPU has).
        unsafe { group_avx512(p, &x[ni * in_img..(ni + 1) * in_img], w, ep.bias, c0, cb, region, y_img) };
        let np = p.positions();
        let res_img = ep.residual_rows * np;
        let sub = Epilogue { bias: None, residual: ep.residual.map(|r| &r[ni * res_img..(ni + 1) * res_img]), ..*ep };
        sub.apply_tile(&mut y_img[c0 * np..(c0 + cb) * np], np, c0, cb, 0, np);
    };
    crate::cpu::pool::run_tasks(exec.pool, p.n * groups, &task);
}

/// Channels `c0..c0 + cb` of one image: weights and input into channel-last blocks,
/// the taps, the result back into `y_img`'s planes (bias added, the rest of the epilogue not).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma")]
#[allow(clippy::too_many_arguments)]
unsafe fn group_avx512(
    p: &Conv2d,
    x_img: &[f32],
    w: &[f32],
    bias: Option<&[f32]>,
    c0: usize,
    cb: usize,
    region: &mut [f32],
    y_img: &mut [f32],
) {
    use std::arch::x86_64::*;
    let (ph, pw) = p.padded_plane();
    let (hw, np, taps) = (p.h * p.w, p.positions(), p.kh * p.kw);
    let (pad_t, pad_l) = (p.pad[0], p.pad[1]);
    let (block, rest) = region.split_at_mut(ph * pw * LANES);
    let (outs, wts) = rest.split_at_mut(np * LANES);
    debug_assert!(wts.len() >= taps * LANES && x_img.len() >= (c0 + cb) * hw && y_img.len() >= (c0 + cb) * np);
    // SAFETY (whole body): every pointer below stays inside the slices it comes from; the
    // transposes read `rows` source rows of `cols` floats and write `cols` (in) or `rows`
    // (out) vectors, bounded as the debug_asserts state.
    unsafe {
        // Weights: tap-major, 16 channels per tap.
        for t0 in (0..taps).step_by(LANES) {
            let cols = LANES.min(taps - t0);
            load_transposed(w.as_ptr().add(c0 * taps + t0), taps, cb, cols, wts.as_mut_ptr().add(t0 * LANES));
        }
        // The input block: rows and columns the windows reach, zero where they fall outside.
        let rows_in = p.h.min(ph.saturating_sub(pad_t));
        let cols_in = p.w.min(pw.saturating_sub(pad_l));
        let row_len = pw * LANES;
        for py in 0..ph {
            let row = &mut block[py * row_len..(py + 1) * row_len];
            if py < pad_t || py >= pad_t + rows_in {
                row.fill(0.0);
            } else {
                row[..pad_l.min(pw) * LANES].fill(0.0);
                row[(pad_l + cols_in).min(pw) * LANES..].fill(0.0);
            }
        }
        for iy in 0..rows_in {
            let src = x_img.as_ptr().add(c0 * hw + iy * p.w);
            let dst = block.as_mut_ptr().wrapping_add(((iy + pad_t) * pw + pad_l) * LANES);
            for ix in (0..cols_in).step_by(LANES) {
                load_transposed(src.add(ix), hw, cb, LANES.min(cols_in - ix), dst.add(ix * LANES));
            }
        }
        // The taps, one output row at a time in blocks of up to OB positions.
        let lane_mask: __mmask16 = ((1u32 << cb) - 1) as __mmask16;
        let b = bias.map_or(_mm512_setzero_ps(), |b| _mm512_maskz_loadu_ps(lane_mask, b.as_ptr().add(c0)));
        let geo = Taps {
            kh: p.kh,
            kw: p.kw,
            row_step: p.dilation[0] * row_len,
            col_step: p.dilation[1] * LANES,
            out_step: p.stride[1] * LANES,
        };
        for oy in 0..p.oh {
            let in_row = block.as_ptr().add(oy * p.stride[0] * row_len);
            let mut ox = 0;
            while ox < p.ow {
                let n = OB.min(p.ow - ox);
                let src = in_row.add(ox * p.stride[1] * LANES);
                let dst = outs.as_mut_ptr().add((oy * p.ow + ox) * LANES);
                match n {
                    8 => row_block::<8>(&geo, src, wts.as_ptr(), b, dst),
                    7 => row_block::<7>(&geo, src, wts.as_ptr(), b, dst),
                    6 => row_block::<6>(&geo, src, wts.as_ptr(), b, dst),
                    5 => row_block::<5>(&geo, src, wts.as_ptr(), b, dst),
                    4 => row_block::<4>(&geo, src, wts.as_ptr(), b, dst),
                    3 => row_block::<3>(&geo, src, wts.as_ptr(), b, dst),
                    2 => row_block::<2>(&geo, src, wts.as_ptr(), b, dst),
                    _ => row_block::<1>(&geo, src, wts.as_ptr(), b, dst),
                }
                ox += n;
            }
        }
        // Back to planes.
        for p0 in (0..np).step_by(LANES) {
            let count = LANES.min(np - p0);
            store_transposed(outs.as_ptr().add(p0 * LANES), count, y_img.as_mut_ptr().add(c0 * np + p0), np, cb);
        }
    }
}

/// Strides of the taps in the input block, in floats.
#[cfg(target_arch = "x86_64")]
struct Taps {
    kh: usize,
    kw: usize,
    /// From one kernel row to the next.
    row_step: usize,
    /// From one kernel column to the next.
    col_step: usize,
    /// From one output position to the next (the column stride).
    out_step: usize,
}

/// `N` consecutive outputs of one row: `dst[i]` = `bias` + sum over taps of
/// `w[tap] * src[tap offset + i * out_step]`, every operand a 16-channel vector.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma")]
#[inline]
unsafe fn row_block<const N: usize>(
    g: &Taps,
    src: *const f32,
    w: *const f32,
    bias: std::arch::x86_64::__m512,
    dst: *mut f32,
) {
    use std::arch::x86_64::*;
    // SAFETY: the caller's block holds every tap of these N outputs and `dst` N vectors.
    unsafe {
        let mut acc = [bias; N];
        let mut wp = w;
        for ky in 0..g.kh {
            let row = src.add(ky * g.row_step);
            for kx in 0..g.kw {
                let wv = _mm512_loadu_ps(wp);
                wp = wp.add(LANES);
                let tap = row.add(kx * g.col_step);
                for (i, a) in acc.iter_mut().enumerate() {
                    *a = _mm512_fmadd_ps(wv, _mm512_loadu_ps(tap.add(i * g.out_step)), *a);
                }
            }
        }
        for (i, a) in acc.iter().enumerate() {
            _mm512_storeu_ps(dst.add(i * LANES), *a);
        }
    }
}

/// Reads `rows` (at most 16) rows of `cols` (at most 16) floats, row `j` at
/// `src + j * stride`, and writes `cols` vectors of 16 at `dst`: vector `i` holds column `i`
/// of every row (rows past `rows` read as zero).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn load_transposed(src: *const f32, stride: usize, rows: usize, cols: usize, dst: *mut f32) {
    use std::arch::x86_64::*;
    debug_assert!(rows <= LANES && cols <= LANES);
    // SAFETY: the caller guarantees the rows and the `cols` destination vectors exist;
    // masked-off lanes are not read.
    unsafe {
        let m: __mmask16 = ((1u32 << cols) - 1) as __mmask16;
        let mut r = [_mm512_setzero_ps(); LANES];
        for (j, v) in r.iter_mut().enumerate().take(rows) {
            *v = _mm512_maskz_loadu_ps(m, src.add(j * stride));
        }
        transpose16(&mut r);
        for (i, v) in r.iter().enumerate().take(cols) {
            _mm512_storeu_ps(dst.add(i * LANES), *v);
        }
    }
}

/// The inverse of [`load_transposed`]: reads `count` vectors of 16 at `src` and writes row
/// `j < rows` (lane `j` of every vector, `count` floats) at `dst + j * stride`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn store_transposed(src: *const f32, count: usize, dst: *mut f32, stride: usize, rows: usize) {
    use std::arch::x86_64::*;
    debug_assert!(rows <= LANES && count <= LANES);
    // SAFETY: as for `load_transposed`; masked-off lanes are not written.
    unsafe {
        let m: __mmask16 = ((1u32 << count) - 1) as __mmask16;
        let mut r = [_mm512_setzero_ps(); LANES];
        for (i, v) in r.iter_mut().enumerate().take(count) {
            *v = _mm512_loadu_ps(src.add(i * LANES));
        }
        transpose16(&mut r);
        for (j, v) in r.iter().enumerate().take(rows) {
            _mm512_mask_storeu_ps(dst.add(j * stride), m, *v);
        }
    }
}

/// Transposes a 16x16 block held as 16 rows: 32 in-lane unpacks and shuffles, then 32
/// shuffles of 128-bit quarters.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
fn transpose16(r: &mut [std::arch::x86_64::__m512; LANES]) {
    use std::arch::x86_64::*;
    // Pairs of rows interleaved: in quarter k, a[2i] = (r[2i][4k], r[2i+1][4k], ..[4k+1])
    // and a[2i+1] the same for columns 4k+2, 4k+3.
    let mut a = [_mm512_setzero_ps(); LANES];
    for i in 0..8 {
        a[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        a[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    // b[4i + j], quarter k: rows 4i..4i+4 of column 4k + j.
    let mut b = [_mm512_setzero_ps(); LANES];
    for i in 0..4 {
        b[4 * i] = _mm512_shuffle_ps::<0x44>(a[4 * i], a[4 * i + 2]);
        b[4 * i + 1] = _mm512_shuffle_ps::<0xEE>(a[4 * i], a[4 * i + 2]);
        b[4 * i + 2] = _mm512_shuffle_ps::<0x44>(a[4 * i + 1], a[4 * i + 3]);
        b[4 * i + 3] = _mm512_shuffle_ps::<0xEE>(a[4 * i + 1], a[4 * i + 3]);
    }
    // Column 4k + j takes quarter k of b[j], b[4 + j], b[8 + j], b[12 + j].
    for j in 0..4 {
        let c0 = _mm512_shuffle_f32x4::<0x88>(b[j], b[4 + j]);
        let c1 = _mm512_shuffle_f32x4::<0xDD>(b[j], b[4 + j]);
        let c2 = _mm512_shuffle_f32x4::<0x88>(b[8 + j], b[12 + j]);
        let c3 = _mm512_shuffle_f32x4::<0xDD>(b[8 + j], b[12 + j]);
        r[j] = _mm512_shuffle_f32x4::<0x88>(c0, c2);
        r[4 + j] = _mm512_shuffle_f32x4::<0x88>(c1, c3);
        r[8 + j] = _mm512_shuffle_f32x4::<0xDD>(c0, c2);
        r[12 + j] = _mm512_shuffle_f32x4::<0xDD>(c1, c3);
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    #[test]
    fn transposes_a_16x16_block_and_back() {
        if !Isa::Avx512.supported() {
            eprintln!("skipped: no AVX-512");
            return;
        }
        let src: Vec<f32> = (0..16 * 20).map(|i| i as f32).collect();
        let mut t = vec![-1.0f32; 16 * 16];
        // 11 rows of 13 columns, row stride 20.
        unsafe { load_transposed(src.as_ptr().add(3), 20, 11, 13, t.as_mut_ptr()) };
        for i in 0..16 {
            for j in 0..16 {
                let want = if i >= 13 {
                    -1.0
                } else if j < 11 {
                    src[j * 20 + 3 + i]
                } else {
                    0.0
                };
                assert_eq!(t[i * 16 + j], want, "column {i} row {j}");
            }
        }
        let mut back = vec![-2.0f32; 16 * 20];
        unsafe { store_transposed(t.as_ptr(), 13, back.as_mut_ptr().add(3), 20, 11) };
        for (k, &v) in back.iter().enumerate() {
            let (j, col) = (k / 20, k % 20);
            let inside = j < 11 && (3..16).contains(&col);
            assert_eq!(v, if inside { src[k] } else { -2.0 }, "row {j} col {col}");
        }
    }
}
