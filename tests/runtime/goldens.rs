//! Real-model goldens: every case in `tests/goldens/` (onnxruntime's outputs on fixed
//! inputs, made by `tests/goldens/gen_goldens.py`) through the reference executor and the
//! planned engine, within the f32 tolerance of DESIGN.md.

#[path = "common.rs"]
mod common;

use std::sync::Arc;

use edgert_core::compare::{Tolerance, mismatch};
use edgert_core::{Context, Engine, onnx};

/// Cases that need something the runtime does not have yet, with the reason. Listed here so
/// the test prints them rather than skipping silently.
const PENDING: &[(&str, &str)] = &[];

#[test]
fn real_models_match_onnxruntime() {
    let cases = common::golden_cases();
    assert!(!cases.is_empty(), "no golden cases under tests/goldens");
    let (mut passed, mut failures, mut pending) = (0, Vec::new(), 0);
    for case in &cases {
        if let Some((_, why)) = PENDING.iter().find(|(c, _)| case.starts_with(c)) {
            println!("pending {case}: {why}");
            pending += 1;
            continue;
        }
        let g = common::load_golden(case);
        let result = (|| -> Result<(), String> {
            let graph = onnx::load_model(&g.model).map_err(|e| e.to_string())?;
            let reference = graph.run_reference(&g.input_map()).map_err(|e| format!("reference: {e}"))?;
            let engine = Arc::new(Engine::from_graph(graph).map_err(|e| e.to_string())?);
            let mut ctx = Context::new(engine, &g.input_shapes()).map_err(|e| e.to_string())?;
            for (n, t) in &g.inputs {
                ctx.set_input(n, t).map_err(|e| e.to_string())?;
            }
            ctx.run().map_err(|e| format!("engine: {e}"))?;
            for (i, (name, want)) in g.outputs.iter().enumerate() {
                if let Some(m) = mismatch(&reference[i], want, Tolerance::F32) {
                    return Err(format!("reference output `{name}`: {m}"));
                }
                let got = ctx.output(i).map_err(|e| e.to_string())?;
                if let Some(m) = mismatch(&got, want, Tolerance::F32) {
                    return Err(format!("engine output `{name}`: {m}"));
                }
            }
            Ok(())
        })();
        match result {
            Ok(()) => {
                println!("ok {case}");
                passed += 1
            }
            Err(e) => {
                println!("FAIL {case}: {e}");
                failures.push(case.clone());
            }
        }
    }
    println!("goldens: {passed} passed, {} failed, {pending} pending", failures.len());
    assert!(failures.is_empty(), "golden cases failed: {failures:?}");
}
