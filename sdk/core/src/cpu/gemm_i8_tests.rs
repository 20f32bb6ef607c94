//! Differential tests of the INT8 GEMM against plain references, on every kernel this CPU
//! has (the AVX-512 VNNI one says `skipped` where the CPU lacks it or `EDGERT_I8_VNNI=0`
//! turns it off).

use super::*;
use crate::ops::nn::test_util::Rng;

fn kinds() -> Vec<I8Kind> {
    let mut v = Vec::new();
    for kind in [I8Kind::Vnni512, I8Kind::Avx2, I8Kind::Portable] {
        if I8Kernel::supported(kind) {
            v.push(kind);
        } else if kind == I8Kind::Vnni512 && vnni_opted_out() {
            println!("skipped: Vnni512 kernel: turned off by EDGERT_I8_VNNI=0");
        } else {
            println!("skipped: {kind:?} kernel: this CPU lacks its instructions");
        }
    }
    v
}

/// Exact `sum_k (a - za) * b` in i64.
#[allow(clippy::too_many_arguments)]
fn reference(m: usize, n: usize, k: usize, a: &[u8], lda: usize, b: &[i8], za: i32) -> Vec<i64> {
    let mut c = vec![0i64; m * n];
    for i in 0..m {
        for j in 0..n {
            c[i * n + j] = (0..k).map(|p| (a[i * lda + p] as i64 - za as i64) * b[p * n + j] as i64).sum();
        }
    }
    c
}

fn rand_u8(rng: &mut Rng, n: usize) -> Vec<u8> {
    (0..n).map(|_| ((rng.sym() + 1.0) * 128.0).clamp(0.0, 255.0) as u8).collect()
}
fn rand_i8(rng: &mut Rng, n: usize) -> Vec<i8> {
    (0..n).map(|_| (rng.sym() * 128.0).clamp(-128.0, 127.0) as i8).collect()
}

const SIZES: [(usize, usize, usize); 9] = [
    (1, 1, 1),
    (7, 13, 5),
    (13, 7, 64),
    (64, 33, 13),
    (1026, 7, 13),
    (5, 1026, 7),
    (13, 64, 1026),
    (65, 40, 3),
    (9, 17, 0),
];

#[test]
fn int32_accumulators_are_bit_exact_on_every_kernel() {
    let mut rng = Rng::new(17);
    let pool = ThreadPool::new(3).unwrap();
    for kind in kinds() {
        let kern = I8Kernel::of(kind);
        for &(m, n, k) in &SIZES {
            let lda = k + 3; // a strided A
            let a = rand_u8(&mut rng, m * lda);
            let b = rand_i8(&mut rng, k * n);
            let za = (m % 200) as i32;
            let want = reference(m, n, k, &a, lda, &b, za);
            let bp = pack_b(kern, &b, n, k, n);
            for threaded in [false, true] {
                let ldc = n + 1;
                let mut c = vec![i32::MIN; m * ldc];
                gemm_u8s8(threaded.then_some(&pool), m, &a, lda, &bp, I8Out::I32(&mut c), ldc, &Requant::raw(za));
                for i in 0..m {
                    for j in 0..n {
                        assert_eq!(
                            c[i * ldc + j] as i64,
                            want[i * n + j],
                            "{kind:?} m{m} n{n} k{k} threads {threaded} at ({i},{j})"
                        );
                    }
                }
            }
        }
    }
}

/// The extremes: 255 x -128 over a long K, where `vpmaddubsw`'s int16 pair sums would
/// saturate. Every kernel must stay exact.
#[test]
fn extreme_values_do_not_saturate() {
    let (m, n, k) = (7, 19, 1026);
    let a = vec![255u8; m * k];
    for kind in kinds() {
        for wv in [-128i8, 127] {
            let b = vec![wv; k * n];
            let bp = pack_b(I8Kernel::of(kind), &b, n, k, n);
            let mut c = vec![0i32; m * n];
            gemm_u8s8(None, m, &a, k, &bp, I8Out::I32(&mut c), n, &Requant::raw(0));
            assert!(c.iter().all(|&v| v == 255 * wv as i32 * k as i32), "{kind:?} w {wv}: {}", c[0]);
        }
    }
}

