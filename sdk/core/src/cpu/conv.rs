//! 2-D convolution (NCHW, f32) on the GEMM: `Y[m, oy*ow+ox] = W[m, :] · im2col(X)[:, oy*ow+ox]`
//! per image and group, with im2col writing B's panels directly (a 1x1 stride-1 unpadded
//! convolution packs X itself). Depthwise convolutions (one input channel per group, one
//! output per group) use a direct kernel instead (per plane, or with channels in the lanes
//! for narrow planes: [`depthwise_lanes`]): a GEMM with one row would waste the tile;
//! so do dense ones with few input channels ([`dense_direct`]) and ones with long kernel
//! rows ([`conv_row_dot`]). Stride-1 dense convolutions on AVX2/AVX-512 skip im2col: an
//! implicit GEMM reads B from a zero-bordered copy of X ([`conv_implicit`]).
//! The epilogue (bias, residual, activation) is applied as each output tile is finished.

use super::Exec;
use super::conv_1x1_swapped;
use super::conv_implicit;
use super::conv_row_dot;
use super::depthwise_lanes;
use super::epilogue::Epilogue;
use super::gemm::{self, AMatrix, BMatrix, SyncPtr, packed_b_len};
use super::isa::Isa;

/// Geometry of a 2-D convolution; pads are the top/left ones (bottom/right are implied by
/// the output size).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Conv2d {
    /// Batch.
    pub n: usize,
    /// Input channels.
    pub c: usize,
    /// Input height.
    pub h: usize,
    /// Input width.
    pub w: usize,
    /// Output channels.
    pub m: usize,
    /// Groups.
    pub group: usize,
    /// Kernel height.
    pub kh: usize,
    /// Kernel width.
    pub kw: usize,
    /// Stride (height, width).
    pub stride: [usize; 2],
    /// Dilation (height, width).
    pub dilation: [usize; 2],
    /// Padding at the top and the left.
    pub pad: [usize; 2],
    /// Output height.
    pub oh: usize,
    /// Output width.
    pub ow: usize,
}

impl Conv2d {
    /// One input channel and one output channel per group.
    pub fn is_depthwise(&self) -> bool {
        self.group == self.c && self.m == self.c && self.group > 1
    }
    /// A 1x1, stride-1, unpadded convolution: X is already B.
    pub fn is_pointwise(&self) -> bool {
        self.kh == 1
            && self.kw == 1
            && self.stride == [1, 1]
            && self.pad == [0, 0]
            && self.oh == self.h
            && self.ow == self.w
    }
    /// GEMM depth: input channels per group times kernel taps.
    pub fn k(&self) -> usize {
        self.c / self.group * self.kh * self.kw
    }
    /// Output positions per image.
    pub fn positions(&self) -> usize {
        self.oh * self.ow
    }
    /// A dense convolution with few input channels (a network's RGB stem): its im2col
    /// matrix has few rows (75 for a 5x5 kernel over 3 channels), so the GEMM path spends
    /// most of its time writing and packing it; [`dense_direct`] sums taps in registers.
    /// Taken on AVX2 and AVX-512 CPUs, where it was measured faster.
    fn is_small_dense(&self) -> bool {
        self.group == 1 && self.c <= DIRECT_MAX_C && !self.is_pointwise() && self.kw <= MAX_DW_TAPS
    }
    /// Whether [`conv2d`] runs the direct small-channel kernel on `isa`: on AVX2, and on
    /// AVX-512 for what the implicit GEMM does not take. (AVX-512, ResNet-50's 7x7 stem:
    /// 3.5 ms direct, 2.2 ms implicit; BlazeFace 0.97 -> 0.86 ms whole. AVX2: the direct
    /// kernel 3.5 ms, the implicit GEMM 3.7.)
    pub fn takes_dense_direct(&self, isa: Isa) -> bool {
        cfg!(target_arch = "x86_64")
            && match isa {
                Isa::Avx2 => true,
                Isa::Avx512 => !conv_implicit::takes(self, isa) || conv_implicit::opted_out(),
                _ => false,
            }
            && self.is_small_dense()
    }
    /// Scratch floats [`conv2d`] needs: the packed B of one image and group, or for a
    /// depthwise convolution (and the direct small-channel kernel) every input plane copied
    /// into a zero border. Enough for whichever path the ISA picks.
    pub fn scratch_floats(&self) -> usize {
        if self.is_depthwise() {
            (self.n * self.c * DwLayout::of(self).plane()).max(depthwise_lanes::scratch_floats(self))
        } else if self.is_pointwise() {
            conv_1x1_swapped::scratch_floats(self)
        } else {
            let gemm = packed_b_len(self.k(), self.positions(), gemm::NR_MAX);
            if self.is_small_dense() {
                gemm.max(self.n * self.c * DwLayout::of(self).plane())
                    .max(conv_1x1_swapped::scratch_floats(self))
                    .max(conv_implicit::scratch_floats(self))
            } else {
                gemm.max(conv_row_dot::scratch_floats(self))
                    .max(conv_implicit::scratch_floats(self))
                    .max(conv_1x1_swapped::scratch_floats(self))
            }
        }
    }
    /// Rows and columns of input a depthwise window touches, top/left padding included.
    pub(super) fn padded_plane(&self) -> (usize, usize) {
        let span = |o: usize, s: usize, k: usize, d: usize| (o.max(1) - 1) * s + (k - 1) * d + 1;
        (
            span(self.oh, self.stride[0], self.kh, self.dilation[0]),
            span(self.ow, self.stride[1], self.kw, self.dilation[1]),
        )
    }
}

