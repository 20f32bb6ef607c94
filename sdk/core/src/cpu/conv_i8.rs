//! INT8 2-D convolution with float32 interfaces, in NCHW like the f32 one:
//! `Y[m, pos] = W[m, :] · im2col(Xq)[:, pos]` per image and group, where the output
//! channels are the GEMM's rows (the weights, prepared once) and the output positions its
//! columns (the quantized input, packed into the micro-kernel's B panels each run). The
//! output is written in place in NCHW, dequantized, and FusedConv's float epilogue
//! (residual, activation) is applied to each tile while it is in cache.
//!
//! The INT8 micro-kernels (`gemm_i8`) multiply unsigned bytes (A) by signed ones (B), so
//! the operands are shifted: A holds `w + S` (S = 128, in 1..=255; or S = 64 for 7-bit
//! weights, in 1..=127, which the faster `vpmaddubsw` kernel needs) and B holds `xq - 128`
//! (the uint8 activation re-centred to int8). With `xs = xq - 128`,
//! `sum (w + S) * xs = sum w * xs + S * sum xs`, and the wanted
//! `sum w * (xq - zero) = sum w * xs - (zero - 128) * sum w`, so each accumulator is
//! corrected by `- S * colsum(xs)[pos] - (zero - 128) * rowsum(w)[m]`: exact int32.
//!
//! Activations stay f32 between layers (only the multiply-accumulate work is int8); a fully
//! int8 data flow, with uint8 tensors between quantized layers, is not built yet.

use super::Exec;
use super::conv::Conv2d;
use super::epilogue::Epilogue;
use super::gemm::SyncPtr;
use super::gemm_i8::{I8Kernel, I8Kind, MR_MAX, NR_MAX};

/// Output channels per task.
const ROWS_PER_TASK: usize = 64;
/// Panels (of `nr` positions) per task.
const PANELS_PER_TASK: usize = 8;

/// `clamp(round_half_even(v / scale) + zero, 0, 255)`: ONNX QuantizeLinear to uint8 (NaN
/// maps to `zero`).
///
/// Rounds by adding and subtracting 1.5 * 2^23 (exact round-half-even for |x| < 2^22, after
/// a clamp that keeps every result the same), not `round_ties_even`, which is a libm call
/// on x86-64 without SSE4.1; this way the loops over a plane vectorize.
#[inline(always)]
pub fn quantize_u8(v: f32, scale: f32, zero: i32) -> u8 {
    const MAGIC: f32 = 12_582_912.0;
    let q = (v / scale).clamp(-512.0, 512.0);
    let r = (q + MAGIC) - MAGIC;
    // `as` maps NaN to 0; the clamp bounds the sum.
    ((r as i32) + zero).clamp(0, 255) as u8
}

/// Weights prepared once for a kernel: `w + shift` as bytes (`I8Kernel::weight_shift`: 128,
/// 64 for 7-bit weights, 0 for the signed NEON kernel), each row zero-weight padded (`shift`) to a whole number of K
/// groups, and each row's sum of `w`.
#[derive(Clone, Debug)]
pub struct PreparedWeights {
    /// The kernel this layout is for.
    pub kernel: I8Kernel,
    /// Row length (K rounded up to the kernel's K group).
    pub k_pad: usize,
    /// `m` rows of `k_pad` bytes.
    pub rows: Vec<u8>,
    /// `sum_k w[m][k]` per row.
    pub row_sums: Vec<i32>,
}

impl PreparedWeights {
    /// Prepares `w` (`m` rows of `k` int8 values).
    pub fn new(kernel: I8Kernel, w: &[i8], m: usize, k: usize) -> PreparedWeights {
        let k_pad = k.next_multiple_of(kernel.kpack).max(kernel.kpack);
        let shift = kernel.weight_shift();
        let mut rows = vec![shift as u8; m * k_pad];
        let mut row_sums = Vec::with_capacity(m);
        for (j, src) in w.chunks_exact(k.max(1)).take(m).enumerate() {
            for (d, &v) in rows[j * k_pad..j * k_pad + k].iter_mut().zip(src) {
                debug_assert!(shift != 64 || (-63..=63).contains(&v), "7-bit kernel with weight {v}");
                *d = (v as i32 + shift) as u8;
            }
            row_sums.push(src.iter().map(|&v| v as i32).sum());
        }
        PreparedWeights { kernel, k_pad, rows, row_sums }
    }
}

