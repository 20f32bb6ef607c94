//! Dense convolutions of stride 1 or 2 as an implicit GEMM over a zero-bordered copy of
//! the input (x86-64 AVX2 and AVX-512): no im2col matrix.
//!
//! Stride 1: each input plane is copied once into a border of zeros `wp = ow + (kw-1)*dx`
//! columns wide and `hp = oh + (kh-1)*dy` rows high. Over that padded plane, a window's
//! tap `(ky, kx)` for the output at grid position `j = oy*wp + ox` is element
//! `j + ky*dy*wp + kx*dx`: one constant offset per tap. So row `ci*taps + t` of the im2col
//! matrix (the weights' own K order) is the padded plane of channel `ci` shifted by tap
//! `t`'s offset, and the micro-kernel reads its B vectors straight from the padded input
//! ([`Taps`]). The price: the GEMM runs over `oh * wp` grid columns, `(kw-1)*dx` of each row
//! being junk that is computed and dropped (3% at 56x56 with a 3x3 kernel, 22% at 7x7).
//! The im2col it replaces wrote and reread `kh*kw` copies of the input, a quarter of a
//! 3x3 convolution's time on the GEMM path (ResNet-50's 64-channel 3x3 at 56x56).
//!
//! Stride 2: the padded plane is split into its four phases, plane `(py, px)` holding the
//! padded rows `py, py+2, ...` and columns `px, px+2, ...` (`hp x wp` each, now
//! `oh + (kh-1)*dy/2` by `ow + (kw-1)*dx/2`). Tap `(ky, kx)` of output `(oy, ox)` is element
//! `(oy + ky*dy/2, ox + kx*dx/2)` of phase `(ky*dy % 2, kx*dx % 2)`: again one constant
//! offset per tap from grid position `j = oy*wp + ox`, so the same micro-kernels run it,
//! with no extra multiplications (a space-to-depth rewrite would multiply by the zero taps
//! of its enlarged kernel).
//!
//! Work is split into tasks of up to [`gemm::MC`] output channels by a block of grid
//! columns; a task multiplies its block into a buffer on its stack, then copies the valid
//! columns to Y and applies the epilogue to them while they are still in cache.

use super::conv::Conv2d;
use super::gemm;
use super::isa::Isa;
#[cfg(target_arch = "x86_64")]
use super::{Exec, epilogue::Epilogue, gemm::SyncPtr};

/// The most kernel taps (`kh * kw`) the implicit path takes (7x7; larger kernels take im2col).
pub const MAX_TAPS: usize = 49;

#[cfg(target_arch = "x86_64")]
/// Input channels per K block: `channels * taps` stays near [`gemm::KC`], the depth one
/// packed panel block would have, so one block's B rows and A rows stay in L1 and L2.
fn channels_per_block(taps: usize) -> usize {
    (gemm::KC / taps).max(1)
}

/// Whether [`conv_implicit`] runs `p` on `isa`: stride 1 or 2 (the same in both
/// directions), a kernel larger than 1x1 (the GEMM reads X in place for a 1x1), not
/// depthwise, at most [`MAX_TAPS`] taps, and at least two thirds of the grid's columns valid.
pub fn takes(p: &Conv2d, isa: Isa) -> bool {
    cfg!(target_arch = "x86_64") && matches!(isa, Isa::Avx2 | Isa::Avx512) && fits(p)
}

/// `EDGERT_CONV_IMPLICIT=0`: run these convolutions on im2col + GEMM instead, to compare
/// the two or to work around a fault. Read once (reading the environment allocates).
pub fn opted_out() -> bool {
    static OFF: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *OFF.get_or_init(|| std::env::var("EDGERT_CONV_IMPLICIT").is_ok_and(|v| v.trim() == "0"))
}

/// The geometry half of [`takes`] (shared with the INT8 implicit GEMM, `conv_i8_implicit`).
pub(super) fn fits(p: &Conv2d) -> bool {
    (p.stride == [1, 1] || p.stride == [2, 2])
        && p.kh * p.kw > 1
        && !p.is_depthwise()
        && p.kh * p.kw <= MAX_TAPS
        && p.oh > 0
        && p.ow > 0
        && 3 * p.ow >= 2 * grid(p).1
}

