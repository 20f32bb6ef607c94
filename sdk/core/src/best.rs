//! `--precision best`: each convolution runs in the fastest precision (INT8, FP16 weights or
//! FP32) whose error stays within a budget, measured on calibration samples.
//!
//! The build makes the three versions of every candidate layer (`passes::quantize_int8` and
//! `passes::fp16_weights` on the same optimized graph: node `i` is the same layer in each),
//! then, layer by layer:
//! 1. times each version alone on this machine (`tune::time_node`, the build's threads);
//! 2. tries the versions faster than FP32 by at least [`MIN_GAIN`], fastest first: the
//!    model runs on the error samples with only this layer changed, and the first whose
//!    error is within the budget is chosen; FP32 otherwise.
//!
//! Errors add up across layers, so the chosen mix is measured as a whole; while it is over the
//! budget, the layer whose own error was largest steps back (INT8 to FP16 when that was
//! within budget and faster than FP32, else FP32). The error of a model is
//! `max |y - y_fp32| / max |y_fp32|` over every float output and error sample: relative to
//! each output's range, so one budget fits logits and box coordinates alike.

use std::collections::HashMap;
use std::sync::Arc;

use crate::context::Context;
use crate::engine::{BuildInfo, Engine, Target};
use crate::error::Result;
use crate::graph::{Graph, Node};
use crate::passes::{self, LayerPrecision};
use crate::plan;
use crate::quant::CalibrationCache;
use crate::quant::collect::Sample;
use crate::tensor::Tensor;
use crate::{invalid, tune};

/// How much faster than FP32 a lower precision must time to be tried: single-node timings
/// on a busy machine differ by a few percent from run to run, and a tie is not worth the
/// error.
pub const MIN_GAIN: f64 = 0.05;

/// The precisions a layer can run in, from the most precise.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Precision {
    /// Float32.
    Fp32,
    /// Float16 weights, float32 activations and sums.
    Fp16,
    /// Int8 weights and activations, int32 sums.
    Int8,
}

impl Precision {
    /// The report's name.
    pub fn name(self) -> &'static str {
        match self {
            Precision::Fp32 => "fp32",
            Precision::Fp16 => "fp16",
            Precision::Int8 => "int8",
        }
    }
}

/// Choices of a `best` build.
#[derive(Clone, Copy)]
pub struct BestOptions<'a> {
    /// The largest model error allowed (see the module doc), e.g. 0.02.
    pub max_error: f32,
    /// Threads the timing and error runs use (those the engine will run with).
    pub threads: usize,
    /// Bits of INT8 weights (see [`crate::engine::Int8Options::weight_bits`]).
    pub weight_bits: u32,
    /// Called as the timing of each candidate layer starts, with (its number from 1, how
    /// many): the slow part of a `best` build on a big model, for a progress display.
    pub progress: Option<&'a dyn Fn(usize, usize)>,
}

/// What the build learnt about one candidate layer.
#[derive(Clone, Debug, Default)]
struct Trial {
    /// Median time in ms of each version that exists (fp32 always).
    ms: Vec<(Precision, f64)>,
    /// The model error with only this layer in each version tried.
    error: Vec<(Precision, f32)>,
    /// Why the choice changed after the whole mix was measured.
    demoted: Option<String>,
}

impl Trial {
    fn ms(&self, p: Precision) -> Option<f64> {
        self.ms.iter().find(|m| m.0 == p).map(|m| m.1)
    }
    fn error(&self, p: Precision) -> Option<f32> {
        self.error.iter().find(|e| e.0 == p).map(|e| e.1)
    }
}

/// The optimized graph with every layer's versions: `nodes(p)[i]` is layer `i` in precision
/// `p`; `graph` holds the constants of all of them.
struct Versions {
    graph: Graph,
    fp32: Vec<Node>,
    fp16: Vec<Node>,
    int8: Vec<Node>,
    /// Why a layer has no INT8 or no FP16 version (from the passes' reports).
    int8_report: Vec<LayerPrecision>,
    fp16_report: Vec<LayerPrecision>,
}