/// Bytes of the quantized input (`c*h*w`), the packed B panels of one group and their
/// column sums that [`conv2d_u8`] needs, each rounded up to 64: `(x_bytes, b_bytes, sum_bytes)`.
pub fn scratch_parts(p: &Conv2d, kernel: I8Kernel) -> (usize, usize, usize) {
    let panels = p.positions().div_ceil(kernel.nr);
    let k_pad = p.k().next_multiple_of(kernel.kpack).max(kernel.kpack);
    (
        (p.c * p.h * p.w).next_multiple_of(64),
        (panels * k_pad * kernel.nr * kernel.wbytes).next_multiple_of(64),
        (panels * kernel.nr * 4).next_multiple_of(64),
    )
}

/// The most scratch any kernel kind needs (the planner asks before the kernel is known).
pub fn scratch_bytes(p: &Conv2d) -> usize {
    [I8Kind::Vnni512, I8Kind::Avx2, I8Kind::Avx2U7, I8Kind::NeonDot, I8Kind::Portable]
        .into_iter()
        .map(|k| {
            let (x, b, s) = scratch_parts(p, I8Kernel::of(k));
            x + b + s
        })
        .max()
        .unwrap_or(0)
}

/// Everything [`conv2d_u8`] needs besides the tensors; with `W` =
/// `conv_i8_implicit::ImplicitWeights`, what `conv_i8_implicit` needs.
#[derive(Debug)]
pub struct QuantConv<'a, W = PreparedWeights> {
    /// X's quantization scale.
    pub x_scale: f32,
    /// X's uint8 zero point.
    pub x_zero: i32,
    /// The weights, prepared for the kernel that runs.
    pub weights: &'a W,
    /// Per-output-channel bias in accumulator units.
    pub bias: Option<&'a [i32]>,
    /// Per-output-channel dequantization multipliers `x_scale * w_scale[c]`.
    pub mult: &'a [f32],
}

/// Runs the convolution: `x` `[n, c, h, w]` f32, `y` `[n, m, oh, ow]`; `ep` applies residual
/// and activation (its bias must be `None`: the bias is `q.bias`). `scratch` holds
/// [`scratch_parts`]' bytes for `q.weights.kernel`, 64-byte aligned. Allocates nothing.
pub fn conv2d_u8(exec: &Exec, p: &Conv2d, x: &[f32], q: &QuantConv, ep: &Epilogue, y: &mut [f32], scratch: &mut [u8]) {
    debug_assert_eq!(x.len(), p.n * p.c * p.h * p.w);
    debug_assert_eq!(y.len(), p.n * p.m * p.positions());
    debug_assert!(ep.bias.is_none());
    let kernel = q.weights.kernel;
    let (cg, mg, np) = (p.c / p.group, p.m / p.group, p.positions());
    let (x_bytes, b_bytes, sum_bytes) = scratch_parts(p, kernel);
    let (xs_buf, rest) = scratch.split_at_mut(x_bytes);
    let (b_buf, rest) = rest.split_at_mut(b_bytes);
    // SAFETY: the scratch is 64-byte aligned and x_bytes, b_bytes are multiples of 64, so
    // `rest` is aligned for i32 and holds sum_bytes bytes.
    let sums = unsafe { std::slice::from_raw_parts_mut(rest.as_mut_ptr() as *mut i32, sum_bytes / 4) };
    let plane = p.h * p.w;
    for ni in 0..p.n {
        let x_img = &x[ni * p.c * plane..(ni + 1) * p.c * plane];
        quantize_centred(exec, x_img, q.x_scale, q.x_zero, &mut xs_buf[..p.c * plane]);
        for g in 0..p.group {
            let xs = &xs_buf[g * cg * plane..(g + 1) * cg * plane];
            pack_b(exec, p, kernel, xs, (q.x_zero - 128) as i8, b_buf, sums);
            let row0 = g * mg;
            // `ep.bias` is None: the bias is added in the integer domain (`q.bias`).
            let sub = ep.for_group(ni, row0, mg, np);
            let y_off = (ni * p.m + row0) * np;
            let rows = row0..row0 + mg;
            gemm_rows(exec, q, rows, np, b_buf, sums, &sub, &mut y[y_off..y_off + mg * np]);
        }
    }
}

