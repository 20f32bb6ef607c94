//! `edgert bench`: trtexec-style timing of a model or engine on the CPU backend — random or
//! given inputs, warm-up, a number of iterations or a duration, then throughput and latency
//! percentiles, build time, arena and weight sizes; `--profile` adds time per node.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use clap::Args;
use edgert_core::graph::Dim;
use edgert_core::{Context, DType, Tensor, TensorData, npy};

/// Options of `edgert bench`.
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// `model.onnx` or `model.edgert`.
    pub model: PathBuf,
    /// Input shape, `NAME=1x3x224x224` (repeatable); symbolic dims otherwise take `--batch`
    /// for the first dim and 1 for the others.
    #[arg(long = "shape", value_name = "NAME=DIMS")]
    pub shapes: Vec<String>,
    /// Batch size for inputs whose first dim is symbolic.
    #[arg(long, default_value_t = 1)]
    pub batch: usize,
    /// An input from a file, `NAME=x.npy` (repeatable); others are random in [-1, 1).
    #[arg(long = "input", value_name = "NAME=FILE")]
    pub inputs: Vec<String>,
    /// Threads for the kernels (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Warm-up runs before timing.
    #[arg(long, default_value_t = 10)]
    pub warmup: usize,
    /// Timed runs (default: as many as fit in `--duration`, at least 10).
    #[arg(long)]
    pub iterations: Option<usize>,
    /// Seconds to time for when `--iterations` is not given.
    #[arg(long, default_value_t = 3.0)]
    pub duration: f64,
    /// Precision: an ONNX model runs in fp32; an engine runs in the precision it was built
    /// with (`edgert build --precision int8 ...`), which the report names.
    #[arg(long, default_value = "fp32")]
    pub precision: String,
    /// Print the time spent per node (median over the timed runs), slowest first.
    #[arg(long)]
    pub profile: bool,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Latency statistics in milliseconds.
#[derive(Debug, Clone, Copy)]
struct Stats {
    min: f64,
    median: f64,
    mean: f64,
    p90: f64,
    p95: f64,
    p99: f64,
    max: f64,
}

fn stats(ms: &mut [f64]) -> Stats {
    ms.sort_by(f64::total_cmp);
    let pct = |p: f64| ms[((ms.len() as f64 - 1.0) * p).round() as usize];
    Stats {
        min: ms[0],
        median: pct(0.5),
        mean: ms.iter().sum::<f64>() / ms.len() as f64,
        p90: pct(0.9),
        p95: pct(0.95),
        p99: pct(0.99),
        max: ms[ms.len() - 1],
    }
}

