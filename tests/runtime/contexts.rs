//! Several contexts share one engine (multi-stream): each has its own arena, the weights are
//! shared, and concurrent runs on different threads give the same outputs as one alone.

#[path = "common.rs"]
mod common;

use std::sync::Arc;

use edgert_core::compare::{Tolerance, mismatch};
use edgert_core::{Context, Engine, onnx};

#[test]
fn contexts_share_an_engine_across_threads() {
    let g = Arc::new(common::load_golden("blazeface_short"));
    let engine = Arc::new(Engine::from_graph(onnx::load_model(&g.model).unwrap()).unwrap());
    let threads: Vec<_> = (0..3)
        .map(|_| {
            let (engine, g) = (engine.clone(), g.clone());
            std::thread::spawn(move || {
                let mut ctx = Context::new(engine, &g.input_shapes()).expect("context");
                for (n, t) in &g.inputs {
                    ctx.set_input(n, t).unwrap();
                }
                for _ in 0..3 {
                    ctx.run().expect("run");
                }
                (0..ctx.num_outputs()).map(|i| ctx.output(i).unwrap()).collect::<Vec<_>>()
            })
        })
        .collect();
    for t in threads {
        let outs = t.join().expect("thread panicked");
        for (i, (_, want)) in g.outputs.iter().enumerate() {
            assert!(mismatch(&outs[i], want, Tolerance::F32).is_none(), "output {i} differs");
        }
    }
    // One copy of the weights: the engine is shared, not cloned, by its contexts.
    assert_eq!(Arc::strong_count(&engine), 1);
}

#[test]
fn wrong_inputs_are_errors_naming_the_input() {
    let g = common::load_golden("blazeface_short");
    let engine = Arc::new(Engine::from_graph(onnx::load_model(&g.model).unwrap()).unwrap());
    let mut ctx = Context::new(engine.clone(), &g.input_shapes()).unwrap();
    let (name, t) = &g.inputs[0];
    let wrong = edgert_core::Tensor::zeros(t.dtype(), &[1, 3, 64, 64]);
    let msg = ctx.set_input(name, &wrong).unwrap_err().to_string();
    assert!(msg.contains(name.as_str()) && msg.contains("expects"), "{msg}");
    let msg = ctx.set_input("no_such_input", t).unwrap_err().to_string();
    assert!(msg.contains("no_such_input"), "{msg}");
    // A shape that does not fit the declared one fails at context creation.
    let mut shapes = g.input_shapes();
    shapes.insert(name.clone(), vec![1, 3, 7]);
    let msg = Context::new(engine, &shapes).unwrap_err().to_string();
    assert!(msg.contains(name.as_str()), "{msg}");
}