/// Requantized uint8/int8 outputs within one step of the exact f64 requantization, and
/// float32 outputs within 1e-5 relative, with per-channel multipliers, bias and activations.
#[test]
fn requantized_outputs_within_one_step() {
    let mut rng = Rng::new(23);
    for kind in kinds() {
        let kern = I8Kernel::of(kind);
        for &(m, n, k) in &SIZES[1..] {
            let a = rand_u8(&mut rng, m * k);
            let b = rand_i8(&mut rng, k * n);
            let za = 128;
            let acc = reference(m, n, k, &a, k, &b, za);
            let bias: Vec<i32> = (0..n).map(|_| (rng.sym() * 5000.0) as i32).collect();
            // a_scale * w_scale[j] / y_scale, sized so outputs span the int8 range.
            let mult: Vec<f32> =
                (0..n).map(|_| (0.5 + rng.sym().abs()) * 4.0 / (128.0 * 128.0 * (k.max(1) as f32).sqrt())).collect();
            let bp = pack_b(kern, &b, n, k, n);
            let exact = |i: usize, j: usize| (acc[i * n + j] + bias[j] as i64) as f64 * mult[j] as f64;
            let y_scale = 0.05f32;
            for (act, y_zero, signed) in [
                (QAct::None, 100, false),
                (QAct::Relu, 20, false),
                (QAct::Clip(-1.0, 2.0), -3, true),
                (QAct::None, 0, true),
            ] {
                let ep = Requant { a_zero: za, bias: Some(&bias), mult: &mult, y_scale, y_zero, act };
                let (lo, hi) = if signed { (-128.0, 127.0) } else { (0.0, 255.0) };
                let (alo, ahi) = match act {
                    QAct::None => (lo, hi),
                    QAct::Relu => (y_zero as f64, hi),
                    QAct::Clip(l, h) => ((l / y_scale) as f64 + y_zero as f64, (h / y_scale) as f64 + y_zero as f64),
                };
                let got: Vec<i32> = if signed {
                    let mut c = vec![0i8; m * n];
                    gemm_u8s8(None, m, &a, k, &bp, I8Out::I8(&mut c), n, &ep);
                    c.iter().map(|&v| v as i32).collect()
                } else {
                    let mut c = vec![0u8; m * n];
                    gemm_u8s8(None, m, &a, k, &bp, I8Out::U8(&mut c), n, &ep);
                    c.iter().map(|&v| v as i32).collect()
                };
                for i in 0..m {
                    for j in 0..n {
                        let want = (exact(i, j) + y_zero as f64).clamp(alo.max(lo), ahi.min(hi));
                        let g = got[i * n + j] as f64;
                        assert!((g - want).abs() <= 1.0, "{kind:?} {act:?} m{m} n{n} k{k} ({i},{j}): {g} vs {want}");
                    }
                }
            }
            // float32 (the last layer): dequantized, ReLU.
            let ep = Requant { a_zero: za, bias: Some(&bias), mult: &mult, y_scale: 1.0, y_zero: 0, act: QAct::Relu };
            let mut c = vec![f32::NAN; m * n];
            gemm_u8s8(None, m, &a, k, &bp, I8Out::F32(&mut c), n, &ep);
            for i in 0..m {
                for j in 0..n {
                    let want = exact(i, j).max(0.0);
                    let g = c[i * n + j] as f64;
                    assert!((g - want).abs() <= 1e-5 * want.abs() + 1e-6, "{kind:?} f32 ({i},{j}): {g} vs {want}");
                }
            }
        }
    }
}

/// The active ISA's kernel is one of the tested ones, and AVX-512 falls back to AVX2 when
/// the CPU has no VNNI.
#[test]
fn isa_choice() {
    let k = I8Kernel::for_isa(crate::cpu::isa::active());
    assert!(I8Kernel::supported(k.kind));
    assert_eq!(I8Kernel::for_isa(Isa::Portable).kind, I8Kind::Portable);
}

/// Micro-benchmark (release build, single thread): a ResNet-50-sized layer (M = 3136
/// positions, N = 256 channels, K = 2304) in INT8 against the f32 GEMM on the same shape.
/// `cargo test --release -p edgert-core --lib bench_gemm_i8 -- --ignored --nocapture`
#[test]
#[ignore = "benchmark, not a check: prints GOPS/GFLOPS; meaningful only in a release build on a quiet machine"]
fn bench_gemm_i8_vs_f32() {
    use std::time::Instant;
    let (m, n, k) = (3136, 256, 2304);
    let mut rng = Rng::new(1);
    let a = rand_u8(&mut rng, m * k);
    let b = rand_i8(&mut rng, k * n);
    let ops = 2.0 * (m * n * k) as f64;
    let median = |mut v: Vec<f64>| {
        v.sort_by(|x, y| x.partial_cmp(y).unwrap());
        v[v.len() / 2]
    };
    for kind in kinds() {
        let bp = pack_b(I8Kernel::of(kind), &b, n, k, n);
        let mut c = vec![0u8; m * n];
        let mult = vec![1e-4f32; n];
        let ep = Requant { a_zero: 128, bias: None, mult: &mult, y_scale: 1.0, y_zero: 0, act: QAct::Relu };
        let t: Vec<f64> = (0..7)
            .map(|_| {
                let t0 = Instant::now();
                gemm_u8s8(None, m, &a, k, &bp, I8Out::U8(&mut c), n, &ep);
                t0.elapsed().as_secs_f64()
            })
            .collect();
        let s = median(t);
        println!("int8 {kind:?}: {:.2} ms, {:.1} GOPS (u8 out, requantized)", s * 1e3, ops / s / 1e9);
    }
    // f32: the existing GEMM with weights as A (256 x 2304) and 3136 columns.
    let af: Vec<f32> = (0..n * k).map(|_| rng.sym()).collect();
    let bf: Vec<f32> = (0..k * m).map(|_| rng.sym()).collect();
    for isa in Isa::all_supported() {
        let nr = crate::cpu::gemm::kernel(isa).nr;
        let mut bp = vec![0f32; crate::cpu::gemm::packed_b_len(k, m, nr)];
        crate::cpu::gemm::pack_b(&bf, m, k, m, nr, &mut bp, None);
        let mut c = vec![0f32; n * m];
        let ep = crate::cpu::Epilogue::default();
        let t: Vec<f64> = (0..7)
            .map(|_| {
                let t0 = Instant::now();
                crate::cpu::gemm::gemm(
                    isa,
                    None,
                    n,
                    m,
                    k,
                    crate::cpu::gemm::AMatrix::F32(&af),
                    k,
                    crate::cpu::gemm::BMatrix::Packed(&bp),
                    &mut c,
                    m,
                    &ep,
                );
                t0.elapsed().as_secs_f64()
            })
            .collect();
        let s = median(t);
        println!("f32 {isa}: {:.2} ms, {:.1} GFLOPS", s * 1e3, ops / s / 1e9);
    }
}

