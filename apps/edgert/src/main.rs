//! `edgert`: build, run, bench and inspect engines (the role trtexec plays for TensorRT).

mod bench;
mod calib;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context as _, Result, anyhow, bail};
use clap::{Parser, Subcommand};
use edgert_core::graph::{Dim, format_dims};
use edgert_core::{Context, Engine, Graph, Tensor, npy, onnx, ops, plan};

#[derive(Parser)]
#[command(name = "edgert", version, about = "edgert inference runtime: build, run and inspect engines")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Optimize an ONNX model and write an engine file.
    Build {
        /// The ONNX model.
        model: PathBuf,
        /// The engine file to write.
        #[arg(short, long)]
        output: PathBuf,
        /// Input shape to plan for, `NAME=1x3x128x128` (repeatable); symbolic dims otherwise 1.
        #[arg(long = "shape", value_name = "NAME=DIMS")]
        shapes: Vec<String>,
        /// Rebatch a model exported for a fixed batch of 1 (BlazeFace) to N images per run:
        /// inputs and the leading 1 of Reshape/Resize shape constants become N; refused
        /// unless N images in one run give each image the outputs it gets alone.
        #[arg(long, value_name = "N")]
        batch: Option<usize>,
        /// Precision: `fp32`; `fp16` (convolution weights stored as float16, f32 activations
        /// and sums); `int8` (convolutions on INT8 kernels, scales from `--calib` or
        /// `--calib-cache`); `best` (each convolution in the fastest of the three whose error
        /// on the first `--calib` samples stays within `--max-error`).
        #[arg(long, value_enum, default_value = "fp32")]
        precision: PrecisionArg,
        /// `best`: the largest error allowed, `max |y - y_fp32| / max |y_fp32|` over the
        /// model's float outputs on the error samples (a fraction of each output's range).
        #[arg(long, default_value_t = 0.02)]
        max_error: f32,
        /// `best`: how many of the calibration samples (the first ones) measure errors.
        #[arg(long, default_value_t = 8)]
        error_samples: usize,
        /// INT8 calibration data: a folder of images, `.npy` tensors, or one folder per sample.
        #[arg(long, value_name = "DIR")]
        calib: Option<PathBuf>,
        /// Calibration method: `minmax`, `entropy` (TensorRT's KL calibrator),
        /// `percentile[:P]`. minmax is the default: on BlazeFace it kept boxes within IoU 0.94
        /// of f32's where entropy's clipping lost up to 0.34 (tests/bench/int8_accuracy.py).
        #[arg(long, default_value = "minmax")]
        calib_method: String,
        /// Calibration cache: used when it exists (delete it to recalibrate); written after
        /// calibrating with `--calib`. Human readable: one `tensor scale` per line.
        #[arg(long, value_name = "FILE")]
        calib_cache: Option<PathBuf>,
        #[command(flatten)]
        image: calib::ImageArgs,
        /// Threads the engine will run with: calibration runs and the per-layer INT8/f32
        /// timing use them.
        #[arg(long, default_value_t = 1)]
        threads: usize,
        /// Quantize every convolution that has a scale, even where INT8 is slower than f32
        /// on this machine (default: each layer is timed both ways and the faster kept).
        #[arg(long)]
        int8_all: bool,
        /// Bits of INT8 weights, 7 or 8. Default: 7 on x86-64 without VNNI (the AVX2 kernel
        /// then uses `vpmaddubsw`: ResNet-50 INT8 141 ms vs 166 ms with 8 bits), 8 elsewhere.
        #[arg(long, value_name = "BITS")]
        weight_bits: Option<u32>,
    },
    /// Run a model or engine once on `.npy` inputs and write each output as `.npy`.
    Run {
        /// `model.onnx` or `model.edgert`.
        model: PathBuf,
        /// An input, `NAME=path.npy` (repeatable).
        #[arg(long = "input", value_name = "NAME=FILE")]
        inputs: Vec<String>,
        /// Folder for `<output name>.npy` files.
        #[arg(long)]
        output_dir: Option<PathBuf>,
        /// Print each output's shape, range and first values.
        #[arg(long)]
        summary: bool,
        /// Print the `K` largest values of each output (e.g. detection scores).
        #[arg(long, value_name = "K")]
        top: Option<usize>,
        /// Where to run: `cpu`, `cuda` (fails if no CUDA device), or `auto` (CUDA if
        /// available, else the CPU, saying so).
        #[arg(long, value_enum, default_value = "cpu")]
        device: DeviceArg,
    },
    /// Time a model or engine: throughput, latency percentiles, memory; `--profile` per node.
    Bench(bench::BenchArgs),
    /// Describe a model or engine: inputs, outputs, op counts, arena, weights.
    Inspect {
        /// `model.onnx` or `model.edgert`; omit with `--ops`.
        model: Option<PathBuf>,
        /// Input shape to plan for, `NAME=DIMS` (repeatable); symbolic dims otherwise 1.
        #[arg(long = "shape", value_name = "NAME=DIMS")]
        shapes: Vec<String>,
        /// List the supported ONNX op types.
        #[arg(long)]
        ops: bool,
        /// Print the graph after each optimization pass (ONNX models).
        #[arg(long)]
        passes: bool,
        /// List each layer's precision and why (engines built with `--precision int8`, `fp16`
        /// or `best`).
        #[arg(long)]
        layers: bool,
    },
}

