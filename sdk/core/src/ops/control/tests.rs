//! If and Loop on hand-built graphs: both branches of a run-time condition, captures, carried
//! values and scan outputs, engine round trip, and the errors for what can't be planned.

use std::collections::HashMap;
use std::sync::Arc;

use super::{CAPTURES_ATTR, Subgraph};
use crate::context::Context;
use crate::engine::Engine;
use crate::graph::{Dim, Graph};
use crate::ops::{Attr, Attrs};
use crate::tensor::{DType, Tensor, TensorData};

fn fixed(shape: &[usize]) -> Option<Vec<Dim>> {
    Some(shape.iter().map(|&d| Dim::Fixed(d)).collect())
}

fn captures(names: &[&str]) -> Attr {
    Attr::Strings(names.iter().map(|n| n.as_bytes().to_vec()).collect())
}

fn bool_t(v: bool) -> Tensor {
    Tensor::new(vec![], TensorData::Bool(vec![v])).unwrap()
}

/// A branch reading outer `x` and returning `op(x, x)` (or `op(x)` for unary ops).
fn branch(op: &str, unary: bool) -> Subgraph {
    let mut g = Graph { opset: 17, ..Graph::default() };
    let x = g.add_value("x", Some(DType::F32), fixed(&[3]));
    g.inputs.push(x);
    let y = g.add_value(&format!("{op}_out"), None, None);
    let ins = if unary { vec![Some(x)] } else { vec![Some(x), Some(x)] };
    g.add_node(op, op, Attrs::new(), ins, vec![Some(y)]).unwrap();
    g.outputs.push(y);
    Subgraph { graph: Arc::new(g), formal_inputs: 0 }
}

fn if_graph() -> Graph {
    let mut g = Graph { opset: 17, ..Graph::default() };
    let c = g.add_value("c", Some(DType::Bool), fixed(&[]));
    let x = g.add_value("x", Some(DType::F32), fixed(&[3]));
    g.inputs.extend([c, x]);
    let y = g.add_value("y", None, None);
    let attrs = Attrs::new()
        .with("then_branch", Attr::Graph(branch("Add", false)))
        .with("else_branch", Attr::Graph(branch("Neg", true)))
        .with(CAPTURES_ATTR, captures(&["x"]));
    g.add_node("if", "If", attrs, vec![Some(c), Some(x)], vec![Some(y)]).unwrap();
    g.outputs.push(y);
    g
}

fn run_if(engine: &Arc<Engine>, c: bool) -> Vec<f32> {
    let mut ctx = Context::new(engine.clone(), &HashMap::new()).unwrap();
    ctx.set_input("c", &bool_t(c)).unwrap();
    ctx.set_input("x", &Tensor::from_f32(&[3], vec![1.0, -2.0, 3.0]).unwrap()).unwrap();
    ctx.run().unwrap();
    ctx.output(0).unwrap().to_f32_vec().unwrap()
}

#[test]
fn if_takes_either_branch_at_run_time() {
    let engine = Arc::new(Engine::from_graph(if_graph()).unwrap());
    assert_eq!(run_if(&engine, true), vec![2.0, -4.0, 6.0]);
    assert_eq!(run_if(&engine, false), vec![-1.0, 2.0, -3.0]);
    // The same through the reference executor.
    let mut feeds = HashMap::new();
    feeds.insert("c".to_string(), bool_t(false));
    feeds.insert("x".to_string(), Tensor::from_f32(&[3], vec![1.0, -2.0, 3.0]).unwrap());
    let r = if_graph().run_reference(&feeds).unwrap();
    assert_eq!(r[0].to_f32_vec().unwrap(), vec![-1.0, 2.0, -3.0]);
}

#[test]
fn if_survives_the_engine_file() {
    let engine = Engine::from_graph(if_graph()).unwrap();
    let loaded = Arc::new(Engine::from_bytes(&engine.to_bytes().unwrap()).unwrap());
    assert_eq!(run_if(&loaded, true), vec![2.0, -4.0, 6.0]);
    assert_eq!(run_if(&loaded, false), vec![-1.0, 2.0, -3.0]);
}

