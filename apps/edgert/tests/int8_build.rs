//! `edgert build --precision int8|fp16|best` end to end: calibration on a folder of images,
//! the cache file (written, then reused), the per-layer report, `bench` naming the
//! precision, and the errors for missing calibration data.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn edgert(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_edgert")).args(args).output().expect("edgert runs")
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A folder `dir/calib` with four calibration images: crops of the bundled photo.
fn calibration_images(dir: &Path) -> PathBuf {
    let calib = dir.join("calib");
    std::fs::create_dir_all(&calib).unwrap();
    let photo = image::open(root().join("models/images/astronaut.png")).unwrap().to_rgb8();
    for i in 0..4u32 {
        image::imageops::crop_imm(&photo, 40 * i, 30 * i, 300, 300)
            .to_image()
            .save(calib.join(format!("{i}.png")))
            .unwrap();
    }
    calib
}

#[test]
fn int8_build_calibrates_writes_the_cache_reports_layers_and_benches() {
    let dir = std::env::temp_dir().join(format!("edgert-int8-cli-{}", std::process::id()));
    let calib = calibration_images(&dir);
    let model = root().join("models/blazeface_short.onnx");
    let (model, engine, cache) = (model.to_str().unwrap(), dir.join("bf.edgert"), dir.join("bf.calib"));
    let (engine_s, cache_s, calib_s) = (engine.to_str().unwrap(), cache.to_str().unwrap(), calib.to_str().unwrap());
    let common = ["--calib-mean", "127.5", "--calib-std", "127.5", "--int8-all", "--calib-cache", cache_s];
    let mut args = vec!["build", model, "-o", engine_s, "--precision", "int8", "--calib", calib_s];
    args.extend(common);
    let o = edgert(&args);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("calibrated (minmax) on 4 samples"), "{t}");
    assert!(t.contains("precision: int8 21 layers, fp16 0, fp32 29"), "{t}");
    let cache_text = std::fs::read_to_string(&cache).unwrap();
    assert!(cache_text.contains("edgert-calibration v1 method=minmax"), "{cache_text}");
    assert_eq!(cache_text.lines().filter(|l| !l.starts_with('#')).count(), 1 + 19, "{cache_text}");

    let o = edgert(&["inspect", engine_s, "--layers"]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert_eq!(
        t.lines().filter(|l| l.trim_start().starts_with("int8 ") && l.contains("edgert.QConv")).count(),
        21,
        "{t}"
    );
    assert!(t.contains("depthwise: the direct f32 kernel serves it"), "{t}");

    let o = edgert(&["bench", engine_s, "--iterations", "3", "--warmup", "1", "--threads", "1"]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("int8 (of 50 layers: int8 21, fp16 0, fp32 29)"), "{t}");

    // A second build reuses the cache (no --calib needed) and gives the same engine bytes.
    let engine2 = dir.join("bf2.edgert");
    let mut args = vec!["build", model, "-o", engine2.to_str().unwrap(), "--precision", "int8"];
    args.extend(common);
    let o = edgert(&args);
    assert!(o.status.success(), "{}", text(&o));
    assert!(!text(&o).contains("calibrated"), "{}", text(&o));
    assert_eq!(std::fs::read(&engine).unwrap(), std::fs::read(&engine2).unwrap());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn int8_and_best_without_calibration_data_are_clear_errors() {
    let model = root().join("models/blazeface_short.onnx");
    let out = std::env::temp_dir().join(format!("edgert-int8-err-{}.edgert", std::process::id()));
    let (model, out) = (model.to_str().unwrap(), out.to_str().unwrap());
    let o = edgert(&["build", model, "-o", out, "--precision", "int8"]);
    assert!(!o.status.success());
    assert!(text(&o).contains("needs calibration data (--calib DIR)"), "{}", text(&o));
    let o = edgert(&["build", model, "-o", out, "--precision", "int8", "--calib", "/nonexistent/calib"]);
    assert!(!o.status.success());
    assert!(text(&o).contains("reading calibration folder /nonexistent/calib"), "{}", text(&o));
    let o = edgert(&["build", model, "-o", out, "--precision", "best"]);
    assert!(!o.status.success());
    assert!(text(&o).contains("--precision best needs calibration data (--calib DIR)"), "{}", text(&o));
    let o = edgert(&["bench", model, "--precision", "int8", "--iterations", "1"]);
    assert!(!o.status.success());
    assert!(text(&o).contains("this ONNX model runs in fp32"), "{}", text(&o));
}

/// FP16: every GEMM convolution's weights in float16 (21 of BlazeFace's 37; the 16
/// depthwise ones stay f32), a smaller engine file, FP32's outputs. `best`:
/// a choice per layer within the budget, the measured error in the report.
#[test]
fn fp16_and_best_builds_report_every_layer() {
    let dir = std::env::temp_dir().join(format!("edgert-fp16-cli-{}", std::process::id()));
    let calib = calibration_images(&dir);
    let model = root().join("models/blazeface_short.onnx");
    let model = model.to_str().unwrap();
    let path = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let (fp32, fp16, best) = (path("fp32.edgert"), path("fp16.edgert"), path("best.edgert"));
    assert!(edgert(&["build", model, "-o", &fp32]).status.success());
    let o = edgert(&["build", model, "-o", &fp16, "--precision", "fp16"]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("precision: int8 0 layers, fp16 21, fp32 29 (depthwise: 16"), "{t}");
    let size = |p: &str| std::fs::metadata(p).unwrap().len();
    // BlazeFace's weights are about 400 KB, 90% of them in the GEMM convolutions.
    assert!(size(&fp16) < size(&fp32) * 7 / 10, "{} vs {}", size(&fp16), size(&fp32));
    let o = edgert(&["inspect", &fp16, "--layers"]);
    let t = text(&o);
    assert!(t.contains("weights stored as float16, f32 activations and sums"), "{t}");

    // Same input through both engines. BlazeFace's weights are float16 values already
    // (MediaPipe ships the model in FP16), so storing them as f16 loses nothing: the f16
    // path must give FP32's outputs exactly (any conversion or indexing slip shows here).
    let input = dir.join("x.npy");
    let x: Vec<f32> = (0..3 * 128 * 128).map(|i| ((i * 7919) % 255) as f32 / 127.5 - 1.0).collect();
    let mut npy = b"\x93NUMPY\x01\x00".to_vec();
    let header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 128, 128), }";
    let header = format!("{header:<117}\n");
    npy.extend((header.len() as u16).to_le_bytes());
    npy.extend(header.as_bytes());
    npy.extend(x.iter().flat_map(|v| v.to_le_bytes()));
    std::fs::write(&input, npy).unwrap();
    let outputs = |engine: &str, name: &str| -> Vec<f32> {
        let out = dir.join(name);
        let i = format!("input={}", input.display());
        let o = edgert(&["run", engine, "--input", &i, "--output-dir", out.to_str().unwrap()]);
        assert!(o.status.success(), "{}", text(&o));
        let bytes = std::fs::read(out.join("regressors.npy")).unwrap();
        let start = 10 + u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
        bytes[start..].chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
    };
    let (want, got) = (outputs(&fp32, "o32"), outputs(&fp16, "o16"));
    assert_eq!(want.len(), 896 * 16);
    assert_eq!(want, got);

    let calib_s = calib.to_str().unwrap();
    let args = ["--calib", calib_s, "--calib-mean", "127.5", "--calib-std", "127.5", "--max-error", "0.05"];
    let mut build = vec!["build", model, "-o", &best, "--precision", "best"];
    build.extend(args);
    let o = edgert(&build);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("best: chose per layer") && t.contains("on 4 samples"), "{t}");
    let o = edgert(&["inspect", &best, "--layers"]);
    let t = text(&o);
    assert!(t.contains("precision: best") && t.contains("measured error vs fp32"), "{t}");
    // Each of the 21 candidates was timed in all three precisions, and says so.
    let timed = t.lines().filter(|l| l.contains(" ms") && l.contains("fp32 ") && l.contains("int8 ")).count();
    assert_eq!(timed, 21, "{t}");
    let o = edgert(&["bench", &best, "--iterations", "3", "--warmup", "1", "--threads", "1"]);
    assert!(o.status.success() && text(&o).contains("best (of 50 layers: int8 "), "{}", text(&o));
    std::fs::remove_dir_all(&dir).unwrap();
}