/// Runs the benchmark and prints the report.
pub fn bench(args: &BenchArgs) -> Result<()> {
    let threads = args.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    if threads == 0 {
        bail!("--threads must be at least 1");
    }
    let t_build = Instant::now();
    let engine = Arc::new(crate::load_engine(&args.model)?);
    let build_ms = t_build.elapsed().as_secs_f64() * 1e3;
    let graph = &engine.graph;
    let built = if engine.build.precision.is_empty() { "fp32" } else { engine.build.precision.as_str() };
    if args.precision != "fp32" && args.precision != built {
        bail!(
            "--precision {}: this {} runs in {built}; build an engine first, e.g. `edgert build MODEL -o \
             m.edgert --precision int8 --calib DIR`, and bench that",
            args.precision,
            if crate::is_engine(&args.model) { "engine" } else { "ONNX model" }
        );
    }
    let layers_in = |p: &str| engine.build.layers.iter().filter(|l| l.precision == p).count();
    let int8_layers = layers_in("int8");
    let precision = if engine.build.layers.is_empty() {
        built.to_string()
    } else {
        format!(
            "{built} (of {} layers: int8 {int8_layers}, fp16 {}, fp32 {})",
            engine.build.layers.len(),
            layers_in("fp16"),
            layers_in("fp32")
        )
    };

    let mut given: HashMap<String, Tensor> = HashMap::new();
    for spec in &args.inputs {
        let Some((name, file)) = spec.split_once('=') else { bail!("--input `{spec}`: expected NAME=path.npy") };
        given.insert(name.to_string(), npy::read(Path::new(file))?);
    }
    let mut shapes = crate::parse_shapes(&args.shapes)?;
    for (name, t) in &given {
        shapes.insert(name.clone(), t.shape().to_vec());
    }
    for &id in &graph.inputs {
        let v = &graph.values[id];
        if shapes.contains_key(&v.name) {
            continue;
        }
        let Some(dims) = &v.shape else { bail!("input `{}` has no declared shape: give --shape", v.name) };
        let concrete = dims
            .iter()
            .enumerate()
            .map(|(i, d)| match d {
                Dim::Fixed(n) => *n,
                Dim::Sym(_) if i == 0 => args.batch,
                Dim::Sym(_) => 1,
            })
            .collect();
        shapes.insert(v.name.clone(), concrete);
    }
    let t_ctx = Instant::now();
    let mut ctx = Context::with_threads(engine.clone(), &shapes, threads)?;
    let context_ms = t_ctx.elapsed().as_secs_f64() * 1e3;
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    for &id in &graph.inputs {
        let v = &graph.values[id];
        let t = match given.remove(&v.name) {
            Some(t) => t,
            None => {
                let shape = &shapes[&v.name];
                let n: usize = shape.iter().product();
                let dtype = v.dtype.unwrap_or(DType::F32);
                let data = match dtype {
                    DType::F32 => TensorData::F32(
                        (0..n)
                            .map(|_| {
                                seed ^= seed << 13;
                                seed ^= seed >> 7;
                                seed ^= seed << 17;
                                (seed >> 40) as f32 / (1u64 << 23) as f32 - 1.0
                            })
                            .collect(),
                    ),
                    other => bail!("input `{}` is {other}: give it with --input", v.name),
                };
                Tensor::new(shape.clone(), data)?
            }
        };
        ctx.set_input(&v.name, &t)?;
    }
    let batch = shapes.values().filter_map(|s| s.first().copied()).max().unwrap_or(1);

    for _ in 0..args.warmup {
        ctx.run()?;
    }
    let steps = ctx.plan().steps.len();
    let mut per_step: Vec<Vec<f64>> = if args.profile { vec![Vec::new(); steps] } else { Vec::new() };
    let mut lat = Vec::new();
    let deadline = Duration::from_secs_f64(args.duration.max(0.0));
    let t_all = Instant::now();
    loop {
        let done = lat.len();
        match args.iterations {
            Some(n) if done >= n => break,
            None if done >= 10 && t_all.elapsed() >= deadline => break,
            _ => {}
        }
        let t0 = Instant::now();
        if args.profile {
            let mut last = t0;
            ctx.run_observed(|si, _| {
                let now = Instant::now();
                per_step[si].push((now - last).as_secs_f64() * 1e3);
                last = now;
            })?;
        } else {
            ctx.run()?;
        }
        lat.push(t0.elapsed().as_secs_f64() * 1e3);
    }
    let wall = t_all.elapsed().as_secs_f64();
    let iters = lat.len();
    let s = stats(&mut lat);
    let ips = iters as f64 / wall;
    let plan = ctx.plan();
    let weights = graph.weights_bytes();
    let name = args.model.display().to_string();

    let mut profile: Vec<(String, String, f64)> = Vec::new();
    if args.profile {
        for (si, times) in per_step.iter_mut().enumerate() {
            if times.is_empty() {
                continue;
            }
            let node = &graph.nodes[plan.steps[si].node];
            profile.push((node.name.clone(), node.op_type.clone(), stats(times).median));
        }
        profile.sort_by(|a, b| b.2.total_cmp(&a.2));
    }

    if args.json {
        let j = serde_json::json!({
            "model": name, "threads": ctx.threads(), "isa": ctx.isa().name(), "batch": batch,
            "precision": built, "int8_layers": int8_layers, "iterations": iters,
            "throughput_inferences_per_s": ips, "throughput_items_per_s": ips * batch as f64,
            "latency_ms": {"min": s.min, "median": s.median, "mean": s.mean, "p90": s.p90,
                            "p95": s.p95, "p99": s.p99, "max": s.max},
            "build_ms": build_ms, "context_ms": context_ms,
            "arena_bytes": plan.arena_bytes, "scratch_bytes": plan.scratch_bytes, "weights_bytes": weights,
            "profile": profile.iter().map(|(n, o, ms)| serde_json::json!({"node": n, "op": o, "median_ms": ms})).collect::<Vec<_>>(),
        });
        println!("{j}");
        return Ok(());
    }
    println!("model       {name}");
    println!("inputs      {:?}", plan.input_shapes);
    println!("backend     cpu ({}), {} thread(s), {precision}", ctx.isa(), ctx.threads());
    println!("build       {build_ms:.1} ms (load + passes), context {context_ms:.1} ms (plan + arena)");
    println!("memory      arena {} B, scratch {} B, weights {} B", plan.arena_bytes, plan.scratch_bytes, weights);
    println!("throughput  {ips:.2} inferences/s, {:.2} items/s (batch {batch}, {iters} runs)", ips * batch as f64);
    println!(
        "latency ms  min {:.3}  median {:.3}  mean {:.3}  p90 {:.3}  p95 {:.3}  p99 {:.3}  max {:.3}",
        s.min, s.median, s.mean, s.p90, s.p95, s.p99, s.max
    );
    if args.profile {
        let total: f64 = profile.iter().map(|p| p.2).sum();
        println!("profile (median ms per node, slowest first; sum {total:.3} ms):");
        for (n, o, ms) in &profile {
            println!("  {ms:>9.4} {:>5.1}%  {o:<20} {n}", 100.0 * ms / total.max(1e-12));
        }
    }
    Ok(())
}