/// Runs the convolution. `x`: `[n, c, h, w]`, `w`: `[m, c/group, kh, kw]` (float16 weights
/// only on the GEMM path, not depthwise), `y`: `[n, m, oh, ow]`; the epilogue's bias/slope
/// have `m` values and its residual is shaped like `y` (`ld_residual` = oh*ow). `scratch` has
/// [`Conv2d::scratch_floats`] floats.
pub fn conv2d(
    exec: &Exec,
    p: &Conv2d,
    x: &[f32],
    w: AMatrix,
    ep: &Epilogue,
    y: &mut [f32],
    scratch: &mut [f32],
) -> crate::error::Result<()> {
    debug_assert_eq!(x.len(), p.n * p.c * p.h * p.w);
    debug_assert_eq!(y.len(), p.n * p.m * p.positions());
    if p.is_depthwise() {
        let AMatrix::F32(w) = w else {
            crate::invalid!("a depthwise convolution takes float32 weights only (its direct kernel has no f16 path)");
        };
        #[cfg(target_arch = "x86_64")]
        if depthwise_lanes::takes(p, exec.isa) {
            depthwise_lanes::depthwise_lanes(exec, p, x, w, ep, y, scratch);
            return Ok(());
        }
        depthwise(exec, p, x, w, ep, y, scratch);
        return Ok(());
    }
    if let AMatrix::F32(wf) = w
        && p.takes_dense_direct(exec.isa)
    {
        dense_direct(exec, p, x, wf, ep, y, scratch);
        return Ok(());
    }
    if let AMatrix::F32(wf) = w
        && conv_row_dot::takes(p, exec.isa)
    {
        conv_row_dot::conv_row_dot(exec, p, x, wf, ep, y, scratch);
        return Ok(());
    }
    #[cfg(target_arch = "x86_64")]
    if let AMatrix::F32(wf) = w
        && conv_implicit::takes(p, exec.isa)
        && !conv_implicit::opted_out()
    {
        conv_implicit::conv_implicit(exec, p, x, wf, ep, y, scratch);
        return Ok(());
    }
    let (cg, mg, k, np) = (p.c / p.group, p.m / p.group, p.k(), p.positions());
    let nr = gemm::kernel(exec.isa).nr;
    for ni in 0..p.n {
        for g in 0..p.group {
            let x_img = &x[(ni * p.c + g * cg) * p.h * p.w..(ni * p.c + (g + 1) * cg) * p.h * p.w];
            let row0 = g * mg;
            let y_off = (ni * p.m + row0) * np;
            let sub = ep.for_group(ni, row0, mg, np);
            let a = w.slice(row0 * k..(row0 + mg) * k);
            let yg = &mut y[y_off..y_off + mg * np];
            if p.is_pointwise() {
                let b = BMatrix::RowMajor { data: x_img, ld: np };
                gemm::gemm(exec.isa, exec.pool, mg, np, k, a, k, b, yg, np, &sub);
                continue;
            }
            let bp = &mut scratch[..packed_b_len(k, np, nr)];
            if np.div_ceil(gemm::NC) >= 2 * exec.threads() {
                // Enough column blocks to keep every thread busy: pack each block's im2col
                // right before it is multiplied, while it is in cache.
                let pack = |pi: usize, dst: &mut [f32]| im2col_panel(exec.isa, p, x_img, nr, pi, dst);
                gemm::gemm_packing(exec.isa, exec.pool, mg, np, k, a, k, &pack, bp, yg, np, &sub);
            } else {
                im2col_packed(exec, p, x_img, nr, bp);
                gemm::gemm(exec.isa, exec.pool, mg, np, k, a, k, BMatrix::Packed(bp), yg, np, &sub);
            }
        }
    }
    Ok(())
}

/// Writes the im2col matrix of one image and group (`k = cg*kh*kw` rows, `oh*ow` columns)
/// as B panels `nr` wide, zero where a tap falls in the padding or past the last column.
fn im2col_packed(exec: &Exec, p: &Conv2d, x: &[f32], nr: usize, dst: &mut [f32]) {
    let (np, k) = (p.positions(), p.k());
    let panels = np.div_ceil(nr);
    let dst_ptr = SyncPtr(dst.as_mut_ptr());
    let len = dst.len();
    let task = |pi: usize| {
        // SAFETY: each task writes only panel `pi`, a disjoint range of `dst`.
        let dst = unsafe { std::slice::from_raw_parts_mut(dst_ptr.get(), len) };
        im2col_panel(exec.isa, p, x, nr, pi, &mut dst[pi * k * nr..(pi + 1) * k * nr]);
    };
    crate::cpu::pool::run_tasks(exec.pool, panels, &task);
}

/// Writes B panel `pi` of the im2col matrix (`k * nr` floats) into `out`. On AVX2 CPUs the
/// loops are compiled for AVX2, with the stride-2 copy inlined.
fn im2col_panel(isa: Isa, p: &Conv2d, x: &[f32], nr: usize, pi: usize, out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if matches!(isa, Isa::Avx2 | Isa::Avx512) {
        // SAFETY: the ISA was checked as supported when it was chosen; every AVX-512 CPU
        // also has AVX2.
        return unsafe { im2col_panel_avx2(isa, p, x, nr, pi, out) };
    }
    im2col_panel_plain(isa, p, x, nr, pi, out)
}

/// [`im2col_panel`] compiled with AVX2.
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn im2col_panel_avx2(isa: Isa, p: &Conv2d, x: &[f32], nr: usize, pi: usize, out: &mut [f32]) {
    im2col_panel_plain(isa, p, x, nr, pi, out)
}

