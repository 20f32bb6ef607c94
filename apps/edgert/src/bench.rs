//! `edgert bench`: trtexec-style timing of a model or engine on the CPU or CUDA backend — random or
//! given inputs, warm-up, a number of iterations or a duration, then throughput and latency
//! percentiles, build time, arena and weight sizes; `--profile` adds time per node.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use clap::Args;
use edgert_core::graph::Dim;
use edgert_core::plan::Plan;
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
    /// Where to run: `cpu`, or `cuda` (GPU 0; nodes without a CUDA kernel run on the CPU
    /// and are listed). On CUDA the report splits each run into H2D, GPU compute and D2H.
    #[arg(long, default_value = "cpu", value_parser = ["cpu", "cuda"])]
    pub device: String,
    /// `--device cuda`: never use the tensor-core convolution; an FP16 engine's weights are
    /// widened to f32 and its convolutions run the f32 kernels (for comparison).
    #[arg(long)]
    pub no_tensor_cores: bool,
    /// `--device cuda`: the tensor-core convolution's tile, 64 (the default) or 128.
    #[arg(long, value_parser = ["64", "128"])]
    pub tc_tile: Option<String>,
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

impl Stats {
    /// `{"min": …, "median": …, …}` for `--json`.
    fn json(&self) -> serde_json::Value {
        serde_json::json!({"min": self.min, "median": self.median, "mean": self.mean, "p90": self.p90,
                           "p95": self.p95, "p99": self.p99, "max": self.max})
    }

