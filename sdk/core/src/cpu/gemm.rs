//! Single-precision GEMM for convolutions and matrix products: `C = A · B`, then an
//! [`Epilogue`]. A is row-major (any row stride), B is packed into column panels by
//! [`pack_b`] or by an im2col that writes panels directly (see `conv.rs`), C is row-major.
//!
//! Blocking (BLIS style): K is cut into blocks of [`KC`] so that one B panel block stays in
//! L1 while the A rows stream from L2; each micro-kernel call computes an `MR x NR` tile in
//! registers. Work is split into tiles of up to [`MC`] rows and [`NC`] columns run on the
//! thread pool. Micro-kernels: AVX-512 8x32 and AVX2 6x16 (`gemm_x86.rs`), NEON 8x8
//! (`gemm_neon.rs`), and a portable 4x16.
//!
//! A may be float16 ([`AMatrix::F16`]: an `--precision fp16` layer's weights): each task
//! converts its `MC x KC` block of A to f32 (F16C where the CPU has it, through `half`)
//! right before the micro-kernels use it, so the products and sums stay f32 and the cost
//! is one conversion per A value per column block.

use super::epilogue::Epilogue;
use super::isa::Isa;
use super::pool::ThreadPool;

/// Depth of one K block.
pub const KC: usize = 256;
/// Rows of one parallel task.
pub const MC: usize = 64;
/// Columns of one parallel task (a multiple of every kernel's NR).
pub const NC: usize = 256;
/// The widest panel of any kernel (scratch sizes are computed with it).
pub const NR_MAX: usize = 32;
/// The most rows of any kernel.
pub const MR_MAX: usize = 8;

/// A micro-kernel: computes the full `mr x nr` tile `C (+)= A[rows, k0..k0+kc] · Bpanel`.
///
/// `a` points to `mr` row pointers (already offset to the block's first column), `b` to the
/// first of `kc` rows of `nr` values, `ldb` floats apart (`nr` in a packed panel), `c` to the
/// tile with row stride `ldc`. With `accumulate` the tile is added to C, else it overwrites it.
pub type KernelFn =
    unsafe fn(kc: usize, a: *const *const f32, b: *const f32, ldb: usize, c: *mut f32, ldc: usize, accumulate: bool);

/// The B operand of [`gemm`].
#[derive(Clone, Copy, Debug)]
pub enum BMatrix<'a> {
    /// Packed in panels of the kernel's `nr` ([`pack_b`], or an im2col writing panels).
    Packed(&'a [f32]),
    /// Row-major `k x n` with row stride `ld`: read in place (a 1x1 convolution's input);
    /// only a last partial panel is copied, one K block at a time.
    RowMajor {
        /// The data.
        data: &'a [f32],
        /// Row stride.
        ld: usize,
    },
    /// Packed panels `first..` only (`data` starts with panel `first`): the column block a
    /// [`gemm_packing`] task has just packed.
    PackedFrom {
        /// The panels.
        data: &'a [f32],
        /// Index of the first panel in `data`.
        first: usize,
    },
}

/// The A operand of [`gemm`]: row-major `m x k` with row stride `lda`.
#[derive(Clone, Copy, Debug)]
pub enum AMatrix<'a> {
    /// Float32.
    F32(&'a [f32]),
    /// Float16 storage, converted to f32 one block at a time.
    F16(&'a [half::f16]),
}

impl<'a> AMatrix<'a> {
    /// Elements.
    pub fn len(&self) -> usize {
        match self {
            AMatrix::F32(a) => a.len(),
            AMatrix::F16(a) => a.len(),
        }
    }
    /// No elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Elements `range` (for a group's rows of a convolution's weights).
    pub fn slice(self, range: std::ops::Range<usize>) -> Self {
        match self {
            AMatrix::F32(a) => AMatrix::F32(&a[range]),
            AMatrix::F16(a) => AMatrix::F16(&a[range]),
        }
    }
}

/// A micro-kernel with its tile size.
#[derive(Clone, Copy)]
pub struct Kernel {
    /// Rows of a tile.
    pub mr: usize,
    /// Columns of a tile (B panel width).
    pub nr: usize,
    /// The function.
    pub f: KernelFn,
}

impl std::fmt::Debug for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Kernel({}x{})", self.mr, self.nr)
    }
}