#[inline(always)]
fn im2col_panel_plain(isa: Isa, p: &Conv2d, x: &[f32], nr: usize, pi: usize, out: &mut [f32]) {
    let np = p.positions();
    debug_assert_eq!(out.len(), p.k() * nr);
    let valid = nr.min(np - pi * nr);
    // The panel's columns split into runs that lie in one output row each (a 32-wide panel
    // over 28-wide rows has two or three): along a run, a tap row is a strided run of one
    // input row, copied whole instead of gathered column by column (which took 40% of a
    // 3x3 convolution's time). Each run: first column in the panel, length, and the input
    // position of its first window's top-left tap (may be negative: padding).
    let mut runs = [(0usize, 0usize, 0isize, 0isize); gemm::NR_MAX];
    let mut count = 0;
    let (first, end) = (pi * nr, pi * nr + valid);
    let mut col = first;
    while col < end {
        let (oy, ox) = (col / p.ow, col % p.ow);
        let len = (p.ow - ox).min(end - col);
        let by = (oy * p.stride[0]) as isize - p.pad[0] as isize;
        let bx = (ox * p.stride[1]) as isize - p.pad[1] as isize;
        runs[count] = (col - first, len, by, bx);
        count += 1;
        col += len;
    }
    // Tap-major: a tap's clipping and source offset are the same for every input channel,
    // so they are worked out once per (tap, run) and the channel loop only copies.
    let (taps, plane) = (p.kh * p.kw, p.h * p.w);
    let (h, w, sx) = (p.h as isize, p.w as isize, p.stride[1] as isize);
    for ky in 0..p.kh {
        let dy = (ky * p.dilation[0]) as isize;
        for kx in 0..p.kw {
            let dx = (kx * p.dilation[1]) as isize;
            let t = ky * p.kw + kx;
            for &(j0, len, by, bx) in &runs[..count] {
                let (iy, x0) = (by + dy, bx + dx);
                // Columns j of the run with 0 <= x0 + j*sx < w read the input; the rest
                // (and all of them when row iy is padding) are zero.
                let (lo, hi) = if iy < 0 || iy >= h {
                    (len, len)
                } else {
                    let lo = if x0 < 0 { ((-x0 + sx - 1) / sx) as usize } else { 0 }.min(len);
                    let hi = if x0 >= w { 0 } else { (((w - x0 + sx - 1) / sx) as usize).min(len) }.max(lo);
                    (lo, hi)
                };
                let start = if hi > lo { (iy * w + x0 + lo as isize * sx) as usize } else { 0 };
                // Stride 2: one float more where the plane has it, so copy_even reads its
                // last block of 16 whole instead of finishing it in scalar code.
                let span = if hi > lo { (hi - lo - 1) * sx as usize + 1 + usize::from(sx == 2) } else { 0 };
                for ci in 0..p.c / p.group {
                    let row = ci * taps + t;
                    let dst = &mut out[row * nr + j0..row * nr + j0 + len];
                    dst[..lo].fill(0.0);
                    dst[hi..].fill(0.0);
                    if hi > lo {
                        let src_plane = &x[ci * plane..(ci + 1) * plane];
                        let src = &src_plane[start..(start + span).min(plane)];
                        let dst = &mut dst[lo..hi];
                        match sx {
                            1 => copy_short(dst, src),
                            2 => copy_even(isa, src, dst),
                            _ => dst.iter_mut().zip(src.iter().step_by(sx as usize)).for_each(|(d, s)| *d = *s),
                        }
                    }
                }
            }
        }
    }
    if valid < nr {
        for row in out.chunks_exact_mut(nr) {
            row[valid..].fill(0.0);
        }
    }
}

/// `dst.copy_from_slice(&src[..dst.len()])` for the short runs of [`tap_run`] (a few to a
/// few dozen floats), inline: blocks of eight (or four), the last one overlapping the one
/// before rather than a scalar tail, and no call into `memcpy`.
#[inline(always)]
pub(super) fn copy_short(dst: &mut [f32], src: &[f32]) {
    let src = &src[..dst.len()];
    match dst.len() {
        8.. => copy_blocks::<8>(dst, src),
        4.. => copy_blocks::<4>(dst, src),
        _ => dst.iter_mut().zip(src).for_each(|(d, s)| *d = *s),
    }
}

/// [`copy_short`] in blocks of `B` floats; `dst.len() >= B`, `src.len() == dst.len()`.
#[inline(always)]
fn copy_blocks<const B: usize>(dst: &mut [f32], src: &[f32]) {
    let n = dst.len();
    let mut i = 0;
    while i + B <= n {
        dst[i..i + B].copy_from_slice(&src[i..i + B]);
        i += B;
    }
    if i < n {
        dst[n - B..].copy_from_slice(&src[n - B..]);
    }
}

