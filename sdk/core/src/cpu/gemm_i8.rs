//! INT8 GEMM: `C[m x n] = A[m x k] · B[k x n]` with uint8 activations A (row-major, any row
//! stride), int8 weights B packed once by [`pack_b`], int32 accumulation, and a requantizing
//! epilogue ([`Requant`]) that writes int32, uint8, int8 or float32.
//!
//! Rows of C are positions (pixels, tokens), columns are output channels, so per-channel
//! weight scales and the bias are per column. The activation zero point is applied through
//! B's column sums: `sum_k (a - za) * w = sum_k a * w - za * sum_k w`.
//!
//! Kernels (chosen from the [`Isa`] like the f32 GEMM, so `EDGERT_ISA` forces any path):
//! AVX-512 VNNI 8x32 (`vpdpbusd`, 4 K values per 32-bit lane), AVX2 4x16 (exact int16
//! `vpmaddwd`, 2 K values per lane), and a portable 4x16. B's packing is the kernel's: a
//! panel of `nr` columns holds, for each group of `kpack` K values, `nr` lanes of `kpack`
//! weights (zero past K and N).

use super::isa::Isa;
use super::pool::ThreadPool;

/// Rows of one parallel task.
pub const MC: usize = 64;
/// The most rows of any kernel.
pub const MR_MAX: usize = 8;
/// The widest panel of any kernel.
pub const NR_MAX: usize = 32;

/// A micro-kernel: the `mr x nr` int32 tile `C (+)= A[rows, 0..kg*kpack] · Bpanel`. `a`
/// points to `mr` row pointers, each with `kg * kpack` readable bytes; `b` to the panel's
/// first K group; `c` to the tile (row stride `ldc`). With `acc_in` the tile is added to C.
pub type I8KernelFn = unsafe fn(kg: usize, a: *const *const u8, b: *const u8, c: *mut i32, ldc: usize, acc_in: bool);

/// Which micro-kernel (and packing) a GEMM uses.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum I8Kind {
    /// AVX-512 VNNI 8x32, int8 weights, 4 K per lane.
    Vnni512,
    /// AVX2 4x16, int16 weights, 2 K per lane.
    Avx2,
    /// AVX2 4x16 for A bytes of at most 127 (`vpmaddubsw`), int8 B, 4 K per lane: only for
    /// `conv_i8` with 7-bit weights (see [`I8Kernel::for_conv_weights`]).
    Avx2U7,
    /// aarch64 NEON 4x16 with DotProd (`sdot`), *signed* A bytes, int8 B, 4 K per lane:
    /// only for `conv_i8`, whose A is the weights (see [`I8Kernel::for_conv_weights`]).
    NeonDot,
    /// Portable 4x16, int8 weights, 4 K per lane.
    Portable,
}

/// A micro-kernel with its geometry.
#[derive(Clone, Copy, Debug)]
pub struct I8Kernel {
    /// Which one.
    pub kind: I8Kind,
    /// Rows of a tile.
    pub mr: usize,
    /// Columns of a tile.
    pub nr: usize,
    /// K values per 32-bit lane.
    pub kpack: usize,
    /// Bytes per packed weight (1: int8, 2: int16).
    pub wbytes: usize,
}

/// Whether the AVX-512 VNNI kernel may run: the CPU has AVX-512F and VNNI, and
/// `EDGERT_I8_VNNI=0` is not set. (The kernel was written on machines without VNNI and was
/// opt-in until its differential tests passed on an AMD EPYC with AVX-512 VNNI, 2026-12-03.)
pub fn vnni_supported() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        !vnni_opted_out() && is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512vnni")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// `EDGERT_I8_VNNI=0`: do not use the VNNI kernel (VNNI CPUs then run the AVX2 ones), to
/// compare the two or to work around a kernel fault. Read once: every QConv run asks, and
/// reading the environment allocates.
pub fn vnni_opted_out() -> bool {
    static OFF: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *OFF.get_or_init(|| std::env::var("EDGERT_I8_VNNI").is_ok_and(|v| v.trim() == "0"))
}