/// The micro-kernel for an instruction set (the portable one where `isa` is not compiled in).
pub fn kernel(isa: Isa) -> Kernel {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => Kernel { mr: 8, nr: 32, f: super::gemm_x86::kernel_avx512_8x32 },
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => Kernel { mr: 6, nr: 16, f: super::gemm_x86::kernel_avx2_6x16 },
        #[cfg(target_arch = "aarch64")]
        Isa::Neon => Kernel { mr: 8, nr: 8, f: super::gemm_neon::kernel_neon_8x8 },
        _ => Kernel { mr: 4, nr: 16, f: kernel_portable_4x16 },
    }
}

/// Floats a packed B of `k x n` takes with panels `nr` wide.
pub fn packed_b_len(k: usize, n: usize, nr: usize) -> usize {
    n.div_ceil(nr) * nr * k
}

/// Packs columns `panel * nr ..` of the row-major `k x n` matrix `src` (row stride `ld`)
/// into panel `panel` of `dst` (a buffer of [`packed_b_len`] floats); columns past `n` are 0.
pub fn pack_b_panel(src: &[f32], ld: usize, k: usize, n: usize, nr: usize, panel: usize, dst: &mut [f32]) {
    let j0 = panel * nr;
    let w = nr.min(n - j0);
    let out = &mut dst[panel * k * nr..(panel + 1) * k * nr];
    for (kk, row) in out.chunks_exact_mut(nr).enumerate() {
        let s = &src[kk * ld + j0..kk * ld + j0 + w];
        row[..w].copy_from_slice(s);
        row[w..].fill(0.0);
    }
}

/// Packs all of a row-major `k x n` matrix (row stride `ld`) into panels `nr` wide.
pub fn pack_b(src: &[f32], ld: usize, k: usize, n: usize, nr: usize, dst: &mut [f32], pool: Option<&ThreadPool>) {
    let panels = n.div_ceil(nr);
    let dst_ptr = SyncPtr(dst.as_mut_ptr());
    let len = dst.len();
    let task = |p: usize| {
        // SAFETY: each task writes only its own panel, a disjoint range of `dst`.
        let dst = unsafe { std::slice::from_raw_parts_mut(dst_ptr.get(), len) };
        pack_b_panel(src, ld, k, n, nr, p, dst);
    };
    crate::cpu::pool::run_tasks(pool, panels, &task);
}

/// A raw pointer that tasks on several threads may share; each task writes a disjoint part.
#[derive(Clone, Copy)]
pub struct SyncPtr<T>(pub *mut T);
// SAFETY: users guarantee disjoint writes (documented at each use).
unsafe impl<T> Send for SyncPtr<T> {}
unsafe impl<T> Sync for SyncPtr<T> {}
impl<T> SyncPtr<T> {
    /// The pointer (a method, so closures capture the whole `Sync` wrapper).
    #[inline(always)]
    pub fn get(self) -> *mut T {
        self.0
    }
}