/// `--precision` of `edgert build`.
#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum)]
enum PrecisionArg {
    Fp32,
    Fp16,
    Int8,
    Best,
}

/// `--device` of `edgert run`.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum DeviceArg {
    Cpu,
    Cuda,
    Auto,
}

fn main() {
    // `edgert inspect ... | head` closes the pipe early: end quietly as other Unix tools do
    // (Rust ignores SIGPIPE, so `println!` would panic on the broken pipe instead).
    #[cfg(unix)]
    // SAFETY: first thing in main, before any other thread exists; SIG_DFL is a valid action.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    if let Err(e) = real_main() {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

fn real_main() -> Result<()> {
    match Cli::parse().cmd {
        Cmd::Build {
            model,
            output,
            shapes,
            batch,
            precision,
            max_error,
            error_samples,
            calib,
            calib_method,
            calib_cache,
            image,
            threads,
            int8_all,
            weight_bits,
        } => {
            let t0 = std::time::Instant::now();
            let graph = onnx::load_model(&model).with_context(|| format!("loading {}", model.display()))?;
            let shapes = with_default_dims(&graph, parse_shapes(&shapes)?);
            let engine = match precision {
                PrecisionArg::Fp32 => Engine::build(graph, Some(&shapes))?,
                PrecisionArg::Fp16 => {
                    let engine = Engine::build_fp16(graph, Some(&shapes))?;
                    print_precision_summary(&engine);
                    engine
                }
                PrecisionArg::Int8 | PrecisionArg::Best => {
                    let int8 = Int8Build {
                        calib,
                        method: &calib_method,
                        cache: calib_cache,
                        image: &image,
                        threads,
                        int8_all,
                        weight_bits: weight_bits
                            .unwrap_or_else(edgert_core::passes::quantize_int8::default_weight_bits),
                        best: (precision == PrecisionArg::Best).then_some((max_error, error_samples)),
                    };
                    build_int8(graph, &shapes, &int8)?
                }
            };
            let engine = match batch {
                Some(n) => {
                    let e = engine.with_batch(n).with_context(|| format!("--batch {n}"))?;
                    println!("rebatched to {n} images per run (checked image by image against batch 1)");
                    e
                }
                None => engine,
            };
            engine.save(&output)?;
            let size = std::fs::metadata(&output).map(|m| m.len()).unwrap_or(0);
            println!(
                "built {} -> {} ({} bytes) in {:.1} ms",
                model.display(),
                output.display(),
                size,
                t0.elapsed().as_secs_f64() * 1e3
            );
            if let Some(p) = &engine.build.plan {
                println!(
                    "arena {} bytes (lower bound {}), scratch {} bytes",
                    p.arena_bytes, p.lower_bound_bytes, p.scratch_bytes
                );
            }
            Ok(())
        }
        Cmd::Run { model, inputs, output_dir, summary, top, device } => {
            run(&model, &inputs, output_dir.as_deref(), summary, top, device)
        }
        Cmd::Bench(args) => bench::bench(&args),
        Cmd::Inspect { model, shapes, ops: list_ops, passes, layers } => {
            if list_ops {
                for op in ops::supported_ops() {
                    println!("{op}");
                }
                if model.is_none() {
                    return Ok(());
                }
            }
            let model = model.ok_or_else(|| anyhow!("give a model or engine file (or --ops)"))?;
            if passes {
                return print_passes(&model);
            }
            inspect(&model, &parse_shapes(&shapes)?, layers)
        }
    }
}

/// The INT8 options of `edgert build` (`--precision int8` and `best`).
struct Int8Build<'a> {
    calib: Option<PathBuf>,
    method: &'a str,
    cache: Option<PathBuf>,
    image: &'a calib::ImageArgs,
    threads: usize,
    int8_all: bool,
    weight_bits: u32,
    /// `best`: the error budget and how many samples measure errors.
    best: Option<(f32, usize)>,
}

