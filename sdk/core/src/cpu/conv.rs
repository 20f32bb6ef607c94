//! 2-D convolution (NCHW, f32) on the GEMM: `Y[m, oy*ow+ox] = W[m, :] · im2col(X)[:, oy*ow+ox]`
//! per image and group, with im2col writing B's panels directly (a 1x1 stride-1 unpadded
//! convolution packs X itself). Depthwise convolutions (one input channel per group, one
//! output per group) use a direct kernel instead: a GEMM with one row would waste the tile.
//! The epilogue (bias, residual, activation) is applied as each output tile is finished.

use super::Exec;
use super::epilogue::Epilogue;
use super::gemm::{self, SyncPtr, packed_b_len};
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
    /// Scratch floats [`conv2d`] needs (the packed B of one image and group).
    pub fn scratch_floats(&self) -> usize {
        if self.is_depthwise() { 0 } else { packed_b_len(self.k(), self.positions(), gemm::NR_MAX) }
    }
}

/// Runs the convolution. `x`: `[n, c, h, w]`, `w`: `[m, c/group, kh, kw]`, `y`: `[n, m, oh,
/// ow]`; the epilogue's bias/slope have `m` values and its residual is shaped like `y`
/// (`ld_residual` = oh*ow). `scratch` has [`Conv2d::scratch_floats`] floats.
pub fn conv2d(exec: &Exec, p: &Conv2d, x: &[f32], w: &[f32], ep: &Epilogue, y: &mut [f32], scratch: &mut [f32]) {
    debug_assert_eq!(x.len(), p.n * p.c * p.h * p.w);
    debug_assert_eq!(y.len(), p.n * p.m * p.positions());
    if p.is_depthwise() {
        return depthwise(exec, p, x, w, ep, y);
    }
    let (cg, mg, k, np) = (p.c / p.group, p.m / p.group, p.k(), p.positions());
    let nr = gemm::kernel(exec.isa).nr;
    for ni in 0..p.n {
        for g in 0..p.group {
            let x_img = &x[(ni * p.c + g * cg) * p.h * p.w..(ni * p.c + (g + 1) * cg) * p.h * p.w];
            let bp = &mut scratch[..packed_b_len(k, np, nr)];
            if p.is_pointwise() {
                gemm::pack_b(x_img, np, k, np, nr, bp, exec.pool);
            } else {
                im2col_packed(exec, p, x_img, nr, bp);
            }
            let row0 = g * mg;
            let y_off = (ni * p.m + row0) * np;
            let sub = Epilogue {
                bias: ep.bias.map(|b| &b[row0..row0 + mg]),
                residual: ep.residual.map(|r| &r[y_off..y_off + mg * np]),
                ld_residual: np,
                activation: ep.activation,
                slope: ep.slope.map(|s| &s[row0..row0 + mg]),
            };
            let a = &w[row0 * k..(row0 + mg) * k];
            gemm::gemm(exec.isa, exec.pool, mg, np, k, a, k, bp, &mut y[y_off..y_off + mg * np], np, &sub);
        }
    }
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
        let out = &mut dst[pi * k * nr..(pi + 1) * k * nr];
        // Top-left input position of each column's window (may be negative: padding).
        let mut base_y = [0isize; gemm::NR_MAX];
        let mut base_x = [0isize; gemm::NR_MAX];
        let mut valid = nr;
        for jj in 0..nr {
            let col = pi * nr + jj;
            if col >= np {
                valid = valid.min(jj);
                continue;
            }
            base_y[jj] = (col / p.ow * p.stride[0]) as isize - p.pad[0] as isize;
            base_x[jj] = (col % p.ow * p.stride[1]) as isize - p.pad[1] as isize;
        }
        let (h, w) = (p.h as isize, p.w as isize);
        let mut row = 0;
        for ci in 0..p.c / p.group {
            let plane = &x[ci * p.h * p.w..(ci + 1) * p.h * p.w];
            for ky in 0..p.kh {
                let dy = (ky * p.dilation[0]) as isize;
                for kx in 0..p.kw {
                    let dx = (kx * p.dilation[1]) as isize;
                    let o = &mut out[row * nr..(row + 1) * nr];
                    for jj in 0..valid {
                        let (iy, ix) = (base_y[jj] + dy, base_x[jj] + dx);
                        o[jj] =
                            if iy >= 0 && iy < h && ix >= 0 && ix < w { plane[(iy * w + ix) as usize] } else { 0.0 };
                    }
                    o[valid..].fill(0.0);
                    row += 1;
                }
            }
        }
    };
    match exec.pool {
        Some(pool) if panels > 1 => pool.run(panels, &task),
        _ => (0..panels).for_each(task),
    }
}

