//! Engine files: a round trip gives the same outputs; truncated, corrupted, other-version and
//! other-target files are errors that name the problem, never panics.

#[path = "common.rs"]
mod common;

use std::sync::Arc;

use edgert_core::engine::{Target, retarget_bytes};
use edgert_core::{Context, Engine, onnx};

fn run(engine: Arc<Engine>, g: &common::Golden) -> Vec<edgert_core::Tensor> {
    let mut ctx = Context::new(engine, &g.input_shapes()).expect("context");
    for (n, t) in &g.inputs {
        ctx.set_input(n, t).expect("input");
    }
    ctx.run().expect("run");
    (0..ctx.num_outputs()).map(|i| ctx.output(i).expect("output")).collect()
}

fn engine_bytes() -> (Vec<u8>, common::Golden) {
    let g = common::load_golden("blazeface_short");
    let graph = onnx::load_model(&g.model).expect("model");
    let engine = Engine::build(graph, Some(&g.input_shapes())).expect("build");
    (engine.to_bytes().expect("serialize"), g)
}

#[test]
fn round_trip_gives_identical_outputs() {
    let (bytes, g) = engine_bytes();
    let dir = std::env::temp_dir().join(format!("edgert-engine-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("blazeface.edgert");
    std::fs::write(&path, &bytes).unwrap();
    let loaded = Engine::load(&path).expect("load");
    // Weights land 64-byte aligned after the header: the file length says the layout holds.
    assert_eq!(bytes.len() % 4, 0);
    let recorded = loaded.build.plan.clone().expect("plan recorded at build");
    let direct = Engine::from_graph(onnx::load_model(&g.model).unwrap()).unwrap();
    let a = run(Arc::new(direct), &g);
    let ctx = Context::new(Arc::new(Engine::from_bytes(&bytes).unwrap()), &g.input_shapes()).unwrap();
    assert_eq!(ctx.plan().summary(&ctx.engine().graph), recorded, "plan on load differs from the recorded plan");
    let b = run(Arc::new(loaded), &g);
    assert_eq!(a, b, "outputs after save/load differ");
    // Tools tell engines from ONNX models by the magic, whatever the file is called.
    assert!(Engine::is_engine_file(&path));
    let renamed = dir.join("model.onnx");
    std::fs::copy(&path, &renamed).unwrap();
    assert!(Engine::is_engine_file(&renamed));
    assert!(!Engine::is_engine_file(&g.model), "an ONNX model");
    std::fs::write(dir.join("short"), &bytes[..3]).unwrap();
    assert!(!Engine::is_engine_file(&dir.join("short")), "shorter than the magic");
    assert!(!Engine::is_engine_file(&dir.join("missing")), "no such file");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn truncated_files_are_errors() {
    let (bytes, _) = engine_bytes();
    let step = (bytes.len() / 300).max(1);
    let mut cuts: Vec<usize> = (0..bytes.len()).step_by(step).collect();
    cuts.extend([0, 1, 7, 8, 31, 32, 33, bytes.len() - 4, bytes.len() - 1]);
    for cut in cuts {
        let err = Engine::from_bytes(&bytes[..cut]).expect_err("a truncated engine must not load");
        let msg = err.to_string();
        assert!(msg.contains("truncated") || msg.contains("bad magic"), "cut at {cut}: {msg}");
    }
}

#[test]
fn corrupted_bytes_are_detected() {
    let (bytes, _) = engine_bytes();
    let mut seed = 0x9e3779b97f4a7c15u64;
    for _ in 0..300 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let pos = (seed as usize) % bytes.len();
        let mut b = bytes.clone();
        b[pos] ^= 1 << ((seed >> 60) % 8);
        let err = Engine::from_bytes(&b).expect_err("a corrupted engine must not load");
        let msg = err.to_string();
        assert!(
            ["checksum", "magic", "truncated", "version", "overflows", "trailing"].iter().any(|k| msg.contains(k)),
            "byte {pos}: unexpected message: {msg}"
        );
    }
}

#[test]
fn other_versions_and_targets_are_named() {
    let (bytes, _) = engine_bytes();
    let mut v2 = bytes.clone();
    v2[8] = 2;
    let msg = Engine::from_bytes(&v2).unwrap_err().to_string();
    assert!(msg.contains("format version 2"), "{msg}");

    let other_arch = if std::env::consts::ARCH == "aarch64" { "x86_64" } else { "aarch64" };
    let t = Target { backend: "cpu".into(), arch: other_arch.into(), required_features: vec![] };
    let msg = Engine::from_bytes(&retarget_bytes(&bytes, &t).unwrap()).unwrap_err().to_string();
    assert!(msg.contains(other_arch) && msg.contains(std::env::consts::ARCH), "{msg}");

    let t = Target { backend: "cuda".into(), arch: std::env::consts::ARCH.into(), required_features: vec![] };
    let msg = Engine::from_bytes(&retarget_bytes(&bytes, &t).unwrap()).unwrap_err().to_string();
    assert!(msg.contains("cuda"), "{msg}");

    let t = Target {
        backend: "cpu".into(),
        arch: std::env::consts::ARCH.into(),
        required_features: vec!["no-such-feature".into()],
    };
    let msg = Engine::from_bytes(&retarget_bytes(&bytes, &t).unwrap()).unwrap_err().to_string();
    assert!(msg.contains("no-such-feature"), "{msg}");

    // The unmodified file still loads: the checks above are about the changes.
    assert!(Engine::from_bytes(&bytes).is_ok());
}

#[test]
fn round_trip_keeps_control_flow_subgraphs() {
    // speech_embedding (Loop with outer-scope values) and Silero VAD (nested If): the
    // subgraphs, their constants and their captures survive the file, and run the same.
    for case in ["speech_embedding", "silero_vad"] {
        let g = common::load_golden(case);
        let engine = Engine::build(onnx::load_model(&g.model).expect("model"), Some(&g.input_shapes())).expect("build");
        let bytes = engine.to_bytes().expect("serialize");
        let loaded = Engine::from_bytes(&bytes).expect("load");
        let a = run(Arc::new(engine), &g);
        let b = run(Arc::new(loaded), &g);
        assert_eq!(a, b, "{case}: outputs after save/load differ");
        // And they are onnxruntime's outputs (within the f32 tolerance).
        for (got, (name, want)) in b.iter().zip(&g.outputs) {
            let m = edgert_core::compare::mismatch(got, want, edgert_core::compare::Tolerance::F32);
            assert!(m.is_none(), "{case} output `{name}` after a round trip: {m:?}");
        }
        println!("{case}: {} byte engine round-trips", bytes.len());
    }
}
