//! Engines and the engine file.
//!
//! An [`Engine`] is an optimized graph with its weights, ready for contexts. Its file:
//!
//! ```text
//! offset  size  field
//! 0       8     magic "EDGERT\0E"
//! 8       4     format version (u32 LE)
//! 12      4     reserved (0)
//! 16      8     metadata length M (u64 LE)
//! 24      8     weights length W (u64 LE)
//! 32      M     metadata, JSON (serde): SDK version, target, graph, constants table, plan
//! ...           zero padding to a multiple of 64
//! P       W     weights: each constant at a 64-byte aligned offset from P
//! P+W     4     CRC-32 of every byte before it (u32 LE)
//! ```

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::graph::{Dim, Graph, ValueId};
use crate::onnx::from_le_bytes;
use crate::passes::{self, LayerPrecision};
use crate::plan::{self, PlanSummary};
use crate::quant::collect::{Sample, collect};
use crate::quant::{CalibrationCache, Method};
use crate::tensor::{DType, Tensor};

/// File magic.
pub const MAGIC: &[u8; 8] = b"EDGERT\0E";
/// Engine file format version this SDK writes and reads.
pub const FORMAT_VERSION: u32 = 1;
const HEADER_BYTES: usize = 32;

/// What an engine was built for. Loading it elsewhere fails with a message naming the
/// mismatch.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Target {
    /// Backend (`cpu`).
    pub backend: String,
    /// CPU architecture (`x86_64`, `aarch64`).
    pub arch: String,
    /// CPU features the engine's kernels need (empty for the portable kernels).
    pub required_features: Vec<String>,
}

impl Target {
    /// The CPU target of this machine with the portable kernels.
    pub fn host_cpu() -> Target {
        Target { backend: "cpu".into(), arch: std::env::consts::ARCH.into(), required_features: vec![] }
    }

    /// Checks that this machine can run engines for `self`.
    pub fn check_runnable(&self) -> Result<()> {
        let host = Target::host_cpu();
        if self.backend != host.backend {
            return Err(Error::Engine(format!("built for the `{}` backend; this build runs `cpu`", self.backend)));
        }
        if self.arch != host.arch {
            return Err(Error::Engine(format!(
                "built for {} CPUs; this machine is {}: rebuild the engine here",
                self.arch, host.arch
            )));
        }
        if let Some(f) = self.required_features.iter().find(|f| !cpu_has(f)) {
            return Err(Error::Engine(format!(
                "needs the CPU feature `{f}`, which this CPU lacks: rebuild the engine here"
            )));
        }
        Ok(())
    }
}

fn cpu_has(feature: &str) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        match feature {
            "avx2" => std::arch::is_x86_feature_detected!("avx2"),
            "fma" => std::arch::is_x86_feature_detected!("fma"),
            "avx512f" => std::arch::is_x86_feature_detected!("avx512f"),
            "avx512vnni" => std::arch::is_x86_feature_detected!("avx512vnni"),
            _ => false,
        }
    }
    #[cfg(target_arch = "aarch64")]
    {
        match feature {
            "neon" => std::arch::is_aarch64_feature_detected!("neon"),
            "dotprod" => std::arch::is_aarch64_feature_detected!("dotprod"),
            _ => false,
        }
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        let _ = feature;
        false
    }
}

/// One constant in the weights section.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct ConstEntry {
    value: ValueId,
    dtype: DType,
    shape: Vec<usize>,
    offset: u64,
    bytes: u64,
}

#[derive(Debug, Serialize, Deserialize)]
struct Metadata {
    sdk_version: String,
    target: Target,
    graph: Graph,
    constants: Vec<ConstEntry>,
    build: BuildInfo,
}

/// How the engine was built.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct BuildInfo {
    /// What each pass changed: `(pass, count)`.
    pub passes: Vec<(String, usize)>,
    /// The plan for the build shapes, when they were known.
    pub plan: Option<PlanSummary>,
    /// The precision asked for (`fp32`, `int8`); empty in files from before INT8 builds.
    #[serde(default)]
    pub precision: String,
    /// Each node's precision and why (INT8, FP16 and best builds; empty for fp32).
    #[serde(default)]
    pub layers: Vec<LayerPrecision>,
    /// The model's error against FP32 measured on the calibration samples (`best` builds):
    /// `max |y - y_fp32| / max |y_fp32|` over the float outputs.
    #[serde(default)]
    pub measured_error: Option<f32>,
}

