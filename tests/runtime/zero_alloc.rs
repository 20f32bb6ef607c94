//! Steady-state `Context::run` makes no heap allocation: counted with a global allocator
//! wrapper over real models.

#[path = "common.rs"]
mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use edgert_core::engine::{Int8Options, Int8Scales};
use edgert_core::quant::Method;
use edgert_core::{Context, Engine, onnx};

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
fn steady_state_run_allocates_nothing() {
    // One test function: the counter is global, parallel tests would disturb it.
    // First prove the counter sees allocations at all.
    COUNTING.store(true, Ordering::SeqCst);
    let v: Vec<u8> = std::hint::black_box(Vec::with_capacity(64));
    COUNTING.store(false, Ordering::SeqCst);
    drop(v);
    assert!(ALLOCS.load(Ordering::SeqCst) >= 1, "the counting allocator does not count");
    // speech_embedding runs a Loop and silero_vad nested Ifs: their bodies run in pooled contexts.
    let cases = ["blazeface_short", "silero_vad_16k_sequence", "speech_embedding", "silero_vad"];
    // With one thread and with a pool (its workers' allocations count too: the counter is
    // process-wide).
    for (case, threads) in cases.iter().flat_map(|c| [(*c, 1usize), (*c, 3)]) {
        let g = common::load_golden(case);
        let graph = onnx::load_model(&g.model).expect("model loads");
        let engine = Arc::new(Engine::from_graph(graph).expect("engine"));
        assert_no_allocations(case, engine, &g, threads);
    }
    // An INT8 engine (every convolution quantized, scales calibrated on the golden input):
    // its weights are prepared on the warm-up run, never after.
    let g = common::load_golden("blazeface_short");
    let graph = onnx::load_model(&g.model).expect("model loads");
    let sample = g.input_map();
    let (engine, _) = Engine::build_int8(
        graph,
        None,
        Int8Scales::Calibrate {
            samples: &mut std::iter::once(Ok(sample)),
            method: Method::MinMax,
            threads: 1,
            progress: &mut |_| {},
        },
        &Int8Options {
            only_faster: false,
            threads: 1,
            // The CPU's default: 7 bits on AVX2 without VNNI, 8 on AVX-512 VNNI, so the check
            // covers the kernel this machine runs (the VNNI one caught an allocation).
            weight_bits: edgert_core::passes::quantize_int8::default_weight_bits(),
        },
    )
    .expect("int8 engine");
    assert!(engine.graph.nodes.iter().any(|n| n.op_type == "edgert.QConv"), "no INT8 layer");
    let engine = Arc::new(engine);
    for threads in [1, 3] {
        assert_no_allocations("blazeface_short int8", engine.clone(), &g, threads);
    }
    // An FP16 engine: the GEMM converts its f16 weights in a stack buffer, per block.
    let fp16 = Arc::new(Engine::build_fp16(onnx::load_model(&g.model).expect("model loads"), None).expect("fp16"));
    assert!(fp16.build.layers.iter().any(|l| l.precision == "fp16"), "no FP16 layer");
    for threads in [1, 3] {
        assert_no_allocations("blazeface_short fp16", fp16.clone(), &g, threads);
    }
}

fn assert_no_allocations(case: &str, engine: Arc<Engine>, g: &common::Golden, threads: usize) {
    let mut ctx = Context::with_threads(engine, &g.input_shapes(), threads).expect("context");
    for (n, t) in &g.inputs {
        ctx.set_input(n, t).expect("input");
    }
    ctx.run().expect("warm-up run");
    ALLOCS.store(0, Ordering::SeqCst);
    COUNTING.store(true, Ordering::SeqCst);
    let mut ok = true;
    for _ in 0..3 {
        ok &= ctx.run().is_ok();
        // Reading an output as a view is also allocation-free.
        ok &= ctx.output_ref(0).is_ok();
    }
    COUNTING.store(false, Ordering::SeqCst);
    let n = ALLOCS.load(Ordering::SeqCst);
    assert!(ok, "{case}: run failed");
    assert_eq!(n, 0, "{case} ({threads} threads): {n} heap allocations in 3 steady-state runs");
    println!(
        "{case} ({threads} threads): 0 allocations in 3 runs ({} steps, arena {} bytes)",
        ctx.plan().steps.len(),
        ctx.plan().arena_bytes
    );
}
