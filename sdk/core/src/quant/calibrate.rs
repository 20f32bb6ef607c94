//! Calibration: per-tensor statistics collected over user data ([`Collector`]) and the
//! methods that turn them into a symmetric int8 scale (`scale = threshold / 127`):
//!
//! * **min-max**: the threshold is the largest `|x|` seen;
//! * **percentile**: the smallest histogram edge below which `p`% of the `|x|` lie;
//! * **entropy**: TensorRT's entropy calibrator (Migacz, "8-bit Inference with TensorRT",
//!   GTC 2017): over a 2048-bin histogram of `|x|`, every candidate threshold of `i` bins
//!   (`i` from 128 up) is scored by the KL divergence between the clipped distribution `P`
//!   (outliers folded into its last bin) and `Q`, `P` quantized to 128 levels and expanded
//!   back (each level's count spread evenly over its non-empty bins); the threshold with the
//!   least divergence wins (the largest among ties).

use std::collections::BTreeMap;

use super::histogram::{DEFAULT_BINS, Histogram};
use crate::error::Result;
use crate::invalid;

/// Levels on one side of a symmetric int8 grid (`[-127, 127]`).
pub const INT8_LEVELS: usize = 128;

/// A calibration method.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Method {
    /// Threshold = largest `|x|`.
    MinMax,
    /// Threshold = the given percentile (in (0, 100]) of `|x|`.
    Percentile(f64),
    /// Threshold minimizing the KL divergence (TensorRT's entropy calibrator).
    Entropy,
}

impl Method {
    /// The method's name as the calibration cache and the CLI write it: `minmax`,
    /// `percentile:99.99`, `entropy`.
    pub fn name(&self) -> String {
        match self {
            Method::MinMax => "minmax".into(),
            Method::Percentile(p) => format!("percentile:{p}"),
            Method::Entropy => "entropy".into(),
        }
    }

    /// Parses [`Method::name`]'s form (`percentile` alone means 99.99).
    pub fn parse(s: &str) -> Result<Method> {
        Ok(match s {
            "minmax" | "min-max" => Method::MinMax,
            "entropy" | "kl" => Method::Entropy,
            "percentile" => Method::Percentile(99.99),
            _ => match s.strip_prefix("percentile:") {
                Some(p) => match p.parse::<f64>() {
                    Ok(p) if p > 0.0 && p <= 100.0 => Method::Percentile(p),
                    _ => invalid!("percentile `{p}` must be a number in (0, 100]"),
                },
                None => invalid!("unknown calibration method `{s}` (minmax, entropy, percentile[:P])"),
            },
        })
    }
}

/// Statistics of one tensor over the calibration data: running min and max and a histogram
/// of `|x|` that grows its range as needed.
#[derive(Clone, Debug, PartialEq)]
pub struct Collector {
    /// Smallest value seen (+inf before any).
    pub min: f32,
    /// Largest value seen (-inf before any).
    pub max: f32,
    /// Histogram of absolute values.
    pub hist: Histogram,
}

impl Default for Collector {
    fn default() -> Self {
        Collector::new(DEFAULT_BINS)
    }
}

impl Collector {
    /// An empty collector whose histogram has `bins` bins.
    pub fn new(bins: usize) -> Collector {
        Collector { min: f32::INFINITY, max: f32::NEG_INFINITY, hist: Histogram::new(bins) }
    }

    /// Adds a batch of values (NaNs are ignored).
    pub fn observe(&mut self, xs: &[f32]) {
        for &v in xs {
            if !v.is_nan() {
                self.min = self.min.min(v);
                self.max = self.max.max(v);
            }
        }
        self.hist.add(xs);
    }

    /// The largest absolute value seen (0 before any).
    pub fn amax(&self) -> f32 {
        if self.min > self.max { 0.0 } else { self.min.abs().max(self.max.abs()) }
    }

    /// The clipping threshold the method chooses.
    pub fn threshold(&self, method: Method) -> f32 {
        match method {
            Method::MinMax => self.amax(),
            // A histogram edge may lie above the largest value: never clip beyond it.
            Method::Percentile(p) => self.hist.quantile_edge(p / 100.0).min(self.amax()),
            Method::Entropy => entropy_threshold(&self.hist).min(self.amax()),
        }
    }

    /// The symmetric int8 scale the method chooses (`threshold / 127`). A tensor that was
    /// all zeros gets scale 1 (any scale represents it exactly).
    pub fn scale(&self, method: Method) -> f32 {
        let t = self.threshold(method);
        if t > 0.0 && t.is_finite() { t / 127.0 } else { 1.0 }
    }
}

