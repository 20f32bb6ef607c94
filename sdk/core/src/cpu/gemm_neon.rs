//! aarch64 NEON GEMM micro-kernel (see `gemm.rs` for the contract).

use std::arch::aarch64::*;

/// NEON 8x8 tile: 16 q-register accumulators, two B loads and eight scalar-by-vector FMAs
/// pairs per k.
///
/// # Safety
/// Pointers as for [`super::gemm::KernelFn`] (mr 8, nr 8). NEON is part of aarch64.
#[target_feature(enable = "neon")]
pub unsafe fn kernel_neon_8x8(
    kc: usize,
    a: *const *const f32,
    b: *const f32,
    ldb: usize,
    c: *mut f32,
    ldc: usize,
    accumulate: bool,
) {
    unsafe {
        let r: [*const f32; 8] = std::array::from_fn(|i| *a.add(i));
        let mut acc = [[vdupq_n_f32(0.0); 2]; 8];
        let mut bp = b;
        for kk in 0..kc {
            let b0 = vld1q_f32(bp);
            let b1 = vld1q_f32(bp.add(4));
            for i in 0..8 {
                let av = *r[i].add(kk);
                acc[i][0] = vfmaq_n_f32(acc[i][0], b0, av);
                acc[i][1] = vfmaq_n_f32(acc[i][1], b1, av);
            }
            bp = bp.add(ldb);
        }
        for (i, row) in acc.iter().enumerate() {
            let cp = c.add(i * ldc);
            if accumulate {
                vst1q_f32(cp, vaddq_f32(vld1q_f32(cp), row[0]));
                vst1q_f32(cp.add(4), vaddq_f32(vld1q_f32(cp.add(4)), row[1]));
            } else {
                vst1q_f32(cp, row[0]);
                vst1q_f32(cp.add(4), row[1]);
            }
        }
    }
}