/// An INT8 or `best` build: scales from the cache file when it exists, else calibrated on
/// `--calib` (and written to the cache file when one is named); `best` measures errors on
/// the first `--calib` samples. Prints the per-precision summary.
fn build_int8(graph: Graph, shapes: &HashMap<String, Vec<usize>>, o: &Int8Build) -> Result<Engine> {
    use edgert_core::engine::{Int8Options, Int8Scales};
    let options = Int8Options { only_faster: !o.int8_all, threads: o.threads.max(1), weight_bits: o.weight_bits };
    use edgert_core::quant::{CalibrationCache, Method};
    let existing = o.cache.as_ref().filter(|c| c.exists());
    let inputs: Vec<(String, Vec<usize>)> = graph
        .inputs
        .iter()
        .map(|&i| {
            let v = &graph.values[i];
            let dims = shapes.get(&v.name).cloned().or_else(|| {
                v.shape.as_ref().map(|d| d.iter().map(|x| if let Dim::Fixed(n) = x { *n } else { 1 }).collect())
            });
            dims.map(|d| (v.name.clone(), d)).ok_or_else(|| anyhow!("input `{}` has no shape: give --shape", v.name))
        })
        .collect::<Result<_>>()?;
    if let Some((max_error, n_error)) = o.best {
        // `best` keeps the samples: the first ones measure errors after calibration.
        let dir = o.calib.as_ref().ok_or_else(|| {
            anyhow!("--precision best needs calibration data (--calib DIR): errors are measured on it")
        })?;
        let (_, samples) = calib::samples(dir, &inputs, o.image)?;
        let samples: Vec<edgert_core::quant::collect::Sample> = samples.collect::<edgert_core::Result<_>>()?;
        let error_samples = &samples[..n_error.max(1).min(samples.len())];
        let t0 = std::time::Instant::now();
        // Timing every candidate layer in every precision is the slow part on big models:
        // a live count on a terminal, as for calibration.
        // It overwrites the calibration count's line (\x1b[K clears the rest), whose
        // `finish` ends it; with a calibration cache the line is ended below.
        let live = std::io::IsTerminal::is_terminal(&std::io::stderr());
        let shown = std::cell::Cell::new(false);
        let timing = |k: usize, n: usize| {
            if live {
                eprint!("\r\x1b[Kbest: timing layer {k}/{n}, {:.1} s", t0.elapsed().as_secs_f64());
                shown.set(true);
            }
        };
        let best = edgert_core::best::BestOptions {
            max_error,
            threads: o.threads.max(1),
            weight_bits: o.weight_bits,
            progress: Some(&timing),
        };
        let (engine, scales) = match existing {
            Some(path) => {
                let cache = CalibrationCache::read(path).with_context(|| format!("reading {}", path.display()))?;
                let built = Engine::build_best(graph, Some(shapes), Int8Scales::Cache(cache), error_samples, &best);
                if shown.get() {
                    eprintln!();
                }
                built?
            }
            None => {
                let method = Method::parse(o.method)?;
                let mut all = samples.iter().cloned().map(Ok);
                let live = CalibrationProgress::new(method, samples.len());
                let calibrate = Int8Scales::Calibrate {
                    samples: &mut all,
                    method,
                    threads: o.threads,
                    progress: &mut |n| live.show(n),
                };
                let built = Engine::build_best(graph, Some(shapes), calibrate, error_samples, &best);
                live.finish();
                built?
            }
        };
        println!(
            "best: chose per layer in {:.1} s on {} samples; measured error {:.2e} (budget {max_error:.2e})",
            t0.elapsed().as_secs_f64(),
            error_samples.len(),
            engine.build.measured_error.unwrap_or(f32::NAN)
        );
        if let (Some(path), None) = (&o.cache, existing) {
            scales.write(path).with_context(|| format!("writing {}", path.display()))?;
            println!("calibration cache: {} ({} tensors)", path.display(), scales.scales.len());
        }
        print_precision_summary(&engine);
        return Ok(engine);
    }
    let (engine, _scales) = if let Some(path) = existing {
        if o.calib.is_some() {
            eprintln!("note: using calibration cache {} (delete it to recalibrate on --calib)", path.display());
        }
        let cache = CalibrationCache::read(path).with_context(|| format!("reading {}", path.display()))?;
        Engine::build_int8(graph, Some(shapes), Int8Scales::Cache(cache), &options)?
    } else {
        let dir = o.calib.as_ref().ok_or_else(|| {
            anyhow!("--precision int8 needs calibration data (--calib DIR) or an existing --calib-cache FILE")
        })?;
        let method = Method::parse(o.method)?;
        let (total, mut samples) = calib::samples(dir, &inputs, o.image)?;
        let t0 = std::time::Instant::now();
        let live = CalibrationProgress::new(method, total);
        let built = Engine::build_int8(
            graph,
            Some(shapes),
            Int8Scales::Calibrate {
                samples: &mut samples,
                method,
                threads: o.threads,
                progress: &mut |n| live.show(n),
            },
            &options,
        );
        live.finish();
        let built = built?;
        println!("calibrated ({}) on {total} samples in {:.1} s", method.name(), t0.elapsed().as_secs_f64());
        if let Some(path) = &o.cache {
            built.1.write(path).with_context(|| format!("writing {}", path.display()))?;
            println!("calibration cache: {} ({} tensors)", path.display(), built.1.scales.len());
        }
        built
    };
    print_precision_summary(&engine);
    Ok(engine)
}