/// The entropy calibrator's threshold for a histogram of `|x|` (see the module docs): the
/// upper edge of the last kept bin. Histograms with at most 128 bins keep them all.
pub fn entropy_threshold(hist: &Histogram) -> f32 {
    let bins = hist.counts();
    let n = bins.len();
    if n <= INT8_LEVELS || hist.total() == 0 {
        return hist.range();
    }
    let mut best = (f64::INFINITY, n);
    // Scratch reused across candidates (calibration runs offline: allocation is fine here).
    let mut level_count = [0f64; INT8_LEVELS];
    let mut level_nonzero = [0usize; INT8_LEVELS];
    let mut outliers: u64 = bins[INT8_LEVELS..].iter().sum();
    for i in INT8_LEVELS..=n {
        if i > INT8_LEVELS {
            outliers -= bins[i - 1];
        }
        // Q: source bin j < i belongs to level floor(j * 128 / i).
        level_count.fill(0.0);
        level_nonzero.fill(0);
        for (j, &c) in bins[..i].iter().enumerate() {
            if c > 0 {
                let l = j * INT8_LEVELS / i;
                level_count[l] += c as f64;
                level_nonzero[l] += 1;
            }
        }
        let p_total: f64 = bins[..i].iter().map(|&c| c as f64).sum::<f64>() + outliers as f64;
        let q_total: f64 = level_count.iter().sum();
        let mut kl = 0f64;
        for (j, &c) in bins[..i].iter().enumerate() {
            let p = c as f64 + if j == i - 1 { outliers as f64 } else { 0.0 };
            if p == 0.0 {
                continue;
            }
            let l = j * INT8_LEVELS / i;
            let q = if c > 0 { level_count[l] / level_nonzero[l] as f64 } else { 0.0 };
            if q == 0.0 {
                kl = f64::INFINITY;
                break;
            }
            let (pn, qn) = (p / p_total, q / q_total);
            kl += pn * (pn / qn).ln();
        }
        // `<=`: among equal divergences the largest threshold wins.
        if kl <= best.0 {
            best = (kl, i);
        }
    }
    best.1 as f32 * hist.bin_width()
}

/// Collectors for every calibrated tensor, by name.
#[derive(Clone, Debug, Default)]
pub struct Calibrator {
    /// The collectors.
    pub tensors: BTreeMap<String, Collector>,
}

impl Calibrator {
    /// An empty calibrator.
    pub fn new() -> Calibrator {
        Calibrator::default()
    }

    /// Adds one batch of values of tensor `name`.
    pub fn observe(&mut self, name: &str, xs: &[f32]) {
        self.tensors.entry(name.to_string()).or_default().observe(xs);
    }

