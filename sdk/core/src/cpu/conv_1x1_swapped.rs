//! 1x1 convolutions over small planes with the GEMM's roles swapped: `Y^T = X^T · W^T`.
//!
//! The plain 1x1 path (`conv.rs`) multiplies `W [m x c]` by `X [c x positions]` with the
//! positions in the vector lanes, so a plane whose positions are not a multiple of the
//! kernel's panel width pays for the rest of the last panel: 7x7 = 49 positions take two
//! 32-wide panels (64 lanes, 23% of them wasted), 14x14 = 196 take seven (224, 12.5%).
//! ResNet's last two stages are made of such convolutions. Here the output channels fill the
//! lanes instead (they come in multiples of 32 in the networks that matter) and the
//! positions are the tile's rows (a 7-row AVX-512 tile where they are a multiple of 7, as
//! 49 and 196 are; else the GEMM's 8-row one):
//!
//! 1. X is transposed (and subsampled, for a strided 1x1) into `positions x c` rows;
//! 2. they are multiplied by the weights, transposed and packed in 32-channel panels once
//!    ([`pack_weights`], kept by the op), into a `positions x m` scratch, in the GEMM's
//!    blocking (`gemm.rs`) with the next panel's weights prefetched: in a whole network
//!    they come from memory, not from the caches;
//! 3. each panel is transposed back into its rows of Y and given the epilogue (bias,
//!    residual, activation) while it is in cache.
//!
//! The two transposes move `positions x (c + m)` floats, a few percent of the time at the
//! sizes this path takes ([`takes`]).

use super::Exec;
use super::conv::Conv2d;
use super::epilogue::Epilogue;
use super::gemm::{self, SyncPtr, packed_b_len};
use super::isa::Isa;

/// Positions per task of the input transpose.
const POSITION_BLOCK: usize = 64;

/// The geometry half of [`takes`]: a 1x1 kernel with one group and no padding (any stride,
/// every window inside X), and fewer than 1024 positions that would leave at least 8% of
/// the plain path's lanes idle. Below that the transposes cost about what the lanes save:
/// measured on 1 thread, 14x14 = 196 positions in 16-wide AVX2 panels (6% idle) ran 1-4%
/// slower here, 28x28 = 784 in 32-wide AVX-512 panels (2% idle) 16% slower.
fn fits(p: &Conv2d, nr: usize) -> bool {
    let np = p.positions();
    let in_plane = |o: usize, s: usize, size: usize| o > 0 && (o - 1) * s < size;
    p.kh == 1
        && p.kw == 1
        && p.group == 1
        && p.pad == [0, 0]
        && in_plane(p.oh, p.stride[0], p.h)
        && in_plane(p.ow, p.stride[1], p.w)
        && p.c > 0
        && p.m > 0
        && np < 1024
        && np.div_ceil(nr) * nr * 25 >= np * 27
}

/// Whether FusedConv runs `p` here on `isa` (AVX2 and AVX-512, where it was measured
/// faster; float32 weights).
pub fn takes(p: &Conv2d, isa: Isa) -> bool {
    !opted_out()
        && cfg!(target_arch = "x86_64")
        && matches!(isa, Isa::Avx2 | Isa::Avx512)
        && fits(p, gemm::kernel(isa).nr)
}

/// `EDGERT_CONV_1X1_SWAPPED=0`: run these convolutions on the plain 1x1 path (or im2col,
/// strided) instead, to compare the two or to work around a fault. Read once (reading the
/// environment allocates).
pub fn opted_out() -> bool {
    static OFF: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *OFF.get_or_init(|| std::env::var("EDGERT_CONV_1X1_SWAPPED").is_ok_and(|v| v.trim() == "0"))
}

/// Scratch floats [`conv_1x1_swapped`] needs where the geometry fits on some ISA that takes
/// it (else 0): one image's transposed input and its `positions x m` product.
pub fn scratch_floats(p: &Conv2d) -> usize {
    if [Isa::Avx2, Isa::Avx512].iter().any(|&isa| takes(p, isa)) { p.positions() * (p.c + p.m) } else { 0 }
}

