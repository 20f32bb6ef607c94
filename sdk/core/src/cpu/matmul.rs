//! f32 matrix products for the Gemm and MatMul ops on the CPU kernels.
//!
//! * `A · B` with B row-major `[K, N]` (MatMul, Gemm without `transB`): the blocked
//!   [`gemm`](super::gemm::gemm), reading B in place.
//! * `A · Bᵀ` with B given as `[N, K]` (Gemm with `transB`, the usual fully connected layer):
//!   one [`dot`](super::dot::dot) per output, since both operands' rows are contiguous; rows
//!   of B are split over the threads in blocks, and each block serves every row of A while
//!   it is in cache (a batch-1 classifier head is a matrix-vector product: memory-bound).
//!
//! Sums are in f32 (the reference ops sum in f64): results differ by rounding only.

use super::gemm::{self, BMatrix, SyncPtr};
use super::{Epilogue, Exec};

/// Rows of B (outputs) per task of [`a_times_bt`].
const BT_ROWS_PER_TASK: usize = 32;

/// `y[m x n] = a[m x k] · b[k x n]`, all row-major and contiguous.
pub fn a_times_b(exec: &Exec, m: usize, n: usize, k: usize, a: &[f32], b: &[f32], y: &mut [f32]) {
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        y[..m * n].fill(0.0);
        return;
    }
    let bm = BMatrix::RowMajor { data: b, ld: n };
    gemm::gemm(exec.isa, exec.pool, m, n, k, gemm::AMatrix::F32(a), k, bm, y, n, &Epilogue::default());
}

/// `y[m x n] = a[m x k] · btᵀ`, where `bt` is `[n x k]` row-major.
pub fn a_times_bt(exec: &Exec, m: usize, n: usize, k: usize, a: &[f32], bt: &[f32], y: &mut [f32]) {
    if m == 0 || n == 0 {
        return;
    }
    let tasks = n.div_ceil(BT_ROWS_PER_TASK);
    let (y_ptr, y_len) = (SyncPtr(y.as_mut_ptr()), y.len());
    let task = |t: usize| {
        // SAFETY: task t alone writes columns j0..j1 of every row of y.
        let y = unsafe { std::slice::from_raw_parts_mut(y_ptr.get(), y_len) };
        let (j0, j1) = (t * BT_ROWS_PER_TASK, ((t + 1) * BT_ROWS_PER_TASK).min(n));
        for i in 0..m {
            let ai = &a[i * k..(i + 1) * k];
            for j in j0..j1 {
                y[i * n + j] = super::dot::dot(exec.isa, ai, &bt[j * k..(j + 1) * k]);
            }
        }
    };
    crate::cpu::pool::run_tasks(exec.pool, tasks, &task);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::{Isa, ThreadPool};
    use crate::ops::nn::test_util::Rng;

    /// Both products against an f64 triple loop on every ISA, 1 and 3 threads, over sizes
    /// around the kernels' tiles (including m = 1, n = 1, k = 0).
    #[test]
    fn products_match_an_f64_loop() {
        let mut rng = Rng::new(21);
        let pool = ThreadPool::new(3).unwrap();
        for &(m, n, k) in &[(1, 1000, 64), (8, 70, 33), (1, 1, 5), (13, 17, 0), (7, 257, 300), (64, 33, 16)] {
            let a: Vec<f32> = (0..m * k).map(|_| rng.sym()).collect();
            let b: Vec<f32> = (0..k * n).map(|_| rng.sym()).collect();
            let bt: Vec<f32> = (0..n * k).map(|i| b[(i % k) * n + i / k]).collect();
            let want: Vec<f64> =
                (0..m * n).map(|o| (0..k).map(|p| a[(o / n) * k + p] as f64 * b[p * n + o % n] as f64).sum()).collect();
            for isa in Isa::all_supported() {
                for threaded in [false, true] {
                    let exec = Exec { isa, pool: threaded.then_some(&pool) };
                    for transposed in [false, true] {
                        let mut y = vec![f32::NAN; m * n];
                        if transposed {
                            a_times_bt(&exec, m, n, k, &a, &bt, &mut y);
                        } else {
                            a_times_b(&exec, m, n, k, &a, &b, &mut y);
                        }
                        for (i, (&g, &w)) in y.iter().zip(&want).enumerate() {
                            assert!(
                                (g as f64 - w).abs() <= 1e-5 * (1.0 + k as f64),
                                "{isa} threads {threaded} bt {transposed} {m}x{n}x{k} at {i}: {g} vs {w}"
                            );
                        }
                    }
                }
            }
        }
    }
}