impl Versions {
    fn new(graph: Graph, scales: &CalibrationCache, weight_bits: u32) -> Result<Versions> {
        let mut graph = graph;
        let fp32 = graph.nodes.clone();
        let int8_report = passes::quantize_int8(&mut graph, scales, weight_bits)?;
        let int8 = std::mem::replace(&mut graph.nodes, fp32.clone());
        let fp16_report = passes::fp16_weights(&mut graph)?;
        let fp16 = std::mem::replace(&mut graph.nodes, fp32.clone());
        Ok(Versions { graph, fp32, fp16, int8, int8_report, fp16_report })
    }

    /// The graph with every layer in FP32.
    #[cfg(test)]
    fn fp32_graph(&self) -> Graph {
        Graph { nodes: self.fp32.clone(), ..self.graph.clone() }
    }

    /// Every layer in `p` where it has that version, else FP32.
    fn all(&self, p: Precision) -> Vec<Precision> {
        (0..self.fp32.len()).map(|i| if self.has(i, p) { p } else { Precision::Fp32 }).collect()
    }

    fn has(&self, i: usize, p: Precision) -> bool {
        match p {
            Precision::Fp32 => true,
            Precision::Fp16 => self.fp16_report[i].precision == "fp16",
            Precision::Int8 => self.int8_report[i].precision == "int8",
        }
    }

    /// The graph with layer `i` in `choice[i]` (unused constants dropped when `prune`).
    fn mix(&self, choice: &[Precision], prune: bool) -> Result<Graph> {
        let mut g = self.graph.clone();
        for (i, p) in choice.iter().enumerate() {
            g.nodes[i] = match p {
                Precision::Fp32 => self.fp32[i].clone(),
                Precision::Fp16 => self.fp16[i].clone(),
                Precision::Int8 => self.int8[i].clone(),
            };
        }
        if prune {
            passes::remove_dead_nodes(&mut g)?;
        }
        Ok(g)
    }
}

/// Runs graphs on the error samples and compares them with the FP32 outputs.
struct ErrorMeter<'a> {
    samples: &'a [Sample],
    reference: Vec<Vec<Vec<f32>>>,
    threads: usize,
}