/// `dst[j] = src[2 * j]` (a stride-2 tap row): AVX2 deinterleaves eight at a time.
#[inline(always)]
pub(super) fn copy_even(isa: Isa, src: &[f32], dst: &mut [f32]) {
    debug_assert!(dst.is_empty() || src.len() >= 2 * dst.len() - 1);
    #[cfg(target_arch = "x86_64")]
    if matches!(isa, Isa::Avx2 | Isa::Avx512) {
        // SAFETY: the ISA was checked as supported when it was chosen; every AVX-512 CPU
        // also has AVX2.
        return unsafe { copy_even_avx2(src, dst) };
    }
    let _ = isa;
    dst.iter_mut().zip(src.iter().step_by(2)).for_each(|(d, s)| *d = *s);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn copy_even_avx2(src: &[f32], dst: &mut [f32]) {
    use std::arch::x86_64::*;
    let mut j = 0;
    // A block of eight reads src[2j .. 2j + 16]: only while that is inside `src`.
    while j + 8 <= dst.len() && 2 * j + 16 <= src.len() {
        // SAFETY: 16 floats from src[2j], 8 to dst[j], both in bounds (loop condition).
        unsafe {
            let a = _mm256_loadu_ps(src.as_ptr().add(2 * j));
            let b = _mm256_loadu_ps(src.as_ptr().add(2 * j + 8));
            // [a0 a2 b0 b2 | a4 a6 b4 b6] -> [a0 a2 a4 a6 b0 b2 b4 b6]
            let even = _mm256_shuffle_ps::<0b10_00_10_00>(a, b);
            let even = _mm256_castpd_ps(_mm256_permute4x64_pd::<0b11_01_10_00>(_mm256_castps_pd(even)));
            _mm256_storeu_ps(dst.as_mut_ptr().add(j), even);
        }
        j += 8;
    }
    for (d, s) in dst[j..].iter_mut().zip(src[2 * j..].iter().step_by(2)) {
        *d = *s;
    }
}

/// Output columns a depthwise kernel computes at once (in registers): two AVX2 vectors.
const DW_LANES: usize = 16;

/// The zero-bordered copy of one input plane a depthwise kernel reads: `rows` padded rows,
/// each split into `phases` (= the column stride) sub-rows of `row_len` floats, sub-row `p`
/// holding input columns `p, p + stride, p + 2*stride, ...` (shifted by the left padding).
/// With that split every tap of a strided convolution reads consecutive floats: tap `kx` of
/// output column `ox` is element `ox + (kx*dx)/sx` of sub-row `(kx*dx) % sx`. `row_len`
/// leaves room for a whole last block of [`DW_LANES`], so no read needs a bounds check.
#[derive(Clone, Copy, Debug)]
struct DwLayout {
    rows: usize,
    phases: usize,
    row_len: usize,
}

impl DwLayout {
    fn of(p: &Conv2d) -> DwLayout {
        let (ph, _) = p.padded_plane();
        let sx = p.stride[1];
        DwLayout { rows: ph, phases: sx, row_len: p.ow.div_ceil(DW_LANES) * DW_LANES + (p.kw - 1) * p.dilation[1] / sx }
    }
    /// Floats per padded row (all phases).
    fn row_stride(&self) -> usize {
        self.phases * self.row_len
    }
    /// Floats per padded plane.
    fn plane(&self) -> usize {
        self.rows * self.row_stride()
    }
    /// Where kernel column `kx`'s input for output column 0 starts within a padded row:
    /// its phase's sub-row, then its offset in it (the first `p.kw` entries are used).
    #[cfg(target_arch = "x86_64")]
    fn column_taps(&self, p: &Conv2d) -> [usize; MAX_DW_TAPS] {
        let (sx, dx) = (p.stride[1], p.dilation[1]);
        let mut tap = [0usize; MAX_DW_TAPS];
        for (kx, t) in tap.iter_mut().enumerate().take(p.kw) {
            *t = (kx * dx % sx) * self.row_len + kx * dx / sx;
        }
        tap
    }
}

/// Direct depthwise convolution, one task per (image, channel) plane: on AVX2/AVX-512 the
/// plane is read in place with masked loads where [`takes_unpadded_depthwise`] says so;
/// otherwise it is copied into a zero border split by column phase ([`DwLayout`]) in
/// `scratch`. Each run of output columns sums all taps in registers (starting from the bias)
/// and is stored once; the rest of the epilogue (residual, activation) follows on the plane.
/// Narrow planes on AVX-512 go to [`depthwise_lanes`] instead (see [`conv2d`]).
fn depthwise(exec: &Exec, p: &Conv2d, x: &[f32], w: &[f32], ep: &Epilogue, y: &mut [f32], scratch: &mut [f32]) {
    let planes = p.n * p.c;
    let (in_sz, out_sz, k_sz) = (p.h * p.w, p.positions(), p.kh * p.kw);
    let lay = DwLayout::of(p);
    let y_ptr = SyncPtr(y.as_mut_ptr());
    let y_len = y.len();
    let s_ptr = SyncPtr(scratch.as_mut_ptr());
    let s_len = scratch.len();
    let isa = exec.isa;
    let unpadded = takes_unpadded_depthwise(isa, p);
    let task = |pl: usize| {
        // SAFETY: each task touches only its own output plane and its own padded plane.
        let y = unsafe { std::slice::from_raw_parts_mut(y_ptr.get(), y_len) };
        let ch = pl % p.c;
        let out = &mut y[pl * out_sz..(pl + 1) * out_sz];
        let wk = &w[ch * k_sz..(ch + 1) * k_sz];
        let bias = ep.bias.map_or(0.0, |b| b[ch]);
        let plane = &x[pl * in_sz..(pl + 1) * in_sz];
        if unpadded {
            unpadded_depthwise_plane_dispatch(isa, p, plane, wk, bias, out);
        } else {
            let scratch = unsafe { std::slice::from_raw_parts_mut(s_ptr.get(), s_len) };
            let padded = &mut scratch[pl * lay.plane()..(pl + 1) * lay.plane()];
            fill_padded_plane(isa, p, &lay, plane, padded);
            depthwise_plane_dispatch(isa, p, &lay, padded, wk, bias, out);
        }
        // The rest of the epilogue sees this plane as row `ch` of an m x positions matrix.
        let ni = pl / p.c;
        let res_img = ep.residual_rows * out_sz;
        let sub = Epilogue { bias: None, residual: ep.residual.map(|r| &r[ni * res_img..(ni + 1) * res_img]), ..*ep };
        sub.apply_tile(out, out_sz, ch, 1, 0, out_sz);
    };
    crate::cpu::pool::run_tasks(exec.pool, planes, &task);
}

/// Input channels up to which a dense convolution runs [`dense_direct`] (on AVX2).
const DIRECT_MAX_C: usize = 4;
/// Output channels [`dense_direct`] computes per pass over the input: 4 x 16 columns in 8
/// AVX2 accumulators, each input load feeding 4 FMAs.
const DIRECT_MB: usize = 4;

/// Direct dense convolution for few input channels: every input plane of an image is copied
/// into a zero border split by column phase ([`DwLayout`], as for depthwise), then one task
/// per (image, block of [`DIRECT_MB`] output channels) sums all taps of all input channels
/// for 16 output columns at a time in registers, stores each sum once, and applies the
/// epilogue to its rows.
// Taken on AVX2/AVX-512 only (`takes_dense_direct`): off x86-64 the kernel call is compiled
// out and its operands go unused.
#[cfg_attr(not(target_arch = "x86_64"), allow(unused_variables))]
fn dense_direct(exec: &Exec, p: &Conv2d, x: &[f32], w: &[f32], ep: &Epilogue, y: &mut [f32], scratch: &mut [f32]) {
    let lay = DwLayout::of(p);
    let (in_sz, np, plane) = (p.h * p.w, p.positions(), lay.plane());
    let taps = p.k();
    let isa = exec.isa;
    let s_ptr = SyncPtr(scratch.as_mut_ptr());
    let s_len = scratch.len();
    let fill = |pl: usize| {
        // SAFETY: each task writes only its own padded plane.
        let scratch = unsafe { std::slice::from_raw_parts_mut(s_ptr.get(), s_len) };
        fill_padded_plane(isa, p, &lay, &x[pl * in_sz..(pl + 1) * in_sz], &mut scratch[pl * plane..(pl + 1) * plane]);
    };
    crate::cpu::pool::run_tasks(exec.pool, p.n * p.c, &fill);
    let blocks = p.m.div_ceil(DIRECT_MB);
    let y_ptr = SyncPtr(y.as_mut_ptr());
    let y_len = y.len();
    let planes: &[f32] = scratch;
    let task = |t: usize| {
        // SAFETY: each task writes only its own output rows.
        let y = unsafe { std::slice::from_raw_parts_mut(y_ptr.get(), y_len) };
        let (ni, m0) = (t / blocks, t % blocks * DIRECT_MB);
        let mb = DIRECT_MB.min(p.m - m0);
        let img = &planes[ni * p.c * plane..(ni + 1) * p.c * plane];
        let out = &mut y[(ni * p.m + m0) * np..(ni * p.m + m0 + mb) * np];
        let wb = &w[m0 * taps..(m0 + mb) * taps];
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `takes_dense_direct` admitted only AVX2/AVX-512 ISAs, checked as supported
        // when chosen (every AVX-512 CPU has AVX2 and FMA).
        unsafe {
            match mb {
                4 => dense_direct_avx2::<4>(p, &lay, img, wb, out),
                3 => dense_direct_avx2::<3>(p, &lay, img, wb, out),
                2 => dense_direct_avx2::<2>(p, &lay, img, wb, out),
                _ => dense_direct_avx2::<1>(p, &lay, img, wb, out),
            }
        }
        ep.for_group(ni, m0, mb, np).apply_tile(out, np, 0, mb, 0, np);
    };
    crate::cpu::pool::run_tasks(exec.pool, p.n * blocks, &task);
}

/// `MB` output channels of one image from its padded, phase-split input planes `x`
/// (`p.c` planes of `lay.plane()` floats), sixteen output columns at a time; `w` holds the
/// `MB` channels' weights (`[MB, c, kh, kw]`), `out` their `MB` output planes. Loads stay
/// inside each sub-row by [`DwLayout`]'s construction; a last partial block is computed in
/// full and only its valid columns stored.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn dense_direct_avx2<const MB: usize>(p: &Conv2d, lay: &DwLayout, x: &[f32], w: &[f32], out: &mut [f32]) {
    use std::arch::x86_64::*;
    let (kh, kw, ow, np) = (p.kh, p.kw, p.ow, p.positions());
    let (sy, dy) = (p.stride[0], p.dilation[0]);
    let taps = p.k();
    debug_assert!(kw <= MAX_DW_TAPS && x.len() == p.c * lay.plane() && w.len() == MB * taps);
    debug_assert_eq!(out.len(), MB * np);
    let tap = lay.column_taps(p);
    let (row_stride, plane) = (lay.row_stride(), lay.plane());
    let (xp, wp) = (x.as_ptr(), w.as_ptr());
    let mut tail = [0f32; DW_LANES];
    // SAFETY (whole body): every load is at most `row_len` floats into a sub-row of one of
    // the `c` planes (the layout's invariant), weights are read below `MB * taps`, stores
    // are within `out` (full blocks) or `tail`.
    unsafe {
        for oy in 0..p.oh {
            let mut ox = 0;
            while ox < ow {
                let mut acc = [[_mm256_setzero_ps(); 2]; MB];
                for c in 0..p.c {
                    for ky in 0..kh {
                        let row = xp.add(c * plane + (oy * sy + ky * dy) * row_stride + ox);
                        let wr = wp.add(c * kh * kw + ky * kw);
                        for kx in 0..kw {
                            let src = row.add(*tap.get_unchecked(kx));
                            let (x0, x1) = (_mm256_loadu_ps(src), _mm256_loadu_ps(src.add(8)));
                            for (mi, a) in acc.iter_mut().enumerate() {
                                let wv = _mm256_set1_ps(*wr.add(mi * taps + kx));
                                a[0] = _mm256_fmadd_ps(wv, x0, a[0]);
                                a[1] = _mm256_fmadd_ps(wv, x1, a[1]);
                            }
                        }
                    }
                }
                for (mi, a) in acc.iter().enumerate() {
                    let dst = out.as_mut_ptr().add(mi * np + oy * ow + ox);
                    if ox + DW_LANES <= ow {
                        _mm256_storeu_ps(dst, a[0]);
                        _mm256_storeu_ps(dst.add(8), a[1]);
                    } else {
                        _mm256_storeu_ps(tail.as_mut_ptr(), a[0]);
                        _mm256_storeu_ps(tail.as_mut_ptr().add(8), a[1]);
                        std::ptr::copy_nonoverlapping(tail.as_ptr(), dst, ow - ox);
                    }
                }
                ox += DW_LANES;
            }
        }
    }
}