/// `C[m x n] = A[m x k] · B[k x n]`, then `ep`. `a` has row stride `lda`; B is packed with
/// the panel width of `kernel(isa)` or row-major; `c` has row stride `ldc`. Runs on `pool`
/// when given.
#[allow(clippy::too_many_arguments)]
pub fn gemm(
    isa: Isa,
    pool: Option<&ThreadPool>,
    m: usize,
    n: usize,
    k: usize,
    a: AMatrix,
    lda: usize,
    b: BMatrix,
    c: &mut [f32],
    ldc: usize,
    ep: &Epilogue,
) {
    if m == 0 || n == 0 {
        return;
    }
    let kern = kernel(isa);
    match b {
        BMatrix::Packed(bp) => assert!(bp.len() >= packed_b_len(k, n, kern.nr), "packed B too small"),
        BMatrix::PackedFrom { data, first } => {
            assert!(first == 0 && data.len() >= packed_b_len(k, n, kern.nr), "packed B too small")
        }
        BMatrix::RowMajor { data, ld } => assert!(k == 0 || (ld >= n && data.len() >= (k - 1) * ld + n), "B too small"),
    }
    assert_a_and_c(m, n, k, a, lda, c, ldc);
    let mc = row_block(kern);
    let mb = m.div_ceil(mc);
    let nb = n.div_ceil(NC);
    let c_ptr = SyncPtr(c.as_mut_ptr());
    let c_len = c.len();
    let task = |t: usize| {
        let (bi, bj) = (t / nb, t % nb);
        let rows = bi * mc..(m.min((bi + 1) * mc));
        let cols = bj * NC..(n.min((bj + 1) * NC));
        // SAFETY: tasks cover disjoint tiles of C; the slice is only used inside this tile.
        let c = unsafe { std::slice::from_raw_parts_mut(c_ptr.get(), c_len) };
        block(kern, k, a, lda, b, n, c, ldc, rows, cols, ep);
    };
    crate::cpu::pool::run_tasks(pool, mb * nb, &task);
}

/// `C = A · B`, then `ep`, where B's panels are written by `pack(panel, dst)` (`dst`: the
/// panel's `k * nr` floats) right before the column block that needs them is multiplied:
/// each task packs one block of [`NC`] columns into its part of `bp` (a buffer of
/// [`packed_b_len`] floats) and runs every row block on it while it is still in cache. An
/// im2col that would not fit in L2 whole (ResNet's 3x3 convolutions, BlazeFace's first)
/// is then never read back from memory. Parallel over column blocks only, so callers use it
/// when there are enough of them.
#[allow(clippy::too_many_arguments)]
pub fn gemm_packing(
    isa: Isa,
    pool: Option<&ThreadPool>,
    m: usize,
    n: usize,
    k: usize,
    a: AMatrix,
    lda: usize,
    pack: &(dyn Fn(usize, &mut [f32]) + Sync),
    bp: &mut [f32],
    c: &mut [f32],
    ldc: usize,
    ep: &Epilogue,
) {
    if m == 0 || n == 0 {
        return;
    }
    let kern = kernel(isa);
    let nr = kern.nr;
    assert!(bp.len() >= packed_b_len(k, n, nr), "packed B buffer too small");
    assert_a_and_c(m, n, k, a, lda, c, ldc);
    let mc = row_block(kern);
    let mb = m.div_ceil(mc);
    let panels = n.div_ceil(nr);
    let nb = column_blocks(panels, nr, pool.map_or(1, |p| p.threads()));
    let (c_ptr, c_len) = (SyncPtr(c.as_mut_ptr()), c.len());
    let bp_ptr = SyncPtr(bp.as_mut_ptr());
    let task = |bj: usize| {
        let (p0, p1) = (bj * panels / nb, (bj + 1) * panels / nb);
        let cols = p0 * nr..n.min(p1 * nr);
        // SAFETY: task `bj` alone writes and reads panels p0..p1 of `bp` (disjoint ranges),
        // and alone writes columns `cols` of C.
        let block_b = unsafe { std::slice::from_raw_parts_mut(bp_ptr.get().add(p0 * k * nr), (p1 - p0) * k * nr) };
        for (i, dst) in block_b.chunks_exact_mut(k * nr).enumerate() {
            pack(p0 + i, dst);
        }
        let b = BMatrix::PackedFrom { data: block_b, first: p0 };
        let c = unsafe { std::slice::from_raw_parts_mut(c_ptr.get(), c_len) };
        for bi in 0..mb {
            block(kern, k, a, lda, b, n, c, ldc, bi * mc..m.min((bi + 1) * mc), cols.clone(), ep);
        }
    };
    crate::cpu::pool::run_tasks(pool, nb, &task);
}

