//! `edgert run --device`: with no CUDA driver, `cuda` fails with the driver error and
//! `auto` falls back to the CPU and says so. On a machine with a GPU both run on it.

use std::path::Path;
use std::process::Command;

fn run(device: &str, out: &Path) -> std::process::Output {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    Command::new(env!("CARGO_BIN_EXE_edgert"))
        .arg("run")
        .arg(root.join("models/blazeface_short.onnx"))
        .arg(format!("--input=input={}", root.join("tests/goldens/blazeface_short/input_0.npy").display()))
        .arg("--output-dir")
        .arg(out)
        .args(["--device", device])
        .output()
        .expect("edgert runs")
}

#[test]
fn device_cuda_without_driver_fails_and_auto_falls_back() {
    if edgert_cuda::driver::check_driver().is_ok() {
        eprintln!("skipped: a CUDA driver is present (tests/gpu/run.sh covers the GPU path)");
        return;
    }
    let out = std::env::temp_dir().join(format!("edgert-device-test-{}", std::process::id()));
    let cuda = run("cuda", &out);
    let err = String::from_utf8_lossy(&cuda.stderr);
    assert!(!cuda.status.success(), "--device cuda succeeded without a driver: {err}");
    assert!(err.contains("no CUDA driver found"), "{err}");
    assert!(!err.contains("panicked"), "{err}");

    let auto = run("auto", &out);
    let err = String::from_utf8_lossy(&auto.stderr);
    assert!(auto.status.success(), "{err}");
    assert!(err.contains("--device auto: CUDA unavailable (no CUDA driver found"), "{err}");
    assert!(err.contains("running on the CPU"), "{err}");
    assert!(out.join("regressors.npy").exists() || std::fs::read_dir(&out).unwrap().count() >= 2);
    let _ = std::fs::remove_dir_all(&out);
}