impl<'a> ErrorMeter<'a> {
    fn new(fp32: &Graph, samples: &'a [Sample], threads: usize) -> Result<ErrorMeter<'a>> {
        if samples.is_empty() {
            invalid!("a `best` build needs at least one sample to measure errors on");
        }
        let mut meter = ErrorMeter { samples, reference: Vec::new(), threads };
        meter.reference = meter.outputs(fp32)?;
        Ok(meter)
    }

    /// Every float output of `graph` on every sample (outputs of other types are skipped).
    fn outputs(&self, graph: &Graph) -> Result<Vec<Vec<Vec<f32>>>> {
        let engine = Arc::new(Engine { graph: graph.clone(), target: Target::host_cpu(), build: BuildInfo::default() });
        let mut all = Vec::with_capacity(self.samples.len());
        let mut ctx: Option<(HashMap<String, Vec<usize>>, Context)> = None;
        for sample in self.samples {
            let shapes: HashMap<String, Vec<usize>> =
                sample.iter().map(|(k, t): (&String, &Tensor)| (k.clone(), t.shape().to_vec())).collect();
            let ctx = match &mut ctx {
                Some((s, c)) if *s == shapes => c,
                slot => {
                    &mut slot.insert((shapes.clone(), Context::with_threads(engine.clone(), &shapes, self.threads)?)).1
                }
            };
            for (name, t) in sample {
                ctx.set_input(name, t)?;
            }
            ctx.run()?;
            let mut outs = Vec::with_capacity(ctx.num_outputs());
            for o in 0..ctx.num_outputs() {
                outs.push(ctx.output(o)?.to_f32_vec().unwrap_or_default());
            }
            all.push(outs);
        }
        Ok(all)
    }

    /// The error of `graph` (see the module doc).
    fn error(&self, graph: &Graph) -> Result<f32> {
        let got = self.outputs(graph)?;
        let mut worst = 0f32;
        for (sample_got, sample_want) in got.iter().zip(&self.reference) {
            for (g, w) in sample_got.iter().zip(sample_want) {
                let range = w.iter().fold(0f32, |a, v| a.max(v.abs()));
                let diff = g.iter().zip(w).fold(0f32, |a, (g, w)| a.max((g - w).abs()));
                let e = if range > 0.0 { diff / range } else { diff };
                // NaN (a broken version) counts as infinitely wrong.
                worst = if e.is_nan() { f32::INFINITY } else { worst.max(e) };
            }
        }
        Ok(worst)
    }
}

/// Chooses each layer's precision in the optimized `graph` (see the module doc); returns the
/// graph with the choices, each layer's report, and the whole model's measured error.
pub(crate) fn choose(
    graph: Graph,
    shapes: Option<&HashMap<String, Vec<usize>>>,
    scales: &CalibrationCache,
    error_samples: &[Sample],
    options: &BestOptions<'_>,
) -> Result<(Graph, Vec<LayerPrecision>, f32)> {
    if options.max_error.is_nan() || options.max_error < 0.0 {
        invalid!("the error budget must be a number >= 0, got {}", options.max_error);
    }
    let meter = ErrorMeter::new(&graph, error_samples, options.threads)?;
    let v = Versions::new(graph, scales, options.weight_bits)?;
    let empty = HashMap::new();
    let shapes = shapes.unwrap_or(&empty);
    // Every layer in one precision (where it has that version), planned, for the timings.
    let mut timed = Vec::with_capacity(3);
    for p in [Precision::Fp32, Precision::Fp16, Precision::Int8] {
        let g = v.mix(&v.all(p), false)?;
        let plan = plan::plan(&g, shapes)?;
        timed.push((p, g, plan));
    }
    let candidates = (0..v.fp32.len()).filter(|&i| v.has(i, Precision::Fp16) || v.has(i, Precision::Int8)).count();
    let mut started = 0;
    let mut time = |p: Precision, i: usize| -> Result<f64> {
        // `choose_timed` times each candidate's FP32 version first.
        if p == Precision::Fp32 {
            started += 1;
            if let Some(progress) = options.progress {
                progress(started, candidates);
            }
        }
        let Some((_, g, plan)) = timed.iter().find(|t| t.0 == p) else { invalid!("no {} version", p.name()) };
        Ok(tune::time_node(g, plan, i, options.threads)? * 1e3)
    };
    choose_timed(&v, &meter, &mut time, options.max_error)
}

/// [`choose`] with the layer timings from `time(precision, layer)` in ms.
fn choose_timed(
    v: &Versions,
    meter: &ErrorMeter,
    time: &mut dyn FnMut(Precision, usize) -> Result<f64>,
    max_error: f32,
) -> Result<(Graph, Vec<LayerPrecision>, f32)> {
    let n = v.fp32.len();
    let mut choice = vec![Precision::Fp32; n];
    let mut trials: Vec<Option<Trial>> = vec![None; n];
    for i in 0..n {
        if !v.has(i, Precision::Fp16) && !v.has(i, Precision::Int8) {
            continue;
        }
        let mut t = Trial::default();
        for p in [Precision::Fp32, Precision::Fp16, Precision::Int8] {
            if v.has(i, p) {
                t.ms.push((p, time(p, i)?));
            }
        }
        let t32 = t.ms[0].1;
        let mut faster: Vec<(Precision, f64)> =
            t.ms.iter().copied().filter(|m| m.0 != Precision::Fp32 && m.1 < t32 * (1.0 - MIN_GAIN)).collect();
        faster.sort_by(|a, b| a.1.total_cmp(&b.1));
        for (p, _) in faster {
            let mut solo = vec![Precision::Fp32; n];
            solo[i] = p;
            let e = meter.error(&v.mix(&solo, false)?)?;
            t.error.push((p, e));
            if e <= max_error {
                choice[i] = p;
                break;
            }
        }
        trials[i] = Some(t);
    }

    // The mix as a whole; step back the layer with the largest own error while over budget.
    let mut total = meter.error(&v.mix(&choice, false)?)?;
    while total > max_error {
        let worst = (0..n)
            .filter(|&i| choice[i] != Precision::Fp32)
            .filter_map(|i| Some((i, trials[i].as_ref()?.error(choice[i])?)))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        let Some((i, _)) = worst else { break };
        let Some(t) = trials[i].as_mut() else { break };
        let from = choice[i];
        // FP16 is the step from INT8 when it is faster than FP32 and within budget alone
        // (measured now if the INT8 version was chosen without trying it).
        let fp16_faster =
            matches!((t.ms(Precision::Fp16), t.ms(Precision::Fp32)), (Some(a), Some(b)) if a < b * (1.0 - MIN_GAIN));
        let fp16_error = match t.error(Precision::Fp16) {
            Some(e) => Some(e),
            None if from == Precision::Int8 && fp16_faster => {
                let mut solo = vec![Precision::Fp32; n];
                solo[i] = Precision::Fp16;
                let e = meter.error(&v.mix(&solo, false)?)?;
                t.error.push((Precision::Fp16, e));
                Some(e)
            }
            None => None,
        };
        let fp16_ok = fp16_faster && fp16_error.is_some_and(|e| e <= max_error);
        choice[i] = if from == Precision::Int8 && fp16_ok { Precision::Fp16 } else { Precision::Fp32 };
        t.demoted =
            Some(format!("{} stepped back: the whole model's error {total:.2e} was over the budget", from.name()));
        total = meter.error(&v.mix(&choice, false)?)?;
    }

    let mut report = Vec::with_capacity(n);
    for i in 0..n {
        let node = match choice[i] {
            Precision::Fp32 => &v.fp32[i],
            Precision::Fp16 => &v.fp16[i],
            Precision::Int8 => &v.int8[i],
        };
        let reason = match &trials[i] {
            Some(t) => describe(t, choice[i], max_error),
            None if v.int8_report[i].reason == v.fp16_report[i].reason => {
                format!("no faster version: {}", v.int8_report[i].reason)
            }
            None => format!("no faster version: {}; {}", v.int8_report[i].reason, v.fp16_report[i].reason),
        };
        report.push(LayerPrecision::of(node, choice[i].name(), reason));
    }
    Ok((v.mix(&choice, true)?, report, total))
}

/// `int8 0.121 ms (error 3.1e-3) < fp16 0.20 ms (not tried) < fp32 0.19 ms`, and why.
fn describe(t: &Trial, chosen: Precision, budget: f32) -> String {
    let mut ms = t.ms.clone();
    ms.sort_by(|a, b| a.1.total_cmp(&b.1));
    let parts: Vec<String> = ms
        .iter()
        .map(|&(p, m)| match t.error(p) {
            Some(e) if e > budget => format!("{} {m:.3} ms (error {e:.1e} over {budget:.1e})", p.name()),
            Some(e) => format!("{} {m:.3} ms (error {e:.1e})", p.name()),
            None => format!("{} {m:.3} ms", p.name()),
        })
        .collect();
    let head = match &t.demoted {
        Some(why) => format!("{why}; "),
        None if chosen == Precision::Fp32 => {
            format!("nothing {:.0}% faster within budget; ", MIN_GAIN * 100.0)
        }
        None => "fastest within budget; ".to_string(),
    };
    format!("{head}{}", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Int8Options, Int8Scales};
    use crate::passes::quantize_int8::tests::{SHAPE, net, samples};
    use crate::quant::Method;
    use crate::tensor::DType;

    /// The optimized `net` (`quantize_int8`'s test net: conv1, a depthwise conv, pw, skip:
    /// three candidates), its versions and four error samples.
    fn setup() -> (Versions, Vec<Sample>) {
        setup_of(net)
    }

    fn setup_of(net: fn() -> Graph) -> (Versions, Vec<Sample>) {
        let all = Int8Options { only_faster: false, threads: 1, weight_bits: 8 };
        let calibrate = Int8Scales::Calibrate {
            samples: &mut samples(1, 6),
            method: Method::MinMax,
            threads: 1,
            progress: &mut |_| {},
        };
        let (_, cache) = Engine::build_int8(net(), None, calibrate, &all).unwrap();
        let graph = Engine::build(net(), None).unwrap().graph;
        let error_samples: Vec<Sample> = samples(3, 4).map(|s| s.unwrap()).collect();
        (Versions::new(graph, &cache, 8).unwrap(), error_samples)
    }

    /// Fake timings: `order` from fastest to slowest, 1 ms apart.
    fn timer(order: [Precision; 3]) -> impl FnMut(Precision, usize) -> Result<f64> {
        move |p, _| Ok(order.iter().position(|&o| o == p).unwrap_or(9) as f64 + 1.0)
    }

    fn count(layers: &[LayerPrecision], p: &str) -> usize {
        layers.iter().filter(|l| l.precision == p).count()
    }

    #[test]
    fn each_layer_takes_the_fastest_version_within_budget() {
        use Precision::*;
        let (v, s) = setup();
        let meter = ErrorMeter::new(&v.fp32_graph(), &s, 1).unwrap();
        // A loose budget: the fastest version everywhere; the error is the mix's own.
        let (g, layers, err) = choose_timed(&v, &meter, &mut timer([Int8, Fp16, Fp32]), 1.0).unwrap();
        assert_eq!(layers.len(), v.fp32.len());
        assert_eq!(count(&layers, "int8"), 3, "{layers:?}");
        assert!(layers.iter().filter(|l| l.precision == "int8").all(|l| l.reason.starts_with("fastest within budget")));
        assert!(err > 0.0 && err == meter.error(&g).unwrap(), "{err}");
        assert!(!g.constants.values().any(|t| t.dtype() == DType::F16), "unused fp16 weights were pruned");
        let dw = layers.iter().find(|l| l.node == "dw").unwrap();
        assert_eq!(dw.reason, "no faster version: depthwise: the direct f32 kernel serves it");

        let (_, layers, _) = choose_timed(&v, &meter, &mut timer([Fp16, Int8, Fp32]), 1.0).unwrap();
        assert_eq!(count(&layers, "fp16"), 3, "{layers:?}");
        // Slower than FP32 is never chosen, however accurate.
        let (_, layers, err) = choose_timed(&v, &meter, &mut timer([Fp32, Fp16, Int8]), 1.0).unwrap();
        assert_eq!((count(&layers, "fp32"), err), (layers.len(), 0.0), "{layers:?}");
        // No budget: FP32 everywhere, exactly.
        let (_, layers, err) = choose_timed(&v, &meter, &mut timer([Int8, Fp16, Fp32]), 0.0).unwrap();
        assert_eq!((count(&layers, "fp32"), err), (layers.len(), 0.0), "{layers:?}");
        assert!(layers.iter().any(|l| l.reason.contains("over 0.0e0")), "{layers:?}");
    }

    /// x → four 3x3 convolutions (8 channels) + Relu in a chain: their errors add up.
    fn chain() -> Graph {
        use crate::graph::Dim;
        use crate::ops::{Attr, Attrs};
        let mut rng = crate::ops::nn::test_util::Rng::new(31);
        let mut g = Graph { opset: 13, ..Graph::default() };
        let x = g.add_value("x", Some(DType::F32), Some(SHAPE.iter().map(|&d| Dim::Fixed(d)).collect()));
        g.inputs.push(x);
        let pad = Attrs::new().with("pads", Attr::Ints(vec![1; 4]));
        let mut cur = x;
        for i in 0..4 {
            let w = g.add_constant(&format!("w{i}"), rng.tensor(&[8, if i == 0 { SHAPE[1] } else { 8 }, 3, 3]));
            let (y, r) = (g.add_value(&format!("y{i}"), None, None), g.add_value(&format!("r{i}"), None, None));
            g.add_node(&format!("conv{i}"), "Conv", pad.clone(), vec![Some(cur), Some(w)], vec![Some(y)]).unwrap();
            g.add_node(&format!("relu{i}"), "Relu", Attrs::new(), vec![Some(y)], vec![Some(r)]).unwrap();
            cur = r;
        }
        g.outputs.push(cur);
        g
    }

    /// A budget each INT8 layer meets alone but the all-INT8 mix does not: layers step back
    /// (INT8 to FP16 here) until the whole model is within budget.
    #[test]
    fn a_mix_over_budget_steps_layers_back_until_it_fits() {
        use Precision::*;
        let (v, s) = setup_of(chain);
        let meter = ErrorMeter::new(&v.fp32_graph(), &s, 1).unwrap();
        let n = v.fp32.len();
        let solo = |i: usize| {
            let mut c = vec![Fp32; n];
            c[i] = Int8;
            meter.error(&v.mix(&c, false).unwrap()).unwrap()
        };
        let worst_solo = (0..n).filter(|&i| v.has(i, Int8)).map(solo).fold(0f32, f32::max);
        let all_int8 = meter.error(&v.mix(&v.all(Int8), false).unwrap()).unwrap();
        let budget = worst_solo * 1.001;
        assert!(all_int8 > budget, "setup: the mix ({all_int8}) must exceed every layer alone ({worst_solo})");
        let (_, layers, err) = choose_timed(&v, &meter, &mut timer([Int8, Fp16, Fp32]), budget).unwrap();
        assert!(err <= budget, "{err} > {budget}");
        let stepped: Vec<_> = layers.iter().filter(|l| l.reason.starts_with("int8 stepped back")).collect();
        assert!(!stepped.is_empty(), "{layers:?}");
        assert!(stepped.iter().all(|l| l.precision == "fp16"), "FP16 is within budget alone: {stepped:?}");
        assert!(count(&layers, "int8") >= 1, "only what the budget needs steps back: {layers:?}");
    }

    #[test]
    fn build_best_runs_reports_and_round_trips() {
        let last = std::cell::Cell::new((0, 0));
        let progress = |k, n| {
            assert_eq!(k, last.get().0 + 1, "one call per candidate layer, in order");
            last.set((k, n));
        };
        let options = BestOptions { max_error: 0.05, threads: 1, weight_bits: 8, progress: Some(&progress) };
        let error_samples: Vec<Sample> = samples(3, 2).map(|s| s.unwrap()).collect();
        let calibrate = Int8Scales::Calibrate {
            samples: &mut samples(1, 4),
            method: Method::MinMax,
            threads: 1,
            progress: &mut |_| {},
        };
        let (engine, _) = Engine::build_best(net(), None, calibrate, &error_samples, &options).unwrap();
        let err = engine.build.measured_error.unwrap();
        assert!(err <= 0.05, "{err}");
        // Every candidate (a layer with an INT8 or FP16 version) was timed and announced.
        let candidates = engine.build.layers.iter().filter(|l| !l.reason.starts_with("no faster version")).count();
        assert_eq!(last.get(), (candidates, candidates));
        assert!(candidates >= 1);
        assert_eq!(engine.build.precision, "best");
        assert_eq!(engine.build.layers.len(), engine.graph.nodes.len());
        let loaded = Engine::from_bytes(&engine.to_bytes().unwrap()).unwrap();
        assert_eq!(loaded.build.measured_error, Some(err));
        let x = crate::ops::nn::test_util::Rng::new(4).tensor(&SHAPE);
        let shapes = HashMap::from([("x".to_string(), SHAPE.to_vec())]);
        let mut ctx = Context::with_threads(Arc::new(loaded), &shapes, 1).unwrap();
        ctx.set_input("x", &x).unwrap();
        ctx.run().unwrap();
        // Errors are clear: no samples, or a budget that is not a number.
        let no = BestOptions { max_error: f32::NAN, progress: None, ..options };
        let cache = Int8Scales::Cache(CalibrationCache { method: Method::MinMax, scales: Default::default() });
        let e = Engine::build_best(net(), None, cache, &error_samples, &no).unwrap_err();
        assert!(e.to_string().contains("error budget"), "{e}");
        let cache = Int8Scales::Cache(CalibrationCache { method: Method::MinMax, scales: Default::default() });
        let e = Engine::build_best(net(), None, cache, &[], &options).unwrap_err();
        assert!(e.to_string().contains("at least one sample"), "{e}");
    }
}