    /// One report line, `label` padded to the report's column.
    fn print(&self, label: &str) {
        println!(
            "{label:<11} min {:.3}  median {:.3}  mean {:.3}  p90 {:.3}  p95 {:.3}  p99 {:.3}  max {:.3}",
            self.min, self.median, self.mean, self.p90, self.p95, self.p99, self.max
        );
    }
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
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    let mut inputs: Vec<(String, Tensor)> = Vec::new();
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
        inputs.push((v.name.clone(), t));
    }
    let batch = shapes.values().filter_map(|s| s.first().copied()).max().unwrap_or(1);
    if args.device == "cuda" {
        let what = Report { name: args.model.display().to_string(), precision, batch, build_ms };
        return bench_cuda(args, &engine, &shapes, &inputs, &what);
    }
    let t_ctx = Instant::now();
    let mut ctx = Context::with_threads(engine.clone(), &shapes, threads)?;
    let context_ms = t_ctx.elapsed().as_secs_f64() * 1e3;
    for (name, t) in &inputs {
        ctx.set_input(name, t)?;
    }

    for _ in 0..args.warmup {
        ctx.run()?;
    }
    let steps = ctx.plan().steps.len();
    let mut per_step: Vec<Vec<f64>> = if args.profile { vec![Vec::new(); steps] } else { Vec::new() };
    let mut lat = Vec::new();
    let t_all = Instant::now();
    while keep_going(args, lat.len(), t_all) {
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

    let profile = node_profile(graph, plan, &mut per_step);

    if args.json {
        let j = serde_json::json!({
            "model": name, "threads": ctx.threads(), "isa": ctx.isa().name(), "batch": batch,
            "precision": built, "int8_layers": int8_layers, "iterations": iters,
            "throughput_inferences_per_s": ips, "throughput_items_per_s": ips * batch as f64,
            "latency_ms": s.json(),
            "build_ms": build_ms, "context_ms": context_ms,
            "arena_bytes": plan.arena_bytes, "scratch_bytes": plan.scratch_bytes, "weights_bytes": weights,
            "profile": profile_json(&profile),
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
    s.print("latency ms");
    if args.profile {
        print_profile(&profile, "median ms per node");
    }
    Ok(())
}

/// (node, op type, median ms) of every step timed in `per_step`, slowest first (empty
/// when nothing was profiled).
fn node_profile(graph: &edgert_core::Graph, plan: &Plan, per_step: &mut [Vec<f64>]) -> Vec<(String, String, f64)> {
    let mut profile = Vec::new();
    for (si, times) in per_step.iter_mut().enumerate() {
        if times.is_empty() {
            continue;
        }
        let node = &graph.nodes[plan.steps[si].node];
        profile.push((node.name.clone(), node.op_type.clone(), stats(times).median));
    }
    profile.sort_by(|a, b| b.2.total_cmp(&a.2));
    profile
}

/// The `--profile` table for `--json`.
fn profile_json(profile: &[(String, String, f64)]) -> Vec<serde_json::Value> {
    profile.iter().map(|(n, o, ms)| serde_json::json!({"node": n, "op": o, "median_ms": ms})).collect()
}

/// The `--profile` table, slowest node first.
fn print_profile(profile: &[(String, String, f64)], what: &str) {
    let total: f64 = profile.iter().map(|p| p.2).sum();
    println!("profile ({what}, slowest first; sum {total:.3} ms):");
    for (n, o, ms) in profile {
        println!("  {ms:>9.4} {:>5.1}%  {o:<20} {n}", 100.0 * ms / total.max(1e-12));
    }
}

/// What a report names besides the timings.
struct Report {
    name: String,
    precision: String,
    batch: usize,
    build_ms: f64,
}

/// Runs until `--iterations` runs or `--duration` seconds (at least 10 runs) have passed.
fn keep_going(args: &BenchArgs, done: usize, started: Instant) -> bool {
    match args.iterations {
        Some(n) => done < n,
        None => done < 10 || started.elapsed() < Duration::from_secs_f64(args.duration.max(0.0)),
    }
}

/// `--device cuda`: each timed run is inputs host→device, the graph on the GPU, outputs
/// device→host, with a stream synchronization after each phase so that each is timed by
/// the host clock (as trtexec's H2D / GPU compute / D2H split). As in trtexec, H2D is the
/// DMA from pinned memory: before it, each run writes the inputs into the context's pinned
/// staging (`GpuContext::input_staging_mut`, where a producer would write them in place);
/// that host copy is timed separately and not part of the end-to-end time.
fn bench_cuda(
    args: &BenchArgs,
    engine: &Arc<edgert_core::Engine>,
    shapes: &HashMap<String, Vec<usize>>,
    inputs: &[(String, Tensor)],
    what: &Report,
) -> Result<()> {
    let opts = edgert_cuda::ExecOptions {
        cpu_fallback: true,
        no_tensor_cores: args.no_tensor_cores,
        tc_tile: args.tc_tile.as_deref().and_then(|t| t.parse().ok()),
        ..Default::default()
    };
    let t_ctx = Instant::now();
    let mut ctx = edgert_cuda::GpuContext::new(engine.clone(), shapes, opts)
        .map_err(|e| anyhow::anyhow!(e).context("--device cuda"))?;
    let context_ms = t_ctx.elapsed().as_secs_f64() * 1e3;
    let fallbacks: Vec<String> = ctx.cpu_fallbacks().iter().map(|(n, o, _)| format!("{n} ({o})")).collect();
    for f in &fallbacks {
        eprintln!("note: node {f} runs on the CPU: no CUDA kernel for it");
    }
    let outputs = ctx.output_names().len();
    let once = |ctx: &mut edgert_cuda::GpuContext| -> Result<[f64; 5]> {
        let tc = Instant::now();
        for (name, t) in inputs {
            ctx.input_staging_mut(name)?.copy_from_slice(t.view().data.as_bytes());
        }
        let t0 = Instant::now();
        for (name, _) in inputs {
            ctx.upload_input(name)?;
        }
        ctx.synchronize()?;
        let t1 = Instant::now();
        ctx.run()?;
        ctx.synchronize()?;
        let t2 = Instant::now();
        for i in 0..outputs {
            ctx.output(i)?;
        }
        let t3 = Instant::now();
        let ms = |a: Instant, b: Instant| (b - a).as_secs_f64() * 1e3;
        Ok([ms(t0, t1), ms(t1, t2), ms(t2, t3), ms(t0, t3), ms(tc, t0)])
    };
    let t_first = Instant::now();
    once(&mut ctx)?;
    let first_ms = t_first.elapsed().as_secs_f64() * 1e3;
    for _ in 1..args.warmup {
        once(&mut ctx)?;
    }
    let (mut h2d, mut gpu, mut d2h, mut total) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut staging = Vec::new();
    let started = Instant::now();
    while keep_going(args, total.len(), started) {
        let [a, b, c, d, e] = once(&mut ctx)?;
        h2d.push(a);
        gpu.push(b);
        d2h.push(c);
        total.push(d);
        staging.push(e);
    }
    let iters = total.len();
    // Throughput from the end-to-end times: the host copies into staging are excluded.
    let ips = iters as f64 / (total.iter().sum::<f64>() / 1e3);
    let (h, g, d, s) = (stats(&mut h2d), stats(&mut gpu), stats(&mut d2h), stats(&mut total));
    let copy = stats(&mut staging);
    // `--profile`: separate runs that wait for the GPU after each step, so that the times
    // above stay those of normal runs.
    let mut per_step: Vec<Vec<f64>> = Vec::new();
    if args.profile {
        per_step = vec![Vec::new(); ctx.plan().steps.len()];
        for _ in 0..iters.clamp(5, 50) {
            let mut last = Instant::now();
            ctx.run_observed(|si| {
                let now = Instant::now();
                per_step[si].push((now - last).as_secs_f64() * 1e3);
                last = now;
            })?;
        }
    }
    let profile = node_profile(&engine.graph, ctx.plan(), &mut per_step);
    let layout = ctx.layout();
    let device = ctx.device().describe();
    let tc_convs = ctx.tensor_core_convs();
    let widened = layout.widened.len();
    let graph = match ctx.cuda_graph() {
        Ok(()) => "replayed".to_string(),
        Err(why) => format!("not used: {why}"),
    };
    if args.json {
        let j = serde_json::json!({
            "model": what.name, "device": device, "batch": what.batch, "precision": what.precision,
            "iterations": iters, "throughput_inferences_per_s": ips,
            "throughput_items_per_s": ips * what.batch as f64,
            "latency_ms": s.json(), "h2d_ms": h.json(), "gpu_compute_ms": g.json(), "d2h_ms": d.json(),
            "input_copy_to_staging_ms": copy.json(),
            "first_run_ms": first_ms, "build_ms": what.build_ms, "context_ms": context_ms,
            "arena_bytes": layout.arena_bytes, "weights_bytes": layout.weights_bytes,
            "staging_bytes": layout.staging_bytes, "cpu_fallbacks": fallbacks, "cuda_graph": graph,
            "tensor_core_convs": tc_convs, "widened_f16_weights": widened,
            "profile": profile_json(&profile),
        });
        println!("{j}");
        return Ok(());
    }
    println!("model       {}", what.name);
    println!("inputs      {:?}", ctx.plan().input_shapes);
    println!("backend     cuda ({device}), {}, CUDA graph {graph}", what.precision);
    println!(
        "build       {:.1} ms (load + passes), context {context_ms:.1} ms (plan + kernels + weights upload), \
         first run {first_ms:.1} ms",
        what.build_ms
    );
    println!(
        "memory      device arena {} B, weights {} B, pinned staging {} B",
        layout.arena_bytes, layout.weights_bytes, layout.staging_bytes
    );
    if !fallbacks.is_empty() {
        println!("cpu nodes   {} ({})", fallbacks.len(), fallbacks.join(", "));
    }
    if tc_convs + widened > 0 {
        println!("fp16        {tc_convs} conv(s) on tensor cores; {widened} f16 weight tensor(s) widened to f32");
    }
    println!(
        "throughput  {ips:.2} inferences/s, {:.2} items/s (batch {}, {iters} runs)",
        ips * what.batch as f64,
        what.batch
    );
    s.print("latency ms");
    h.print("  h2d ms");
    copy.print("  copy ms");
    println!("            (copy: the host writing the inputs into pinned staging before H2D; not in end to end)");
    g.print("  gpu ms");
    d.print("  d2h ms");
    if args.profile {
        print_profile(&profile, "median ms per node with the GPU awaited after each");
    }
    Ok(())
}