/// A live count of calibrated samples on a terminal (stderr); logs get only the final line
/// the caller prints.
struct CalibrationProgress {
    live: bool,
    method: edgert_core::quant::Method,
    total: usize,
    t0: std::time::Instant,
}

impl CalibrationProgress {
    fn new(method: edgert_core::quant::Method, total: usize) -> CalibrationProgress {
        let live = std::io::IsTerminal::is_terminal(&std::io::stderr());
        CalibrationProgress { live, method, total, t0: std::time::Instant::now() }
    }

    fn show(&self, n: usize) {
        if self.live {
            let secs = self.t0.elapsed().as_secs_f64();
            eprint!("\rcalibrating ({}): {n}/{} samples, {secs:.1} s", self.method.name(), self.total);
        }
    }

    fn finish(&self) {
        if self.live {
            eprintln!();
        }
    }
}

/// `precision: int8 N layers, fp16 K, fp32 M (reason: count, ...)`.
fn print_precision_summary(engine: &Engine) {
    let layers = &engine.build.layers;
    if layers.is_empty() {
        return;
    }
    let count = |p: &str| layers.iter().filter(|l| l.precision == p).count();
    let mut why: std::collections::BTreeMap<String, usize> = Default::default();
    for l in layers.iter().filter(|l| l.precision == "fp32") {
        // Group reasons by their kind (the text before a tensor name or number).
        let kind = l.reason.split([':', '`', '(', ';']).next().unwrap_or("").trim().to_string();
        *why.entry(kind).or_default() += 1;
    }
    let why: Vec<String> = why.iter().map(|(k, n)| format!("{k}: {n}")).collect();
    println!(
        "precision: int8 {} layers, fp16 {}, fp32 {} ({})",
        count("int8"),
        count("fp16"),
        count("fp32"),
        why.join(", ")
    );
    println!("(`edgert inspect ENGINE --layers` lists each layer's precision and why)");
}