/// Writes `x` (one `h x w` plane) into `dst` laid out as `lay` says, zeros around it.
fn fill_padded_plane(isa: Isa, p: &Conv2d, lay: &DwLayout, x: &[f32], dst: &mut [f32]) {
    let (sx, pad_l) = (lay.phases, p.pad[1]);
    for (py, row) in dst.chunks_exact_mut(lay.row_stride()).enumerate() {
        let iy = py.wrapping_sub(p.pad[0]);
        if iy >= p.h {
            row.fill(0.0);
            continue;
        }
        let src = &x[iy * p.w..(iy + 1) * p.w];
        if sx == 1 {
            // Left border, the row, right border.
            let left = pad_l.min(row.len());
            row[..left].fill(0.0);
            let n = p.w.min(row.len() - left);
            row[left..left + n].copy_from_slice(&src[..n]);
            row[left + n..].fill(0.0);
            continue;
        }
        for (phase, sub) in row.chunks_exact_mut(lay.row_len).enumerate() {
            // Element i of this sub-row is input column i*sx + phase - pad_l: zeros, then
            // a strided run of the row, then zeros.
            let lo = pad_l.saturating_sub(phase).div_ceil(sx).min(sub.len());
            let hi = (p.w + pad_l).saturating_sub(phase).div_ceil(sx).clamp(lo, sub.len());
            sub[..lo].fill(0.0);
            sub[hi..].fill(0.0);
            if hi > lo {
                let first = lo * sx + phase - pad_l;
                if sx == 2 {
                    copy_even(isa, &src[first..], &mut sub[lo..hi]);
                } else {
                    let run = src[first..].iter().step_by(sx);
                    sub[lo..hi].iter_mut().zip(run).for_each(|(d, s)| *d = *s);
                }
            }
        }
    }
}

fn depthwise_plane_dispatch(isa: Isa, p: &Conv2d, lay: &DwLayout, x: &[f32], w: &[f32], bias: f32, out: &mut [f32]) {
    debug_assert_eq!(x.len(), lay.plane());
    match isa {
        // SAFETY: the ISA was checked as supported when it was chosen (`Isa::supported`);
        // every AVX-512 CPU also has AVX2 and FMA.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 | Isa::Avx2 if p.kw <= MAX_DW_TAPS => unsafe {
            // 3x3 and 5x5 get their tap loops unrolled; any other size takes the loop.
            match (p.kh, p.kw) {
                (3, 3) => depthwise_plane_avx2::<3, 3>(p, lay, x, w, bias, out),
                (5, 5) => depthwise_plane_avx2::<5, 5>(p, lay, x, w, bias, out),
                _ => depthwise_plane_avx2::<0, 0>(p, lay, x, w, bias, out),
            }
        },
        _ => depthwise_plane(p, lay, x, w, bias, out),
    }
}

/// The widest kernel row the AVX2 direct kernels (depthwise and dense) take (their tap
/// offsets live on the stack: [`DwLayout::column_taps`]).
const MAX_DW_TAPS: usize = 32;