/// Quantizes `x` to uint8 and re-centres it to int8 (`xq - 128`), stored as bytes.
fn quantize_centred(exec: &Exec, x: &[f32], scale: f32, zero: i32, out: &mut [u8]) {
    const CHUNK: usize = 16 * 1024;
    let out_ptr = SyncPtr(out.as_mut_ptr());
    let task = |t: usize| {
        let r = t * CHUNK..x.len().min((t + 1) * CHUNK);
        // SAFETY: each task writes only its own chunk of `out` (x.len() bytes).
        let o = unsafe { std::slice::from_raw_parts_mut(out_ptr.get().add(r.start), r.len()) };
        #[cfg(target_arch = "x86_64")]
        if matches!(exec.isa, super::Isa::Avx2 | super::Isa::Avx512) {
            // SAFETY: the AVX2 and AVX-512 ISAs are only chosen on CPUs with AVX2.
            unsafe { quantize_centred_avx2(&x[r], scale, zero, o) };
            return;
        }
        for (o, &v) in o.iter_mut().zip(&x[r]) {
            *o = quantize_u8(v, scale, zero) ^ 0x80;
        }
    };
    let tasks = x.len().div_ceil(CHUNK);
    crate::cpu::pool::run_tasks(exec.pool, tasks, &task);
}

/// [`quantize_u8`] then `^ 0x80` (re-centred to int8), 8 values at a time: the division,
/// a clamp, `cvtps2dq` (round half to even in the default MXCSR mode) and saturating packs.
/// NaN maps to the zero point as in the scalar version.
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn quantize_centred_avx2(x: &[f32], scale: f32, zero: i32, out: &mut [u8]) {
    use std::arch::x86_64::*;
    let n = x.len().min(out.len());
    let main = n / 8 * 8;
    let (vs, lo, hi) = (_mm256_set1_ps(scale), _mm256_set1_ps(-512.0), _mm256_set1_ps(512.0));
    let vz = _mm256_set1_epi32(zero);
    let flip = _mm_set1_epi8(-128);
    let mut i = 0;
    while i < main {
        // SAFETY: i + 8 <= n for both slices.
        unsafe {
            let q = _mm256_div_ps(_mm256_loadu_ps(x.as_ptr().add(i)), vs);
            let q = _mm256_and_ps(q, _mm256_cmp_ps(q, q, _CMP_ORD_Q)); // NaN -> 0
            let q = _mm256_min_ps(_mm256_max_ps(q, lo), hi);
            let v = _mm256_add_epi32(_mm256_cvtps_epi32(q), vz);
            // 8 x i32 -> 8 x u16 (saturating) -> 8 x u8 (saturating).
            let w = _mm_packus_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
            let b = _mm_xor_si128(_mm_packus_epi16(w, w), flip);
            _mm_storel_epi64(out.as_mut_ptr().add(i) as *mut __m128i, b);
        }
        i += 8;
    }
    for j in main..n {
        out[j] = quantize_u8(x[j], scale, zero) ^ 0x80;
    }
}

