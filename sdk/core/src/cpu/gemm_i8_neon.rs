//! aarch64 INT8 micro-kernel with the dot-product extension (`sdot`, Armv8.2 DotProd: Jetson
//! Orin's Cortex-A78AE has it, Xavier's Carmel too). See `gemm_i8.rs` for the contract.
//!
//! `sdot` multiplies signed bytes by signed bytes, so this kernel takes *signed* A rows: it
//! serves `conv_i8`, whose A operand is the weights (stored unshifted for this kernel,
//! `I8Kernel::weight_shift` 0) and whose B operand is the centred activations.
//!
//! The dot-product intrinsics (`vdotq_laneq_s32`) are not stable Rust yet, so the
//! instruction is written as inline assembly in a function compiled with `dotprod`.

use std::arch::aarch64::*;
use std::arch::asm;

/// `acc += b · a[LANE]`: each 32-bit lane of `acc` gains the dot product of its 4 bytes of
/// `b` with the 4 bytes of `a`'s 32-bit lane `LANE` (all signed).
macro_rules! sdot_lane {
    ($acc:expr, $b:expr, $a:expr, $lane:literal) => {{
        let mut acc: int32x4_t = $acc;
        asm!(
            concat!("sdot {acc:v}.4s, {b:v}.16b, {a:v}.4b[", $lane, "]"),
            acc = inout(vreg) acc,
            b = in(vreg) $b,
            a = in(vreg) $a,
            options(pure, nomem, nostack, preserves_flags),
        );
        acc
    }};
}

/// 4x16 tile: 16 accumulators; per K group one vector holds the 4 rows' 4 A bytes (row `i`
/// in lane `i`) and four loads hold B's 16 columns; 16 `sdot`s by lane.
///
/// # Safety
/// The CPU must have NEON and DotProd; pointers as for [`super::gemm_i8::I8KernelFn`] (mr 4,
/// nr 16, kpack 4, int8 B, A bytes read as int8).
#[target_feature(enable = "neon,dotprod")]
pub unsafe fn kernel_neon_sdot_4x16(
    kg: usize,
    a: *const *const u8,
    b: *const u8,
    c: *mut i32,
    ldc: usize,
    acc_in: bool,
) {
    unsafe {
        let r: [*const u8; 4] = std::array::from_fn(|i| *a.add(i));
        let mut acc = [[vdupq_n_s32(0); 4]; 4];
        let mut bp = b as *const i8;
        for g in 0..kg {
            let words: [i32; 4] = std::array::from_fn(|i| (r[i].add(4 * g) as *const i32).read_unaligned());
            let av = vreinterpretq_s8_s32(vld1q_s32(words.as_ptr()));
            let bv = [vld1q_s8(bp), vld1q_s8(bp.add(16)), vld1q_s8(bp.add(32)), vld1q_s8(bp.add(48))];
            for j in 0..4 {
                acc[0][j] = sdot_lane!(acc[0][j], bv[j], av, "0");
                acc[1][j] = sdot_lane!(acc[1][j], bv[j], av, "1");
                acc[2][j] = sdot_lane!(acc[2][j], bv[j], av, "2");
                acc[3][j] = sdot_lane!(acc[3][j], bv[j], av, "3");
            }
            bp = bp.add(64);
        }
        for (i, row) in acc.iter().enumerate() {
            for (j, &v) in row.iter().enumerate() {
                let cp = c.add(i * ldc + 4 * j);
                vst1q_s32(cp, if acc_in { vaddq_s32(vld1q_s32(cp), v) } else { v });
            }
        }
    }
}
