//! `Engine::with_batch`: BlazeFace (exported with a fixed batch of 1) rebatched runs several
//! images per run and gives each the outputs onnxruntime gives it alone; a graph that mixes
//! images along its first axis, and one already batch-polymorphic, are refused with reasons.

#[path = "common.rs"]
mod common;

use std::sync::Arc;

use edgert_core::compare::{Tolerance, mismatch};
use edgert_core::graph::Dim;
use edgert_core::ops::{Attr, Attrs};
use edgert_core::{Context, DType, Engine, Graph, Tensor, onnx};

/// Rebatches the golden's model to `n`, runs the golden input as images 0 and `n - 1` (the
/// others zeros) in one run, and checks both against onnxruntime's outputs; then through an
/// engine file.
fn check(case: &str, n: usize) {
    let g = common::load_golden(case);
    let engine = Engine::build(onnx::load_model(&g.model).expect("model"), None).expect("build");
    let batched = engine.with_batch(n).unwrap_or_else(|e| panic!("{case}: {e}"));
    let batched = Arc::new(Engine::from_bytes(&batched.to_bytes().expect("save")).expect("load"));
    let (name, x) = &g.inputs[0];
    let per = x.len();
    let mut all = vec![0f32; n * per];
    let xs = x.to_f32_vec().unwrap();
    all[..per].copy_from_slice(&xs);
    all[(n - 1) * per..].copy_from_slice(&xs);
    let mut shape = x.shape().to_vec();
    shape[0] = n;
    let mut ctx = Context::new(batched, &[(name.clone(), shape.clone())].into()).expect("context");
    ctx.set_input(name, &Tensor::from_f32(&shape, all).unwrap()).unwrap();
    ctx.run().unwrap();
    for (o, (oname, want)) in g.outputs.iter().enumerate() {
        let got = ctx.output(o).unwrap();
        assert_eq!(got.shape()[0], n, "{case} {oname}");
        let values = got.to_f32_vec().unwrap();
        let w = want.len();
        for img in [0, n - 1] {
            let one = Tensor::from_f32(want.shape(), values[img * w..(img + 1) * w].to_vec()).unwrap();
            if let Some(m) = mismatch(&one, want, Tolerance::F32) {
                panic!("{case} batch {n}, image {img}, output {oname}: {m}");
            }
        }
    }
    eprintln!("ok {case} rebatched to {n}");
}

#[test]
fn blazeface_short_and_full_rebatch() {
    check("blazeface_short", 3);
    // The full-range model also upsamples through Resize with constant `sizes`.
    check("blazeface_full", 2);
}

/// x [1, 4] -> Transpose -> [4, 1] -> Reshape [1, 4]: rebatched, image i's output would hold
/// values of other images.
#[test]
fn graphs_that_mix_images_or_are_already_batched_are_refused() {
    let mut g = Graph { opset: 17, ..Default::default() };
    let x = g.add_value("x", Some(DType::F32), Some(vec![Dim::Fixed(1), Dim::Fixed(4)]));
    g.inputs.push(x);
    let (t, y) = (g.add_value("t", None, None), g.add_value("y", None, None));
    let shape = g.add_constant("shape", Tensor::from_i64(&[2], vec![1, 4]).unwrap());
    g.add_node("tr", "Transpose", Attrs::new().with("perm", Attr::Ints(vec![1, 0])), vec![Some(x)], vec![Some(t)])
        .unwrap();
    g.add_node("re", "Reshape", Attrs::new(), vec![Some(t), Some(shape)], vec![Some(y)]).unwrap();
    g.outputs.push(y);
    let engine = Engine::from_graph(g.clone()).unwrap();
    let e = engine.with_batch(3).unwrap_err().to_string();
    assert!(e.contains("cannot rebatch to 3") && e.contains("differs"), "{e}");
    // Batch 1 is the identity and passes the same check.
    assert!(engine.with_batch(1).is_ok());
    g.values[x].shape = Some(vec![Dim::Sym("N".into()), Dim::Fixed(4)]);
    let e = Engine::from_graph(g).unwrap().with_batch(2).unwrap_err().to_string();
    assert!(e.contains("already has a symbolic batch"), "{e}");
}
