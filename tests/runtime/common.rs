//! Shared by the runtime integration tests: repo paths and golden cases.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use edgert_core::{Tensor, npy};

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("repo root")
}

/// One golden case written by `tests/goldens/gen_goldens.py`.
pub struct Golden {
    pub name: String,
    pub model: PathBuf,
    pub inputs: Vec<(String, Tensor)>,
    pub outputs: Vec<(String, Tensor)>,
}

impl Golden {
    pub fn input_map(&self) -> HashMap<String, Tensor> {
        self.inputs.iter().cloned().collect()
    }
    pub fn input_shapes(&self) -> HashMap<String, Vec<usize>> {
        self.inputs.iter().map(|(n, t)| (n.clone(), t.shape().to_vec())).collect()
    }
}

/// Loads `tests/goldens/<case>/case.json` and its `.npy` files.
pub fn load_golden(case: &str) -> Golden {
    let root = repo_root();
    let dir = root.join("tests/goldens").join(case);
    let text = std::fs::read_to_string(dir.join("case.json")).unwrap_or_else(|e| panic!("{case}: case.json: {e}"));
    let j: serde_json::Value = serde_json::from_str(&text).expect("case.json is JSON");
    let list = |key: &str| -> Vec<(String, Tensor)> {
        j[key]
            .as_array()
            .unwrap_or_else(|| panic!("{case}: `{key}` missing"))
            .iter()
            .map(|e| {
                let name = e["name"].as_str().expect("name").to_string();
                let file = e["file"].as_str().expect("file");
                (name, npy::read(&dir.join(file)).unwrap_or_else(|err| panic!("{case}: {err}")))
            })
            .collect()
    };
    Golden {
        name: case.to_string(),
        model: root.join(j["model"].as_str().expect("model path")),
        inputs: list("inputs"),
        outputs: list("outputs"),
    }
}

/// Every golden case folder name, sorted.
pub fn golden_cases() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(repo_root().join("tests/goldens"))
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter(|e| e.path().join("case.json").exists())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}