/// Packs the im2col matrix of one group (`k` rows, `np` columns) of the centred input `xs`
/// into the kernel's B panels (`nr` columns, K groups of `kpack`; int16 lanes when the
/// kernel takes them), zero past K and `pad` (the centred zero point) in the padding, and
/// writes each column's sum into `sums`.
fn pack_b(exec: &Exec, p: &Conv2d, kernel: I8Kernel, xs: &[u8], pad: i8, b: &mut [u8], sums: &mut [i32]) {
    let (np, k) = (p.positions(), p.k());
    let (nr, kp, wb) = (kernel.nr, kernel.kpack, kernel.wbytes);
    let k_pad = k.next_multiple_of(kp).max(kp);
    let panel_bytes = k_pad * nr * wb;
    let panels = np.div_ceil(nr);
    let b_ptr = SyncPtr(b.as_mut_ptr());
    let s_ptr = SyncPtr(sums.as_mut_ptr());
    let (h, w) = (p.h as isize, p.w as isize);
    let pointwise = p.is_pointwise();
    // Kernels whose panels are int8, 4 K per lane, 16 or 32 columns: full pointwise panels
    // are packed straight from the planes.
    #[cfg(target_arch = "x86_64")]
    let direct_pointwise = matches!(kernel.kind, I8Kind::Avx2U7 | I8Kind::Vnni512);
    // For the same kernels the column sums are taken from the packed panel, vectorized,
    // rather than row by row as the rows are gathered (a third of the packing's time).
    let sums_from_panel = cfg!(target_arch = "x86_64") && matches!(kernel.kind, I8Kind::Avx2U7 | I8Kind::Vnni512);
    let task = |pi: usize| {
        // SAFETY: each task writes only panel `pi` of `b` and its `nr` sums.
        let out = unsafe { std::slice::from_raw_parts_mut(b_ptr.get().add(pi * panel_bytes), panel_bytes) };
        let sum = unsafe { std::slice::from_raw_parts_mut(s_ptr.get().add(pi * nr), nr) };
        let valid = nr.min(np - pi * nr);
        let first = pi * nr;
        #[cfg(target_arch = "x86_64")]
        if pointwise && valid == nr && direct_pointwise {
            // SAFETY: these kernel kinds are only chosen on CPUs with AVX2 (`I8Kernel::supported`).
            unsafe { pack_pointwise_panel_avx2(xs, p.h * p.w, first, k, nr, out, sum) };
            return;
        }
        // The panel's columns as runs that each lie in one output row: (first column, end,
        // window origin row, window origin column). Each kernel tap then reads one strided
        // stretch of one input row per run, padded at the ends.
        let mut runs = [(0usize, 0usize, 0isize, 0isize); NR_MAX];
        let mut n_runs = 0;
        let mut jj = 0;
        while jj < valid {
            let (oy, ox) = ((first + jj) / p.ow, (first + jj) % p.ow);
            let len = (p.ow - ox).min(valid - jj);
            let origin_y = (oy * p.stride[0]) as isize - p.pad[0] as isize;
            runs[n_runs] = (jj, jj + len, origin_y, (ox * p.stride[1]) as isize - p.pad[1] as isize);
            n_runs += 1;
            jj += len;
        }
        let sx = p.stride[1] as isize;
        let mut acc = [0i32; NR_MAX];
        // The kpack K rows of one group, `nr` columns each (zero past `valid` and past K).
        let mut rows = [[0i8; NR_MAX]; 4];
        // The tap (channel, kernel row, kernel column) of K row `kk`, advanced row by row.
        let (mut ci, mut ky, mut kx) = (0, 0, 0);
        for g in 0..k_pad / kp {
            for (t, row) in rows.iter_mut().enumerate().take(kp) {
                let kk = g * kp + t;
                if kk >= k {
                    row.fill(0);
                    continue;
                }
                let plane = &xs[ci * p.h * p.w..(ci + 1) * p.h * p.w];
                let r = &mut row[..valid];
                if pointwise {
                    copy_i8(r, &plane[first..first + valid]);
                } else {
                    let (dy, dx) = ((ky * p.dilation[0]) as isize, (kx * p.dilation[1]) as isize);
                    for &(j0, j1, origin_y, origin_x) in &runs[..n_runs] {
                        let seg = &mut r[j0..j1];
                        let iy = origin_y + dy;
                        if iy < 0 || iy >= h {
                            seg.fill(pad);
                            continue;
                        }
                        // Columns `lo..hi` of the run read inside the input row.
                        let (x0, n) = (origin_x + dx, seg.len() as isize);
                        // (Stride 1, the common case, without the divisions: they were a
                        // tenth of the packing's time.)
                        let lo = if x0 >= 0 {
                            0
                        } else if sx == 1 {
                            (-x0).min(n)
                        } else {
                            ((-x0 + sx - 1) / sx).min(n)
                        };
                        let hi = if x0 >= w {
                            lo
                        } else if sx == 1 {
                            (w - x0).clamp(lo, n)
                        } else {
                            ((w - 1 - x0) / sx + 1).clamp(lo, n)
                        };
                        let (lo, hi) = (lo as usize, hi as usize);
                        seg[..lo].fill(pad);
                        seg[hi..].fill(pad);
                        if hi == lo {
                            // All padding: a run shorter than the left border reaches no
                            // input (and `start` below would be negative).
                            continue;
                        }
                        let line = &plane[(iy * w) as usize..((iy + 1) * w) as usize];
                        let start = (x0 + lo as isize * sx) as usize;
                        if sx == 1 {
                            copy_i8(&mut seg[lo..hi], &line[start..start + (hi - lo)]);
                        } else {
                            for (d, &v) in seg[lo..hi].iter_mut().zip(line[start..].iter().step_by(sx as usize)) {
                                *d = v as i8;
                            }
                        }
                    }
                }
                kx += 1;
                if kx == p.kw {
                    kx = 0;
                    ky += 1;
                    if ky == p.kh {
                        ky = 0;
                        ci += 1;
                    }
                }
                if !sums_from_panel {
                    for (a, &v) in acc.iter_mut().zip(r.iter()) {
                        *a += v as i32;
                    }
                }
            }
            store_group(out, g, nr, kp, wb, &rows);
        }
        #[cfg(target_arch = "x86_64")]
        if sums_from_panel {
            // SAFETY: these kernel kinds are only chosen on CPUs with AVX2; the panel holds
            // k_pad / 4 groups of `nr` 4-byte lanes.
            unsafe { panel_sums_avx2(out, k_pad / 4, nr, sum) };
            return;
        }
        sum.copy_from_slice(&acc[..nr]);
    };
    crate::cpu::pool::run_tasks(exec.pool, panels, &task);
}