/// The padded plane's `(rows, cols)` (of each phase, at stride 2): every row and column
/// some window reaches.
pub(super) fn grid(p: &Conv2d) -> (usize, usize) {
    let s = p.stride[0];
    (p.oh + (p.kh - 1) * p.dilation[0] / s, p.ow + (p.kw - 1) * p.dilation[1] / s)
}

/// Phase planes per input channel: 1 at stride 1, 4 at stride 2.
pub(super) fn phases(p: &Conv2d) -> usize {
    p.stride[0] * p.stride[1]
}

#[cfg(target_arch = "x86_64")]
/// Where the input lies in a row of phase column `px`'s padded plane (`wp` wide): columns
/// `left .. left + n` of the row hold input columns `ix0, ix0 + sx, ...`; the rest is border.
pub(super) fn row_span(p: &Conv2d, px: usize, wp: usize) -> (usize, usize, usize) {
    let sx = p.stride[1];
    // Column j holds padded column j*sx + px, i.e. input column j*sx + px - pad.
    let left = p.pad[1].saturating_sub(px).div_ceil(sx).min(wp);
    let ix0 = (left * sx + px).saturating_sub(p.pad[1]);
    let n = p.w.saturating_sub(ix0).div_ceil(sx).min(wp - left);
    (left, ix0, n)
}

#[cfg(target_arch = "x86_64")]
/// Y's column (`oy * ow + ox`) for grid column `j` of a `wp`-wide grid, junk columns
/// mapped to the next row's first: increasing, with no gaps over the valid ones.
pub(super) fn grid_to_y(p: &Conv2d, wp: usize, j: usize) -> usize {
    (j / wp) * p.ow + (j % wp).min(p.ow)
}

#[cfg(target_arch = "x86_64")]
/// Calls `f(j, o, len)` for each run of valid grid columns in `j0..j1` (junk columns
/// dropped): `len` columns from grid column `j`, which are Y's columns from `o`.
#[inline(always)]
pub(super) fn valid_runs(p: &Conv2d, wp: usize, j0: usize, j1: usize, mut f: impl FnMut(usize, usize, usize)) {
    let mut j = j0;
    while j < j1 {
        let (oy, ox) = (j / wp, j % wp);
        let row_end = ((oy + 1) * wp).min(j1);
        let valid_end = (oy * wp + p.ow).min(row_end);
        if j < valid_end {
            f(j, oy * p.ow + ox, valid_end - j);
        }
        j = row_end;
    }
}

/// Floats of one padded input (all of a group's channels and phases) plus the slack the
/// last panel's reads run into: the widest tap's column offset past the last window and up
/// to one panel past the last grid column.
fn padded_len(p: &Conv2d) -> usize {
    let (hp, wp) = grid(p);
    (p.c / p.group) * phases(p) * hp * wp + (p.kw - 1) * p.dilation[1] / p.stride[1] + gemm::NR_MAX
}

/// Scratch floats [`conv_implicit`] needs (one group's padded input; each task's block
/// of the grid output lives on its stack) where its geometry fits, whatever the ISA; else 0.
pub fn scratch_floats(p: &Conv2d) -> usize {
    if fits(p) { padded_len(p) } else { 0 }
}

#[cfg(target_arch = "x86_64")]
/// Where each tap's input starts relative to its window's output position in the padded
/// planes of a channel, and their size: row `ci * count + t` of B is `plane * ci + offset[t]`.
#[derive(Clone, Copy, Debug)]
pub struct Taps {
    /// Offset of each tap.
    pub(super) offset: [usize; MAX_TAPS],
    /// Taps (`kh * kw`).
    pub(super) count: usize,
    /// Elements of one channel's padded planes (all phases).
    pub(super) plane: usize,
}

#[cfg(target_arch = "x86_64")]
impl Taps {
    /// The taps of `p` over its padded planes.
    pub(super) fn of(p: &Conv2d) -> Taps {
        let (hp, wp) = grid(p);
        let [sy, sx] = p.stride;
        let mut offset = [0; MAX_TAPS];
        for ky in 0..p.kh {
            for kx in 0..p.kw {
                let (ty, tx) = (ky * p.dilation[0], kx * p.dilation[1]);
                let phase = (ty % sy) * sx + tx % sx;
                offset[ky * p.kw + kx] = phase * hp * wp + (ty / sy) * wp + tx / sx;
            }
        }
        Taps { offset, count: p.kh * p.kw, plane: phases(p) * hp * wp }
    }
}