/// Choices of an INT8 build.
#[derive(Clone, Copy, Debug)]
pub struct Int8Options {
    /// Time each quantized layer against its f32 form on this machine (at the build's
    /// shapes and `threads`) and keep INT8 only where it is faster.
    pub only_faster: bool,
    /// Threads the timing runs use (those the engine will run with).
    pub threads: usize,
    /// Bits of the quantized weights: 8, or 7 for the AVX2 `vpmaddubsw` kernel (twice the
    /// products per instruction of the exact 8-bit AVX2 kernel); see
    /// [`passes::quantize_int8::default_weight_bits`].
    pub weight_bits: u32,
}

/// Times every INT8 layer of `quantized` against the same node of `before` (the graph the
/// quantization pass started from: same node order) and puts back the f32 node where INT8
/// is not faster, saying so in `layers`.
fn keep_faster(
    before: &Graph,
    quantized: &mut Graph,
    layers: &mut [LayerPrecision],
    shapes: Option<&HashMap<String, Vec<usize>>>,
    threads: usize,
) -> Result<()> {
    let empty = HashMap::new();
    let plan_f32 = plan::plan(before, shapes.unwrap_or(&empty))?;
    let plan_q = plan::plan(quantized, shapes.unwrap_or(&empty))?;
    for (i, layer) in layers.iter_mut().enumerate() {
        if layer.precision != "int8" {
            continue;
        }
        let t_f32 = crate::tune::time_node(before, &plan_f32, i, threads)?;
        let t_int8 = crate::tune::time_node(quantized, &plan_q, i, threads)?;
        let (a, b) = (t_int8 * 1e3, t_f32 * 1e3);
        if t_int8 < t_f32 {
            layer.reason = format!("{}; faster here: {a:.3} ms vs fp32 {b:.3} ms", layer.reason);
        } else {
            quantized.nodes[i] = before.nodes[i].clone();
            layer.precision = "fp32".into();
            layer.op_type = before.nodes[i].op_type.clone();
            layer.reason = format!("fp32 faster here: {b:.3} ms vs int8 {a:.3} ms");
        }
    }
    Ok(())
}

/// Runs the default passes; returns what each changed.
fn optimize(graph: &mut Graph) -> Result<Vec<(String, usize)>> {
    let mut report = Vec::new();
    for (name, pass) in passes::default_passes() {
        let n = pass(graph)?;
        report.push((name.to_string(), n));
    }
    Ok(report)
}

/// The plan for `shapes` (an error only when shapes were given and planning fails).
fn plan_summary(graph: &Graph, shapes: Option<&HashMap<String, Vec<usize>>>) -> Result<Option<PlanSummary>> {
    let empty = HashMap::new();
    match plan::plan(graph, shapes.unwrap_or(&empty)) {
        Ok(p) => Ok(Some(p.summary(graph))),
        Err(e) if shapes.is_some() => Err(e),
        Err(_) => Ok(None),
    }
}

/// Every input's shape, all dimensions fixed.
fn fixed_input_shapes(g: &Graph) -> Result<HashMap<String, Vec<usize>>> {
    g.inputs
        .iter()
        .map(|&id| {
            let v = &g.values[id];
            let dims = v.shape.as_ref().and_then(|s| {
                s.iter().map(|d| if let Dim::Fixed(f) = d { Some(*f) } else { None }).collect::<Option<Vec<usize>>>()
            });
            dims.map(|d| (v.name.clone(), d))
                .ok_or_else(|| crate::invalid_err!("input `{}` has a symbolic dimension besides the batch", v.name))
        })
        .collect()
}