/// Loop body: acc_out = acc + x (x captured), cond passed through, scan = acc_out.
fn loop_graph(m: Option<i64>) -> Graph {
    let mut b = Graph { opset: 17, ..Graph::default() };
    let i = b.add_value("i", Some(DType::I64), fixed(&[]));
    let cin = b.add_value("cond_in", Some(DType::Bool), fixed(&[]));
    let acc = b.add_value("acc", Some(DType::F32), fixed(&[2]));
    let x = b.add_value("x", Some(DType::F32), fixed(&[2]));
    b.inputs.extend([i, cin, acc, x]);
    let cout = b.add_value("cond_out", None, None);
    let acc_out = b.add_value("acc_out", None, None);
    let scan = b.add_value("scan", None, None);
    b.add_node("pass", "Identity", Attrs::new(), vec![Some(cin)], vec![Some(cout)]).unwrap();
    b.add_node("add", "Add", Attrs::new(), vec![Some(acc), Some(x)], vec![Some(acc_out)]).unwrap();
    b.add_node("copy", "Identity", Attrs::new(), vec![Some(acc_out)], vec![Some(scan)]).unwrap();
    b.outputs.extend([cout, acc_out, scan]);
    let body = Subgraph { graph: Arc::new(b), formal_inputs: 3 };

    let mut g = Graph { opset: 17, ..Graph::default() };
    let x = g.add_value("x", Some(DType::F32), fixed(&[2]));
    g.inputs.push(x);
    let m = match m {
        Some(v) => g.add_constant("M", Tensor::from_i64(&[], vec![v]).unwrap()),
        None => {
            let id = g.add_value("M", Some(DType::I64), fixed(&[]));
            g.inputs.push(id);
            id
        }
    };
    let c = g.add_constant("c", bool_t(true));
    let zero = g.add_constant("zero", Tensor::from_f32(&[2], vec![0.0, 0.0]).unwrap());
    let (fin, stacked) = (g.add_value("final", None, None), g.add_value("stacked", None, None));
    let attrs = Attrs::new().with("body", Attr::Graph(body)).with(CAPTURES_ATTR, captures(&["x"]));
    g.add_node("loop", "Loop", attrs, vec![Some(m), Some(c), Some(zero), Some(x)], vec![Some(fin), Some(stacked)])
        .unwrap();
    g.outputs.extend([fin, stacked]);
    g
}

#[test]
fn loop_carries_values_and_stacks_scan_outputs() {
    let engine = Arc::new(Engine::from_graph(loop_graph(Some(3))).unwrap());
    let mut ctx = Context::new(engine, &HashMap::new()).unwrap();
    ctx.set_input("x", &Tensor::from_f32(&[2], vec![1.0, 10.0]).unwrap()).unwrap();
    for _ in 0..2 {
        // Twice: the pooled body context must start each run from the loop's inputs.
        ctx.run().unwrap();
        assert_eq!(ctx.output(0).unwrap().to_f32_vec().unwrap(), vec![3.0, 30.0]);
        let s = ctx.output(1).unwrap();
        assert_eq!(s.shape(), &[3, 2]);
        assert_eq!(s.to_f32_vec().unwrap(), vec![1.0, 10.0, 2.0, 20.0, 3.0, 30.0]);
    }
}

#[test]
fn loop_with_a_run_time_trip_count_and_scan_outputs_is_a_plan_error() {
    let engine = Arc::new(Engine::from_graph(loop_graph(None)).unwrap());
    let e = Context::new(engine, &HashMap::new()).unwrap_err().to_string();
    assert!(e.contains("trip count M must be known"), "{e}");
    // The reference executor, which knows every value, runs it.
    let mut feeds = HashMap::new();
    feeds.insert("x".to_string(), Tensor::from_f32(&[2], vec![1.0, 10.0]).unwrap());
    feeds.insert("M".to_string(), Tensor::from_i64(&[], vec![2]).unwrap());
    let r = loop_graph(None).run_reference(&feeds).unwrap();
    assert_eq!(r[1].to_f32_vec().unwrap(), vec![1.0, 10.0, 2.0, 20.0]);
}

#[test]
fn a_subgraph_reading_an_unknown_value_is_an_error() {
    let mut attrs = Attrs::new().with("then_branch", Attr::Graph(branch("Add", false)));
    attrs.insert("else_branch", Attr::Graph(branch("Neg", true)));
    // No captures listed: the branches read `x`, which the node does not pass.
    let e = crate::ops::build_op("If", &attrs, 17).unwrap().unwrap_err().to_string();
    assert!(e.contains("`x`"), "{e}");
}
