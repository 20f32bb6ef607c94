//! ONNX node conformance: runs ONNX's own node tests (written by `gen_node_tests.py`) that
//! the manifests in `tests/conformance/enabled/*.txt` list, through the reference executor
//! and through the planned arena executor, and compares with the expected outputs.
//!
//! Environment:
//! * `EDGERT_CONFORMANCE_DATA`: data folder (default `tests/conformance/data`).
//! * `EDGERT_CONFORMANCE_FILTER=substr`: only cases whose name contains `substr`.
//! * `EDGERT_CONFORMANCE_ALL=1`: survey mode: run every generated case that imports (enabled
//!   or not) and print each result; never fails. For curating the manifests.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use edgert_core::compare::{Tolerance, mismatch};
use edgert_core::context::Context;
use edgert_core::engine::Engine;
use edgert_core::graph::Graph;
use edgert_core::onnx::{load_model, read_tensor_pb};
use edgert_core::tensor::Tensor;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read_list(dir: &Path) -> BTreeSet<String> {
    let mut set = BTreeSet::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return set };
    let mut files: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    files.sort();
    for f in files {
        if f.extension().is_none_or(|e| e != "txt") {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        for line in text.lines() {
            let name = line.split('#').next().unwrap_or("").trim();
            if !name.is_empty() {
                set.insert(name.to_string());
            }
        }
    }
    set
}

/// Runs one case; `Err` says why it failed.
fn run_case(dir: &Path) -> Result<usize, String> {
    let graph = load_model(&dir.join("model.onnx")).map_err(|e| format!("import: {e}"))?;
    let mut sets: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| e.to_string())?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    sets.sort();
    if sets.is_empty() {
        return Err("no test_data_set".into());
    }
    for set in &sets {
        let mut inputs = Vec::new();
        let mut outputs = Vec::new();
        for i in 0.. {
            let p = set.join(format!("input_{i}.pb"));
            if !p.exists() {
                break;
            }
            inputs.push(read_tensor_pb(&p).map_err(|e| format!("input {i}: {e}"))?.1);
        }
        for i in 0.. {
            let p = set.join(format!("output_{i}.pb"));
            if !p.exists() {
                break;
            }
            outputs.push(read_tensor_pb(&p).map_err(|e| format!("output {i}: {e}"))?.1);
        }
        check_reference(&graph, &inputs, &outputs)?;
        check_planned(&graph, &inputs, &outputs)?;
    }
    Ok(sets.len())
}

fn named_inputs(graph: &Graph, inputs: &[Tensor]) -> Result<HashMap<String, Tensor>, String> {
    if inputs.len() != graph.inputs.len() {
        return Err(format!("{} input files for {} graph inputs", inputs.len(), graph.inputs.len()));
    }
    Ok(graph.inputs.iter().zip(inputs).map(|(&id, t)| (graph.values[id].name.clone(), t.clone())).collect())
}

fn compare(got: &[Tensor], want: &[Tensor], what: &str) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{what}: {} outputs, expected {}", got.len(), want.len()));
    }
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        if let Some(m) = mismatch(g, w, Tolerance::F32) {
            return Err(format!("{what}: output {i}: {m}"));
        }
    }
    Ok(())
}

fn check_reference(graph: &Graph, inputs: &[Tensor], outputs: &[Tensor]) -> Result<(), String> {
    let got = graph.run_reference(&named_inputs(graph, inputs)?).map_err(|e| format!("reference: {e}"))?;
    compare(&got, outputs, "reference")
}

fn check_planned(graph: &Graph, inputs: &[Tensor], outputs: &[Tensor]) -> Result<(), String> {
    let named = named_inputs(graph, inputs)?;
    match run_planned(graph.clone(), named.clone(), outputs.len()) {
        // Inputs that carry shapes (Reshape targets, Reduce axes, TopK's K) must be known to
        // plan: freeze the integer inputs as constants, as a user would with shape tensors.
        Err(e) if e.contains("must be known when shapes are planned") => {
            let (frozen, rest): (HashMap<_, _>, HashMap<_, _>) = named.into_iter().partition(|(_, t)| {
                // Integer inputs (shapes, axes, K) and short 1-D float vectors (Resize scales).
                matches!(t.dtype(), edgert_core::DType::I64 | edgert_core::DType::I32)
                    || (t.shape().len() <= 1 && t.len() <= 8)
            });
            let mut g = graph.clone();
            g.freeze_inputs(&frozen).map_err(|e| format!("freeze: {e}"))?;
            compare(&run_planned(g, rest, outputs.len())?, outputs, "planned (shape inputs frozen)")
        }
        Err(e) => Err(e),
        Ok(got) => compare(&got, outputs, "planned"),
    }
}