/// A depthwise kernel's size: the const parameters `KH`/`KW` where nonzero (the loops
/// unroll), else `p`'s.
#[inline(always)]
#[cfg(target_arch = "x86_64")]
fn kernel_size<const KH: usize, const KW: usize>(p: &Conv2d) -> (usize, usize) {
    (if KH > 0 { KH } else { p.kh }, if KW > 0 { KW } else { p.kw })
}

/// One plane from its padded, phase-split copy `x`, sixteen (then eight) output columns at a
/// time in AVX2 registers. Reads stay inside each sub-row by [`DwLayout`]'s construction;
/// a last partial block is computed in full and only its valid columns stored. `KH`/`KW`
/// are the kernel size when known at compile time (the loops unroll), 0 for any.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn depthwise_plane_avx2<const KH: usize, const KW: usize>(
    p: &Conv2d,
    lay: &DwLayout,
    x: &[f32],
    w: &[f32],
    bias: f32,
    out: &mut [f32],
) {
    use std::arch::x86_64::*;
    let (kh, kw) = kernel_size::<KH, KW>(p);
    debug_assert_eq!((kh, kw), (p.kh, p.kw));
    let ow = p.ow;
    let (sy, dy) = (p.stride[0], p.dilation[0]);
    let tap = lay.column_taps(p);
    let row_stride = lay.row_stride();
    let xp = x.as_ptr();
    let mut tail = [0f32; DW_LANES];
    // SAFETY (whole body): every load is at most `row_len` floats into a sub-row (the
    // layout's invariant), stores are within `out` (full blocks) or `tail`.
    unsafe {
        let b = _mm256_set1_ps(bias);
        for oy in 0..p.oh {
            let mut ox = 0;
            while ox < ow {
                let (mut a0, mut a1) = (b, b);
                for ky in 0..kh {
                    let row = xp.add((oy * sy + ky * dy) * row_stride + ox);
                    let wr = w.as_ptr().add(ky * kw);
                    for kx in 0..kw {
                        let wv = _mm256_set1_ps(*wr.add(kx));
                        let src = row.add(*tap.get_unchecked(kx));
                        a0 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(src), a0);
                        a1 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(src.add(8)), a1);
                    }
                }
                let dst = out.as_mut_ptr().add(oy * ow + ox);
                if ox + DW_LANES <= ow {
                    _mm256_storeu_ps(dst, a0);
                    _mm256_storeu_ps(dst.add(8), a1);
                } else {
                    _mm256_storeu_ps(tail.as_mut_ptr(), a0);
                    _mm256_storeu_ps(tail.as_mut_ptr().add(8), a1);
                    std::ptr::copy_nonoverlapping(tail.as_ptr(), dst, ow - ox);
                }
                ox += DW_LANES;
            }
        }
    }
}

/// Whether a depthwise convolution reads its input planes in place
/// ([`depthwise_plane_unpadded_avx2`], [`depthwise_plane_unpadded_avx512`]) rather than
/// through a padded copy: no dilation, stride 1 on AVX2, any row stride and a column stride
/// of 1 or 2 on AVX-512. Copying a small plane into its zero border cost more than the
/// convolution itself (MediaPipe's 5x5 depthwise layers at 7x7 and 14x14: 3-4x slower than
/// onnxruntime, most of it the copy).
fn takes_unpadded_depthwise(isa: Isa, p: &Conv2d) -> bool {
    let strides = match isa {
        Isa::Avx512 => p.stride[1] <= 2,
        Isa::Avx2 => p.stride == [1, 1],
        _ => false,
    };
    strides && cfg!(target_arch = "x86_64") && p.dilation == [1, 1] && p.kw <= MAX_DW_TAPS
}

