//! Dynamic batching: requests of batch 1 from many threads are grouped, up to a maximum
//! batch size or a time limit, and run together on one context planned for the maximum
//! batch; each caller gets back its own rows of the outputs.
//!
//! The model must be *batch-separable*: every input and output has the batch as its first
//! dimension, and row `i` of each output depends only on row `i` of the inputs (true of
//! convolutional and most detection/classification models). [`Batcher::new`] checks the first
//! half (planning the model for batch 1 and for the maximum batch, the first dimension of
//! every input and output must follow); the second is the model author's promise.
//!
//! A partial batch (the time limit passed first) still runs on the full-size context: the
//! unused rows hold whatever the previous batch left there and their results are dropped.
//! That keeps one arena and one plan; the price is compute spent on empty rows.

use std::collections::HashMap;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::context::Context;
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::plan;
use crate::tensor::{DType, DataMut, DataRef, Tensor, TensorData};

/// How requests are grouped.
#[derive(Clone, Copy, Debug)]
pub struct BatcherConfig {
    /// The largest batch run at once (≥ 1); the context is planned for it.
    pub max_batch: usize,
    /// How long the first request of a batch waits for others before the batch runs anyway.
    pub max_delay: Duration,
}

impl Default for BatcherConfig {
    /// Batches of up to 8, waiting at most 10 ms.
    fn default() -> Self {
        BatcherConfig { max_batch: 8, max_delay: Duration::from_millis(10) }
    }
}

/// Counters of what a batcher has run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BatcherStats {
    /// Batches run.
    pub batches: u64,
    /// Requests answered (successfully or not).
    pub requests: u64,
    /// `by_size[n]`: how many batches held `n` requests (index 0 is unused).
    pub by_size: Vec<u64>,
}

/// One caller's request: its inputs in graph-input order and where to send the answer.
struct Request {
    inputs: Vec<Tensor>,
    arrived: Instant,
    reply: SyncSender<Result<Vec<Tensor>>>,
}

/// What the worker needs to know about the model's inputs and outputs.
struct Layout {
    /// Graph input names, in order.
    inputs: Vec<String>,
    /// Per-request input types and shapes (batch dimension 1).
    input_types: Vec<(DType, Vec<usize>)>,
    /// Per-request output types and shapes (batch dimension 1).
    output_types: Vec<(DType, Vec<usize>)>,
    /// Output names, in order.
    outputs: Vec<String>,
}

/// Groups batch-1 requests from many threads into batched runs. `Sync`: share it by
/// reference or in an `Arc`; each [`infer`](Batcher::infer) blocks until its batch has run.
pub struct Batcher {
    tx: Option<Sender<Request>>,
    worker: Option<JoinHandle<()>>,
    layout: Arc<Layout>,
    stats: Arc<Mutex<BatcherStats>>,
    config: BatcherConfig,
}

impl std::fmt::Debug for Batcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batcher").field("config", &self.config).field("inputs", &self.layout.inputs).finish()
    }
}

/// `shape` with its first dimension replaced by `n`.
fn with_batch(shape: &[usize], n: usize) -> Vec<usize> {
    let mut s = shape.to_vec();
    if let Some(d) = s.first_mut() {
        *d = n;
    }
    s
}