/// `W^T` (`c x m`, from the row-major `m x c` weights) packed in panels `nr` output channels
/// wide, as the GEMM's B: panel `j`, row `k` holds `W[j*nr .. j*nr + nr][k]`, zero past `m`.
pub fn pack_weights(w: &[f32], m: usize, c: usize, nr: usize) -> Vec<f32> {
    assert_eq!(w.len(), m * c, "1x1 weights are m x c");
    let mut out = vec![0f32; packed_b_len(c, m, nr)];
    for (panel, dst) in out.chunks_exact_mut(c * nr).enumerate() {
        for (j, ch) in (panel * nr..m.min((panel + 1) * nr)).enumerate() {
            for (k, &v) in w[ch * c..(ch + 1) * c].iter().enumerate() {
                dst[k * nr + j] = v;
            }
        }
    }
    out
}

/// Runs the convolution `p` (see [`takes`]): `x` `[n, c, h, w]`, `packed` the weights from
/// [`pack_weights`] with the panel width of `exec.isa`'s kernel, `y` `[n, m, oh, ow]`, `ep`
/// as for `conv::conv2d`, `scratch` [`scratch_floats`] floats.
pub fn conv_1x1_swapped(
    exec: &Exec,
    p: &Conv2d,
    x: &[f32],
    packed: &[f32],
    ep: &Epilogue,
    y: &mut [f32],
    scratch: &mut [f32],
) {
    let (c, m, np) = (p.c, p.m, p.positions());
    assert!(scratch.len() >= np * (c + m), "scratch too small");
    assert!(packed.len() >= packed_b_len(c, m, gemm::kernel(exec.isa).nr), "packed weights too small");
    let (xt, ct) = scratch.split_at_mut(np * c);
    let ct = &mut ct[..np * m];
    for ni in 0..p.n {
        let x_img = &x[ni * c * p.h * p.w..(ni + 1) * c * p.h * p.w];
        transpose_input(exec, p, x_img, xt);
        let sub = ep.for_group(ni, 0, m, np);
        multiply(exec, kernel(exec.isa, np), np, m, c, xt, packed, ct, &sub, &mut y[ni * m * np..(ni + 1) * m * np]);
    }
}

