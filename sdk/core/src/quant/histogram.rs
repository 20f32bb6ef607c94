//! A histogram of absolute values over `[0, range)` that grows its range as larger values
//! arrive, without re-reading earlier data: the range doubles and adjacent bin pairs merge,
//! so every count stays exact (a value's new bin is its old bin / 2).

/// Bins of the calibration histograms (TensorRT's entropy calibrator uses 2048).
pub const DEFAULT_BINS: usize = 2048;

/// A histogram of `|x|` with `bins` equal bins over `[0, range)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Histogram {
    counts: Vec<u64>,
    range: f32,
}

impl Histogram {
    /// An empty histogram with `bins` bins (an even number, at least 2) and no range yet:
    /// the first batch with a non-zero value sets it just above its largest `|x|`.
    pub fn new(bins: usize) -> Histogram {
        assert!(bins >= 2 && bins.is_multiple_of(2), "histogram bins must be even and >= 2, got {bins}");
        Histogram { counts: vec![0; bins], range: 0.0 }
    }

    /// A histogram with given counts over `[0, range)` (tests, and caches of histograms).
    pub fn from_counts(counts: Vec<u64>, range: f32) -> Histogram {
        assert!(counts.len() >= 2 && counts.len().is_multiple_of(2), "histogram bins must be even and >= 2");
        Histogram { counts, range }
    }

    /// The counts, bin 0 first.
    pub fn counts(&self) -> &[u64] {
        &self.counts
    }

    /// The upper end of the range (0 before the first non-zero value).
    pub fn range(&self) -> f32 {
        self.range
    }

    /// Width of one bin.
    pub fn bin_width(&self) -> f32 {
        self.range / self.counts.len() as f32
    }

    /// Number of values counted.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Adds the absolute values of `xs` (NaNs are skipped), growing the range first if the
    /// largest of them does not fit.
    pub fn add(&mut self, xs: &[f32]) {
        let amax = xs.iter().filter(|v| !v.is_nan()).fold(0f32, |m, v| m.max(v.abs()));
        if !amax.is_finite() {
            // Infinities can't be binned by any range: count them in the last bin.
            let inf = xs.iter().filter(|v| v.is_infinite()).count() as u64;
            let finite: Vec<f32> = xs.iter().copied().filter(|v| v.is_finite()).collect();
            self.add(&finite);
            if let Some(last) = self.counts.last_mut() {
                *last += inf;
            }
            return;
        }
        if self.range == 0.0 {
            if amax == 0.0 {
                // All zeros: they belong to bin 0 whatever the range becomes.
                self.counts[0] += xs.iter().filter(|v| !v.is_nan()).count() as u64;
                return;
            }
            // Just above the largest value, so that every value is strictly below the range
            // (a value on the upper edge would change bins when the range doubles).
            self.range = amax.next_up();
        }
        while amax >= self.range {
            self.double();
        }
        let bins = self.counts.len();
        let per_unit = bins as f32 / self.range;
        for &v in xs {
            if v.is_nan() {
                continue;
            }
            let b = ((v.abs() * per_unit) as usize).min(bins - 1);
            self.counts[b] += 1;
        }
    }

    /// Doubles the range: bins 2i and 2i+1 merge into bin i, the upper half empties.
    fn double(&mut self) {
        let half = self.counts.len() / 2;
        for i in 0..half {
            self.counts[i] = self.counts[2 * i] + self.counts[2 * i + 1];
        }
        self.counts[half..].fill(0);
        self.range *= 2.0;
    }

    /// The smallest bin edge `t` such that at least `fraction` of the values are below it
    /// (`fraction` in (0, 1]); 0 for an empty histogram.
    pub fn quantile_edge(&self, fraction: f64) -> f32 {
        let total = self.total();
        if total == 0 {
            return 0.0;
        }
        let need = (fraction * total as f64).ceil().max(1.0) as u64;
        let mut acc = 0u64;
        for (i, &c) in self.counts.iter().enumerate() {
            acc += c;
            if acc >= need {
                return (i + 1) as f32 * self.bin_width();
            }
        }
        self.range
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_absolute_values_and_grows_exactly() {
        let mut h = Histogram::new(8);
        h.add(&[0.1, -0.6, 1.2, 3.9, -4.0]);
        // Range just above 4, bins ~0.5 wide: 0.1 -> 0, 0.6 -> 1, 1.2 -> 2, 3.9 and 4 -> 7.
        assert_eq!(h.range(), 4f32.next_up());
        assert_eq!(h.counts(), &[1, 1, 1, 0, 0, 0, 0, 2][..]);
        // 10 needs two doublings (range ~16): counts merge pairwise twice, 10 -> bin 4.
        h.add(&[10.0, f32::NAN]);
        assert_eq!(h.range(), 4f32.next_up() * 4.0);
        assert_eq!(h.counts(), &[3, 2, 0, 0, 1, 0, 0, 0][..]);
        assert_eq!(h.total(), 6);
        // The same values binned directly at the final range give the same counts.
        let mut d = Histogram::from_counts(vec![0; 8], h.range());
        d.add(&[0.1, -0.6, 1.2, 3.9, -4.0, 10.0]);
        assert_eq!(d.counts(), h.counts());
    }

    #[test]
    fn zeros_before_any_range_and_infinities() {
        let mut h = Histogram::new(4);
        h.add(&[0.0, 0.0]);
        assert_eq!((h.range(), h.total()), (0.0, 2));
        h.add(&[2.0, f32::INFINITY]);
        assert_eq!(h.range(), 2f32.next_up());
        assert_eq!(h.counts(), &[2, 0, 0, 2][..]);
    }

    #[test]
    fn quantile_edges() {
        let h = Histogram::from_counts(vec![5, 3, 1, 1], 4.0);
        assert_eq!(h.quantile_edge(0.5), 1.0); // 5 of 10 below 1
        assert_eq!(h.quantile_edge(0.51), 2.0);
        assert_eq!(h.quantile_edge(0.9), 3.0);
        assert_eq!(h.quantile_edge(1.0), 4.0);
        assert_eq!(Histogram::new(4).quantile_edge(0.5), 0.0);
    }
}