/// The check of [`Engine::with_batch`]: `n` pseudo-random images through `batched` at once
/// and each alone through `single`; every output of every image must match (f32 tolerance).
fn check_rebatched(single: &Graph, batched: &Graph, n: usize) -> Result<()> {
    let (one_shapes, n_shapes) = (fixed_input_shapes(single)?, fixed_input_shapes(batched)?);
    let engine =
        |g: &Graph| Arc::new(Engine { graph: g.clone(), target: Target::host_cpu(), build: BuildInfo::default() });
    let mut one = crate::Context::new(engine(single), &one_shapes)?;
    let mut many = crate::Context::new(engine(batched), &n_shapes)?;
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut random = |len: usize| -> Vec<f32> {
        (0..len)
            .map(|_| {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                ((seed >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
            })
            .collect()
    };
    // Image i's input `name` is values[name][i * len..]; the batch holds them all.
    let mut values: HashMap<&str, Vec<f32>> = HashMap::new();
    for (name, shape) in &n_shapes {
        let all = random(shape.iter().product());
        many.set_input(name, &Tensor::from_f32(shape, all.clone())?)?;
        values.insert(name, all);
    }
    many.run()?;
    let names = many.output_names();
    let outs: Vec<Tensor> = (0..names.len()).map(|o| many.output(o)).collect::<Result<_>>()?;
    for i in 0..n {
        for (name, shape) in &one_shapes {
            let len: usize = shape.iter().product();
            one.set_input(name, &Tensor::from_f32(shape, values[name.as_str()][i * len..(i + 1) * len].to_vec())?)?;
        }
        one.run()?;
        for (o, all) in outs.iter().enumerate() {
            let want = one.output(o)?;
            let per = want.len();
            if all.len() != n * per || all.shape().first() != Some(&n) {
                crate::invalid!(
                    "cannot rebatch to {n}: output `{}` is {:?} for {n} images, {:?} for one",
                    names[o],
                    all.shape(),
                    want.shape()
                );
            }
            let got = Tensor::from_f32(want.shape(), all.to_f32_vec()?[i * per..(i + 1) * per].to_vec())?;
            if let Some(m) = crate::compare::mismatch(&got, &want, crate::compare::Tolerance::F32) {
                crate::invalid!(
                    "cannot rebatch to {n}: image {i}'s output `{}` differs from its run alone: {m}",
                    names[o]
                );
            }
        }
    }
    Ok(())
}

/// Where an INT8 build gets its activation scales.
pub enum Int8Scales<'a> {
    /// A calibration cache (read from a file, or edited by hand).
    Cache(CalibrationCache),
    /// Calibrate now: run the float32 engine over `samples` and pick scales by `method`.
    Calibrate {
        /// The samples.
        samples: &'a mut dyn Iterator<Item = Result<Sample>>,
        /// The calibration method.
        method: Method,
        /// Threads for the calibration runs.
        threads: usize,
        /// Called after each sample with the count so far.
        progress: &'a mut dyn FnMut(usize),
    },
}

impl Int8Scales<'_> {
    /// The scales for the optimized `graph`: the cache, or calibrated now on the inputs
    /// of the convolutions INT8 could run.
    fn resolve(self, graph: &Graph) -> Result<CalibrationCache> {
        match self {
            Int8Scales::Cache(c) => Ok(c),
            Int8Scales::Calibrate { samples, method, threads, progress } => {
                let wanted = passes::quantize_int8::int8_inputs(graph);
                Ok(collect(graph, &wanted, samples, threads, progress)?.cache(method))
            }
        }
    }
}

/// An optimized model with its weights.
#[derive(Debug)]
pub struct Engine {
    /// The optimized graph; its constants are the weights.
    pub graph: Graph,
    /// What the engine targets.
    pub target: Target,
    /// Build report.
    pub build: BuildInfo,
}

impl Engine {
    /// Optimizes `graph` with the default passes (no plan is recorded).
    pub fn from_graph(graph: Graph) -> Result<Engine> {
        Engine::build(graph, None)
    }

    /// Optimizes `graph` and, when `shapes` is given (or every input shape is fixed), plans
    /// it for those shapes so the file records the arena layout.
    pub fn build(mut graph: Graph, shapes: Option<&HashMap<String, Vec<usize>>>) -> Result<Engine> {
        let report = optimize(&mut graph)?;
        let plan = plan_summary(&graph, shapes)?;
        let build = BuildInfo { passes: report, plan, precision: "fp32".into(), ..BuildInfo::default() };
        Ok(Engine { graph, target: Target::host_cpu(), build })
    }