/// Rows of one task: [`MC`] rounded down to whole tiles of `kern`, so that only the last
/// row block can end in a partial tile (64 rows are 10 tiles of 6 and a partial one of 4 for
/// the AVX2 kernel; 60 are 10 whole ones).
fn row_block(kern: Kernel) -> usize {
    (MC / kern.mr * kern.mr).max(kern.mr)
}

/// How many column blocks [`gemm_packing`] splits `panels` panels of width `nr` into: at
/// most [`NC`] columns each, and a multiple of `threads` where there are panels enough, so
/// that every thread gets the same share. Blocks of 256, 256, 256 and 16 columns on two
/// threads (a 128-channel 3x3 convolution at 28x28) left one thread idle a quarter of the
/// time; 4 blocks of 196 columns do not.
pub(super) fn column_blocks(panels: usize, nr: usize, threads: usize) -> usize {
    let fewest = panels.div_ceil(NC / nr);
    fewest.next_multiple_of(threads.max(1)).min(panels).max(fewest)
}

/// The operand-size contract of [`gemm`] and [`gemm_packing`] for A (`m x k`, row stride
/// `lda`) and C (`m x n`, row stride `ldc`); `m >= 1`.
fn assert_a_and_c(m: usize, n: usize, k: usize, a: AMatrix, lda: usize, c: &[f32], ldc: usize) {
    assert!(k == 0 || a.len() >= (m - 1) * lda + k, "A too small");
    assert!(c.len() >= (m - 1) * ldc + n, "C too small");
}