/// `ct = xt · W^T` (`np x m`, row stride `m`), then each panel of `nr` output channels
/// transposed into its rows of `y` and given the epilogue while it is in cache. Parallel
/// over blocks of panels; within a task, BLIS order: blocks of [`gemm::KC`] input channels
/// outside, the task's panels inside, so that a panel's block (32 KiB on AVX-512) stays in
/// L1 while every row tile uses it. The weights of a network too big for the caches come
/// from memory, so the next panel's block is prefetched a slice per row tile.
#[allow(clippy::too_many_arguments)]
fn multiply(
    exec: &Exec,
    kern: gemm::Kernel,
    np: usize,
    m: usize,
    c: usize,
    xt: &[f32],
    packed: &[f32],
    ct: &mut [f32],
    ep: &Epilogue,
    y: &mut [f32],
) {
    let (mr, nr) = (kern.mr, kern.nr);
    let panels = m.div_ceil(nr);
    let blocks = gemm::column_blocks(panels, nr, exec.threads());
    let tiles = np.div_ceil(mr);
    let (ct_ptr, y_ptr) = (SyncPtr(ct.as_mut_ptr()), SyncPtr(y.as_mut_ptr()));
    let task = |bj: usize| {
        let mine = bj * panels / blocks..(bj + 1) * panels / blocks;
        // Partial tiles (the last positions, the last channels) are computed here whole.
        let mut tmp = [0f32; gemm::MR_MAX * gemm::NR_MAX];
        for k0 in (0..c).step_by(gemm::KC) {
            let kc = gemm::KC.min(c - k0);
            let accumulate = k0 > 0;
            for panel in mine.clone() {
                let (j0, w) = (panel * nr, nr.min(m - panel * nr));
                let b = &packed[panel * c * nr + k0 * nr..][..kc * nr];
                let next = (panel + 1 < mine.end).then(|| &packed[(panel + 1) * c * nr + k0 * nr..][..kc * nr]);
                for (t, r0) in (0..np).step_by(mr).enumerate() {
                    if let Some(next) = next {
                        gemm::prefetch_l2(&next[next.len() * t / tiles..next.len() * (t + 1) / tiles]);
                    }
                    let h = mr.min(np - r0);
                    let mut rows = [std::ptr::null::<f32>(); gemm::MR_MAX];
                    for (i, r) in rows.iter_mut().enumerate().take(mr) {
                        // Rows past the end repeat the last one: computed, never stored.
                        *r = xt[(r0 + i.min(h - 1)) * c + k0..].as_ptr();
                    }
                    // SAFETY: task bj alone writes columns j0..j0 + w of ct (its panels), and
                    // the tile lies inside ct (r0 + h <= np, j0 + w <= m); every row pointer
                    // has kc floats after it, the panel block kc * nr.
                    unsafe {
                        let tile = ct_ptr.get().add(r0 * m + j0);
                        if h == mr && w == nr {
                            (kern.f)(kc, rows.as_ptr(), b.as_ptr(), nr, tile, m, accumulate);
                        } else {
                            if accumulate {
                                for i in 0..h {
                                    std::ptr::copy_nonoverlapping(tile.add(i * m), tmp.as_mut_ptr().add(i * nr), w);
                                }
                            }
                            (kern.f)(kc, rows.as_ptr(), b.as_ptr(), nr, tmp.as_mut_ptr(), nr, accumulate);
                            for i in 0..h {
                                std::ptr::copy_nonoverlapping(tmp.as_ptr().add(i * nr), tile.add(i * m), w);
                            }
                        }
                    }
                }
            }
        }
        for panel in mine {
            let (j0, w) = (panel * nr, nr.min(m - panel * nr));
            // SAFETY: as above: this task's columns of ct are complete and only it reads
            // them; rows j0..j0 + w of y are this panel's alone.
            let (cols, rows) = unsafe {
                (
                    std::slice::from_raw_parts(ct_ptr.get().add(j0), (np - 1) * m + w),
                    std::slice::from_raw_parts_mut(y_ptr.get().add(j0 * np), w * np),
                )
            };
            transpose(cols, m, np, w, rows, np);
            ep.apply_tile(rows, np, j0, w, 0, np);
        }
    };
    super::pool::run_tasks(exec.pool, blocks, &task);
}

/// The micro-kernel for `positions` rows on `isa`: on AVX-512 the 7-row tile where the
/// positions are a multiple of 7 but not of 8 (7x7 and 14x14 planes: 49 positions in 7
/// tiles instead of 7 tiles of 8 with 7 rows idle), else the ISA's GEMM kernel. Both are
/// 32 wide, so one packing of the weights serves them.
#[cfg_attr(not(target_arch = "x86_64"), allow(unused_variables))]
fn kernel(isa: Isa, positions: usize) -> gemm::Kernel {
    #[cfg(target_arch = "x86_64")]
    if isa == Isa::Avx512 && positions.is_multiple_of(7) && !positions.is_multiple_of(8) {
        return gemm::Kernel { mr: 7, nr: 32, f: super::gemm_x86::kernel_avx512_7x32 };
    }
    gemm::kernel(isa)
}