/// The 7-bit kernel at its extremes (A bytes 127, B bytes -128 and 127, K 1026 with a
/// remainder group): `vpmaddubsw`'s int16 pair sums reach ±32512 and must not saturate.
#[cfg(target_arch = "x86_64")]
#[test]
fn seven_bit_kernel_at_its_extremes_is_exact() {
    if !I8Kernel::supported(I8Kind::Avx2U7) {
        eprintln!("skipped: no AVX2");
        return;
    }
    let kern = I8Kernel::of(I8Kind::Avx2U7);
    let (mr, nr, kg) = (kern.mr, kern.nr, 1026usize.div_ceil(4));
    for (av, bv) in [(127u8, -128i8), (127, 127), (1, -128), (127, 0)] {
        let rows = vec![vec![av; kg * 4]; mr];
        let ptrs: Vec<*const u8> = rows.iter().map(|r| r.as_ptr()).collect();
        let b = vec![bv as u8; kg * 4 * nr];
        let mut c = vec![7i32; mr * nr];
        // SAFETY: mr row pointers of kg * 4 bytes, kg groups of nr * 4 B bytes, an mr x nr tile.
        unsafe { (kern.func())(kg, ptrs.as_ptr(), b.as_ptr(), c.as_mut_ptr(), nr, true) };
        let want = 7 + av as i32 * bv as i32 * (kg * 4) as i32;
        assert!(c.iter().all(|&v| v == want), "a {av} b {bv}: {} vs {want}", c[0]);
    }
}

#[test]
fn neon_dot_kernel_is_exact_with_signed_a() {
    if !I8Kernel::supported(I8Kind::NeonDot) {
        println!("skipped: NeonDot kernel: not an aarch64 CPU with DotProd");
        return;
    }
    let kern = I8Kernel::of(I8Kind::NeonDot);
    let (mr, nr) = (kern.mr, kern.nr);
    let mut rng = Rng::new(23);
    // Random signed rows and panels, then the extremes (-128 * -128 summed over 1026 K).
    let mut cases: Vec<(Vec<i8>, Vec<i8>, usize)> = Vec::new();
    for kg in [1usize, 3, 257] {
        cases.push((rand_i8(&mut rng, mr * kg * 4), rand_i8(&mut rng, kg * 4 * nr), kg));
    }
    let kg = 1026usize.div_ceil(4);
    for (av, bv) in [(-128i8, -128i8), (127, -128), (-128, 127), (0, -128)] {
        cases.push((vec![av; mr * kg * 4], vec![bv; kg * 4 * nr], kg));
    }
    for (a, b, kg) in cases {
        let ptrs: Vec<*const u8> = (0..mr).map(|i| a[i * kg * 4..].as_ptr() as *const u8).collect();
        for acc_in in [false, true] {
            let mut c = vec![7i32; mr * nr];
            // SAFETY: mr row pointers of kg * 4 bytes, kg groups of nr * 4 B bytes, an mr x nr tile.
            unsafe { (kern.func())(kg, ptrs.as_ptr(), b.as_ptr() as *const u8, c.as_mut_ptr(), nr, acc_in) };
            for i in 0..mr {
                for j in 0..nr {
                    // Panel lane j of group g holds B's 4 K values for column j.
                    let dot: i64 = (0..kg * 4)
                        .map(|k| a[i * kg * 4 + k] as i64 * b[(k / 4) * nr * 4 + j * 4 + k % 4] as i64)
                        .sum();
                    let want = dot + if acc_in { 7 } else { 0 };
                    assert_eq!(c[i * nr + j] as i64, want, "kg {kg} acc_in {acc_in} at ({i},{j})");
                }
            }
        }
    }
}