    /// Every tensor's scale by `method`, as a cache.
    pub fn cache(&self, method: Method) -> super::cache::CalibrationCache {
        super::cache::CalibrationCache {
            method,
            scales: self.tensors.iter().map(|(k, c)| (k.clone(), c.scale(method))).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny deterministic generator.
    struct Rng(u64);
    impl Rng {
        fn unit(&mut self) -> f64 {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((self.0 >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        }
        fn gauss(&mut self) -> f32 {
            let (u, v) = (self.unit(), self.unit());
            ((-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()) as f32
        }
    }

    #[test]
    fn uniform_grid_all_methods_near_the_max() {
        // 20001 values evenly spaced on [-1, 1]: nothing to clip.
        let xs: Vec<f32> = (0..=20000).map(|i| i as f32 / 10000.0 - 1.0).collect();
        let mut c = Collector::default();
        c.observe(&xs);
        assert_eq!((c.min, c.max), (-1.0, 1.0));
        assert_eq!(c.scale(Method::MinMax), 1.0 / 127.0);
        // 100% of |x| lie below the last edge, which the max clips to.
        assert_eq!(c.threshold(Method::Percentile(100.0)), 1.0);
        // 99% of the 20001 values: |x| < 0.99 holds 19801; the 99% edge is the first at or
        // above 0.99 (edges are k / 2048 of a range just above 1).
        let t = c.threshold(Method::Percentile(99.0));
        assert!((t - 0.99).abs() <= 1.0 / 2048.0 + 1e-6, "{t}");
        // A flat distribution loses most by clipping: entropy keeps (nearly) all of it.
        let e = c.threshold(Method::Entropy);
        assert!(e >= 0.95, "{e}");
    }

    #[test]
    fn one_outlier_separates_min_max_from_percentile() {
        // 9999 values on [-1, 1] and one at 100.
        let mut xs: Vec<f32> = (0..9999).map(|i| i as f32 / 4999.0 - 1.0).collect();
        xs.push(100.0);
        let mut c = Collector::default();
        c.observe(&xs);
        assert_eq!(c.scale(Method::MinMax), 100.0 / 127.0);
        // 99.99% of 10000 = 9999 values: all of [-1, 1], in bins up to floor(1 * 2048 / r)
        // with r just above 100: bin 20, upper edge 21 * r / 2048.
        let r = 100f32.next_up();
        let want = 21.0 * (r / 2048.0);
        assert_eq!(c.threshold(Method::Percentile(99.99)), want);
        assert!((c.scale(Method::Percentile(99.99)) - 1.0254 / 127.0).abs() < 1e-6);
        // The outlier alone pushes min-max 97x above the percentile.
        assert!(c.scale(Method::MinMax) / c.scale(Method::Percentile(99.99)) > 90.0);
        // Observed in two batches: the first sets the range just above 1, the outlier grows it
        // by 7 doublings to ~128. Edges are 1/16 apart, and |x| <= 1 < 16/16 * (range / 128)
        // puts all 9999 values in bins 0..=15: the edge is 16 bins.
        let mut g = Collector::default();
        g.observe(&xs[..9999]);
        g.observe(&xs[9999..]);
        assert_eq!(g.hist.total(), 10000);
        let r2 = 1f32.next_up() * 128.0;
        assert_eq!(g.hist.range(), r2);
        assert_eq!(g.threshold(Method::Percentile(99.99)), 16.0 * (r2 / 2048.0));
    }

    #[test]
    fn gaussian_entropy_clips_below_the_max() {
        let mut rng = Rng(42);
        let xs: Vec<f32> = (0..200_000).map(|_| rng.gauss()).collect();
        let mut c = Collector::default();
        c.observe(&xs);
        let amax = c.amax();
        let e = c.threshold(Method::Entropy);
        // 200k normal samples reach ~4.5 sigma; KL clips well inside, at a few sigma.
        assert!(amax > 4.0, "{amax}");
        assert!(e < 0.9 * amax && e > 2.0, "entropy threshold {e}, max {amax}");
        let p = c.threshold(Method::Percentile(99.99));
        assert!(p > 3.5 && p <= amax, "{p}");
    }

    /// On a fixed histogram the choice matches an independent numpy implementation of the
    /// same algorithm (NVIDIA pytorch-quantization's `_compute_amax_entropy`, without its
    /// bin-0 tweak): `entropy_reference.py` beside this file prints 1438 for this histogram.
    #[test]
    fn entropy_matches_reference_on_a_half_gaussian_histogram() {
        let counts: Vec<u64> =
            (0..2048).map(|j| (1e6 * (-((j as f64 + 0.5) / 300.0).powi(2) / 2.0).exp()).round() as u64).collect();
        let h = Histogram::from_counts(counts, 2048.0);
        assert_eq!(entropy_threshold(&h), ENTROPY_REFERENCE_BIN as f32);
    }

    /// See `entropy_matches_reference_on_a_half_gaussian_histogram`.
    const ENTROPY_REFERENCE_BIN: usize = 1438;

    #[test]
    fn entropy_keeps_everything_when_nothing_is_lost() {
        // Mass only in the first 128 bins (plus the max in the last one): every candidate
        // reproduces it exactly somewhere, and the largest threshold with KL 0 is the range.
        let mut counts = vec![0u64; 2048];
        counts[..128].fill(1000);
        counts[2047] = 1;
        let h = Histogram::from_counts(counts, 2048.0);
        assert_eq!(entropy_threshold(&h), 2048.0);
    }

    #[test]
    fn method_names_round_trip_and_empty_collectors() {
        for m in [Method::MinMax, Method::Entropy, Method::Percentile(99.99), Method::Percentile(100.0)] {
            assert_eq!(Method::parse(&m.name()).unwrap(), m);
        }
        assert!(Method::parse("percentile:0").is_err());
        assert!(Method::parse("mse").unwrap_err().to_string().contains("minmax, entropy"));
        let c = Collector::default();
        assert_eq!(c.scale(Method::Entropy), 1.0);
        let mut z = Collector::default();
        z.observe(&[0.0; 10]);
        assert_eq!((z.scale(Method::MinMax), z.scale(Method::Percentile(99.0))), (1.0, 1.0));
    }
}
