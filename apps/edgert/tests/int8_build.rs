//! `edgert build --precision int8` end to end: calibration on a folder of images, the cache
//! file (written, then reused), the per-layer report, `bench` naming the precision, and the
//! errors for missing calibration data and unbuilt precisions.

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

#[test]
fn int8_build_calibrates_writes_the_cache_reports_layers_and_benches() {
    let dir = std::env::temp_dir().join(format!("edgert-int8-cli-{}", std::process::id()));
    let calib = dir.join("calib");
    std::fs::create_dir_all(&calib).unwrap();
    // Four calibration images: crops of the bundled photo.
    let photo = image::open(root().join("models/images/astronaut.png")).unwrap().to_rgb8();
    for i in 0..4u32 {
        image::imageops::crop_imm(&photo, 40 * i, 30 * i, 300, 300)
            .to_image()
            .save(calib.join(format!("{i}.png")))
            .unwrap();
    }
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
    assert!(t.contains("precision: int8 21 layers, fp32 29"), "{t}");
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
    assert!(t.contains("int8 (21 of 50 layers in INT8)"), "{t}");

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
fn int8_without_calibration_data_and_unbuilt_precisions_are_clear_errors() {
    let model = root().join("models/blazeface_short.onnx");
    let out = std::env::temp_dir().join(format!("edgert-int8-err-{}.edgert", std::process::id()));
    let (model, out) = (model.to_str().unwrap(), out.to_str().unwrap());
    let o = edgert(&["build", model, "-o", out, "--precision", "int8"]);
    assert!(!o.status.success());
    assert!(text(&o).contains("needs calibration data (--calib DIR)"), "{}", text(&o));
    let o = edgert(&["build", model, "-o", out, "--precision", "int8", "--calib", "/nonexistent/calib"]);
    assert!(!o.status.success());
    assert!(text(&o).contains("reading calibration folder /nonexistent/calib"), "{}", text(&o));
    for p in ["fp16", "best"] {
        let o = edgert(&["build", model, "-o", out, "--precision", p]);
        assert!(!o.status.success());
        assert!(text(&o).contains("not built yet"), "{}", text(&o));
    }
    let o = edgert(&["bench", model, "--precision", "int8", "--iterations", "1"]);
    assert!(!o.status.success());
    assert!(text(&o).contains("this ONNX model runs in fp32"), "{}", text(&o));
}