/// Direct depthwise convolution, one task per (image, channel) plane.
fn depthwise(exec: &Exec, p: &Conv2d, x: &[f32], w: &[f32], ep: &Epilogue, y: &mut [f32]) {
    let planes = p.n * p.c;
    let (in_sz, out_sz, k_sz) = (p.h * p.w, p.positions(), p.kh * p.kw);
    let y_ptr = SyncPtr(y.as_mut_ptr());
    let y_len = y.len();
    let isa = exec.isa;
    let task = |pl: usize| {
        // SAFETY: each task writes only its own output plane.
        let y = unsafe { std::slice::from_raw_parts_mut(y_ptr.get(), y_len) };
        let ch = pl % p.c;
        let xin = &x[pl * in_sz..(pl + 1) * in_sz];
        let out = &mut y[pl * out_sz..(pl + 1) * out_sz];
        let wk = &w[ch * k_sz..(ch + 1) * k_sz];
        depthwise_plane_dispatch(isa, p, xin, wk, out);
        // The epilogue sees this plane as row `ch` of an m x positions matrix.
        let sub = Epilogue { residual: ep.residual.map(|r| &r[(pl - ch) * out_sz..]), ..*ep };
        sub.apply_tile(out, out_sz, ch, 1, 0, out_sz);
    };
    match exec.pool {
        Some(pool) if planes > 1 => pool.run(planes, &task),
        _ => (0..planes).for_each(task),
    }
}

fn depthwise_plane_dispatch(isa: Isa, p: &Conv2d, x: &[f32], w: &[f32], out: &mut [f32]) {
    match isa {
        // SAFETY: the ISA was checked as supported when it was chosen (`Isa::supported`).
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => unsafe { depthwise_plane_avx512(p, x, w, out) },
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => unsafe { depthwise_plane_avx2(p, x, w, out) },
        _ => depthwise_plane(p, x, w, out),
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma")]
unsafe fn depthwise_plane_avx512(p: &Conv2d, x: &[f32], w: &[f32], out: &mut [f32]) {
    depthwise_plane(p, x, w, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn depthwise_plane_avx2(p: &Conv2d, x: &[f32], w: &[f32], out: &mut [f32]) {
    depthwise_plane(p, x, w, out)
}

/// One plane: for each output row and kernel tap, an axpy over the output columns whose tap
/// falls inside the input (contiguous at stride 1, so the compiler vectorizes it for the
/// ISA of the function it is inlined into).
#[inline(always)]
fn depthwise_plane(p: &Conv2d, x: &[f32], w: &[f32], out: &mut [f32]) {
    let (sy, sx) = (p.stride[0], p.stride[1]);
    let ow = p.ow;
    for oy in 0..p.oh {
        let orow = &mut out[oy * ow..(oy + 1) * ow];
        orow.fill(0.0);
        for ky in 0..p.kh {
            let iy = (oy * sy + ky * p.dilation[0]) as isize - p.pad[0] as isize;
            if iy < 0 || iy >= p.h as isize {
                continue;
            }
            let irow = &x[iy as usize * p.w..(iy as usize + 1) * p.w];
            for kx in 0..p.kw {
                let wv = w[ky * p.kw + kx];
                let off = (kx * p.dilation[1]) as isize - p.pad[1] as isize;
                // Output columns with 0 <= ox*sx + off < w.
                let lo = if off < 0 { ((-off) as usize).div_ceil(sx) } else { 0 };
                let last_in = p.w as isize - 1 - off;
                if last_in < 0 {
                    continue;
                }
                let hi = ow.min(last_in as usize / sx + 1);
                if lo >= hi {
                    continue;
                }
                if sx == 1 {
                    let start = (lo as isize + off) as usize;
                    let src = &irow[start..start + (hi - lo)];
                    for (o, &v) in orow[lo..hi].iter_mut().zip(src) {
                        *o += wv * v;
                    }
                } else {
                    for (ox, o) in orow[lo..hi].iter_mut().enumerate() {
                        *o += wv * irow[(((lo + ox) * sx) as isize + off) as usize];
                    }
                }
            }
        }
    }
}
