//! Mutated ONNX bytes (bit flips, byte overwrites, truncation, splices) give errors or valid
//! models, never panics, through import, engine build and planning.

#[path = "common.rs"]
mod common;

use std::collections::HashMap;
use std::sync::Arc;

use edgert_core::{Context, Engine, onnx};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn mutate(rng: &mut Rng, base: &[u8]) -> Vec<u8> {
    let mut b = base.to_vec();
    for _ in 0..1 + rng.below(4) {
        match rng.below(5) {
            0 => {
                let p = rng.below(b.len());
                b[p] ^= 1 << rng.below(8);
            }
            1 => {
                let p = rng.below(b.len());
                b[p] = rng.next() as u8;
            }
            2 => {
                let cut = rng.below(b.len());
                b.truncate(cut.max(1));
            }
            3 => {
                // Varint-ish large values where lengths and dims live.
                let p = rng.below(b.len());
                for (i, v) in [0xff, 0xff, 0xff, 0x7f].iter().enumerate() {
                    if p + i < b.len() {
                        b[p + i] = *v;
                    }
                }
            }
            _ => {
                let (s, len) = (rng.below(b.len()), rng.below(64));
                let chunk: Vec<u8> = b[s..(s + len).min(b.len())].to_vec();
                let at = rng.below(b.len());
                b.splice(at..at, chunk);
            }
        }
    }
    b
}

#[test]
fn mutated_models_never_panic() {
    let root = common::repo_root();
    let models = ["models/blazeface_short.onnx", "models/silero_vad_16k_sequence.onnx"];
    let mut rng = Rng(0x2545f4914f6cdd1d);
    let (mut imported, mut planned, mut errors, mut total) = (0, 0, 0, 0);
    for m in models {
        let base = std::fs::read(root.join(m)).unwrap_or_else(|e| panic!("{m}: {e}"));
        for _ in 0..1500 {
            let bytes = mutate(&mut rng, &base);
            total += 1;
            let outcome = std::panic::catch_unwind(|| {
                let graph = onnx::import_model(&bytes, None)?;
                let shapes: HashMap<String, Vec<usize>> = HashMap::new();
                let engine = Engine::from_graph(graph)?;
                let _ = Context::new(Arc::new(engine), &shapes)?;
                Ok::<_, edgert_core::Error>(())
            });
            match outcome {
                Ok(Ok(())) => planned += 1,
                Ok(Err(e)) => {
                    errors += 1;
                    if e.to_string().starts_with("ONNX import") {
                        continue;
                    }
                    imported += 1;
                }
                Err(_) => {
                    let path = std::env::temp_dir().join("edgert-fuzz-crash.onnx");
                    std::fs::write(&path, &bytes).ok();
                    panic!("panic on a mutated {m}; input saved to {}", path.display());
                }
            }
        }
    }
    println!("fuzz: {total} mutated models: {planned} planned, {errors} errors ({imported} past import)");
    // The mutations must reach past the protobuf decoder often enough to exercise the
    // importer's checks, the passes and the planner.
    assert!(imported + planned > total / 20, "only {} of {total} mutations got past import", imported + planned);
}