impl I8Kernel {
    /// The kernel for an instruction set: AVX-512 uses VNNI where the CPU has it and the AVX2
    /// kernel otherwise; NEON (no `sdot` kernel yet) and others use the portable one.
    pub fn for_isa(isa: Isa) -> I8Kernel {
        match isa {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 if vnni_supported() => I8Kernel::of(I8Kind::Vnni512),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 | Isa::Avx2 if is_x86_feature_detected!("avx2") => I8Kernel::of(I8Kind::Avx2),
            _ => I8Kernel::of(I8Kind::Portable),
        }
    }

    /// The geometry of a kind.
    pub fn of(kind: I8Kind) -> I8Kernel {
        match kind {
            I8Kind::Vnni512 => I8Kernel { kind, mr: 8, nr: 32, kpack: 4, wbytes: 1 },
            I8Kind::Avx2 => I8Kernel { kind, mr: 4, nr: 16, kpack: 2, wbytes: 2 },
            I8Kind::Avx2U7 => I8Kernel { kind, mr: 4, nr: 16, kpack: 4, wbytes: 1 },
            I8Kind::NeonDot => I8Kernel { kind, mr: 4, nr: 16, kpack: 4, wbytes: 1 },
            I8Kind::Portable => I8Kernel { kind, mr: 4, nr: 16, kpack: 4, wbytes: 1 },
        }
    }

    /// Whether this CPU can run the kind.
    pub fn supported(kind: I8Kind) -> bool {
        match kind {
            I8Kind::Vnni512 => vnni_supported(),
            #[cfg(target_arch = "x86_64")]
            I8Kind::Avx2 | I8Kind::Avx2U7 => is_x86_feature_detected!("avx2"),
            #[cfg(not(target_arch = "x86_64"))]
            I8Kind::Avx2 | I8Kind::Avx2U7 => false,
            #[cfg(target_arch = "aarch64")]
            I8Kind::NeonDot => std::arch::is_aarch64_feature_detected!("dotprod"),
            #[cfg(not(target_arch = "aarch64"))]
            I8Kind::NeonDot => false,
            I8Kind::Portable => true,
        }
    }

    pub(crate) fn func(&self) -> I8KernelFn {
        match self.kind {
            #[cfg(target_arch = "x86_64")]
            I8Kind::Vnni512 => super::gemm_i8_x86::kernel_vnni_8x32,
            #[cfg(target_arch = "x86_64")]
            I8Kind::Avx2 => super::gemm_i8_x86::kernel_avx2_x16::<4>,
            #[cfg(target_arch = "x86_64")]
            I8Kind::Avx2U7 => super::gemm_i8_x86::kernel_avx2_u7_x16::<4>,
            #[cfg(target_arch = "aarch64")]
            I8Kind::NeonDot => super::gemm_i8_neon::kernel_neon_sdot_4x16,
            _ => kernel_portable_4x16,
        }
    }

    /// The kernel for `conv_i8`, whose A operand is the weights (shifted by
    /// [`I8Kernel::weight_shift`]): on NEON with DotProd, [`I8Kind::NeonDot`] (signed A, no
    /// shift); where the ISA's kernel is the AVX2 one and every weight is within [-63, 63]
    /// (7-bit weights, `quant::weights::quantize_per_channel` with `qmax` 63), the faster
    /// [`I8Kind::Avx2U7`]; otherwise [`I8Kernel::for_isa`].
    pub fn for_conv_weights(isa: Isa, fits_7_bits: bool) -> I8Kernel {
        if isa == Isa::Neon && I8Kernel::supported(I8Kind::NeonDot) {
            return I8Kernel::of(I8Kind::NeonDot);
        }
        let k = I8Kernel::for_isa(isa);
        if k.kind == I8Kind::Avx2 && fits_7_bits { I8Kernel::of(I8Kind::Avx2U7) } else { k }
    }

