//! INT8 2-D convolution with float32 interfaces: X (f32, NCHW) is quantized to uint8 while it
//! is laid out as GEMM rows (one row per output position, `k = cg*kh*kw` values), multiplied
//! by per-channel int8 weights on the INT8 GEMM (`gemm_i8`), dequantized in the GEMM's
//! epilogue (int32 bias, `x_scale * w_scale[channel]`), then transposed back to NCHW while
//! the float epilogue (residual, activation) is applied.
//!
//! Activations stay f32 between layers, so the graph around an INT8 convolution is unchanged
//! and only the multiply-accumulate work is int8. (A fully int8 data flow, with uint8 tensors
//! between quantized layers, would also save memory traffic: not built yet.)

use super::Exec;
use super::conv::Conv2d;
use super::epilogue::Epilogue;
use super::gemm::SyncPtr;
use super::gemm_i8::{I8Out, PackedB, QAct, Requant, gemm_u8s8};

/// Positions per im2row task.
const ROWS_PER_TASK: usize = 64;
/// Channels per transpose task.
const CHANNELS_PER_TASK: usize = 16;

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

/// Bytes of the quantized input, the uint8 GEMM rows and the f32 GEMM output (one image and
/// group) that [`conv2d_u8`] needs, each rounded up to 64 bytes: `(x_bytes, a_bytes, t_bytes)`.
pub fn scratch_parts(p: &Conv2d) -> (usize, usize, usize) {
    let np = p.positions();
    // A pointwise convolution quantizes X straight into the GEMM rows (a transpose).
    (
        if p.is_pointwise() { 0 } else { (p.c * p.h * p.w).next_multiple_of(64) },
        (np * p.k()).next_multiple_of(64),
        (np * (p.m / p.group) * 4).next_multiple_of(64),
    )
}

/// Everything [`conv2d_u8`] needs besides the tensors.
#[derive(Clone, Copy, Debug)]
pub struct QuantConv<'a> {
    /// X's quantization scale.
    pub x_scale: f32,
    /// X's uint8 zero point.
    pub x_zero: i32,
    /// Weights packed per group (`k x m/group` each).
    pub packed: &'a [PackedB],
    /// Per-output-channel bias in accumulator units.
    pub bias: Option<&'a [i32]>,
    /// Per-output-channel dequantization multipliers `x_scale * w_scale[c]`.
    pub mult: &'a [f32],
}