    /// As [`Engine::build`], then INT8: convolutions whose inputs have scales run on the INT8
    /// kernels (`passes::quantize_int8`); the report lists every node's precision and why.
    /// Returns the engine and the scales used (to write as a calibration cache).
    pub fn build_int8(
        mut graph: Graph,
        shapes: Option<&HashMap<String, Vec<usize>>>,
        scales: Int8Scales,
        options: &Int8Options,
    ) -> Result<(Engine, CalibrationCache)> {
        let mut report = optimize(&mut graph)?;
        let cache = scales.resolve(&graph)?;
        let before = options.only_faster.then(|| graph.clone());
        let mut layers = passes::quantize_int8(&mut graph, &cache, options.weight_bits)?;
        if let Some(before) = before {
            keep_faster(&before, &mut graph, &mut layers, shapes, options.threads)?;
        }
        let int8 = layers.iter().filter(|l| l.precision == "int8").count();
        report.push(("quantize_int8".to_string(), int8));
        let dead = passes::remove_dead_nodes(&mut graph)?;
        report.push(("remove_dead_nodes".to_string(), dead));
        let plan = plan_summary(&graph, shapes)?;
        let build = BuildInfo { passes: report, plan, precision: "int8".into(), layers, measured_error: None };
        Ok((Engine { graph, target: Target::host_cpu(), build }, cache))
    }

    /// As [`Engine::build`], then FP16: every convolution the GEMM runs keeps its weights in
    /// float16 (`passes::fp16_weights`); the report lists every node's precision and why.
    pub fn build_fp16(mut graph: Graph, shapes: Option<&HashMap<String, Vec<usize>>>) -> Result<Engine> {
        let mut report = optimize(&mut graph)?;
        let layers = passes::fp16_weights(&mut graph)?;
        report.push(("fp16_weights".to_string(), layers.iter().filter(|l| l.precision == "fp16").count()));
        let dead = passes::remove_dead_nodes(&mut graph)?;
        report.push(("remove_dead_nodes".to_string(), dead));
        let plan = plan_summary(&graph, shapes)?;
        let build = BuildInfo { passes: report, plan, precision: "fp16".into(), layers, measured_error: None };
        Ok(Engine { graph, target: Target::host_cpu(), build })
    }

    /// As [`Engine::build`], then each convolution in the fastest of INT8, FP16 and FP32
    /// whose error on `error_samples` stays within `options.max_error` (see [`crate::best`]).
    /// Scales come as for [`Engine::build_int8`]. Returns the engine and the scales used.
    pub fn build_best(
        mut graph: Graph,
        shapes: Option<&HashMap<String, Vec<usize>>>,
        scales: Int8Scales,
        error_samples: &[Sample],
        options: &crate::best::BestOptions<'_>,
    ) -> Result<(Engine, CalibrationCache)> {
        let mut report = optimize(&mut graph)?;
        let cache = scales.resolve(&graph)?;
        let (graph, layers, error) = crate::best::choose(graph, shapes, &cache, error_samples, options)?;
        for p in ["int8", "fp16"] {
            report.push((format!("best: {p} layers"), layers.iter().filter(|l| l.precision == p).count()));
        }
        let plan = plan_summary(&graph, shapes)?;
        let build = BuildInfo { passes: report, plan, precision: "best".into(), layers, measured_error: Some(error) };
        Ok((Engine { graph, target: Target::host_cpu(), build }, cache))
    }

    /// This batch-1 engine rewritten to take `n` images per run (`passes::set_batch`: for
    /// models exported with a fixed batch of 1, such as BlazeFace's TFLite conversions), or an
    /// error naming why not. The rewrite is checked, not assumed ([`check_rebatched`]): a
    /// model that mixes images along its first axis is refused. Float32 inputs only.
    pub fn with_batch(&self, n: usize) -> Result<Engine> {
        for &id in &self.graph.inputs {
            let v = &self.graph.values[id];
            if v.dtype != Some(DType::F32) {
                crate::invalid!("rebatching checks float32 inputs only; `{}` is not float32", v.name);
            }
        }
        let mut graph = self.graph.clone();
        let changes = passes::set_batch(&mut graph, n)?;
        let n_shapes = fixed_input_shapes(&graph)?;
        let mut build = self.build.clone();
        build.plan = plan_summary(&graph, Some(&n_shapes))?;
        build.passes.push((format!("set_batch {n}"), changes.len()));
        let batched = Engine { graph, target: self.target.clone(), build };
        check_rebatched(&self.graph, &batched.graph, n)?;
        Ok(batched)
    }