impl Batcher {
    /// Plans `engine` for `config.max_batch` and starts the worker thread.
    ///
    /// `sample_shapes` gives the shape of one request's inputs, batch dimension (1) first;
    /// inputs whose declared shape is complete apart from the batch may be left out.
    pub fn new(
        engine: Arc<Engine>,
        sample_shapes: &HashMap<String, Vec<usize>>,
        config: BatcherConfig,
    ) -> Result<Self> {
        if config.max_batch == 0 {
            return Err(Error::Invalid("batcher: max_batch must be at least 1".into()));
        }
        let g = &engine.graph;
        let mut one = HashMap::new();
        for &id in &g.inputs {
            let v = &g.values[id];
            let shape = match (sample_shapes.get(&v.name), &v.shape) {
                (Some(s), _) => s.clone(),
                (None, Some(dims)) => dims
                    .iter()
                    .enumerate()
                    .map(|(i, d)| match d {
                        crate::graph::Dim::Fixed(n) => Ok(*n),
                        crate::graph::Dim::Sym(_) if i == 0 => Ok(1),
                        crate::graph::Dim::Sym(s) => Err(Error::Input {
                            name: v.name.clone(),
                            message: format!("dimension {i} (`{s}`) is symbolic: give the sample shape"),
                        }),
                    })
                    .collect::<Result<Vec<_>>>()?,
                (None, None) => {
                    return Err(Error::Input {
                        name: v.name.clone(),
                        message: "shape unknown: give the sample shape".into(),
                    });
                }
            };
            if shape.first() != Some(&1) {
                return Err(Error::Input {
                    name: v.name.clone(),
                    message: format!("a request's shape must have batch 1 first, got {shape:?}"),
                });
            }
            one.insert(v.name.clone(), shape);
        }
        if let Some(extra) = sample_shapes.keys().find(|k| !one.contains_key(*k)) {
            return Err(Error::Input { name: extra.clone(), message: "no such input".into() });
        }
        let full: HashMap<String, Vec<usize>> =
            one.iter().map(|(k, s)| (k.clone(), with_batch(s, config.max_batch))).collect();

        // Plan for batch 1 too: an output whose first dimension does not follow the batch
        // means the model is not batch-separable and the rows can't be handed back.
        let p1 = plan::plan(g, &one)?;
        let ctx = Context::new(engine.clone(), &full)?;
        let pn = ctx.plan();
        let mut input_types = Vec::new();
        let mut inputs = Vec::new();
        for &id in &g.inputs {
            let name = g.values[id].name.clone();
            let t = p1.types[id]
                .as_ref()
                .ok_or_else(|| Error::Input { name: name.clone(), message: "input has no planned type".into() })?;
            input_types.push((t.dtype, t.shape.clone()));
            inputs.push(name);
        }
        let mut output_types = Vec::new();
        for &id in &g.outputs {
            let name = &g.values[id].name;
            let (Some(t1), Some(tn)) = (p1.types[id].as_ref(), pn.types[id].as_ref()) else {
                return Err(Error::Invalid(format!("batcher: output `{name}` has no planned type")));
            };
            if t1.shape.first() != Some(&1) || tn.shape != with_batch(&t1.shape, config.max_batch) {
                return Err(Error::Invalid(format!(
                    "batcher: output `{name}` is {:?} for batch 1 but {:?} for batch {}: the model is not \
                     batch-separable (the batch must be every output's first dimension)",
                    t1.shape, tn.shape, config.max_batch
                )));
            }
            output_types.push((t1.dtype, t1.shape.clone()));
        }
        let layout = Arc::new(Layout { inputs, input_types, output_types, outputs: ctx.output_names() });
        let stats = Arc::new(Mutex::new(BatcherStats { by_size: vec![0; config.max_batch + 1], ..Default::default() }));
        let (tx, rx) = mpsc::channel();
        let worker = {
            let (layout, stats) = (layout.clone(), stats.clone());
            std::thread::Builder::new()
                .name("edgert-batcher".into())
                .spawn(move || worker(ctx, rx, config, &layout, &stats))
                .map_err(|e| Error::Invalid(format!("batcher: cannot start its thread: {e}")))?
        };
        Ok(Batcher { tx: Some(tx), worker: Some(worker), layout, stats, config })
    }

    /// The configuration.
    pub fn config(&self) -> BatcherConfig {
        self.config
    }

    /// Input names, in the model's order.
    pub fn input_names(&self) -> &[String] {
        &self.layout.inputs
    }

    /// Output names, in the order [`infer`](Batcher::infer) returns them.
    pub fn output_names(&self) -> &[String] {
        &self.layout.outputs
    }

    /// One request's input type and shape (batch 1), by input name.
    pub fn input_type(&self, name: &str) -> Option<(DType, &[usize])> {
        let i = self.layout.inputs.iter().position(|n| n == name)?;
        let (d, s) = &self.layout.input_types[i];
        Some((*d, s))
    }

    /// One request's output types and shapes (batch 1), in output order.
    pub fn output_types(&self) -> &[(DType, Vec<usize>)] {
        &self.layout.output_types
    }

