//! Compiles every kernel module with NVRTC for the given architectures and writes the PTX,
//! for the CI stage (tests/stages/40-cuda.sh), which then assembles it with ptxas. Needs no
//! GPU: only libnvrtc.so.12 (LD_LIBRARY_PATH) and the CUDA headers (EDGERT_CUDA_INCLUDE).
//!
//! Usage: edgert-kernels-check OUT_DIR [sm_72 sm_87 sm_90 ...]
//! Writes OUT_DIR/<arch>/<module>.ptx and prints one line per module and arch. Exits 1 on
//! any compile error (after trying them all). `EDGERT_KERNELS_ONLY=conv_tc.cu,gemm.cu`
//! compiles only the modules named (for quick iteration on one kernel).

use std::path::PathBuf;
use std::time::Instant;

use edgert_cuda::nvrtc::{self, Arch};

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(out) = args.next().map(PathBuf::from) else {
        eprintln!("usage: edgert-kernels-check OUT_DIR [ARCH...]   (default: sm_72 sm_87 sm_90)");
        std::process::exit(2);
    };
    let mut arches: Vec<Arch> = Vec::new();
    for a in args {
        match Arch::parse(&a) {
            Ok(a) => arches.push(a),
            Err(e) => {
                eprintln!("error: {e}");
                std::process::exit(2);
            }
        }
    }
    if arches.is_empty() {
        arches = vec![Arch::XAVIER, Arch::ORIN, Arch::HOPPER];
    }
    match edgert_cuda::driver::nvrtc_version() {
        Ok((a, b)) => println!("NVRTC {a}.{b}; include {:?}", nvrtc::include_dirs()),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
    let only: Option<Vec<String>> =
        std::env::var("EDGERT_KERNELS_ONLY").ok().map(|v| v.split(',').map(str::to_string).collect());
    let mut failed = 0;
    for arch in &arches {
        let dir = out.join(arch.sm());
        if let Err(e) = std::fs::create_dir_all(&dir) {
            eprintln!("error: {}: {e}", dir.display());
            std::process::exit(1);
        }
        for m in edgert_kernels::MODULES.iter().filter(|m| only.as_ref().is_none_or(|o| o.iter().any(|f| f == m.file)))
        {
            let t0 = Instant::now();
            match nvrtc::compile(m, *arch) {
                Ok(ptx) => {
                    let missing: Vec<&str> =
                        m.kernels.iter().copied().filter(|k| !ptx.contains(&format!(".entry {k}("))).collect();
                    let file = dir.join(m.file.replace(".cu", ".ptx"));
                    if let Err(e) = std::fs::write(&file, &ptx) {
                        eprintln!("error: {}: {e}", file.display());
                        failed += 1;
                        continue;
                    }
                    if !missing.is_empty() {
                        eprintln!("FAIL {} {}: kernels missing from the PTX: {missing:?}", arch.sm(), m.file);
                        failed += 1;
                        continue;
                    }
                    println!(
                        "ok   {} {:<16} {:>2} kernels {:>8} bytes PTX {:>6.0} ms",
                        arch.sm(),
                        m.file,
                        m.kernels.len(),
                        ptx.len(),
                        t0.elapsed().as_secs_f64() * 1e3
                    );
                }
                Err(e) => {
                    eprintln!("FAIL {} {}: {e}", arch.sm(), m.file);
                    failed += 1;
                }
            }
        }
    }
    if failed > 0 {
        eprintln!("{failed} module compile(s) failed");
        std::process::exit(1);
    }
}