    /// Serializes to the engine file format.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut constants = Vec::new();
        let mut weights: Vec<u8> = Vec::new();
        for (&id, t) in &self.graph.constants {
            let pad = weights.len().next_multiple_of(64) - weights.len();
            weights.extend(std::iter::repeat_n(0u8, pad));
            let bytes = to_le_bytes(t);
            constants.push(ConstEntry {
                value: id,
                dtype: t.dtype(),
                shape: t.shape().to_vec(),
                offset: weights.len() as u64,
                bytes: bytes.len() as u64,
            });
            weights.extend_from_slice(&bytes);
        }
        let meta = Metadata {
            sdk_version: env!("CARGO_PKG_VERSION").to_string(),
            target: self.target.clone(),
            graph: self.graph.clone(),
            constants,
            build: self.build.clone(),
        };
        let meta = serde_json::to_vec(&meta).map_err(|e| Error::Engine(format!("cannot serialize metadata: {e}")))?;
        let mut out = Vec::with_capacity(HEADER_BYTES + meta.len() + 64 + weights.len() + 4);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&(meta.len() as u64).to_le_bytes());
        out.extend_from_slice(&(weights.len() as u64).to_le_bytes());
        out.extend_from_slice(&meta);
        let pad = out.len().next_multiple_of(64) - out.len();
        out.extend(std::iter::repeat_n(0u8, pad));
        out.extend_from_slice(&weights);
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        Ok(out)
    }

    /// Writes the engine file.
    pub fn save(&self, path: &Path) -> Result<()> {
        let bytes = self.to_bytes()?;
        std::fs::write(path, bytes).map_err(|e| Error::Io { path: path.display().to_string(), source: e })
    }

    /// Whether `path` starts with the engine file magic (reads 8 bytes; false when it
    /// cannot be read): how tools tell `model.edgert` from `model.onnx` whatever the name.
    pub fn is_engine_file(path: &Path) -> bool {
        use std::io::Read;
        let mut head = [0u8; MAGIC.len()];
        std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut head)).is_ok() && &head == MAGIC
    }

    /// Reads an engine file.
    pub fn load(path: &Path) -> Result<Engine> {
        let bytes = std::fs::read(path).map_err(|e| Error::Io { path: path.display().to_string(), source: e })?;
        Engine::from_bytes(&bytes)
    }

    /// Parses an engine file, checking length, magic, version, checksum and target.
    pub fn from_bytes(bytes: &[u8]) -> Result<Engine> {
        if bytes.len() < 8 || &bytes[..8] != MAGIC {
            return Err(Error::Engine("not an edgert engine (bad magic)".into()));
        }
        if bytes.len() < HEADER_BYTES + 4 {
            return Err(Error::Engine(format!(
                "truncated: {} bytes, the header alone needs {}",
                bytes.len(),
                HEADER_BYTES + 4
            )));
        }
        let u32_at = |o: usize| u32::from_le_bytes([bytes[o], bytes[o + 1], bytes[o + 2], bytes[o + 3]]);
        let u64_at = |o: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&bytes[o..o + 8]);
            u64::from_le_bytes(b)
        };
        let version = u32_at(8);
        if version != FORMAT_VERSION {
            return Err(Error::Engine(format!(
                "format version {version}; this SDK ({}) reads version {FORMAT_VERSION}: rebuild the engine",
                env!("CARGO_PKG_VERSION")
            )));
        }
        let meta_len = usize::try_from(u64_at(16)).map_err(|_| Error::Engine("metadata length overflows".into()))?;
        let weights_len = usize::try_from(u64_at(24)).map_err(|_| Error::Engine("weights length overflows".into()))?;
        let weights_at = HEADER_BYTES
            .checked_add(meta_len)
            .map(|v| v.next_multiple_of(64))
            .ok_or_else(|| Error::Engine("metadata length overflows".into()))?;
        let total = weights_at
            .checked_add(weights_len)
            .and_then(|v| v.checked_add(4))
            .ok_or_else(|| Error::Engine("weights length overflows".into()))?;
        if bytes.len() < total {
            return Err(Error::Engine(format!("truncated: {} bytes, the header says {total}", bytes.len())));
        }
        if bytes.len() > total {
            return Err(Error::Engine(format!("{} bytes of trailing garbage after the checksum", bytes.len() - total)));
        }
        let stored = u32_at(total - 4);
        let actual = crc32fast::hash(&bytes[..total - 4]);
        if stored != actual {
            return Err(Error::Engine(format!(
                "checksum mismatch (stored {stored:08x}, computed {actual:08x}): the file is corrupted"
            )));
        }
        let meta: Metadata = serde_json::from_slice(&bytes[HEADER_BYTES..HEADER_BYTES + meta_len])
            .map_err(|e| Error::Engine(format!("bad metadata: {e}")))?;
        meta.target.check_runnable()?;
        let weights = &bytes[weights_at..weights_at + weights_len];
        let mut graph = meta.graph;
        let mut constants = BTreeMap::new();
        for c in &meta.constants {
            let (off, len) = (c.offset as usize, c.bytes as usize);
            let end = off.checked_add(len).filter(|&e| e <= weights.len());
            let Some(end) = end else {
                return Err(Error::Engine(format!("constant #{} lies outside the weights section", c.value)));
            };
            if c.value >= graph.values.len() {
                return Err(Error::Engine(format!("constant for unknown value #{}", c.value)));
            }
            let data = from_le_bytes(c.dtype, &weights[off..end]).map_err(|e| Error::Engine(e.to_string()))?;
            let t =
                Tensor::new(c.shape.clone(), data).map_err(|e| Error::Engine(format!("constant #{}: {e}", c.value)))?;
            constants.insert(c.value, Arc::new(t));
        }
        graph.constants = constants;
        graph.rebuild_ops().map_err(|e| Error::Engine(format!("cannot rebuild ops: {e}")))?;
        graph.validate().map_err(|e| Error::Engine(format!("inconsistent graph: {e}")))?;
        Ok(Engine { graph, target: meta.target, build: meta.build })
    }
}