fn unpadded_depthwise_plane_dispatch(isa: Isa, p: &Conv2d, x: &[f32], w: &[f32], bias: f32, out: &mut [f32]) {
    debug_assert_eq!(x.len(), p.h * p.w);
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `takes_unpadded_depthwise` checked the ISA (every AVX-512 CPU has AVX2 + FMA).
    unsafe {
        if isa == Isa::Avx512 {
            return match (p.kh, p.kw, p.stride[1]) {
                (3, 3, 1) => depthwise_plane_unpadded_avx512::<3, 3, 1>(p, x, w, bias, out),
                (5, 5, 1) => depthwise_plane_unpadded_avx512::<5, 5, 1>(p, x, w, bias, out),
                (_, _, 1) => depthwise_plane_unpadded_avx512::<0, 0, 1>(p, x, w, bias, out),
                (3, 3, _) => depthwise_plane_unpadded_avx512::<3, 3, 2>(p, x, w, bias, out),
                (5, 5, _) => depthwise_plane_unpadded_avx512::<5, 5, 2>(p, x, w, bias, out),
                _ => depthwise_plane_unpadded_avx512::<0, 0, 2>(p, x, w, bias, out),
            };
        }
        match (p.kh, p.kw) {
            (3, 3) => depthwise_plane_unpadded_avx2::<3, 3>(p, x, w, bias, out),
            (5, 5) => depthwise_plane_unpadded_avx2::<5, 5>(p, x, w, bias, out),
            _ => depthwise_plane_unpadded_avx2::<0, 0>(p, x, w, bias, out),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    unreachable!("takes_unpadded_depthwise is false off x86-64 ({isa}, {p:?}, {}, {bias}, {})", w.len(), out.len());
}

/// Output rows [`depthwise_plane_unpadded_avx512`] computes at once: four independent sums,
/// so the FMAs of consecutive taps need not wait on each other (one sum per block made the
/// loop wait on the FMA latency, 4 cycles a tap).
#[cfg(target_arch = "x86_64")]
const DW_ROWS: usize = 4;

/// [`depthwise_plane_unpadded_avx2`] on AVX-512, for any row stride and column stride `SX`
/// of 1 or 2: blocks of 16 output columns in one zmm, [`DW_ROWS`] output rows at a time,
/// every load masked (`__mmask16`) to the input columns that exist and to the rows inside
/// the plane (a row above or below loads zeros). With `SX = 2` a tap loads the 32 input
/// columns its 16 outputs span and keeps the even ones (one `vpermt2ps`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma")]
unsafe fn depthwise_plane_unpadded_avx512<const KH: usize, const KW: usize, const SX: usize>(
    p: &Conv2d,
    x: &[f32],
    w: &[f32],
    bias: f32,
    out: &mut [f32],
) {
    use std::arch::x86_64::*;
    let (kh, kw) = kernel_size::<KH, KW>(p);
    debug_assert!(kw <= MAX_DW_TAPS && p.stride[1] == SX && (SX == 1 || SX == 2) && p.dilation == [1, 1]);
    let (h, wd, ow, oh, sy) = (p.h as isize, p.w as isize, p.ow, p.oh, p.stride[0]);
    let (pad_t, pad_l) = (p.pad[0] as isize, p.pad[1] as isize);
    let xp = x.as_ptr();
    // Lanes `i` of a block starting at input column `c` with 0 <= c + i < w.
    let inside = |c: isize| -> __mmask16 {
        let lo = (-c).clamp(0, 16) as u32;
        let hi = (wd - c).clamp(0, 16) as u32;
        if hi <= lo { 0 } else { (((1u32 << hi) - 1) & !((1u32 << lo) - 1)) as __mmask16 }
    };
    // SAFETY (whole body): a masked-off lane is neither read nor written, and addresses are
    // formed with wrapping arithmetic, so a block's address may lie outside the plane where
    // its lanes that are on do not.
    unsafe {
        let b = _mm512_set1_ps(bias);
        let evens = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
        let mut ox = 0;
        while ox < ow {
            let c0 = (ox * SX) as isize - pad_l;
            // Per tap, the masks of its first 16 input columns and (SX = 2) of the next 16.
            let mut masks = [[0 as __mmask16; 2]; MAX_DW_TAPS];
            for (kx, m) in masks.iter_mut().enumerate().take(kw) {
                *m = [inside(c0 + kx as isize), inside(c0 + kx as isize + 16)];
            }
            let valid = (ow - ox).min(16);
            let store: __mmask16 = ((1u32 << valid) - 1) as __mmask16;
            // Every tap's loads (16 * SX columns) lie inside the plane's rows: no masks.
            let whole_cols = c0 >= 0 && c0 + (kw - 1) as isize + (16 * SX) as isize <= wd;
            let mut oy = 0;
            while oy < oh {
                let mut acc = [b; DW_ROWS];
                let top = (oy * sy) as isize - pad_t;
                let bottom = ((oy + DW_ROWS - 1) * sy + kh - 1) as isize - pad_t;
                if whole_cols && top >= 0 && bottom < h && oy + DW_ROWS <= oh {
                    // The interior: the same sums with plain loads (most blocks of a wide
                    // plane; the masks cost more than the FMAs they feed).
                    for ky in 0..kh {
                        let row0 = xp.offset((top + ky as isize) * wd + c0);
                        let wr = w.as_ptr().add(ky * kw);
                        for kx in 0..kw {
                            let wv = _mm512_set1_ps(*wr.add(kx));
                            for (r, a) in acc.iter_mut().enumerate() {
                                let src = row0.add(r * sy * wd as usize + kx);
                                let mut v = _mm512_loadu_ps(src);
                                if SX == 2 {
                                    v = _mm512_permutex2var_ps(v, evens, _mm512_loadu_ps(src.add(16)));
                                }
                                *a = _mm512_fmadd_ps(wv, v, *a);
                            }
                        }
                    }
                    for (r, a) in acc.iter().enumerate() {
                        _mm512_mask_storeu_ps(out.as_mut_ptr().add((oy + r) * ow + ox), store, *a);
                    }
                    oy += DW_ROWS;
                    continue;
                }
                for ky in 0..kh {
                    // Input row of output row oy + r, and whether it lies inside the plane.
                    let mut rows = [xp; DW_ROWS];
                    let mut on = [0 as __mmask16; DW_ROWS];
                    for r in 0..DW_ROWS {
                        let iy = ((oy + r) * sy) as isize + ky as isize - pad_t;
                        rows[r] = xp.wrapping_offset(iy * wd + c0);
                        on[r] = if iy >= 0 && iy < h && oy + r < oh { 0xffff } else { 0 };
                    }
                    let wr = w.as_ptr().add(ky * kw);
                    for (kx, &[m0, m1]) in masks.iter().enumerate().take(kw) {
                        let wv = _mm512_set1_ps(*wr.add(kx));
                        for r in 0..DW_ROWS {
                            let src = rows[r].wrapping_add(kx);
                            let mut v = _mm512_maskz_loadu_ps(m0 & on[r], src);
                            if SX == 2 {
                                let next = _mm512_maskz_loadu_ps(m1 & on[r], src.wrapping_add(16));
                                v = _mm512_permutex2var_ps(v, evens, next);
                            }
                            acc[r] = _mm512_fmadd_ps(wv, v, acc[r]);
                        }
                    }
                }
                for (r, a) in acc.iter().enumerate().take(oh - oy) {
                    _mm512_mask_storeu_ps(out.as_mut_ptr().wrapping_add((oy + r) * ow + ox), store, *a);
                }
                oy += DW_ROWS;
            }
            ox += 16;
        }
    }
}

/// A stride-1 depthwise plane read straight from the `h x w` input plane `x`: output
/// columns in blocks of 16 (two AVX2 vectors; a last block of at most 8 in one), each tap's
/// loads masked to the input columns that exist, so the padding reads as zero without being
/// stored anywhere; kernel rows above or below the plane are skipped. `KH`/`KW` as for
/// [`depthwise_plane_avx2`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn depthwise_plane_unpadded_avx2<const KH: usize, const KW: usize>(
    p: &Conv2d,
    x: &[f32],
    w: &[f32],
    bias: f32,
    out: &mut [f32],
) {
    use std::arch::x86_64::*;
    let (kh, kw) = kernel_size::<KH, KW>(p);
    debug_assert!(kw <= MAX_DW_TAPS && p.stride == [1, 1] && p.dilation == [1, 1]);
    let (h, wd, ow) = (p.h as isize, p.w as isize, p.ow);
    let (pad_t, pad_l) = (p.pad[0] as isize, p.pad[1] as isize);
    let xp = x.as_ptr();
    // SAFETY (whole body): a masked-off lane is neither read nor written (AVX maskload and
    // maskstore), and the pointers are formed with wrapping arithmetic, so a block's
    // address may lie outside the plane where its lanes that are on do not; unmasked loads
    // are used only where every lane lies inside the plane's row.
    unsafe {
        let lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        // Lanes `i` of a vector starting at input column `c` with 0 <= c + i < w.
        let inside = |c: isize| {
            let col = _mm256_add_epi32(lane, _mm256_set1_epi32(c as i32));
            let ge0 = _mm256_cmpgt_epi32(col, _mm256_set1_epi32(-1));
            _mm256_and_si256(ge0, _mm256_cmpgt_epi32(_mm256_set1_epi32(wd as i32), col))
        };
        let b = _mm256_set1_ps(bias);
        let mut ox = 0;
        while ox < ow {
            let two = ow - ox > 8;
            let lanes = if two { 16 } else { 8 };
            // Column of tap 0's first lane; the block is inside every row for all taps when
            // both its ends are.
            let c0 = ox as isize - pad_l;
            let whole = c0 >= 0 && c0 + (kw - 1) as isize + lanes as isize <= wd;
            let mut masks = [[_mm256_setzero_si256(); 2]; MAX_DW_TAPS];
            for (kx, m) in masks.iter_mut().enumerate().take(kw) {
                *m = [inside(c0 + kx as isize), inside(c0 + kx as isize + 8)];
            }
            let valid = (ow - ox).min(lanes);
            let store = [
                _mm256_cmpgt_epi32(_mm256_set1_epi32(valid as i32), lane),
                _mm256_cmpgt_epi32(_mm256_set1_epi32(valid as i32 - 8), lane),
            ];
            for oy in 0..p.oh {
                let (mut a0, mut a1) = (b, b);
                for ky in 0..kh {
                    let iy = oy as isize + ky as isize - pad_t;
                    if iy < 0 || iy >= h {
                        continue;
                    }
                    let row = xp.wrapping_offset(iy * wd + c0);
                    let wr = w.as_ptr().add(ky * kw);
                    for (kx, m) in masks.iter().enumerate().take(kw) {
                        let wv = _mm256_set1_ps(*wr.add(kx));
                        let src = row.wrapping_add(kx);
                        if whole {
                            a0 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(src), a0);
                            if two {
                                a1 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(src.wrapping_add(8)), a1);
                            }
                        } else {
                            a0 = _mm256_fmadd_ps(wv, _mm256_maskload_ps(src, m[0]), a0);
                            if two {
                                a1 = _mm256_fmadd_ps(wv, _mm256_maskload_ps(src.wrapping_add(8), m[1]), a1);
                            }
                        }
                    }
                }
                let dst = out.as_mut_ptr().add(oy * ow + ox);
                if valid == lanes {
                    _mm256_storeu_ps(dst, a0);
                    if two {
                        _mm256_storeu_ps(dst.add(8), a1);
                    }
                } else {
                    _mm256_maskstore_ps(dst, store[0], a0);
                    if two {
                        _mm256_maskstore_ps(dst.wrapping_add(8), store[1], a1);
                    }
                }
            }
            ox += lanes;
        }
    }
}