/// `xt[pos * c + k] = x[k][the input position of output position pos]`, in parallel over
/// blocks of positions.
fn transpose_input(exec: &Exec, p: &Conv2d, x: &[f32], xt: &mut [f32]) {
    let (c, np, plane) = (p.c, p.positions(), p.h * p.w);
    let (ow, [sy, sx], w) = (p.ow, p.stride, p.w);
    let contiguous = p.stride == [1, 1];
    let xt_ptr = SyncPtr(xt.as_mut_ptr());
    let task = |t: usize| {
        let positions = t * POSITION_BLOCK..np.min((t + 1) * POSITION_BLOCK);
        // SAFETY: task t alone writes rows `positions` of xt, a disjoint range.
        let rows =
            unsafe { std::slice::from_raw_parts_mut(xt_ptr.get().add(positions.start * c), positions.len() * c) };
        if contiguous {
            // Input position = output position: a plain transpose of the `c x positions` block.
            transpose(&x[positions.start..], plane, c, positions.len(), rows, c);
            return;
        }
        // Strided: eight channels at a time, each position's row gets 8 consecutive floats.
        for k0 in (0..c).step_by(8) {
            let k1 = c.min(k0 + 8);
            for (i, pos) in positions.clone().enumerate() {
                let src = (pos / ow) * sy * w + (pos % ow) * sx;
                for (kk, v) in rows[i * c + k0..i * c + k1].iter_mut().enumerate() {
                    *v = x[(k0 + kk) * plane + src];
                }
            }
        }
    };
    super::pool::run_tasks(exec.pool, np.div_ceil(POSITION_BLOCK), &task);
}

/// `dst[j * ld_dst + i] = src[i * ld_src + j]` for `i < rows`, `j < cols`: 8x8 blocks in
/// AVX registers where the CPU has AVX, the edges (and other CPUs) one float at a time.
fn transpose(src: &[f32], ld_src: usize, rows: usize, cols: usize, dst: &mut [f32], ld_dst: usize) {
    if rows == 0 || cols == 0 {
        return;
    }
    assert!(src.len() >= (rows - 1) * ld_src + cols && dst.len() >= (cols - 1) * ld_dst + rows);
    let scalar_from = transpose_blocks(src, ld_src, rows, cols, dst, ld_dst);
    // Whatever the blocks left: the rows past the last block row, then the columns past
    // the last block column of the block rows.
    for i in 0..rows {
        let j0 = if i < scalar_from.0 { scalar_from.1 } else { 0 };
        for j in j0..cols {
            dst[j * ld_dst + i] = src[i * ld_src + j];
        }
    }
}

/// The whole 8x8 blocks of [`transpose`] (bounds checked by the caller) in AVX registers;
/// returns the rows and columns they cover, `(0, 0)` on a CPU without AVX.
#[cfg(target_arch = "x86_64")]
fn transpose_blocks(
    src: &[f32],
    ld_src: usize,
    rows: usize,
    cols: usize,
    dst: &mut [f32],
    ld_dst: usize,
) -> (usize, usize) {
    if !std::arch::is_x86_feature_detected!("avx") {
        return (0, 0);
    }
    let (full_rows, full_cols) = (rows / 8 * 8, cols / 8 * 8);
    for i in (0..full_rows).step_by(8) {
        for j in (0..full_cols).step_by(8) {
            // SAFETY: AVX is present; the 8x8 blocks at (i, j) of src and (j, i) of dst lie
            // inside them (i + 8 <= rows, j + 8 <= cols; `transpose` asserted the bounds).
            unsafe {
                transpose_8x8_avx(
                    src.as_ptr().add(i * ld_src + j),
                    ld_src,
                    dst.as_mut_ptr().add(j * ld_dst + i),
                    ld_dst,
                )
            };
        }
    }
    (full_rows, full_cols)
}

/// No blocked transpose off x86-64: [`transpose`] does it all one float at a time.
#[cfg(not(target_arch = "x86_64"))]
fn transpose_blocks(_: &[f32], _: usize, _: usize, _: usize, _: &mut [f32], _: usize) -> (usize, usize) {
    (0, 0)
}