/// Little-endian bytes of a tensor (the file layout).
fn to_le_bytes(t: &Tensor) -> Vec<u8> {
    use crate::tensor::TensorData as D;
    match t.data() {
        D::F32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        D::F16(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        D::I8(v) => v.iter().map(|&x| x as u8).collect(),
        D::U8(v) => v.clone(),
        D::I32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        D::I64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        D::Bool(v) => v.iter().map(|&x| x as u8).collect(),
    }
}

/// Rewrites the target recorded in an engine file and fixes its checksum (for tests of the
/// target check and for tools that retarget engines deliberately).
pub fn retarget_bytes(bytes: &[u8], target: &Target) -> Result<Vec<u8>> {
    let engine_meta_len = bytes.get(16..24).ok_or_else(|| Error::Engine("truncated".into()))?;
    let mut b = [0u8; 8];
    b.copy_from_slice(engine_meta_len);
    let meta_len = u64::from_le_bytes(b) as usize;
    let meta_bytes =
        bytes.get(HEADER_BYTES..HEADER_BYTES + meta_len).ok_or_else(|| Error::Engine("truncated".into()))?;
    let mut meta: serde_json::Value =
        serde_json::from_slice(meta_bytes).map_err(|e| Error::Engine(format!("bad metadata: {e}")))?;
    meta["target"] = serde_json::to_value(target).map_err(|e| Error::Engine(e.to_string()))?;
    let new_meta = serde_json::to_vec(&meta).map_err(|e| Error::Engine(e.to_string()))?;
    let weights_at = (HEADER_BYTES + meta_len).next_multiple_of(64);
    let rest = bytes.get(weights_at..bytes.len().saturating_sub(4)).ok_or_else(|| Error::Engine("truncated".into()))?;
    let mut out = bytes[..HEADER_BYTES].to_vec();
    out[16..24].copy_from_slice(&(new_meta.len() as u64).to_le_bytes());
    out.extend_from_slice(&new_meta);
    let pad = out.len().next_multiple_of(64) - out.len();
    out.extend(std::iter::repeat_n(0u8, pad));
    out.extend_from_slice(rest);
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    Ok(out)
}