/// [`pack_b`]'s panel for a pointwise convolution with `nr` (16 or 32) full columns and the
/// int8 layout with 4 K per lane (the 7-bit AVX2 and the VNNI kernels): each group's 4 input
/// rows are loaded straight from the planes, 16 columns at a time, transposed into lanes,
/// and the column sums are taken from the packed lanes (`vpmaddubsw` by ones, then
/// `vpmaddwd` by ones: each lane's 4 bytes summed).
///
/// # Safety
/// The CPU must have AVX2. `nr` is a multiple of 16; `xs` holds `k` planes of `plane` bytes
/// with `first + nr <= plane`; `out` has `k.next_multiple_of(4) * nr` bytes; `sum` has `nr`
/// values.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn pack_pointwise_panel_avx2(
    xs: &[u8],
    plane: usize,
    first: usize,
    k: usize,
    nr: usize,
    out: &mut [u8],
    sum: &mut [i32],
) {
    use std::arch::x86_64::*;
    debug_assert!(nr.is_multiple_of(16) && nr <= NR_MAX);
    debug_assert!(first + nr <= plane && xs.len() >= k * plane && out.len() >= k.next_multiple_of(4) * nr);
    unsafe {
        let ones8 = _mm_set1_epi8(1);
        let ones16 = _mm_set1_epi16(1);
        for half in 0..nr / 16 {
            let col = first + 16 * half;
            let mut acc = [_mm_setzero_si128(); 4];
            let row = |kk: usize| {
                if kk < k {
                    _mm_loadu_si128(xs.as_ptr().add(kk * plane + col) as *const __m128i)
                } else {
                    _mm_setzero_si128()
                }
            };
            for g in 0..k.div_ceil(4) {
                let (r0, r1, r2, r3) = (row(4 * g), row(4 * g + 1), row(4 * g + 2), row(4 * g + 3));
                let (a_lo, a_hi) = (_mm_unpacklo_epi8(r0, r1), _mm_unpackhi_epi8(r0, r1));
                let (b_lo, b_hi) = (_mm_unpacklo_epi8(r2, r3), _mm_unpackhi_epi8(r2, r3));
                let quads = [
                    _mm_unpacklo_epi16(a_lo, b_lo),
                    _mm_unpackhi_epi16(a_lo, b_lo),
                    _mm_unpacklo_epi16(a_hi, b_hi),
                    _mm_unpackhi_epi16(a_hi, b_hi),
                ];
                let dst = out.as_mut_ptr().add(g * nr * 4 + half * 64) as *mut __m128i;
                for (c, &q) in quads.iter().enumerate() {
                    _mm_storeu_si128(dst.add(c), q);
                    // Ones (unsigned) times the signed bytes: exact pair sums, then lane sums.
                    acc[c] = _mm_add_epi32(acc[c], _mm_madd_epi16(_mm_maddubs_epi16(ones8, q), ones16));
                }
            }
            for (c, a) in acc.iter().enumerate() {
                _mm_storeu_si128(sum.as_mut_ptr().add(16 * half + 4 * c) as *mut __m128i, *a);
            }
        }
    }
}