/// One task: rows × cols of C over the whole K, epilogue included.
#[allow(clippy::too_many_arguments)]
#[inline(never)]
fn block(
    kern: Kernel,
    k: usize,
    a: AMatrix,
    lda: usize,
    b: BMatrix,
    n: usize,
    c: &mut [f32],
    ldc: usize,
    rows: std::ops::Range<usize>,
    cols: std::ops::Range<usize>,
    ep: &Epilogue,
) {
    let (mr, nr) = (kern.mr, kern.nr);
    let (p0, p1) = (cols.start / nr, cols.end.div_ceil(nr));
    if k == 0 {
        for r in rows.clone() {
            c[r * ldc + cols.start..r * ldc + cols.end].fill(0.0);
        }
    }
    // A row-major B's last partial panel, copied one K block at a time.
    // Left uninitialized (it is 32 KiB): each use writes every value it then reads.
    let mut edge = std::mem::MaybeUninit::<[f32; KC * NR_MAX]>::uninit();
    // Partial tiles are computed here whole, then their valid part copied to C.
    let mut tmp = [0f32; MR_MAX * NR_MAX];
    // A float16 A's rows × K block, converted (left uninitialized, as `edge`: 64 KiB).
    let mut a_f32 = std::mem::MaybeUninit::<[f32; MC * KC]>::uninit();
    debug_assert!(rows.len() <= MC);
    let mut k0 = 0;
    while k0 < k {
        let kc = KC.min(k - k0);
        let accumulate = k0 > 0;
        // Where row r's K block starts: `a_rows[(r - row_base) * a_ld + a_col..]`.
        let (a_rows, a_ld, row_base, a_col): (&[f32], usize, usize, usize) = match a {
            AMatrix::F32(a) => (a, lda, 0, k0),
            AMatrix::F16(a16) => {
                use half::slice::HalfFloatSliceExt;
                let dst = a_f32.as_mut_ptr() as *mut f32;
                for (i, r) in rows.clone().enumerate() {
                    // SAFETY: i < MC and kc <= KC, so the row lies inside the buffer.
                    let row = unsafe { std::slice::from_raw_parts_mut(dst.add(i * KC), kc) };
                    a16[r * lda + k0..r * lda + k0 + kc].convert_to_f32_slice(row);
                }
                // SAFETY: rows.len() rows of kc values were written just above, and the
                // micro-kernels read only those (rows past the end repeat the last row).
                let len = (rows.len() - 1) * KC + kc;
                (unsafe { std::slice::from_raw_parts(dst, len) }, KC, rows.start, 0)
            }
        };
        for p in p0..p1 {
            let j0 = p * nr;
            let w = nr.min(cols.end - j0);
            let (panel, ldb): (&[f32], usize) = match b {
                BMatrix::Packed(bp) => (&bp[p * k * nr + k0 * nr..], nr),
                BMatrix::PackedFrom { data, first } => (&data[(p - first) * k * nr + k0 * nr..], nr),
                BMatrix::RowMajor { data, ld } if j0 + nr <= n => (&data[k0 * ld + j0..], ld),
                BMatrix::RowMajor { data, ld } => {
                    let valid = n - j0;
                    let e = edge.as_mut_ptr() as *mut f32;
                    for kk in 0..kc {
                        let src = &data[(k0 + kk) * ld + j0..(k0 + kk) * ld + n];
                        // SAFETY: kk * nr + nr <= KC * NR_MAX; the writes initialize the
                        // first kc * nr floats, all that the slice below covers.
                        unsafe {
                            std::ptr::copy_nonoverlapping(src.as_ptr(), e.add(kk * nr), valid);
                            std::ptr::write_bytes(e.add(kk * nr + valid), 0, nr - valid);
                        }
                    }
                    // SAFETY: initialized just above.
                    (unsafe { std::slice::from_raw_parts(e, kc * nr) }, nr)
                }
            };
            let mut r0 = rows.start;
            while r0 < rows.end {
                let h = mr.min(rows.end - r0);
                let mut rp = [std::ptr::null::<f32>(); MR_MAX];
                for (i, p) in rp.iter_mut().enumerate().take(mr) {
                    // Rows past the end repeat the last row: computed, never stored.
                    *p = a_rows[(r0 + i.min(h - 1) - row_base) * a_ld + a_col..].as_ptr();
                }
                let c_tile = &mut c[r0 * ldc + j0..];
                if h == mr && w == nr {
                    // SAFETY: the tile lies inside C (checked above), rows have kc values,
                    // the panel block has kc * nr values.
                    unsafe { (kern.f)(kc, rp.as_ptr(), panel.as_ptr(), ldb, c_tile.as_mut_ptr(), ldc, accumulate) };
                } else {
                    if accumulate {
                        for i in 0..h {
                            tmp[i * nr..i * nr + w].copy_from_slice(&c_tile[i * ldc..i * ldc + w]);
                        }
                    }
                    // SAFETY: tmp holds mr x nr floats with row stride nr.
                    unsafe { (kern.f)(kc, rp.as_ptr(), panel.as_ptr(), ldb, tmp.as_mut_ptr(), nr, accumulate) };
                    for i in 0..h {
                        c_tile[i * ldc..i * ldc + w].copy_from_slice(&tmp[i * nr..i * nr + w]);
                    }
                }
                r0 += mr;
            }
        }
        k0 += kc;
    }
    // The epilogue on the whole block (at most MC x NC floats, still in L2): measured
    // cheaper than per micro-tile, whose 16-wide loops cost more instructions than they save.
    let c_block = &mut c[rows.start * ldc + cols.start..];
    ep.apply_tile(c_block, ldc, rows.start, rows.len(), cols.start, cols.len());
}

