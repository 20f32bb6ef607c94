//! GEMM throughput on this machine: `cargo run --release -p edgert-core --example gemm_bench
//! [-- M N K [THREADS]]`. Prints GFLOP/s of `gemm` with B packed, per ISA the CPU has, for
//! the shapes of ResNet-50's convolutions (or the one given), as the median of repeated runs.

use std::time::Instant;

use edgert_core::cpu::gemm::{self, AMatrix, BMatrix};
use edgert_core::cpu::{Epilogue, Isa, ThreadPool};

/// With `EDGERT_BENCH_EPILOGUE=1` each GEMM has a bias + residual + Relu epilogue.
/// With `EDGERT_BENCH_COLD=1`, 32 MiB are written before each timed run, so the operands
/// come from memory (as a layer's do inside a model) rather than from a hot cache.
fn median_secs(mut f: impl FnMut()) -> f64 {
    let cold = std::env::var("EDGERT_BENCH_COLD").is_ok_and(|v| v == "1");
    let mut flush = vec![0u8; if cold { 32 << 20 } else { 0 }];
    f();
    let mut t = Vec::new();
    let start = Instant::now();
    while t.len() < 5 || (start.elapsed().as_secs_f64() < 0.5 && t.len() < 1000) {
        for (i, b) in flush.iter_mut().enumerate().step_by(64) {
            *b = b.wrapping_add(i as u8);
        }
        std::hint::black_box(&flush);
        let t0 = Instant::now();
        f();
        t.push(t0.elapsed().as_secs_f64());
    }
    t.sort_by(f64::total_cmp);
    t[t.len() / 2]
}

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let shapes: Vec<(usize, usize, usize)> = if args.len() >= 3 {
        vec![(args[0], args[1], args[2])]
    } else {
        // (output channels, positions, depth) of ResNet-50 layers at batch 1.
        vec![
            (64, 3136, 576),
            (256, 3136, 64),
            (128, 784, 1152),
            (512, 784, 128),
            (256, 196, 2304),
            (1024, 196, 256),
            (512, 49, 4608),
            (2048, 49, 512),
        ]
    };
    let threads = args.get(3).copied().unwrap_or(1);
    // `EDGERT_BENCH_EPILOGUE=1`: bias + residual + Relu, as a ResNet block's last conv.
    let with_epilogue = std::env::var("EDGERT_BENCH_EPILOGUE").is_ok_and(|v| v == "1");
    let pool = (threads > 1).then(|| ThreadPool::new(threads).expect("thread pool"));
    for isa in Isa::all_supported() {
        for &(m, n, k) in &shapes {
            let nr = gemm::kernel(isa).nr;
            let a: Vec<f32> = (0..m * k).map(|i| ((i * 7 % 13) as f32 - 6.0) * 0.01).collect();
            let b: Vec<f32> = (0..k * n).map(|i| ((i * 5 % 11) as f32 - 5.0) * 0.01).collect();
            let mut bp = vec![0f32; gemm::packed_b_len(k, n, nr)];
            gemm::pack_b(&b, n, k, n, nr, &mut bp, None);
            let mut c = vec![0f32; m * n];
            let bias: Vec<f32> = (0..m).map(|i| (i % 5) as f32 * 0.1 - 0.2).collect();
            let residual: Vec<f32> = (0..m * n).map(|i| ((i * 3 % 7) as f32 - 3.0) * 0.1).collect();
            let ep = if with_epilogue {
                Epilogue {
                    bias: Some(&bias),
                    residual: Some(&residual),
                    ld_residual: n,
                    residual_rows: m,
                    activation: edgert_core::cpu::epilogue::Activation::Relu,
                    ..Default::default()
                }
            } else {
                Epilogue::default()
            };
            let packed = median_secs(|| {
                gemm::gemm(isa, pool.as_ref(), m, n, k, AMatrix::F32(&a), k, BMatrix::Packed(&bp), &mut c, n, &ep)
            });
            let in_place = median_secs(|| {
                let b = BMatrix::RowMajor { data: &b, ld: n };
                gemm::gemm(isa, pool.as_ref(), m, n, k, AMatrix::F32(&a), k, b, &mut c, n, &ep)
            });
            let gflops = |s: f64| 2.0 * (m * n * k) as f64 / s / 1e9;
            println!(
                "{isa:<9} m {m:>5} n {n:>5} k {k:>5} threads {threads}: B packed {:>8.3} ms {:>6.1} GFLOP/s, B row-major {:>8.3} ms {:>6.1} GFLOP/s",
                packed * 1e3,
                gflops(packed),
                in_place * 1e3,
                gflops(in_place)
            );
        }
    }
}