/// The column sums of a packed int8 panel with 4 K per lane: `kg` groups of `nr` lanes
/// (`nr` a multiple of 8), each lane's 4 signed bytes summed over every group
/// (`vpmaddubsw` by ones, then `vpmaddwd` by ones).
///
/// # Safety
/// The CPU must have AVX2; `panel` has `kg * nr * 4` bytes, `sum` `nr` values.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn panel_sums_avx2(panel: &[u8], kg: usize, nr: usize, sum: &mut [i32]) {
    use std::arch::x86_64::*;
    debug_assert!(nr.is_multiple_of(8) && nr <= NR_MAX && panel.len() >= kg * nr * 4 && sum.len() >= nr);
    unsafe {
        let ones8 = _mm256_set1_epi8(1);
        let ones16 = _mm256_set1_epi16(1);
        let mut acc = [_mm256_setzero_si256(); NR_MAX / 8];
        let chunks = nr / 8;
        for g in 0..kg {
            let base = panel.as_ptr().add(g * nr * 4) as *const __m256i;
            for (c, a) in acc.iter_mut().enumerate().take(chunks) {
                let v = _mm256_loadu_si256(base.add(c));
                *a = _mm256_add_epi32(*a, _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, v), ones16));
            }
        }
        for (c, a) in acc.iter().enumerate().take(chunks) {
            _mm256_storeu_si256(sum.as_mut_ptr().add(8 * c) as *mut __m256i, *a);
        }
    }
}

/// Copies bytes as int8.
#[inline(always)]
fn copy_i8(dst: &mut [i8], src: &[u8]) {
    let n = dst.len().min(src.len());
    // SAFETY: both slices have `n` elements; u8 and i8 have the same size and every bit
    // pattern is valid in both (a plain copy, not the byte loop the compiler kept scalar).
    unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst.as_mut_ptr() as *mut u8, n) };
}

/// Stores K group `g` (`kp` rows of `nr` columns) in the panel's lane order: column `j`,
/// slot `t` at `(g * nr + j) * kp + t`, as int16 when `wb` is 2.
#[inline(always)]
fn store_group(out: &mut [u8], g: usize, nr: usize, kp: usize, wb: usize, rows: &[[i8; NR_MAX]; 4]) {
    let at = g * nr * kp;
    match (kp, wb) {
        (2, 2) => {
            let o = &mut out[at * 2..(at + nr * 2) * 2];
            for (j, pair) in o.chunks_exact_mut(4).enumerate() {
                pair[..2].copy_from_slice(&(rows[0][j] as i16).to_le_bytes());
                pair[2..].copy_from_slice(&(rows[1][j] as i16).to_le_bytes());
            }
        }
        #[cfg(target_arch = "x86_64")]
        (4, 1) if nr.is_multiple_of(16) => {
            // A 4 x 16 byte transpose per 16 columns, in SSE2 (every x86-64 has it): the
            // scalar loop below was a third of an INT8 ResNet-50 run.
            use std::arch::x86_64::*;
            let o = &mut out[at..at + nr * 4];
            for (c, chunk) in o.chunks_exact_mut(64).enumerate() {
                // SAFETY: SSE2 is baseline on x86-64; rows have NR_MAX >= c * 16 + 16 bytes,
                // and `chunk` has 64.
                unsafe {
                    let r = |t: usize| _mm_loadu_si128(rows[t][c * 16..].as_ptr() as *const __m128i);
                    let (r0, r1, r2, r3) = (r(0), r(1), r(2), r(3));
                    let (a_lo, a_hi) = (_mm_unpacklo_epi8(r0, r1), _mm_unpackhi_epi8(r0, r1));
                    let (b_lo, b_hi) = (_mm_unpacklo_epi8(r2, r3), _mm_unpackhi_epi8(r2, r3));
                    let p = chunk.as_mut_ptr() as *mut __m128i;
                    _mm_storeu_si128(p, _mm_unpacklo_epi16(a_lo, b_lo));
                    _mm_storeu_si128(p.add(1), _mm_unpackhi_epi16(a_lo, b_lo));
                    _mm_storeu_si128(p.add(2), _mm_unpacklo_epi16(a_hi, b_hi));
                    _mm_storeu_si128(p.add(3), _mm_unpackhi_epi16(a_hi, b_hi));
                }
            }
        }
        (4, 1) => {
            let o = &mut out[at..at + nr * 4];
            for (j, quad) in o.chunks_exact_mut(4).enumerate() {
                quad.copy_from_slice(&[rows[0][j] as u8, rows[1][j] as u8, rows[2][j] as u8, rows[3][j] as u8]);
            }
        }
        _ => {
            for j in 0..nr {
                for (t, row) in rows.iter().enumerate().take(kp) {
                    let o = (at + j * kp + t) * wb;
                    if wb == 1 {
                        out[o] = row[j] as u8;
                    } else {
                        out[o..o + 2].copy_from_slice(&(row[j] as i16).to_le_bytes());
                    }
                }
            }
        }
    }
}