#[cfg(target_arch = "x86_64")]
/// A micro-kernel: the `mr x nr` tile `C (+)= A[rows, c0*taps..] · B` over `channels`
/// input channels, B row `ci*taps + t` being `nr` floats at `b + ci*plane + offset[t]`.
/// `a` points to `mr` row pointers (already at the block's first K index); `c` to the
/// tile, row stride `ldc`; with `accumulate` the tile is added to C.
type KernelFn = unsafe fn(
    channels: usize,
    taps: &Taps,
    a: *const *const f32,
    b: *const f32,
    c: *mut f32,
    ldc: usize,
    accumulate: bool,
);

/// The micro-kernel for `isa` and its `(mr, nr)`.
#[cfg(target_arch = "x86_64")]
fn kernel(isa: Isa) -> (KernelFn, usize, usize) {
    match isa {
        Isa::Avx512 => (x86::kernel_avx512_8x32, 8, 32),
        _ => (x86::kernel_avx2_6x16, 6, 16),
    }
}

/// Runs the convolution (`x`: `[n, c, h, w]`, `w`: `[m, c/group, kh, kw]` f32, `y`:
/// `[n, m, oh, ow]`; the epilogue as for [`super::conv::conv2d`]). `scratch` has
/// [`scratch_floats`] floats.
#[cfg(target_arch = "x86_64")]
pub fn conv_implicit(exec: &Exec, p: &Conv2d, x: &[f32], w: &[f32], ep: &Epilogue, y: &mut [f32], scratch: &mut [f32]) {
    debug_assert!(takes(p, exec.isa));
    let (kern, mr, nr) = kernel(exec.isa);
    let (cg, mg, k, np) = (p.c / p.group, p.m / p.group, p.k(), p.positions());
    let (hp, wp) = grid(p);
    let taps = Taps::of(p);
    let ng = p.oh * wp;
    let panels = ng.div_ceil(nr);
    let padded = &mut scratch[..padded_len(p)];
    // Row blocks of whole tiles, so that no task's last tile runs into the next block.
    let rb = gemm::MC / mr * mr;
    let row_blocks = mg.div_ceil(rb);
    let col_blocks = gemm::column_blocks(panels, nr, exec.threads().div_ceil(row_blocks));
    let kcc = channels_per_block(taps.count);
    for ni in 0..p.n {
        for g in 0..p.group {
            let x_img = &x[(ni * p.c + g * cg) * p.h * p.w..][..cg * p.h * p.w];
            fill_padded(exec, p, x_img, hp, wp, padded);
            let padded: &[f32] = padded;
            let row0 = g * mg;
            let a = &w[row0 * k..(row0 + mg) * k];
            let sub = ep.for_group(ni, row0, mg, np);
            let y_img = SyncPtr(y[(ni * p.m + row0) * np..][..mg * np].as_mut_ptr());
            let task = |t: usize| {
                let (bi, bj) = (t / col_blocks, t % col_blocks);
                let rows = bi * rb..mg.min((bi + 1) * rb);
                let (p0, p1) = (bj * panels / col_blocks, (bj + 1) * panels / col_blocks);
                // The task's block of the grid output, row stride `ldt`: on the stack (64
                // KiB), so it stays in L2 between the multiply and the copy to Y. A buffer
                // for the whole grid (3.3 MB for ResNet's stem) went through memory, and
                // two threads shared its bandwidth. Rows past `rows.end` (at most a tile's
                // worth, rb being whole tiles) take the junk of the last partial tile.
                // Left uninitialized: the kernels write every value before it is read.
                let mut tile_buf = std::mem::MaybeUninit::<[f32; gemm::MC * gemm::NC]>::uninit();
                let ldt = (p1 - p0) * nr;
                debug_assert!(ldt <= gemm::NC && rb <= gemm::MC);
                let gb = tile_buf.as_mut_ptr() as *mut f32;
                let mut c0 = 0;
                while c0 < cg {
                    let channels = kcc.min(cg - c0);
                    let kofs = c0 * taps.count;
                    let b_block = &padded[c0 * taps.plane..];
                    for pi in p0..p1 {
                        let j0 = pi * nr;
                        let mut r0 = rows.start;
                        while r0 < rows.end {
                            let h = mr.min(rows.end - r0);
                            let mut rp = [std::ptr::null::<f32>(); gemm::MR_MAX];
                            for (i, r) in rp.iter_mut().enumerate().take(mr) {
                                // Rows past the end repeat the last row: computed into the
                                // buffer's padding rows, never copied out.
                                *r = a[(r0 + i.min(h - 1)) * k + kofs..].as_ptr();
                            }
                            // SAFETY: the tile lies in the task's buffer (at most `rb` rows,
                            // whole tiles, by `ldt` columns, whole panels); B reads stay
                            // inside `padded`, whose slack covers the last panel and the
                            // widest tap; A rows hold `channels * taps` values from `kofs`.
                            unsafe {
                                kern(
                                    channels,
                                    &taps,
                                    rp.as_ptr(),
                                    b_block.as_ptr().add(j0),
                                    gb.add((r0 - rows.start) * ldt + j0 - p0 * nr),
                                    ldt,
                                    c0 > 0,
                                )
                            };
                            r0 += mr;
                        }
                    }
                    c0 += channels;
                }
                // The valid columns of grid columns [j0, j1) are Y's columns [o0, o1):
                // junk columns are dropped, so the map is increasing and has no gaps.
                let (j0, j1) = (p0 * nr, (p1 * nr).min(ng));
                let (o0, o1) = (grid_to_y(p, wp, j0), grid_to_y(p, wp, j1));
                // SAFETY: this task alone writes Y's rows `rows`, columns o0..o1.
                let yg = unsafe { std::slice::from_raw_parts_mut(y_img.get(), mg * np) };
                // SAFETY: every tile of the task's rows and panels was written above.
                let tile = unsafe { std::slice::from_raw_parts(gb, rows.len() * ldt) };
                for r in rows.clone() {
                    // Grid column j is column j - j0 of the task's buffer.
                    let src = &tile[(r - rows.start) * ldt..(r - rows.start + 1) * ldt];
                    let dst = &mut yg[r * np..(r + 1) * np];
                    valid_runs(p, wp, j0, j1, |j, o, len| {
                        super::conv::copy_short(&mut dst[o..o + len], &src[j - j0..j - j0 + len])
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

#[cfg(target_arch = "x86_64")]
/// Copies the `cg` planes of `x` into `dst` with their zero border (`hp x wp` each; at
/// stride 2 as four phase planes each), and zeroes the slack after the last one. One task
/// per block of up to 8 (phase) planes, smaller blocks where there are few planes, so an
/// RGB stem's 12 phase planes are shared by the threads too.
fn fill_padded(exec: &Exec, p: &Conv2d, x: &[f32], hp: usize, wp: usize, dst: &mut [f32]) {
    let cg = p.c / p.group;
    let [sy, sx] = p.stride;
    let (q, per_channel) = (hp * wp, phases(p));
    let count = cg * per_channel;
    let (planes, slack) = dst.split_at_mut(count * q);
    slack.fill(0.0);
    let per_task = count.div_ceil(2 * exec.threads()).clamp(1, 8);
    let d_ptr = SyncPtr(planes.as_mut_ptr());
    let task = |t: usize| {
        let qs = t * per_task..count.min((t + 1) * per_task);
        // SAFETY: task t alone writes phase planes `qs`.
        let out = unsafe { std::slice::from_raw_parts_mut(d_ptr.get().add(qs.start * q), qs.len() * q) };
        for (qi, dq) in qs.zip(out.chunks_exact_mut(q)) {
            let (ci, phase) = (qi / per_channel, qi % per_channel);
            let src = &x[ci * p.h * p.w..(ci + 1) * p.h * p.w];
            let (py, px) = (phase / sx, phase % sx);
            let (left, ix0, n) = row_span(p, px, wp);
            for (qy, row) in dq.chunks_exact_mut(wp).enumerate() {
                let iy = (qy * sy + py).wrapping_sub(p.pad[0]);
                if iy >= p.h || n == 0 {
                    row.fill(0.0);
                    continue;
                }
                let src_row = &src[iy * p.w..(iy + 1) * p.w];
                row[..left].fill(0.0);
                let dst = &mut row[left..left + n];
                if sx == 1 {
                    dst.copy_from_slice(&src_row[ix0..ix0 + n]);
                } else {
                    super::conv::copy_even(exec.isa, &src_row[ix0..], dst);
                }
                row[left + n..].fill(0.0);
            }
        }
    };
    crate::cpu::pool::run_tasks(exec.pool, count.div_ceil(per_task), &task);
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::Taps;
    use std::arch::x86_64::*;

    /// AVX-512 8x32 tile: 16 zmm accumulators, two B loads (at the tap's offset) and eight
    /// broadcasts per K step.
    ///
    /// # Safety
    /// The CPU must have AVX-512F and FMA; pointers as for `KernelFn` (mr 8, nr 32).
    #[target_feature(enable = "avx512f,fma")]
    pub unsafe fn kernel_avx512_8x32(
        channels: usize,
        taps: &Taps,
        a: *const *const f32,
        b: *const f32,
        c: *mut f32,
        ldc: usize,
        accumulate: bool,
    ) {
        unsafe {
            if taps.count == 9 {
                kernel_avx512_8x32_t::<9>(channels, taps, a, b, c, ldc, accumulate)
            } else {
                kernel_avx512_8x32_t::<0>(channels, taps, a, b, c, ldc, accumulate)
            }
        }
    }

    #[target_feature(enable = "avx512f,fma")]
    unsafe fn kernel_avx512_8x32_t<const NT: usize>(
        channels: usize,
        taps: &Taps,
        a: *const *const f32,
        b: *const f32,
        c: *mut f32,
        ldc: usize,
        accumulate: bool,
    ) {
        unsafe {
            let r: [*const f32; 8] = std::array::from_fn(|i| *a.add(i));
            let mut acc = [[_mm512_setzero_ps(); 2]; 8];
            let offsets = &taps.offset[..if NT > 0 { NT } else { taps.count }];
            let mut kk = 0;
            for ci in 0..channels {
                let bc = b.add(ci * taps.plane);
                for &off in offsets {
                    let bp = bc.add(off);
                    let b0 = _mm512_loadu_ps(bp);
                    let b1 = _mm512_loadu_ps(bp.add(16));
                    for i in 0..8 {
                        let av = _mm512_set1_ps(*r[i].add(kk));
                        acc[i][0] = _mm512_fmadd_ps(av, b0, acc[i][0]);
                        acc[i][1] = _mm512_fmadd_ps(av, b1, acc[i][1]);
                    }
                    kk += 1;
                }
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

    /// AVX2 6x16 tile: 12 ymm accumulators, two B loads and six broadcasts per K step.
    ///
    /// # Safety
    /// The CPU must have AVX2 and FMA; pointers as for `KernelFn` (mr 6, nr 16).
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn kernel_avx2_6x16(
        channels: usize,
        taps: &Taps,
        a: *const *const f32,
        b: *const f32,
        c: *mut f32,
        ldc: usize,
        accumulate: bool,
    ) {
        unsafe {
            if taps.count == 9 {
                kernel_avx2_6x16_t::<9>(channels, taps, a, b, c, ldc, accumulate)
            } else {
                kernel_avx2_6x16_t::<0>(channels, taps, a, b, c, ldc, accumulate)
            }
        }
    }

    #[target_feature(enable = "avx2,fma")]
    unsafe fn kernel_avx2_6x16_t<const NT: usize>(
        channels: usize,
        taps: &Taps,
        a: *const *const f32,
        b: *const f32,
        c: *mut f32,
        ldc: usize,
        accumulate: bool,
    ) {
        unsafe {
            let r: [*const f32; 6] = std::array::from_fn(|i| *a.add(i));
            let mut acc = [[_mm256_setzero_ps(); 2]; 6];
            let offsets = &taps.offset[..if NT > 0 { NT } else { taps.count }];
            let mut kk = 0;
            for ci in 0..channels {
                let bc = b.add(ci * taps.plane);
                for &off in offsets {
                    let bp = bc.add(off);
                    let b0 = _mm256_loadu_ps(bp);
                    let b1 = _mm256_loadu_ps(bp.add(8));
                    for i in 0..6 {
                        let av = _mm256_broadcast_ss(&*r[i].add(kk));
                        acc[i][0] = _mm256_fmadd_ps(av, b0, acc[i][0]);
                        acc[i][1] = _mm256_fmadd_ps(av, b1, acc[i][1]);
                    }
                    kk += 1;
                }
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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conv(c: usize, hw: usize, m: usize, k: usize, stride: usize, pad: usize, group: usize) -> Conv2d {
        let o = (hw + 2 * pad - k) / stride + 1;
        Conv2d {
            n: 1,
            c,
            h: hw,
            w: hw,
            m,
            group,
            kh: k,
            kw: k,
            stride: [stride; 2],
            dilation: [1, 1],
            pad: [pad; 2],
            oh: o,
            ow: o,
        }
    }

    /// ResNet's stride-1 3x3 convolutions (and the 7x7 grid, whose 9-wide padded rows waste
    /// 2 columns in 9) take the implicit GEMM; strided, 1x1, depthwise and narrow grids do
    /// not, and no ISA without its kernels does. (The numbers are checked against the
    /// reference by `fused_conv`'s `fast_conv_matches_reference_on_every_isa`.)
    #[test]
    fn stride_one_dense_convolutions_take_the_implicit_gemm() {
        for (c, hw) in [(64, 56), (128, 28), (256, 14), (512, 7)] {
            let p = conv(c, hw, c, 3, 1, 1, 1);
            // The kernels are x86-64 only: elsewhere the same geometry goes to im2col.
            let x86 = cfg!(target_arch = "x86_64");
            assert_eq!(takes(&p, Isa::Avx512), x86, "{c} channels at {hw}");
            assert_eq!(takes(&p, Isa::Avx2), x86, "{c} channels at {hw}");
            assert!(!takes(&p, Isa::Portable));
            assert!(scratch_floats(&p) >= c * (hw + 2) * (hw + 2));
        }
        // Stride 2 too: ResNet's strided 3x3s and its 7x7 stem (its phase planes are 115
        // columns wide for 112 outputs).
        for p in [conv(128, 56, 128, 3, 2, 1, 1), conv(512, 14, 512, 3, 2, 1, 1), conv(3, 224, 64, 7, 2, 3, 1)] {
            assert_eq!(takes(&p, Isa::Avx512), cfg!(target_arch = "x86_64"), "{p:?}");
            assert!(scratch_floats(&p) >= p.c * 4 * (p.oh + p.kh / 2) * (p.ow + p.kw / 2));
        }
        assert!(!takes(&conv(64, 56, 64, 3, 3, 1, 1), Isa::Avx512), "stride 3");
        assert!(!takes(&conv(64, 56, 64, 1, 1, 0, 1), Isa::Avx512), "1x1");
        assert!(!takes(&conv(64, 56, 64, 1, 2, 0, 1), Isa::Avx512), "1x1 stride 2");
        assert!(!takes(&conv(64, 56, 64, 3, 1, 1, 64), Isa::Avx512), "depthwise");
        assert!(!takes(&conv(16, 3, 16, 3, 1, 1, 1), Isa::Avx512), "3 valid columns of 5");
        assert!(!takes(&conv(16, 20, 16, 9, 1, 4, 1), Isa::Avx512), "81 taps");
        assert_eq!(scratch_floats(&conv(64, 56, 64, 3, 3, 1, 1)), 0);
    }

    /// Tap offsets over the padded plane at stride 2: tap `(ky, kx)` reads phase
    /// `(ky % 2, kx % 2)` at row `ky / 2`, column `kx / 2`.
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn stride_two_taps_read_their_phase_plane() {
        let p = conv(4, 9, 4, 3, 2, 1, 1);
        assert_eq!((p.oh, p.ow), (5, 5));
        let t = Taps::of(&p);
        let (hp, wp) = (6, 6);
        assert_eq!(grid(&p), (hp, wp));
        let ph = hp * wp;
        assert_eq!(t.plane, 4 * ph);
        let want = [0, ph, 1, 2 * ph, 3 * ph, 2 * ph + 1, wp, ph + wp, wp + 1];
        assert_eq!(&t.offset[..9], &want);
    }

    /// Tap offsets over the padded plane: `ky*dy*wp + kx*dx`.
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn tap_offsets_step_by_padded_rows() {
        let mut p = conv(4, 10, 4, 3, 1, 2, 1);
        p.dilation = [2, 2];
        p.oh = 10;
        p.ow = 10;
        let t = Taps::of(&p);
        let wp = 14;
        assert_eq!(t.count, 9);
        assert_eq!(t.plane, 14 * wp);
        assert_eq!(&t.offset[..9], &[0, 2, 4, 2 * wp, 2 * wp + 2, 2 * wp + 4, 4 * wp, 4 * wp + 2, 4 * wp + 4]);
    }
}
