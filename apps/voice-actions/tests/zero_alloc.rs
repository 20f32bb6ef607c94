//! A streaming step (embedding + every head) allocates nothing in steady state, with the split
//! (streaming) embedding and with the whole-window one.

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

struct Counting;
static COUNTING: AtomicBool = AtomicBool::new(false);
static ALLOCS: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn steady_state_chunks_allocate_nothing() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let heads = root.join("models/kws/heads.json");
    for embedding in [
        voice_actions::Embedding::split_in(&root),
        voice_actions::Embedding::Whole(root.join("models/speech_embedding.onnx")),
    ] {
        let mut det = voice_actions::Detector::with_embedding(&embedding, &heads).expect("detector");
        steady_state(&mut det, &format!("{embedding:?}"));
    }
    // With the VAD gate (its state and context buffers are made once too).
    let mut det =
        voice_actions::Detector::with_embedding(&voice_actions::Embedding::split_in(&root), &heads).expect("detector");
    det.enable_vad(&root.join("models/kws/silero_vad_16k_conv2d.onnx")).expect("vad");
    steady_state(&mut det, "split with VAD");
}

fn steady_state(det: &mut voice_actions::Detector, what: &str) {
    // Low-level noise: no keyword fires (a detection allocates its JSON event, by design).
    let x: Vec<f32> = (0..1280 * 12).map(|i| 0.001 * ((i * 7919 % 1000) as f32 / 1000.0 - 0.5)).collect();
    let mut steps = 0;
    det.push(&x[..1280 * 2], |_, _| {}).unwrap();
    ALLOCS.store(0, Ordering::SeqCst);
    COUNTING.store(true, Ordering::SeqCst);
    let r = det.push(&x[1280 * 2..], |_, d| {
        steps += 1;
        assert!(d.is_none());
    });
    COUNTING.store(false, Ordering::SeqCst);
    r.unwrap();
    let n = ALLOCS.load(Ordering::SeqCst);
    assert_eq!(steps, 10);
    assert_eq!(n, 0, "{what}: {n} allocations in {steps} steady-state steps");
    println!("{what}: 0 allocations in {steps} steps (80 ms each)");
}