/// One row of a tile to f32: `(acc - colsum * shift + row_add) * mult`, in wrapping int32
/// as the accumulators are.
#[inline(always)]
fn dequantize_row(acc: &[i32], colsum: &[i32], shift: i32, row_add: i32, mult: f32, out: &mut [f32]) {
    for ((o, &a), &s) in out.iter_mut().zip(acc).zip(colsum) {
        *o = a.wrapping_sub(s.wrapping_mul(shift)).wrapping_add(row_add) as f32 * mult;
    }
}

/// [`dequantize_row`] compiled for AVX2 (the crate's baseline is SSE2): it was 15% of an
/// INT8 ResNet-50 run on the VNNI kernel.
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn dequantize_row_avx2(acc: &[i32], colsum: &[i32], shift: i32, row_add: i32, mult: f32, out: &mut [f32]) {
    dequantize_row(acc, colsum, shift, row_add, mult, out)
}

/// `y[j - rows.start][pos]` for output channels `rows` and all `np` positions: the kernel on
/// every (row block, panel), the accumulator corrections and dequantization, then `ep`.
#[allow(clippy::too_many_arguments)]
fn gemm_rows(
    exec: &Exec,
    q: &QuantConv,
    rows: std::ops::Range<usize>,
    np: usize,
    b: &[u8],
    sums: &[i32],
    ep: &Epilogue,
    y: &mut [f32],
) {
    let wts = q.weights;
    let kern = wts.kernel;
    let (mr, nr) = (kern.mr, kern.nr);
    let f = kern.func();
    let kg = wts.k_pad / kern.kpack;
    let panel_bytes = wts.k_pad * nr * kern.wbytes;
    let panels = np.div_ceil(nr);
    let m = rows.len();
    let row_tasks = m.div_ceil(ROWS_PER_TASK);
    let col_tasks = panels.div_ceil(PANELS_PER_TASK);
    let centre = q.x_zero - 128;
    let shift = kern.weight_shift();
    let y_ptr = SyncPtr(y.as_mut_ptr());
    #[cfg(target_arch = "x86_64")]
    let simd_dequant = kern.kind != I8Kind::Portable;
    let task = |t: usize| {
        let (rt, ct) = (t / col_tasks, t % col_tasks);
        let r_end = m.min((rt + 1) * ROWS_PER_TASK);
        // The kernel writes every value of its mr x nr tile.
        let mut tile = [0i32; MR_MAX * NR_MAX];
        for pi in ct * PANELS_PER_TASK..panels.min((ct + 1) * PANELS_PER_TASK) {
            let col0 = pi * nr;
            let cols = nr.min(np - col0);
            let panel = &b[pi * panel_bytes..(pi + 1) * panel_bytes];
            let colsum = &sums[col0..col0 + nr];
            let mut r0 = rt * ROWS_PER_TASK;
            while r0 < r_end {
                let h = mr.min(r_end - r0);
                let mut rp = [std::ptr::null::<u8>(); MR_MAX];
                for (i, ptr) in rp.iter_mut().enumerate().take(mr) {
                    // Rows past the end repeat the last one: computed, never stored.
                    let row = rows.start + r0 + i.min(h - 1);
                    *ptr = wts.rows[row * wts.k_pad..].as_ptr();
                }
                // SAFETY: every row pointer has k_pad = kg * kpack readable bytes; the panel
                // holds kg K groups; the tile has mr x nr values with row stride nr.
                unsafe { f(kg, rp.as_ptr(), panel.as_ptr(), tile.as_mut_ptr(), nr, false) };
                // SAFETY: rows r0..r0 + h, columns col0..col0 + cols of `y` belong to this
                // task only (tasks split rows by ROWS_PER_TASK and panels by PANELS_PER_TASK).
                let out =
                    unsafe { std::slice::from_raw_parts_mut(y_ptr.get().add(r0 * np + col0), (h - 1) * np + cols) };
                for i in 0..h {
                    let j = rows.start + r0 + i;
                    // The row's constant: the bias less the activation centre's share.
                    let row_add = q.bias.map_or(0, |b| b[j]).wrapping_sub(centre.wrapping_mul(wts.row_sums[j]));
                    let acc = &tile[i * nr..i * nr + cols];
                    let o = &mut out[i * np..i * np + cols];
                    #[cfg(target_arch = "x86_64")]
                    if simd_dequant {
                        // SAFETY: only kernels that need AVX2 set `simd_dequant`.
                        unsafe { dequantize_row_avx2(acc, colsum, shift, row_add, q.mult[j], o) };
                        continue;
                    }
                    dequantize_row(acc, colsum, shift, row_add, q.mult[j], o);
                }
                r0 += mr;
            }
        }
        // The float epilogue once over the task's whole block (at most 64 rows x 8 panels,
        // still in cache): per 4 x 16 tile its per-call work was 16% of an INT8 ResNet-50.
        let r_start = rt * ROWS_PER_TASK;
        let c_start = ct * PANELS_PER_TASK * nr;
        let c_end = np.min((ct + 1) * PANELS_PER_TASK * nr);
        if r_start < r_end && c_start < c_end {
            let (h, w) = (r_end - r_start, c_end - c_start);
            // SAFETY: rows r_start..r_end, columns c_start..c_end of `y` belong to this task.
            let block =
                unsafe { std::slice::from_raw_parts_mut(y_ptr.get().add(r_start * np + c_start), (h - 1) * np + w) };
            ep.apply_tile(block, np, r_start, h, c_start, w);
        }
    };
    let tasks = row_tasks * col_tasks;
    crate::cpu::pool::run_tasks(exec.pool, tasks, &task);
}