    /// What `conv_i8` adds to each weight to make A what the kernel reads: 64 for
    /// [`I8Kind::Avx2U7`] (7-bit weights into 1..=127), 0 for [`I8Kind::NeonDot`] (signed A),
    /// 128 otherwise (unsigned A).
    pub fn weight_shift(&self) -> i32 {
        match self.kind {
            I8Kind::Avx2U7 => 64,
            I8Kind::NeonDot => 0,
            _ => 128,
        }
    }
}

/// Weights packed for one kernel, with their column sums (for the activation zero point).
#[derive(Clone, Debug)]
pub struct PackedB {
    /// The kernel this packing is for.
    pub kernel: I8Kernel,
    /// Rows of B (the contracted dim).
    pub k: usize,
    /// Columns of B (output channels).
    pub n: usize,
    /// Column sums `sum_k B[k][j]`.
    pub col_sums: Vec<i32>,
    data: Vec<u8>,
}

impl PackedB {
    /// K groups per panel.
    fn groups(&self) -> usize {
        self.k.div_ceil(self.kernel.kpack)
    }
    /// Bytes of one panel.
    fn panel_bytes(&self) -> usize {
        self.groups() * self.kernel.nr * self.kernel.kpack * self.kernel.wbytes
    }
}

/// Packs the row-major `k x n` int8 matrix `b` (row stride `ldb`) for `kernel`. Done once
/// per weight tensor (at engine build or load), so it allocates.
pub fn pack_b(kernel: I8Kernel, b: &[i8], ldb: usize, k: usize, n: usize) -> PackedB {
    assert!(k == 0 || n == 0 || b.len() >= (k - 1) * ldb + n, "B too small");
    let (nr, kp, wb) = (kernel.nr, kernel.kpack, kernel.wbytes);
    let groups = k.div_ceil(kp);
    let panels = n.div_ceil(nr);
    let mut data = vec![0u8; panels * groups * nr * kp * wb];
    for p in 0..panels {
        for g in 0..groups {
            for j in 0..nr {
                for t in 0..kp {
                    let (kk, col) = (g * kp + t, p * nr + j);
                    let v = if kk < k && col < n { b[kk * ldb + col] } else { 0 };
                    let at = (((p * groups + g) * nr + j) * kp + t) * wb;
                    if wb == 1 {
                        data[at] = v as u8;
                    } else {
                        data[at..at + 2].copy_from_slice(&(v as i16).to_le_bytes());
                    }
                }
            }
        }
    }
    let col_sums = (0..n).map(|j| (0..k).map(|kk| b[kk * ldb + j] as i32).sum()).collect();
    PackedB { kernel, k, n, col_sums, data }
}

/// An activation clamp applied after requantization, in real (dequantized) units.
#[derive(Clone, Copy, PartialEq, Debug, Default)]
pub enum QAct {
    /// None.
    #[default]
    None,
    /// `max(x, 0)`.
    Relu,
    /// `min(max(x, lo), hi)`.
    Clip(f32, f32),
}

/// The epilogue: for accumulator `acc` at column `j`,
/// `v = acc - a_zero * colsum[j] + bias[j]` (int32, wrapping), then by output type:
/// int32 stores `v`; float32 stores `act(v * mult[j])`; uint8/int8 store
/// `clamp(round_half_even(v * mult[j]) + y_zero)` with the clamp the type's range
/// intersected with the activation's (ReLU: `>= y_zero`; Clip: its bounds quantized).
#[derive(Clone, Copy, Debug)]
pub struct Requant<'a> {
    /// The activations' zero point.
    pub a_zero: i32,
    /// Per-column bias in accumulator units (`bias_real / (a_scale * w_scale[j])`).
    pub bias: Option<&'a [i32]>,
    /// Per-column multiplier (one value: all columns). Quantized outputs:
    /// `a_scale * w_scale[j] / y_scale`; float32 output: `a_scale * w_scale[j]`.
    pub mult: &'a [f32],
    /// The output scale (used only to quantize a Clip's bounds).
    pub y_scale: f32,
    /// The output zero point (quantized outputs).
    pub y_zero: i32,
    /// The activation.
    pub act: QAct,
}