/// One 8x8 block of [`transpose`]: eight row loads, three rounds of shuffles, eight stores.
///
/// # Safety
/// The CPU must have AVX; `src` must have 8 rows of 8 floats `ld_src` apart, `dst` room for
/// 8 rows of 8 floats `ld_dst` apart.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn transpose_8x8_avx(src: *const f32, ld_src: usize, dst: *mut f32, ld_dst: usize) {
    use std::arch::x86_64::*;
    unsafe {
        let r: [__m256; 8] = std::array::from_fn(|i| _mm256_loadu_ps(src.add(i * ld_src)));
        // Pairs of rows interleaved, then pairs of pairs, then the 128-bit halves swapped.
        let t0 = _mm256_unpacklo_ps(r[0], r[1]);
        let t1 = _mm256_unpackhi_ps(r[0], r[1]);
        let t2 = _mm256_unpacklo_ps(r[2], r[3]);
        let t3 = _mm256_unpackhi_ps(r[2], r[3]);
        let t4 = _mm256_unpacklo_ps(r[4], r[5]);
        let t5 = _mm256_unpackhi_ps(r[4], r[5]);
        let t6 = _mm256_unpacklo_ps(r[6], r[7]);
        let t7 = _mm256_unpackhi_ps(r[6], r[7]);
        let u0 = _mm256_shuffle_ps::<0x44>(t0, t2);
        let u1 = _mm256_shuffle_ps::<0xEE>(t0, t2);
        let u2 = _mm256_shuffle_ps::<0x44>(t1, t3);
        let u3 = _mm256_shuffle_ps::<0xEE>(t1, t3);
        let u4 = _mm256_shuffle_ps::<0x44>(t4, t6);
        let u5 = _mm256_shuffle_ps::<0xEE>(t4, t6);
        let u6 = _mm256_shuffle_ps::<0x44>(t5, t7);
        let u7 = _mm256_shuffle_ps::<0xEE>(t5, t7);
        let out = [
            _mm256_permute2f128_ps::<0x20>(u0, u4),
            _mm256_permute2f128_ps::<0x20>(u1, u5),
            _mm256_permute2f128_ps::<0x20>(u2, u6),
            _mm256_permute2f128_ps::<0x20>(u3, u7),
            _mm256_permute2f128_ps::<0x31>(u0, u4),
            _mm256_permute2f128_ps::<0x31>(u1, u5),
            _mm256_permute2f128_ps::<0x31>(u2, u6),
            _mm256_permute2f128_ps::<0x31>(u3, u7),
        ];
        for (j, v) in out.iter().enumerate() {
            _mm256_storeu_ps(dst.add(j * ld_dst), *v);
        }
    }
}

/// [`pack_weights`] for each panel width a kernel that takes this path has, made on first
/// use (as TensorRT does at engine build; here at the first run, so later runs allocate
/// nothing). Kept by the op that owns the weights, which are constant.
#[derive(Default)]
pub struct PackedWeights {
    /// Panels 16 wide (AVX2) and 32 wide (AVX-512).
    by_width: [std::sync::OnceLock<Vec<f32>>; 2],
}

impl PackedWeights {
    /// The weights packed for `isa`'s kernel.
    pub fn get(&self, isa: Isa, w: &[f32], m: usize, c: usize) -> &[f32] {
        let nr = gemm::kernel(isa).nr;
        let slot = usize::from(nr == 32);
        self.by_width[slot].get_or_init(|| pack_weights(w, m, c, nr))
    }
}

/// A copy starts empty (it packs again on its first use).
impl Clone for PackedWeights {
    fn clone(&self) -> Self {
        PackedWeights::default()
    }
}

/// Prepared data, not part of what the op means: any two compare equal.
impl PartialEq for PackedWeights {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for PackedWeights {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PackedWeights")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conv(c: usize, hw: usize, m: usize, stride: usize) -> Conv2d {
        let o = (hw - 1) / stride + 1;
        Conv2d {
            n: 1,
            c,
            h: hw,
            w: hw,
            m,
            group: 1,
            kh: 1,
            kw: 1,
            stride: [stride; 2],
            dilation: [1, 1],
            pad: [0, 0],
            oh: o,
            ow: o,
        }
    }