/// The portable path (and NEON, which the compiler vectorizes from it): the same blocks of
/// [`DW_LANES`] columns with the sums in a fixed-size array.
fn depthwise_plane(p: &Conv2d, lay: &DwLayout, x: &[f32], w: &[f32], bias: f32, out: &mut [f32]) {
    let (sy, sx, dy, dx) = (p.stride[0], p.stride[1], p.dilation[0], p.dilation[1]);
    let (ow, row_stride) = (p.ow, lay.row_stride());
    for oy in 0..p.oh {
        let mut ox0 = 0;
        while ox0 < ow {
            let mut acc = [bias; DW_LANES];
            for ky in 0..p.kh {
                let row = &x[(oy * sy + ky * dy) * row_stride..][..row_stride];
                for kx in 0..p.kw {
                    let wv = w[ky * p.kw + kx];
                    let t = kx * dx;
                    let src = &row[(t % sx) * lay.row_len + t / sx + ox0..][..DW_LANES];
                    for j in 0..DW_LANES {
                        acc[j] += wv * src[j];
                    }
                }
            }
            let n = DW_LANES.min(ow - ox0);
            out[oy * ow + ox0..oy * ow + ox0 + n].copy_from_slice(&acc[..n]);
            ox0 += DW_LANES;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rgb_stems_take_the_direct_kernel_on_avx2() {
        // BlazeFace's stem: 3 -> 24 channels, 5x5, stride 2.
        let stem = Conv2d {
            n: 1,
            c: 3,
            h: 128,
            w: 128,
            m: 24,
            group: 1,
            kh: 5,
            kw: 5,
            stride: [2, 2],
            dilation: [1, 1],
            pad: [1, 1],
            oh: 64,
            ow: 64,
        };
        assert_eq!(stem.takes_dense_direct(Isa::Avx2), cfg!(target_arch = "x86_64"));
        // AVX-512 runs it on the implicit GEMM, and stride 3 (which that does not take) here.
        assert!(!stem.takes_dense_direct(Isa::Avx512));
        let stride3 = Conv2d { stride: [3, 3], oh: 42, ow: 42, ..stem };
        assert_eq!(stride3.takes_dense_direct(Isa::Avx512), cfg!(target_arch = "x86_64"));
        assert!(!stem.takes_dense_direct(Isa::Portable) && !stem.takes_dense_direct(Isa::Neon));
        assert!(stem.scratch_floats() >= stem.c * DwLayout::of(&stem).plane());
        // Many input channels, groups, or a pointwise conv: the GEMM.
        assert!(!Conv2d { c: 16, ..stem }.takes_dense_direct(Isa::Avx2));
        assert!(!Conv2d { group: 3, m: 3, ..stem }.takes_dense_direct(Isa::Avx2));
        let pw = Conv2d { kh: 1, kw: 1, stride: [1, 1], pad: [0, 0], oh: 128, ow: 128, ..stem };
        assert!(!pw.takes_dense_direct(Isa::Avx2));
    }

    #[test]
    fn copy_even_matches_a_plain_stride_two_copy_on_every_isa() {
        for isa in Isa::all_supported() {
            for n in 0..40usize {
                // The shortest source that holds src[2 * (n - 1)], and one float longer.
                for extra in [0, 1] {
                    let len = (2 * n).saturating_sub(1) + extra;
                    let src: Vec<f32> = (0..len).map(|i| i as f32 * 0.5 - 3.0).collect();
                    let mut dst = vec![f32::NAN; n];
                    copy_even(isa, &src, &mut dst);
                    let want: Vec<f32> = (0..n).map(|j| src[2 * j]).collect();
                    assert_eq!(dst, want, "{isa} n {n} len {len}");
                }
            }
        }
    }
}