impl Requant<'_> {
    /// Plain int32 accumulators with the zero-point correction only.
    pub fn raw(a_zero: i32) -> Requant<'static> {
        Requant { a_zero, bias: None, mult: &[1.0], y_scale: 1.0, y_zero: 0, act: QAct::None }
    }

    /// The clamp of a quantized output with range `lo..=hi`.
    fn q_bounds(&self, lo: i32, hi: i32) -> (i32, i32) {
        let q = |x: f32| {
            ((x / self.y_scale).round_ties_even() as i64 + self.y_zero as i64).clamp(lo as i64, hi as i64) as i32
        };
        match self.act {
            QAct::None => (lo, hi),
            QAct::Relu => (self.y_zero.clamp(lo, hi), hi),
            QAct::Clip(a, b) => (q(a), q(b)),
        }
    }
}

/// Where the GEMM writes (row stride `ldc` for all).
#[derive(Debug)]
pub enum I8Out<'a> {
    /// Corrected accumulators.
    I32(&'a mut [i32]),
    /// Requantized to uint8.
    U8(&'a mut [u8]),
    /// Requantized to int8.
    I8(&'a mut [i8]),
    /// Dequantized to float32.
    F32(&'a mut [f32]),
}

impl I8Out<'_> {
    fn len(&self) -> usize {
        match self {
            I8Out::I32(v) => v.len(),
            I8Out::U8(v) => v.len(),
            I8Out::I8(v) => v.len(),
            I8Out::F32(v) => v.len(),
        }
    }
}

/// The output as a raw pointer tasks on several threads can share (disjoint tiles each).
#[derive(Clone, Copy)]
enum OutPtr {
    I32(*mut i32),
    U8(*mut u8),
    I8(*mut i8),
    F32(*mut f32),
}
// SAFETY: tasks write disjoint rows of the output (see `gemm_u8s8`).
unsafe impl Send for OutPtr {}
unsafe impl Sync for OutPtr {}

/// `C = A · B` then `ep`, into `out` (row stride `ldc`). `a` has row stride `lda`; `b`'s
/// packing chose the kernel (`pack_b(I8Kernel::for_isa(isa), ..)`). Runs on `pool` when
/// given. Allocates nothing.
#[allow(clippy::too_many_arguments)]
pub fn gemm_u8s8(
    pool: Option<&ThreadPool>,
    m: usize,
    a: &[u8],
    lda: usize,
    b: &PackedB,
    out: I8Out,
    ldc: usize,
    ep: &Requant,
) {
    let (n, k) = (b.n, b.k);
    if m == 0 || n == 0 {
        return;
    }
    let kern = b.kernel;
    assert!(I8Kernel::supported(kern.kind), "kernel {:?} is not supported by this CPU", kern.kind);
    // Its A operand must stay within 7 bits; here A is the activations (0..=255).
    assert!(kern.kind != I8Kind::Avx2U7, "the 7-bit kernel is for conv_i8's weights only");
    assert!(k == 0 || a.len() >= (m - 1) * lda + k, "A too small");
    assert!(out.len() >= (m - 1) * ldc + n, "C too small");
    assert!(ep.mult.len() == 1 || ep.mult.len() == n, "one multiplier, or one per column");
    assert!(ep.bias.is_none_or(|bias| bias.len() == n), "one bias per column");
    let ptr = match out {
        I8Out::I32(v) => OutPtr::I32(v.as_mut_ptr()),
        I8Out::U8(v) => OutPtr::U8(v.as_mut_ptr()),
        I8Out::I8(v) => OutPtr::I8(v.as_mut_ptr()),
        I8Out::F32(v) => OutPtr::F32(v.as_mut_ptr()),
    };
    // Row blocks of MC; when there are too few of them to keep every thread busy (a late
    // convolution layer has few positions and many channels), the panels are split too.
    let row_tasks = m.div_ceil(MC);
    let panels = n.div_ceil(kern.nr);
    let threads = pool.map_or(1, |p| p.threads());
    let col_chunks = if row_tasks < 2 * threads { (2 * threads).div_ceil(row_tasks).min(panels) } else { 1 };
    let per_chunk = panels.div_ceil(col_chunks);
    let tasks = row_tasks * col_chunks;
    let task = |t: usize| {
        let (rb, cc) = (t / col_chunks, t % col_chunks);
        let rows = rb * MC..m.min((rb + 1) * MC);
        let cols = (cc * per_chunk).min(panels)..((cc + 1) * per_chunk).min(panels);
        // SAFETY: each task writes only rows `rows` x panels `cols` of the output, checked in
        // range above; tasks' (rows, panels) pairs are disjoint.
        unsafe { block(kern, a, lda, b, rows, cols, ptr, ldc, ep) };
    };
    crate::cpu::pool::run_tasks(pool, tasks, &task);
}

/// One task: rows `rows` of the output, the columns of panels `panels`.
///
/// # Safety
/// `out` must be valid for rows `rows` (row stride `ldc`, `b.n` columns) and no other thread
/// may write those rows' columns in `panels`.
#[allow(clippy::too_many_arguments)]
#[inline(never)]
unsafe fn block(
    kern: I8Kernel,
    a: &[u8],
    lda: usize,
    b: &PackedB,
    rows: std::ops::Range<usize>,
    panels: std::ops::Range<usize>,
    out: OutPtr,
    ldc: usize,
    ep: &Requant,
) {
    let (mr, nr, kp) = (kern.mr, kern.nr, kern.kpack);
    let (n, k) = (b.n, b.k);
    let f = kern.func();
    let main_groups = k / kp;
    let tail = k % kp;
    let panel_bytes = b.panel_bytes();
    let mut r0 = rows.start;
    while r0 < rows.end {
        let h = mr.min(rows.end - r0);
        let mut rp = [std::ptr::null::<u8>(); MR_MAX];
        // The K tail, zero-padded to a whole group, one small array per row.
        let mut tails = [[0u8; 4]; MR_MAX];
        for i in 0..mr {
            // Rows past the end repeat the last row: computed, never stored.
            let row = r0 + i.min(h - 1);
            rp[i] = a[row * lda..].as_ptr();
            tails[i][..tail].copy_from_slice(&a[row * lda + main_groups * kp..row * lda + k]);
        }
        let mut tail_ptrs = [std::ptr::null::<u8>(); MR_MAX];
        for i in 0..mr {
            tail_ptrs[i] = tails[i].as_ptr();
        }
        for p in panels.clone() {
            let j0 = p * nr;
            let w = nr.min(n - j0);
            let panel = &b.data[p * panel_bytes..(p + 1) * panel_bytes];
            let mut tile = [0i32; MR_MAX * NR_MAX];
            // SAFETY: rows have k >= main_groups * kp readable bytes; the panel holds every K
            // group; the tile has mr x nr values with row stride nr.
            unsafe {
                if main_groups > 0 {
                    f(main_groups, rp.as_ptr(), panel.as_ptr(), tile.as_mut_ptr(), nr, false);
                }
                if tail > 0 {
                    let bt = panel.as_ptr().add(main_groups * nr * kp * kern.wbytes);
                    f(1, tail_ptrs.as_ptr(), bt, tile.as_mut_ptr(), nr, main_groups > 0);
                }
            }
            for i in 0..h {
                let acc = &tile[i * nr..i * nr + w];
                let at = (r0 + i) * ldc + j0;
                // SAFETY: row r0 + i is in this task's rows; columns j0..j0 + w < n.
                unsafe { epilogue(acc, b, j0, ep, out, at) };
            }
        }
        r0 += mr;
    }
}

/// Applies `ep` to one row segment of accumulators (columns `j0..`) and stores it at `at`.
///
/// # Safety
/// `out` must be valid for `acc.len()` elements from `at`.
#[inline(always)]
unsafe fn epilogue(acc: &[i32], b: &PackedB, j0: usize, ep: &Requant, out: OutPtr, at: usize) {
    let w = acc.len();
    let sums = &b.col_sums[j0..j0 + w];
    let v = |jj: usize| {
        let bias = ep.bias.map_or(0, |bias| bias[j0 + jj]);
        acc[jj].wrapping_sub(ep.a_zero.wrapping_mul(sums[jj])).wrapping_add(bias)
    };
    let mult = |jj: usize| if ep.mult.len() == 1 { ep.mult[0] } else { ep.mult[j0 + jj] };
    // SAFETY (all arms): `at..at + w` is in bounds per the contract.
    unsafe {
        match out {
            OutPtr::I32(p) => {
                for jj in 0..w {
                    *p.add(at + jj) = v(jj);
                }
            }
            OutPtr::F32(p) => {
                for jj in 0..w {
                    let y = v(jj) as f32 * mult(jj);
                    *p.add(at + jj) = match ep.act {
                        QAct::None => y,
                        QAct::Relu => y.max(0.0),
                        QAct::Clip(lo, hi) => y.max(lo).min(hi),
                    };
                }
            }
            OutPtr::U8(p) => {
                let (lo, hi) = ep.q_bounds(0, 255);
                for jj in 0..w {
                    *p.add(at + jj) = requant_one(v(jj), mult(jj), ep.y_zero, lo, hi) as u8;
                }
            }
            OutPtr::I8(p) => {
                let (lo, hi) = ep.q_bounds(-128, 127);
                for jj in 0..w {
                    *p.add(at + jj) = requant_one(v(jj), mult(jj), ep.y_zero, lo, hi) as i8;
                }
            }
        }
    }
}

/// `clamp(round_half_even(v * mult) + zero, lo, hi)` in f32 (the product is within one
/// f32 rounding of the exact one: outputs are within one step of exact requantization).
#[inline(always)]
fn requant_one(v: i32, mult: f32, zero: i32, lo: i32, hi: i32) -> i32 {
    let q = (v as f32 * mult).round_ties_even();
    // `as` saturates (NaN -> 0); the clamp then bounds it.
    (q as i32).saturating_add(zero).clamp(lo, hi)
}

/// Portable 4x16 micro-kernel (int8 weights, 4 K per lane).
///
/// # Safety
/// As for [`I8KernelFn`] with mr 4, nr 16, kpack 4.
pub unsafe fn kernel_portable_4x16(
    kg: usize,
    a: *const *const u8,
    b: *const u8,
    c: *mut i32,
    ldc: usize,
    acc_in: bool,
) {
    const MR: usize = 4;
    const NR: usize = 16;
    // Per (column, K slot) partial sums: contiguous 64-wide loops the compiler vectorizes;
    // the 4 slots of each column are added at the end.
    let mut acc = [[0i32; NR * 4]; MR];
    unsafe {
        let rows: [*const u8; MR] = std::array::from_fn(|i| *a.add(i));
        for g in 0..kg {
            let bv = &*(b.add(g * NR * 4) as *const [i8; NR * 4]);
            for (r, acc_row) in acc.iter_mut().enumerate() {
                let av = &*(rows[r].add(4 * g) as *const [u8; 4]);
                for (o4, w4) in acc_row.chunks_exact_mut(4).zip(bv.chunks_exact(4)) {
                    for t in 0..4 {
                        // u8 x s8 fits int16 (|255 * -128| < 2^15): a 16-bit multiply, which
                        // baseline SSE2 has (it lacks a 32-bit one).
                        o4[t] += (av[t] as i16 * w4[t] as i16) as i32;
                    }
                }
            }
        }
        for (r, acc_row) in acc.iter().enumerate() {
            let out = std::slice::from_raw_parts_mut(c.add(r * ldc), NR);
            for (j, o) in out.iter_mut().enumerate() {
                let v = acc_row[j * 4] + acc_row[j * 4 + 1] + acc_row[j * 4 + 2] + acc_row[j * 4 + 3];
                *o = if acc_in { *o + v } else { v };
            }
        }
    }
}

#[cfg(test)]
#[path = "gemm_i8_tests.rs"]
mod tests;