    /// ResNet-50's 1x1 convolutions at 7x7 and 14x14 (and the strided ones into them) take
    /// it on AVX-512, those at 7x7 on AVX2 too (14x14 fills AVX2's 16-wide panels but for
    /// 6%); planes whose positions fill the lanes (28x28 = 784, 56x56) and ISAs without a
    /// measurement do not. (The numbers are checked against the reference by `fused_conv`'s
    /// `fast_conv_matches_reference_on_every_isa`.)
    #[test]
    fn small_planes_take_it() {
        // Measured on x86-64 only: elsewhere the plain path runs them.
        let x86 = cfg!(target_arch = "x86_64");
        let at_7 = [conv(512, 7, 2048, 1), conv(2048, 7, 512, 1), conv(1024, 14, 2048, 2)];
        let at_14 = [conv(256, 14, 1024, 1), conv(1024, 14, 256, 1), conv(512, 28, 1024, 2)];
        for (i, p) in at_7.iter().chain(&at_14).enumerate() {
            assert_eq!(takes(p, Isa::Avx512), x86, "{p:?}");
            assert_eq!(takes(p, Isa::Avx2), x86 && i < at_7.len(), "{p:?}");
            assert!(!takes(p, Isa::Portable) && !takes(p, Isa::Neon));
            assert_eq!(scratch_floats(p), if x86 { p.positions() * (p.c + p.m) } else { 0 });
        }
        for p in [conv(128, 28, 512, 1), conv(64, 56, 256, 1), conv(256, 56, 512, 2)] {
            assert!(!takes(&p, Isa::Avx512) && !takes(&p, Isa::Avx2), "{p:?}");
            assert_eq!(scratch_floats(&p), 0);
        }
        let mut padded = conv(64, 7, 64, 1);
        padded.pad = [1, 1];
        padded.oh = 9;
        padded.ow = 9;
        assert!(!takes(&padded, Isa::Avx512), "padding");
        let mut grouped = conv(64, 7, 64, 1);
        grouped.group = 2;
        assert!(!takes(&grouped, Isa::Avx512), "groups");
    }

    /// Every shape class of the transpose: whole 8x8 blocks, edge rows and columns, fewer
    /// than 8 of either, row strides wider than the rows.
    #[test]
    fn transpose_matches_the_definition() {
        for (rows, cols) in [(8, 8), (16, 24), (13, 21), (3, 5), (9, 1), (1, 17), (64, 49)] {
            let (ld_src, ld_dst) = (cols + 3, rows + 2);
            let src: Vec<f32> = (0..rows * ld_src).map(|i| i as f32).collect();
            let mut dst = vec![-1f32; cols * ld_dst];
            transpose(&src, ld_src, rows, cols, &mut dst, ld_dst);
            for j in 0..cols {
                for i in 0..ld_dst {
                    let want = if i < rows { src[i * ld_src + j] } else { -1.0 };
                    assert_eq!(dst[j * ld_dst + i], want, "{rows}x{cols} at ({i}, {j})");
                }
            }
        }
    }

    /// Panel j, row k holds `W[j*nr + i][k]`, zero past the last channel.
    #[test]
    fn weights_pack_transposed_in_panels() {
        let (m, c, nr) = (5, 3, 4);
        let w: Vec<f32> = (0..m * c).map(|i| i as f32).collect();
        let packed = pack_weights(&w, m, c, nr);
        assert_eq!(packed.len(), 2 * c * nr);
        assert_eq!(&packed[..4], &[0.0, 3.0, 6.0, 9.0]);
        assert_eq!(&packed[8..12], &[2.0, 5.0, 8.0, 11.0]);
        assert_eq!(&packed[12..16], &[12.0, 0.0, 0.0, 0.0]);
        assert_eq!(&packed[20..24], &[14.0, 0.0, 0.0, 0.0]);
    }
}