fn run_planned(graph: Graph, named: HashMap<String, Tensor>, n_out: usize) -> Result<Vec<Tensor>, String> {
    let engine = Engine::from_graph(graph).map_err(|e| format!("engine: {e}"))?;
    let shapes: HashMap<String, Vec<usize>> = named.iter().map(|(k, v)| (k.clone(), v.shape().to_vec())).collect();
    let mut ctx = Context::new(std::sync::Arc::new(engine), &shapes).map_err(|e| format!("plan: {e}"))?;
    for (name, t) in &named {
        ctx.set_input(name, t).map_err(|e| format!("planned: {e}"))?;
    }
    ctx.run().map_err(|e| format!("planned: {e}"))?;
    (0..n_out).map(|i| ctx.output(i)).collect::<Result<_, _>>().map_err(|e| format!("planned: {e}"))
}

#[test]
fn onnx_node_conformance() {
    let root = repo_root();
    let data = std::env::var_os("EDGERT_CONFORMANCE_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("tests/conformance/data"));
    assert!(
        data.is_dir(),
        "conformance data missing at {}: run `python3 tests/conformance/gen_node_tests.py` (the README's test command does)",
        data.display()
    );
    let enabled = read_list(&root.join("tests/conformance/enabled"));
    let excluded = read_list(&root.join("tests/conformance/excluded"));
    let both: Vec<_> = enabled.intersection(&excluded).collect();
    assert!(both.is_empty(), "cases both enabled and excluded: {both:?}");
    let filter = std::env::var("EDGERT_CONFORMANCE_FILTER").unwrap_or_default();
    let survey = std::env::var("EDGERT_CONFORMANCE_ALL").is_ok_and(|v| v == "1");

    let mut all: Vec<String> = std::fs::read_dir(&data)
        .expect("read data dir")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    all.sort();
    let known: BTreeSet<&String> = all.iter().collect();
    let missing: Vec<_> = enabled.iter().filter(|c| !known.contains(c)).collect();
    assert!(missing.is_empty(), "enabled cases not in the generated data: {missing:?}");

    let (mut passed, mut failed) = (Vec::new(), Vec::new());
    let mut unclassified = Vec::new();
    for case in &all {
        if !case.contains(&filter) {
            continue;
        }
        let is_enabled = enabled.contains(case);
        if !survey && !is_enabled {
            // Cases of ops we support that nobody classified deserve a look.
            if !excluded.contains(case) && load_model(&data.join(case).join("model.onnx")).is_ok() {
                unclassified.push(case.clone());
            }
            continue;
        }
        let result =
            std::panic::catch_unwind(|| run_case(&data.join(case))).unwrap_or_else(|_| Err("PANIC".to_string()));
        match result {
            Ok(_) => passed.push(case.clone()),
            Err(e) => {
                if survey && e.starts_with("import:") {
                    continue;
                }
                failed.push((case.clone(), e));
            }
        }
    }
    if survey {
        for p in &passed {
            println!("PASS {p}");
        }
    }
    for (c, e) in &failed {
        println!("FAIL {c}: {e}");
    }
    if !unclassified.is_empty() {
        println!("note: {} generated cases import but are neither enabled nor excluded:", unclassified.len());
        for c in &unclassified {
            println!("  unclassified {c}");
        }
    }
    println!(
        "conformance: {} passed, {} failed, {} excluded (of {} generated cases; {} enabled)",
        passed.len(),
        failed.len(),
        excluded.len(),
        all.len(),
        enabled.len()
    );
    if !survey {
        assert!(failed.is_empty(), "{} enabled conformance cases failed", failed.len());
    }
}