    /// What has run so far.
    pub fn stats(&self) -> BatcherStats {
        self.stats.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Runs one request (every input by name, batch 1) and returns its outputs in output
    /// order. Blocks until the batch holding it has run: at most `max_delay` plus the run.
    pub fn infer(&self, inputs: Vec<(String, Tensor)>) -> Result<Vec<Tensor>> {
        let layout = &self.layout;
        let mut ordered: Vec<Option<Tensor>> = (0..layout.inputs.len()).map(|_| None).collect();
        for (name, t) in inputs {
            let i = layout.inputs.iter().position(|n| *n == name).ok_or_else(|| Error::Input {
                name: name.clone(),
                message: format!("no such input (inputs: {:?})", layout.inputs),
            })?;
            let (dtype, shape) = &layout.input_types[i];
            if t.dtype() != *dtype || t.shape() != shape.as_slice() {
                return Err(Error::Input {
                    name,
                    message: format!("got {} {:?}, a request must be {} {:?}", t.dtype(), t.shape(), dtype, shape),
                });
            }
            if ordered[i].replace(t).is_some() {
                return Err(Error::Input { name, message: "given twice".into() });
            }
        }
        let inputs = ordered
            .into_iter()
            .zip(&layout.inputs)
            .map(|(t, name)| t.ok_or_else(|| Error::Input { name: name.clone(), message: "missing".into() }))
            .collect::<Result<Vec<_>>>()?;
        let (reply, answer) = mpsc::sync_channel(1);
        let stopped = || Error::Invalid("batcher: its worker thread has stopped".into());
        let tx = self.tx.as_ref().ok_or_else(stopped)?;
        tx.send(Request { inputs, arrived: Instant::now(), reply }).map_err(|_| stopped())?;
        answer.recv().map_err(|_| stopped())?
    }
}

impl Drop for Batcher {
    fn drop(&mut self) {
        // Closing the channel ends the worker once it has answered what is queued.
        self.tx.take();
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
    }
}

fn worker(mut ctx: Context, rx: Receiver<Request>, cfg: BatcherConfig, layout: &Layout, stats: &Mutex<BatcherStats>) {
    let mut batch: Vec<Request> = Vec::with_capacity(cfg.max_batch);
    while let Ok(first) = rx.recv() {
        let deadline = first.arrived + cfg.max_delay;
        batch.push(first);
        while batch.len() < cfg.max_batch {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else { break };
            match rx.recv_timeout(left) {
                Ok(r) => batch.push(r),
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => break,
            }
        }
        let n = batch.len();
        let result = run_batch(&mut ctx, &batch, layout);
        // Count before answering: a caller that reads the stats after its answer sees its batch.
        if let Ok(mut s) = stats.lock() {
            s.batches += 1;
            s.requests += n as u64;
            if let Some(c) = s.by_size.get_mut(n) {
                *c += 1;
            }
        }
        match result {
            Ok(mut per_request) => {
                for (r, outs) in batch.drain(..).zip(per_request.drain(..)) {
                    let _ = r.reply.send(Ok(outs));
                }
            }
            Err(e) => {
                let msg = e.to_string();
                for r in batch.drain(..) {
                    let _ = r.reply.send(Err(Error::Invalid(format!("batched run failed: {msg}"))));
                }
            }
        }
    }
}

/// Copies each request's inputs into its rows, runs, and cuts the outputs into rows.
fn run_batch(ctx: &mut Context, batch: &[Request], layout: &Layout) -> Result<Vec<Vec<Tensor>>> {
    for (i, name) in layout.inputs.iter().enumerate() {
        // An input the model never reads has no memory: nothing to copy.
        if is_unused(ctx, name) {
            continue;
        }
        let mut dst = ctx.input_mut(name)?;
        for (row, r) in batch.iter().enumerate() {
            let src = r.inputs[i].view().data;
            copy_row(&mut dst.data, src, row * src.len())?;
        }
    }
    ctx.run()?;
    let mut out: Vec<Vec<Tensor>> = (0..batch.len()).map(|_| Vec::with_capacity(layout.outputs.len())).collect();
    for (o, (_, shape)) in layout.output_types.iter().enumerate() {
        let t = ctx.output_ref(o)?;
        let row = crate::tensor::numel(shape);
        for (r, dst) in out.iter_mut().enumerate() {
            dst.push(Tensor::new(shape.clone(), slice_rows(t.data, r * row, row)?)?);
        }
    }
    Ok(out)
}

fn is_unused(ctx: &Context, name: &str) -> bool {
    let g = &ctx.engine().graph;
    g.inputs
        .iter()
        .find(|&&i| g.values[i].name == name)
        .is_some_and(|&i| matches!(ctx.plan().slots[i], plan::Slot::Unused))
}

/// Copies `src` into `dst` starting at element `at`; both of one type.
fn copy_row(dst: &mut DataMut<'_>, src: DataRef<'_>, at: usize) -> Result<()> {
    macro_rules! copy {
        ($($v:ident),*) => {
            match (dst, src) {
                $((DataMut::$v(d), DataRef::$v(s)) => d
                    .get_mut(at..at + s.len())
                    .ok_or_else(|| Error::Invalid("batcher: row outside the batched input".into()))?
                    .copy_from_slice(s),)*
                (d, s) => {
                    return Err(Error::Invalid(format!("batcher: {} row for a {} input", s.dtype(), d.dtype())));
                }
            }
        };
    }
    copy!(F32, F16, I8, U8, I32, I64, Bool);
    Ok(())
}

/// Elements `at..at + n` of `src` as owned storage.
fn slice_rows(src: DataRef<'_>, at: usize, n: usize) -> Result<TensorData> {
    let bad = || Error::Invalid("batcher: row outside the batched output".into());
    macro_rules! cut {
        ($($v:ident),*) => {
            match src {
                $(DataRef::$v(s) => TensorData::$v(s.get(at..at + n).ok_or_else(bad)?.to_vec()),)*
            }
        };
    }
    Ok(cut!(F32, F16, I8, U8, I32, I64, Bool))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{Dim, Graph};
    use crate::ops::Attrs;

    /// `y = relu(x · W + b)` with a symbolic batch: `x` is `[N,5]`, `y` is `[N,3]`.
    fn dense_engine() -> Arc<Engine> {
        let mut g = Graph { opset: 17, ..Default::default() };
        let x = g.add_value("x", Some(DType::F32), Some(vec![Dim::Sym("N".into()), Dim::Fixed(5)]));
        g.inputs.push(x);
        let w: Vec<f32> = (0..15).map(|i| ((i * 7 % 11) as f32 - 5.0) * 0.1).collect();
        let w = g.add_constant("W", Tensor::from_f32(&[5, 3], w).unwrap());
        let b = g.add_constant("b", Tensor::from_f32(&[3], vec![0.1, -0.2, 0.3]).unwrap());
        let mm = g.add_value("mm", None, None);
        let add = g.add_value("add", None, None);
        let y = g.add_value("y", None, None);
        g.add_node("mm", "MatMul", Attrs::new(), vec![Some(x), Some(w)], vec![Some(mm)]).unwrap();
        g.add_node("add", "Add", Attrs::new(), vec![Some(mm), Some(b)], vec![Some(add)]).unwrap();
        g.add_node("relu", "Relu", Attrs::new(), vec![Some(add)], vec![Some(y)]).unwrap();
        g.outputs.push(y);
        Arc::new(Engine::from_graph(g).unwrap())
    }

    fn sample(k: usize) -> Tensor {
        Tensor::from_f32(&[1, 5], (0..5).map(|i| ((k * 5 + i) as f32 * 0.37).sin()).collect()).unwrap()
    }

    /// The unbatched answer: a batch-1 context of its own.
    fn unbatched(engine: &Arc<Engine>, t: &Tensor) -> Tensor {
        let shapes = HashMap::from([("x".to_string(), vec![1, 5])]);
        let mut ctx = Context::new(engine.clone(), &shapes).unwrap();
        ctx.set_input("x", t).unwrap();
        ctx.run().unwrap();
        ctx.output(0).unwrap()
    }

    #[test]
    fn concurrent_requests_are_grouped_and_match_unbatched_runs() {
        let engine = dense_engine();
        // A long delay: the batch runs because it is full, not because time ran out.
        let cfg = BatcherConfig { max_batch: 4, max_delay: Duration::from_secs(5) };
        let b = Arc::new(Batcher::new(engine.clone(), &HashMap::new(), cfg).unwrap());
        assert_eq!(b.output_names(), ["y"]);
        let t0 = Instant::now();
        let handles: Vec<_> = (0..8)
            .map(|k| {
                let b = b.clone();
                std::thread::spawn(move || (k, b.infer(vec![("x".into(), sample(k))]).unwrap()))
            })
            .collect();
        for h in handles {
            let (k, outs) = h.join().unwrap();
            assert_eq!(outs.len(), 1);
            assert_eq!(outs[0].shape(), [1, 3]);
            let want = unbatched(&engine, &sample(k));
            assert_eq!(outs[0].as_f32().unwrap(), want.as_f32().unwrap(), "request {k}");
        }
        // Eight requests, batches of four: two full batches, well before the 5 s limit.
        assert!(t0.elapsed() < Duration::from_secs(4), "waited for the timeout: {:?}", t0.elapsed());
        let s = b.stats();
        assert_eq!((s.batches, s.requests, s.by_size[4]), (2, 8, 2), "{s:?}");
    }

    #[test]
    fn a_lone_request_runs_when_the_time_limit_passes() {
        let engine = dense_engine();
        let cfg = BatcherConfig { max_batch: 8, max_delay: Duration::from_millis(60) };
        let b = Batcher::new(engine.clone(), &HashMap::new(), cfg).unwrap();
        let t0 = Instant::now();
        let outs = b.infer(vec![("x".into(), sample(3))]).unwrap();
        let waited = t0.elapsed();
        assert!(waited >= Duration::from_millis(60), "ran before the limit: {waited:?}");
        assert!(waited < Duration::from_secs(3), "waited far past the limit: {waited:?}");
        assert_eq!(outs[0].as_f32().unwrap(), unbatched(&engine, &sample(3)).as_f32().unwrap());
        // A second lone request reuses the rows the first left behind: still its own answer.
        let outs = b.infer(vec![("x".into(), sample(4))]).unwrap();
        assert_eq!(outs[0].as_f32().unwrap(), unbatched(&engine, &sample(4)).as_f32().unwrap());
        let s = b.stats();
        assert_eq!((s.batches, s.by_size[1]), (2, 2), "{s:?}");
    }

    #[test]
    fn bad_requests_and_configs_are_errors() {
        let engine = dense_engine();
        let cfg = BatcherConfig { max_batch: 2, max_delay: Duration::from_millis(1) };
        let b = Batcher::new(engine.clone(), &HashMap::new(), cfg).unwrap();
        let msg = b.infer(vec![("x".into(), Tensor::zeros(DType::F32, &[2, 5]))]).unwrap_err().to_string();
        assert!(msg.contains("`x`") && msg.contains("[1, 5]"), "{msg}");
        let msg = b.infer(vec![("z".into(), sample(0))]).unwrap_err().to_string();
        assert!(msg.contains("`z`"), "{msg}");
        let msg = b.infer(vec![]).unwrap_err().to_string();
        assert!(msg.contains("missing"), "{msg}");
        let msg = b.infer(vec![("x".into(), Tensor::zeros(DType::I64, &[1, 5]))]).unwrap_err().to_string();
        assert!(msg.contains("int64"), "{msg}");
        // Nothing bad reached the worker.
        assert_eq!(b.stats().requests, 0);
        let zero = BatcherConfig { max_batch: 0, ..cfg };
        assert!(Batcher::new(engine.clone(), &HashMap::new(), zero).is_err());
        let shapes = HashMap::from([("x".to_string(), vec![2, 5])]);
        assert!(Batcher::new(engine.clone(), &shapes, cfg).unwrap_err().to_string().contains("batch 1"));
        let shapes = HashMap::from([("nope".to_string(), vec![1, 5])]);
        assert!(Batcher::new(engine, &shapes, cfg).is_err());
    }

    #[test]
    fn a_model_whose_outputs_do_not_follow_the_batch_is_refused() {
        // y = ReduceSum(x) over every axis: a scalar whatever the batch.
        let mut g = Graph { opset: 17, ..Default::default() };
        let x = g.add_value("x", Some(DType::F32), Some(vec![Dim::Sym("N".into()), Dim::Fixed(2)]));
        g.inputs.push(x);
        let y = g.add_value("y", None, None);
        let attrs = Attrs::new().with("keepdims", crate::ops::attrs::Attr::Int(0));
        g.add_node("sum", "ReduceSum", attrs, vec![Some(x)], vec![Some(y)]).unwrap();
        g.outputs.push(y);
        let engine = Arc::new(Engine::from_graph(g).unwrap());
        let cfg = BatcherConfig { max_batch: 3, max_delay: Duration::from_millis(1) };
        let msg = Batcher::new(engine, &HashMap::new(), cfg).unwrap_err().to_string();
        assert!(msg.contains("batch-separable"), "{msg}");
    }
}