fn is_engine(path: &Path) -> bool {
    Engine::is_engine_file(path)
}

fn load_engine(path: &Path) -> Result<Engine> {
    if is_engine(path) {
        Engine::load(path).with_context(|| format!("loading engine {}", path.display()))
    } else {
        let graph = onnx::load_model(path).with_context(|| format!("loading {}", path.display()))?;
        Ok(Engine::from_graph(graph)?)
    }
}

/// Parses `NAME=1x3x128x128` (also `NAME=1,3,128,128`).
fn parse_shapes(specs: &[String]) -> Result<HashMap<String, Vec<usize>>> {
    let mut out = HashMap::new();
    for s in specs {
        let (name, dims) = s.rsplit_once('=').ok_or_else(|| anyhow!("--shape `{s}`: expected NAME=DIMS"))?;
        let dims: Vec<usize> = if dims.is_empty() {
            vec![]
        } else {
            dims.split(['x', ','])
                .map(|d| d.trim().parse::<usize>().map_err(|_| anyhow!("--shape `{s}`: bad dimension `{d}`")))
                .collect::<Result<_>>()?
        };
        out.insert(name.to_string(), dims);
    }
    Ok(out)
}

/// Fills in inputs not given, taking 1 for each symbolic dim (and says so).
fn with_default_dims(graph: &Graph, mut given: HashMap<String, Vec<usize>>) -> HashMap<String, Vec<usize>> {
    for &id in &graph.inputs {
        let v = &graph.values[id];
        if given.contains_key(&v.name) {
            continue;
        }
        if let Some(d) = &v.shape
            && d.iter().any(|x| matches!(x, Dim::Sym(_)))
        {
            let dims: Vec<usize> = d.iter().map(|x| if let Dim::Fixed(n) = x { *n } else { 1 }).collect();
            eprintln!("note: input `{}` {} planned as {:?} (give --shape to choose)", v.name, format_dims(d), dims);
            given.insert(v.name.clone(), dims);
        }
    }
    given
}

