//! `eval` end to end on a tiny labelled set made here: a held-out voice saying a keyword, and
//! noise.

use std::path::{Path, PathBuf};

use voice_actions::eval::evaluate;
use voice_actions::{Detector, Embedding};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn detector() -> Detector {
    Detector::with_embedding(&Embedding::split_in(&root()), &root().join("models/kws/heads.json")).unwrap()
}

#[test]
fn a_folder_without_labels_names_the_script_that_makes_them() {
    let dir = std::env::temp_dir().join(format!("va-eval-empty-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let e = evaluate(&mut detector(), &dir, 1000, |_, _| {}).unwrap_err();
    assert!(format!("{e:#}").contains("make_eval_set.py"), "{e:#}");
}

#[test]
fn eval_counts_detections_false_accepts_and_latency() {
    let dir = std::env::temp_dir().join(format!("va-eval-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let raw = dir.join("raw.wav");
    // A held-out voice of models/kws/train.py.
    let ok =
        std::process::Command::new("espeak-ng").args(["-v", "en-us-nyc+m6", "-w"]).arg(&raw).arg("lights on").status();
    if !ok.is_ok_and(|s| s.success()) {
        println!("skipped: no espeak-ng");
        return;
    }
    let said = edgert_audio::load_wav_16k(&raw).unwrap().samples().to_vec();
    // espeak pads with silence: the voice is where the level is above 0.01.
    let first = said.iter().position(|v| v.abs() > 0.01).unwrap();
    let last = said.iter().rposition(|v| v.abs() > 0.01).unwrap();
    let voice = &said[first..=last];
    let lead = 16_000;
    let mut pos = vec![0.0f32; lead];
    pos.extend_from_slice(voice);
    pos.extend(std::iter::repeat_n(0.0, 32_000));
    edgert_audio::write_wav_16bit(&dir.join("pos.wav"), &pos, 16_000).unwrap();
    // Negative: quiet deterministic noise, 10 s.
    let neg: Vec<f32> =
        (0..160_000u32).map(|i| 0.01 * (((i.wrapping_mul(2_654_435_761) >> 16) % 1000) as f32 / 500.0 - 1.0)).collect();
    edgert_audio::write_wav_16bit(&dir.join("neg.wav"), &neg, 16_000).unwrap();
    let end_ms = ((lead + voice.len()) * 1000 / 16_000) as u64;
    let labels = serde_json::json!({"files": [
        {"file": "pos.wav", "kind": "positive", "events": [{"keyword": "lights on", "start_ms": 1000, "end_ms": end_ms}]},
        {"file": "neg.wav", "kind": "negative", "events": []},
    ]});
    std::fs::write(dir.join("labels.json"), labels.to_string()).unwrap();

    let mut files = Vec::new();
    let r = evaluate(&mut detector(), &dir, 1000, |f, d| files.push((f.to_string(), d.len()))).unwrap();
    println!("{}", r.markdown());
    assert_eq!(files.len(), 2);
    let on = r.keywords.iter().find(|k| k.keyword == "lights on").unwrap();
    assert_eq!(on.utterances, 1);
    assert_eq!(on.detected, 1, "`lights on` by a held-out voice was missed: {r:?}");
    // Fires within the decision delay after the voice stops (2 steps of 80 ms + the chunk).
    let lat = on.latencies_ms[0];
    assert!((-300..=400).contains(&lat), "latency {lat} ms");
    assert!(r.false_accepts.is_empty(), "{:?}", r.false_accepts);
    assert!((r.negative_s - 10.0).abs() < 0.1, "{}", r.negative_s);
    assert!(r.keywords.iter().filter(|k| k.keyword != "lights on").all(|k| k.utterances == 0));
}