#[cfg(test)]
mod tests {
    use super::quantize_u8;

    /// The magic-number rounding equals QuantizeLinear's definition: ties to even, saturation,
    /// NaN and infinities, across zero points.
    #[test]
    fn quantize_u8_is_exact_round_half_even_with_saturation() {
        let exact = |v: f32, s: f32, z: i32| -> u8 {
            let q = (v / s).round_ties_even();
            if q.is_nan() { z.clamp(0, 255) as u8 } else { (q as i64).saturating_add(z as i64).clamp(0, 255) as u8 }
        };
        let mut vals: Vec<f32> = vec![0.0, -0.0, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 126.5, 127.5, -128.5, 1e9, -1e9];
        vals.extend([f32::INFINITY, f32::NEG_INFINITY, f32::NAN, f32::MAX, f32::MIN_POSITIVE]);
        let mut x = 0x1234_5678u32;
        for _ in 0..20000 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            vals.push((x as f32 / u32::MAX as f32 - 0.5) * 700.0);
            vals.push(((x % 1000) as f32 - 500.0) * 0.5); // exact halves: ties
        }
        for &s in &[1.0f32, 0.5, 0.037, 3.0] {
            for &z in &[0, 77, 128, 255] {
                for &v in &vals {
                    assert_eq!(quantize_u8(v, s, z), exact(v, s, z), "v {v} scale {s} zero {z}");
                }
                #[cfg(target_arch = "x86_64")]
                if is_x86_feature_detected!("avx2") {
                    let mut out = vec![0u8; vals.len()];
                    // SAFETY: AVX2 checked above.
                    unsafe { super::quantize_centred_avx2(&vals, s, z, &mut out) };
                    for (&o, &v) in out.iter().zip(&vals) {
                        assert_eq!(o ^ 0x80, exact(v, s, z), "avx2: v {v} scale {s} zero {z}");
                    }
                }
            }
        }
    }
}