/// Runs the convolution: `x` `[n, c, h, w]` f32, `y` `[n, m, oh, ow]`; `ep` applies residual
/// and activation (its bias must be `None`: the bias is `q.bias`). `scratch` holds
/// [`scratch_parts`]' bytes, 64-byte aligned. Allocates nothing.
pub fn conv2d_u8(exec: &Exec, p: &Conv2d, x: &[f32], q: &QuantConv, ep: &Epilogue, y: &mut [f32], scratch: &mut [u8]) {
    debug_assert_eq!(x.len(), p.n * p.c * p.h * p.w);
    debug_assert_eq!(y.len(), p.n * p.m * p.positions());
    debug_assert!(ep.bias.is_none());
    let (cg, mg, k, np) = (p.c / p.group, p.m / p.group, p.k(), p.positions());
    let (x_bytes, a_bytes, t_bytes) = scratch_parts(p);
    let (xq_buf, rest) = scratch.split_at_mut(x_bytes);
    let (a_buf, rest) = rest.split_at_mut(a_bytes);
    // SAFETY: the scratch is 64-byte aligned and x_bytes, a_bytes are multiples of 64, so
    // `rest` is aligned for f32 and holds t_bytes bytes.
    let t_buf = unsafe { std::slice::from_raw_parts_mut(rest.as_mut_ptr() as *mut f32, t_bytes / 4) };
    let plane = p.h * p.w;
    for ni in 0..p.n {
        let x_img = &x[ni * p.c * plane..(ni + 1) * p.c * plane];
        if !p.is_pointwise() {
            // Quantize the image once; im2row then copies bytes (each value feeds kh*kw taps).
            quantize_plane(exec, x_img, q.x_scale, q.x_zero, &mut xq_buf[..p.c * plane]);
        }
        for g in 0..p.group {
            let a = &mut a_buf[..np * k];
            if p.is_pointwise() {
                pointwise_rows_u8(exec, p, &x_img[g * cg * plane..(g + 1) * cg * plane], q.x_scale, q.x_zero, a);
            } else {
                im2row_u8(exec, p, &xq_buf[g * cg * plane..(g + 1) * cg * plane], q.x_zero, a);
            }
            let t = &mut t_buf[..np * mg];
            let cols = g * mg..(g + 1) * mg;
            let rq = Requant {
                a_zero: q.x_zero,
                bias: q.bias.map(|b| &b[cols.clone()]),
                mult: if q.mult.len() == 1 { q.mult } else { &q.mult[cols] },
                y_scale: 1.0,
                y_zero: 0,
                act: QAct::None,
            };
            gemm_u8s8(exec.pool, np, a, k, &q.packed[g], I8Out::F32(t), mg, &rq);
            let row0 = g * mg;
            let res_rows = ep.residual_rows.saturating_sub(row0).min(mg);
            let res_off = (ni * ep.residual_rows + row0) * np;
            let sub = Epilogue {
                bias: None,
                residual: ep.residual.filter(|_| res_rows > 0).map(|r| &r[res_off..res_off + res_rows * np]),
                ld_residual: np,
                residual_rows: res_rows,
                activation: ep.activation,
                slope: ep.slope.map(|s| &s[row0..row0 + mg]),
            };
            let y_off = (ni * p.m + row0) * np;
            transpose_apply(exec, t, np, mg, &sub, &mut y[y_off..y_off + mg * np]);
        }
    }
}

/// Quantizes `x` into `out`, in parallel chunks.
fn quantize_plane(exec: &Exec, x: &[f32], scale: f32, zero: i32, out: &mut [u8]) {
    const CHUNK: usize = 16 * 1024;
    let out_ptr = SyncPtr(out.as_mut_ptr());
    let task = |t: usize| {
        let r = t * CHUNK..x.len().min((t + 1) * CHUNK);
        // SAFETY: each task writes only its own chunk of `out` (x.len() bytes).
        let o = unsafe { std::slice::from_raw_parts_mut(out_ptr.get().add(r.start), r.len()) };
        for (o, &v) in o.iter_mut().zip(&x[r]) {
            *o = quantize_u8(v, scale, zero);
        }
    };
    let tasks = x.len().div_ceil(CHUNK);
    match exec.pool {
        Some(pool) if tasks > 1 => pool.run(tasks, &task),
        _ => (0..tasks).for_each(task),
    }
}

/// The GEMM rows of a pointwise convolution: row `pos` is column `pos` of X's `[c, h*w]`
/// matrix, quantized (X is read contiguously, the rows written with stride `k`).
fn pointwise_rows_u8(exec: &Exec, p: &Conv2d, x: &[f32], scale: f32, zero: i32, a: &mut [u8]) {
    let (np, k) = (p.positions(), p.k());
    let a_ptr = SyncPtr(a.as_mut_ptr());
    let task = |t: usize| {
        let rows = t * ROWS_PER_TASK..np.min((t + 1) * ROWS_PER_TASK);
        // SAFETY: each task writes only rows `rows`, a disjoint range of `a` (np * k bytes).
        let a = unsafe { std::slice::from_raw_parts_mut(a_ptr.get().add(rows.start * k), rows.len() * k) };
        for ci in 0..k {
            let src = &x[ci * np + rows.start..ci * np + rows.end];
            for (r, &v) in src.iter().enumerate() {
                a[r * k + ci] = quantize_u8(v, scale, zero);
            }
        }
    };
    let tasks = np.div_ceil(ROWS_PER_TASK);
    match exec.pool {
        Some(pool) if tasks > 1 => pool.run(tasks, &task),
        _ => (0..tasks).for_each(task),
    }
}

