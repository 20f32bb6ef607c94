//! Silero VAD gating: silence and noise skip the embedding, speech does not, and a gated
//! detector fires as an ungated one does on speech.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use edgert_core::{Context, Engine, Tensor, onnx};
use voice_actions::vad::{VAD_CHUNK, VAD_CONTEXT, Vad};
use voice_actions::{Detection, Detector, Embedding};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn vad_model() -> PathBuf {
    root().join("models/kws/silero_vad_16k_conv2d.onnx")
}

fn detector(vad: bool) -> Detector {
    detector_with(&Embedding::split_in(&root()), vad)
}

fn detector_with(e: &Embedding, vad: bool) -> Detector {
    let mut d = Detector::with_embedding(e, &root().join("models/kws/heads.json")).unwrap();
    if vad {
        d.enable_vad(&vad_model()).unwrap();
    }
    d
}

fn noise(n: usize, level: f32) -> Vec<f32> {
    let mut s = 0x2545_f491_u32;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            level * (s as f32 / u32::MAX as f32 * 2.0 - 1.0)
        })
        .collect()
}

#[test]
fn the_conv2d_vad_matches_silero_as_shipped() {
    // models/kws/vad_conv2d.py checks the rewrite with onnxruntime; here edgert runs both.
    let shapes: HashMap<String, Vec<usize>> =
        [("input".to_string(), vec![1, VAD_CONTEXT + VAD_CHUNK]), ("state".to_string(), vec![2, 1, 128])].into();
    let g = onnx::load_model(&root().join("models/silero_vad_openvino_16k.onnx")).unwrap();
    let mut orig = Context::new(Arc::new(Engine::build(g, Some(&shapes)).unwrap()), &shapes).unwrap();
    let mut vad = Vad::new(&vad_model()).unwrap();
    let t: Vec<f32> = (0..VAD_CHUNK * 12).map(|i| i as f32 / 16000.0).collect();
    let x: Vec<f32> = t
        .iter()
        .zip(noise(t.len(), 0.02))
        .map(|(t, n)| 0.3 * (std::f32::consts::TAU * 220.0 * t * (1.0 + t)).sin() + n)
        .collect();
    let mut state = vec![0.0f32; 256];
    let mut ctx = vec![0.0f32; VAD_CONTEXT];
    for c in x.chunks(VAD_CHUNK) {
        let mut inp = ctx.clone();
        inp.extend_from_slice(c);
        ctx = inp[VAD_CHUNK..].to_vec();
        orig.set_input("input", &Tensor::from_f32(&[1, VAD_CONTEXT + VAD_CHUNK], inp).unwrap()).unwrap();
        orig.set_input("state", &Tensor::from_f32(&[2, 1, 128], state.clone()).unwrap()).unwrap();
        orig.run().unwrap();
        let want = orig.output(0).unwrap().to_f32_vec().unwrap()[0];
        state = orig.output(1).unwrap().to_f32_vec().unwrap();
        let got = vad.push(c).unwrap().unwrap();
        assert!((got - want).abs() <= 1e-5, "speech probability {got} vs {want}");
    }
}

#[test]
fn silence_and_noise_skip_the_embedding() {
    let mut det = detector(true);
    let mut x = vec![0.0f32; 16_000 * 3];
    x.extend(noise(16_000 * 5, 0.05));
    det.push(&x, |_, d| assert!(d.is_none(), "fired on noise: {d:?}")).unwrap();
    assert_eq!(det.steps(), 100);
    assert_eq!(det.embedding_runs(), 0, "the VAD let {} of 100 steps of silence/noise through", det.embedding_runs());
}

#[test]
fn speech_opens_the_gate_and_fires_as_without_it() {
    let dir = std::env::temp_dir().join(format!("va-vad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let wav = dir.join("s.wav");
    // A held-out voice of models/kws/train.py.
    let ok = std::process::Command::new("espeak-ng")
        .args(["-v", "en-gb-x-gbcwmd+f4", "-w"])
        .arg(&wav)
        .arg("lights on")
        .status();
    if !ok.is_ok_and(|s| s.success()) {
        println!("skipped: no espeak-ng");
        return;
    }
    let said = edgert_audio::load_wav_16k(&wav).unwrap().samples().to_vec();
    let mut x = noise(16_000 * 2, 0.003);
    x.extend_from_slice(&said);
    x.extend(noise(16_000 * 2, 0.003));
    let run = |det: &mut Detector| {
        let mut found: Vec<Detection> = Vec::new();
        det.push(&x, |_, d| found.extend(d)).unwrap();
        found
    };
    // Both embeddings: skipped steps are recomputed from the log-mel history (split) or the
    // audio history (whole window).
    for e in [Embedding::split_in(&root()), Embedding::Whole(root().join("models/speech_embedding.onnx"))] {
        let mut gated = detector_with(&e, true);
        let mut plain = detector_with(&e, false);
        let (g, p) = (run(&mut gated), run(&mut plain));
        println!("gated: {g:?}, {} of {} steps embedded; ungated: {p:?}", gated.embedding_runs(), gated.steps());
        assert!(p.iter().any(|d| d.keyword == "lights on"), "the ungated detector missed `lights on`: {p:?}");
        assert_eq!(g, p, "gating changed the detections on speech ({e:?})");
        assert!(gated.embedding_runs() > 0);
        assert!(gated.embedding_runs() < gated.steps(), "the VAD never closed on 2 s of quiet noise");
    }
}