/// Asks for every cache line of `data` to be brought into L2 (a hint; nothing on CPUs
/// without one here).
#[inline(always)]
pub(super) fn prefetch_l2(data: &[f32]) {
    #[cfg(target_arch = "x86_64")]
    for i in (0..data.len()).step_by(16) {
        // SAFETY: a prefetch reads nothing and cannot fault; the address is inside `data`.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T1 }>(data.as_ptr().add(i) as *const i8)
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = data;
}

/// Portable 4x16 micro-kernel (plain arrays the compiler vectorizes for the baseline ISA).
///
/// # Safety
/// As for [`KernelFn`] with `mr = 4`, `nr = 16`.
pub unsafe fn kernel_portable_4x16(
    kc: usize,
    a: *const *const f32,
    b: *const f32,
    ldb: usize,
    c: *mut f32,
    ldc: usize,
    accumulate: bool,
) {
    const MR: usize = 4;
    const NR: usize = 16;
    let mut acc = [[0f32; NR]; MR];
    unsafe {
        let rows = [*a, *a.add(1), *a.add(2), *a.add(3)];
        for kk in 0..kc {
            let bv: &[f32; NR] = &*(b.add(kk * ldb) as *const [f32; NR]);
            for r in 0..MR {
                let av = *rows[r].add(kk);
                for j in 0..NR {
                    acc[r][j] += av * bv[j];
                }
            }
        }
        for (r, acc_row) in acc.iter().enumerate() {
            let out = std::slice::from_raw_parts_mut(c.add(r * ldc), NR);
            if accumulate {
                out.iter_mut().zip(acc_row).for_each(|(o, v)| *o += v);
            } else {
                out.copy_from_slice(acc_row);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::epilogue::Activation;
    use crate::ops::nn::test_util::Rng;

    fn naive(m: usize, n: usize, k: usize, a: &[f32], b: &[f32]) -> Vec<f64> {
        let mut c = vec![0f64; m * n];
        for i in 0..m {
            for j in 0..n {
                c[i * n + j] = (0..k).map(|kk| a[i * k + kk] as f64 * b[kk * n + j] as f64).sum();
            }
        }
        c
    }

    /// Every kernel this CPU has against an f64 reference, over remainder sizes, with and
    /// without threads, with a bias + residual + activation epilogue; A in f32 and in f16
    /// (whose reference is the f32 product of the rounded A).
    #[test]
    fn gemm_matches_reference_on_every_isa() {
        let mut rng = Rng::new(7);
        let pool = ThreadPool::new(3).unwrap();
        let sizes = [(1, 1, 1), (7, 13, 5), (8, 32, 256), (13, 1026, 7), (65, 33, 300), (6, 16, 513), (3, 300, 0)];
        for (isa, half) in Isa::all_supported().into_iter().flat_map(|i| [(i, false), (i, true)]) {
            let nr = kernel(isa).nr;
            for &(m, n, k) in &sizes {
                let a: Vec<f32> = (0..m * k).map(|_| rng.sym()).collect();
                let a16: Vec<half::f16> = a.iter().map(|&v| half::f16::from_f32(v)).collect();
                let a: Vec<f32> = if half { a16.iter().map(|v| v.to_f32()).collect() } else { a };
                let a_matrix = if half { AMatrix::F16(&a16) } else { AMatrix::F32(&a) };
                let b: Vec<f32> = (0..k * n).map(|_| rng.sym()).collect();
                let bias: Vec<f32> = (0..m).map(|_| rng.sym()).collect();
                let res: Vec<f32> = (0..m * n).map(|_| rng.sym()).collect();
                let want = naive(m, n, k, &a, &b);
                let mut bp = vec![f32::NAN; packed_b_len(k, n, nr)];
                pack_b(&b, n, k, n, nr, &mut bp, None);
                for threaded in [false, true] {
                    let mut c = vec![f32::NAN; m * n];
                    let ep = Epilogue {
                        bias: Some(&bias),
                        residual: Some(&res),
                        ld_residual: n,
                        residual_rows: m,
                        activation: Activation::Relu,
                        slope: None,
                        clamp: None,
                    };
                    let bm = if threaded { BMatrix::RowMajor { data: &b, ld: n } } else { BMatrix::Packed(&bp) };
                    gemm(isa, threaded.then_some(&pool), m, n, k, a_matrix, k, bm, &mut c, n, &ep);
                    for i in 0..m * n {
                        let w = (want[i] + bias[i / n] as f64 + res[i] as f64).max(0.0);
                        let tol = 1e-4 * (1.0 + w.abs()) + 1e-5 * k as f64;
                        assert!(
                            (c[i] as f64 - w).abs() <= tol,
                            "{isa} f16 {half} m{m} n{n} k{k} threads {threaded} at {i}: {} vs {w}",
                            c[i]
                        );
                    }
                }
            }
        }
    }

    /// `gemm_packing` (B packed panel by panel by a callback) against the f64 reference, on
    /// one, two and three threads, over column counts that split evenly and unevenly.
    #[test]
    fn gemm_packing_matches_reference() {
        let mut rng = Rng::new(11);
        let pools = [None, Some(ThreadPool::new(2).unwrap()), Some(ThreadPool::new(3).unwrap())];
        for isa in Isa::all_supported() {
            let nr = kernel(isa).nr;
            for &(m, n, k) in &[(5, 1, 3), (70, 784, 20), (9, 1000, 300), (3, 3 * NC + 16, 9)] {
                let a: Vec<f32> = (0..m * k).map(|_| rng.sym()).collect();
                let b: Vec<f32> = (0..k * n).map(|_| rng.sym()).collect();
                let want = naive(m, n, k, &a, &b);
                // `dst` is the panel's own k * nr floats (as im2col_panel writes them).
                let pack = |panel: usize, dst: &mut [f32]| {
                    let (j0, w) = (panel * nr, nr.min(n - panel * nr));
                    for (kk, row) in dst.chunks_exact_mut(nr).enumerate() {
                        row[..w].copy_from_slice(&b[kk * n + j0..kk * n + j0 + w]);
                        row[w..].fill(0.0);
                    }
                };
                for pool in &pools {
                    let mut bp = vec![f32::NAN; packed_b_len(k, n, nr)];
                    let mut c = vec![f32::NAN; m * n];
                    let ep = Epilogue::default();
                    gemm_packing(isa, pool.as_ref(), m, n, k, AMatrix::F32(&a), k, &pack, &mut bp, &mut c, n, &ep);
                    let threads = pool.as_ref().map_or(1, |p| p.threads());
                    for i in 0..m * n {
                        let tol = 1e-4 * (1.0 + want[i].abs()) + 1e-5 * k as f64;
                        assert!((c[i] as f64 - want[i]).abs() <= tol, "{isa} m{m} n{n} k{k} threads {threads} at {i}");
                    }
                }
            }
        }
    }

    /// Column blocks hold at most NC columns, and come in multiples of the thread count
    /// where there are panels enough (so no thread waits on a short last block).
    #[test]
    fn column_blocks_are_at_most_nc_wide_and_shared_evenly() {
        for nr in [16, 32] {
            for panels in 1..200 {
                for threads in 1..5 {
                    let nb = column_blocks(panels, nr, threads);
                    let widest = (0..nb).map(|b| (b + 1) * panels / nb - b * panels / nb).max().unwrap_or(0);
                    assert!(widest * nr <= NC, "{panels} panels of {nr} in {nb} blocks: one has {widest}");
                    assert!(nb <= panels && (0..nb).all(|b| (b + 1) * panels / nb > b * panels / nb), "empty block");
                    if panels >= panels.div_ceil(NC / nr).next_multiple_of(threads) {
                        assert_eq!(nb % threads, 0, "{panels} panels of {nr} on {threads} threads: {nb} blocks");
                    }
                }
            }
        }
        assert_eq!(column_blocks(784usize.div_ceil(32), 32, 2), 4, "ResNet's 28x28 convolution");
    }
}