/// Writes the GEMM rows of one image and group from its quantized input `xq` (`c/group`
/// planes): row `pos` holds, for each input channel, kernel row and kernel column, the tap's
/// value (`zero` in the padding).
fn im2row_u8(exec: &Exec, p: &Conv2d, xq: &[u8], zero: i32, a: &mut [u8]) {
    let (np, k) = (p.positions(), p.k());
    let pad_value = zero.clamp(0, 255) as u8;
    let a_ptr = SyncPtr(a.as_mut_ptr());
    let task = |t: usize| {
        let rows = t * ROWS_PER_TASK..np.min((t + 1) * ROWS_PER_TASK);
        // SAFETY: each task writes only rows `rows`, a disjoint range of `a` (np * k bytes).
        let a = unsafe { std::slice::from_raw_parts_mut(a_ptr.get().add(rows.start * k), rows.len() * k) };
        let (h, w) = (p.h as isize, p.w as isize);
        for (r, pos) in rows.clone().enumerate() {
            let row = &mut a[r * k..(r + 1) * k];
            let by = (pos / p.ow * p.stride[0]) as isize - p.pad[0] as isize;
            let bx = (pos % p.ow * p.stride[1]) as isize - p.pad[1] as isize;
            let span = ((p.kw - 1) * p.dilation[1]) as isize;
            // Every tap of the row inside the input, contiguous: a plain copy per kernel row.
            let dense = p.dilation[1] == 1 && bx >= 0 && bx + span < w;
            let mut i = 0;
            for ci in 0..p.c / p.group {
                let plane = &xq[ci * p.h * p.w..(ci + 1) * p.h * p.w];
                for ky in 0..p.kh {
                    let iy = by + (ky * p.dilation[0]) as isize;
                    if iy < 0 || iy >= h {
                        row[i..i + p.kw].fill(pad_value);
                        i += p.kw;
                        continue;
                    }
                    let line = &plane[iy as usize * p.w..(iy as usize + 1) * p.w];
                    if dense {
                        row[i..i + p.kw].copy_from_slice(&line[bx as usize..bx as usize + p.kw]);
                        i += p.kw;
                        continue;
                    }
                    for kx in 0..p.kw {
                        let ix = bx + (kx * p.dilation[1]) as isize;
                        row[i] = if ix < 0 || ix >= w { pad_value } else { line[ix as usize] };
                        i += 1;
                    }
                }
            }
        }
    };
    let tasks = np.div_ceil(ROWS_PER_TASK);
    match exec.pool {
        Some(pool) if tasks > 1 => pool.run(tasks, &task),
        _ => (0..tasks).for_each(task),
    }
}

/// `y[c][pos] = t[pos][c]` for the `mg` channels, then `ep` on each finished channel row.
fn transpose_apply(exec: &Exec, t: &[f32], np: usize, mg: usize, ep: &Epilogue, y: &mut [f32]) {
    let y_ptr = SyncPtr(y.as_mut_ptr());
    let task = |tk: usize| {
        let c0 = tk * CHANNELS_PER_TASK;
        let cn = CHANNELS_PER_TASK.min(mg - c0);
        // SAFETY: each task writes only channel rows c0..c0 + cn, a disjoint range of `y`.
        let yb = unsafe { std::slice::from_raw_parts_mut(y_ptr.get().add(c0 * np), cn * np) };
        for pos in 0..np {
            let src = &t[pos * mg + c0..pos * mg + c0 + cn];
            for (j, &v) in src.iter().enumerate() {
                yb[j * np + pos] = v;
            }
        }
        ep.apply_tile(yb, np, c0, cn, 0, np);
    };
    let tasks = mg.div_ceil(CHANNELS_PER_TASK);
    match exec.pool {
        Some(pool) if tasks > 1 => pool.run(tasks, &task),
        _ => (0..tasks).for_each(task),
    }
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
            }
        }
    }
}