fn run(
    model: &Path,
    inputs: &[String],
    output_dir: Option<&Path>,
    summary: bool,
    top: Option<usize>,
    device: DeviceArg,
) -> Result<()> {
    let engine = Arc::new(load_engine(model)?);
    let graph = &engine.graph;
    let mut values: HashMap<String, Tensor> = HashMap::new();
    for spec in inputs {
        let (name, file) = spec.split_once('=').ok_or_else(|| anyhow!("--input `{spec}`: expected NAME=path.npy"))?;
        let t = npy::read(Path::new(file))?;
        values.insert(name.to_string(), t);
    }
    for &id in &graph.inputs {
        let v = &graph.values[id];
        if !values.contains_key(&v.name) {
            let shape = v.shape.as_deref().map(format_dims).unwrap_or_else(|| "unknown".into());
            let dtype = v.dtype.map(|d| d.name()).unwrap_or("?");
            bail!("missing input `{}` ({} {}): pass --input {}=FILE.npy", v.name, dtype, shape, v.name);
        }
    }
    let shapes: HashMap<String, Vec<usize>> = values.iter().map(|(k, v)| (k.clone(), v.shape().to_vec())).collect();
    let (outputs, ms, where_) = match run_cuda(&engine, &shapes, &values, device)? {
        Some((outs, ms)) => (outs, ms, "on CUDA"),
        None => {
            let mut ctx = Context::new(engine.clone(), &shapes)?;
            for (name, t) in &values {
                ctx.set_input(name, t)?;
            }
            let t0 = std::time::Instant::now();
            ctx.run()?;
            let ms = t0.elapsed().as_secs_f64() * 1e3;
            let outs = (0..ctx.num_outputs()).map(|i| ctx.output(i)).collect::<Result<Vec<_>, _>>()?;
            (ctx.output_names().into_iter().zip(outs).collect::<Vec<_>>(), ms, "with the reference kernels")
        }
    };
    if let Some(dir) = output_dir {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    for (name, t) in &outputs {
        if let Some(dir) = output_dir {
            let file = dir.join(format!("{}.npy", sanitize(name)));
            npy::write(&file, t)?;
            println!("wrote {} ({} {:?})", file.display(), t.dtype(), t.shape());
        }
        if summary || top.is_some() {
            print_summary(name, t, top);
        }
    }
    eprintln!("ran in {ms:.2} ms (one cold run {where_}: use `edgert bench` to measure)");
    Ok(())
}

/// Outputs by name, and the run time in ms.
type NamedOutputs = (Vec<(String, Tensor)>, f64);

/// `--device cuda|auto`: runs on the GPU and returns the outputs and run time; `None` for
/// the CPU (`--device cpu`, or `auto` with no usable CUDA device, which it says).
fn run_cuda(
    engine: &Arc<Engine>,
    shapes: &HashMap<String, Vec<usize>>,
    values: &HashMap<String, Tensor>,
    device: DeviceArg,
) -> Result<Option<NamedOutputs>> {
    if device == DeviceArg::Cpu {
        return Ok(None);
    }
    // Nodes without a CUDA kernel run on the CPU, and are listed below.
    let opts = edgert_cuda::ExecOptions { cpu_fallback: true, ..Default::default() };
    let mut ctx = match edgert_cuda::GpuContext::new(engine.clone(), shapes, opts) {
        Ok(c) => c,
        Err(e) if device == DeviceArg::Auto => {
            eprintln!("note: --device auto: CUDA unavailable ({e}); running on the CPU");
            return Ok(None);
        }
        Err(e) => return Err(anyhow!(e).context("--device cuda")),
    };
    eprintln!("device: {}", ctx.device().describe());
    for (node, op, why) in ctx.cpu_fallbacks() {
        eprintln!("note: node `{node}` ({op}) runs on the CPU: no CUDA kernel for {why}");
    }
    for (name, t) in values {
        ctx.set_input(name, t)?;
    }
    let t0 = std::time::Instant::now();
    ctx.run()?;
    let outs = (0..ctx.output_names().len()).map(|i| ctx.output(i)).collect::<Result<Vec<_>, _>>()?;
    let ms = t0.elapsed().as_secs_f64() * 1e3;
    Ok(Some((ctx.output_names().into_iter().zip(outs).collect(), ms)))
}

/// Output names may contain `/` or `:`: keep file names safe.
fn sanitize(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) { c } else { '_' }).collect()
}

fn print_summary(name: &str, t: &Tensor, top: Option<usize>) {
    let v = t.to_f32_vec().unwrap_or_default();
    let (mut lo, mut hi, mut sum) = (f32::INFINITY, f32::NEG_INFINITY, 0f64);
    for &x in &v {
        lo = lo.min(x);
        hi = hi.max(x);
        sum += x as f64;
    }
    let mean = if v.is_empty() { 0.0 } else { sum / v.len() as f64 };
    let first: Vec<String> = v.iter().take(6).map(|x| format!("{x:.5}")).collect();
    println!(
        "{name}: {} {:?} min {lo:.5} max {hi:.5} mean {mean:.5} first [{}]",
        t.dtype(),
        t.shape(),
        first.join(", ")
    );
    if let Some(k) = top {
        let mut idx: Vec<usize> = (0..v.len()).collect();
        idx.sort_by(|&a, &b| v[b].total_cmp(&v[a]));
        let best: Vec<String> = idx.iter().take(k).map(|&i| format!("#{i}={:.4}", v[i])).collect();
        println!("  top {k}: {}", best.join(" "));
    }
}

/// `inspect --passes`: runs the build's passes one at a time, printing the graph after each.
fn print_passes(path: &Path) -> Result<()> {
    if is_engine(path) {
        bail!("{}: --passes needs the ONNX model (an engine file is already optimized)", path.display());
    }
    let mut g = onnx::load_model(path).with_context(|| format!("loading {}", path.display()))?;
    let name = |g: &Graph, v: &Option<usize>| v.map_or("-".to_string(), |v| g.values[v].name.clone());
    let print = |g: &Graph| {
        for n in &g.nodes {
            let ins: Vec<String> = n.inputs.iter().map(|v| name(g, v)).collect();
            let outs: Vec<String> = n.outputs.iter().map(|v| name(g, v)).collect();
            println!("  {:<20} {:<28} ({}) -> {}", n.op_type, n.name, ins.join(", "), outs.join(", "));
        }
    };
    println!("== imported: {} nodes", g.nodes.len());
    print(&g);
    for (pass, f) in edgert_core::passes::default_passes() {
        let changes = f(&mut g)?;
        println!("== after {pass} ({changes} changes): {} nodes", g.nodes.len());
        print(&g);
    }
    Ok(())
}

fn inspect(path: &Path, shapes: &HashMap<String, Vec<usize>>, list_layers: bool) -> Result<()> {
    let engine_file = is_engine(path);
    let engine = load_engine(path)?;
    let g = &engine.graph;
    println!("{}: {}", if engine_file { "engine" } else { "model" }, path.display());
    println!("opset {}, target {}/{}", g.opset, engine.target.backend, engine.target.arch);
    println!("inputs:");
    for &i in &g.inputs {
        let v = &g.values[i];
        println!(
            "  {} {} {}",
            v.name,
            v.dtype.map(|d| d.name()).unwrap_or("?"),
            v.shape.as_deref().map(format_dims).unwrap_or_else(|| "?".into())
        );
    }
    let shapes = with_default_dims(g, shapes.clone());
    let planned = plan::plan(g, &shapes);
    println!("outputs:");
    for &o in &g.outputs {
        let v = &g.values[o];
        let concrete = planned.as_ref().ok().and_then(|p| p.types[o].clone());
        let declared = v.shape.as_deref().map(format_dims).unwrap_or_else(|| "?".into());
        match concrete {
            Some(t) => println!("  {} {} {} (planned {:?})", v.name, t.dtype, declared, t.shape),
            None => println!("  {} {} {}", v.name, v.dtype.map(|d| d.name()).unwrap_or("?"), declared),
        }
    }
    println!("nodes: {}", g.nodes.len());
    for (op, n) in g.op_counts() {
        println!("  {op:<24} {n}");
    }
    for (pass, n) in &engine.build.passes {
        println!("pass {pass}: {n} changes");
    }
    println!("weights: {} bytes in {} constants", g.weights_bytes(), g.constants.len());
    match planned {
        Ok(p) => {
            let ratio = if p.lower_bound_bytes > 0 { p.arena_bytes as f64 / p.lower_bound_bytes as f64 } else { 1.0 };
            println!(
                "arena: {} bytes, lower bound {} bytes ({:.3}x), scratch {} bytes, {} steps, for {:?}",
                p.arena_bytes,
                p.lower_bound_bytes,
                ratio,
                p.scratch_bytes,
                p.steps.iter().filter(|s| !s.skip).count(),
                p.input_shapes
            );
        }
        Err(e) => println!("arena: cannot plan: {e}"),
    }
    if let Some(p) = &engine.build.plan {
        println!("engine's recorded plan: arena {} bytes for {:?}", p.arena_bytes, p.input_shapes);
    }
    if !engine.build.precision.is_empty() {
        println!("precision: {}", engine.build.precision);
    }
    if let Some(e) = engine.build.measured_error {
        println!("measured error vs fp32 on the calibration samples: {e:.2e} (max |y - y_fp32| / max |y_fp32|)");
    }
    print_precision_summary(&engine);
    if list_layers {
        if engine.build.layers.is_empty() {
            println!(
                "layers: every layer runs in {}",
                if engine.build.precision.is_empty() { "fp32" } else { &engine.build.precision }
            );
        }
        for l in &engine.build.layers {
            println!("  {:<5} {:<40} {:<20} {}", l.precision, l.node, l.op_type, l.reason);
        }
    }
    Ok(())
}
