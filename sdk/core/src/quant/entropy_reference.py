#!/usr/bin/env python3
"""Independent reference for the entropy calibrator test in calibrate.rs.

A numpy transcription of NVIDIA pytorch-quantization's `_compute_amax_entropy` (the
TensorRT entropy calibrator algorithm; without its `bins[0] = bins[1]` tweak), run on the
fixed half-Gaussian histogram of `entropy_matches_reference_on_a_half_gaussian_histogram`.
Prints the chosen number of bins i (the threshold is i bin widths), which the Rust test pins.
Usage: entropy_reference.py   (needs numpy only)
"""
import numpy as np


def kl(p, q):
    p = p / p.sum()
    q = q / q.sum()
    m = p > 0
    with np.errstate(divide="ignore"):
        return float(np.sum(p[m] * np.log(p[m] / q[m])))


def entropy_bins(bins, nbins=128, start=128):
    divergences = []
    for i in range(start, len(bins) + 1):
        space = np.linspace(0, i, num=nbins + 1)
        digitized = np.digitize(range(i), space) - 1
        digitized[bins[:i] == 0] = -1
        counts = np.zeros(nbins)
        for idx, d in enumerate(digitized):
            if d != -1:
                counts[d] += bins[idx]
        nonzero = np.zeros(nbins)
        for d in digitized:
            if d != -1:
                nonzero[d] += 1
        new_density = np.zeros(i)
        for idx, d in enumerate(digitized):
            if d != -1:
                new_density[idx] = counts[d] / nonzero[d]
        ref = np.array(bins[:i], dtype=np.float64)
        ref[-1] += bins[i:].sum()
        divergences.append(kl(ref, new_density))
    d = np.array(divergences)
    last_argmin = len(d) - 1 - int(np.argmin(d[::-1]))
    return start + last_argmin


if __name__ == "__main__":
    j = np.arange(2048)
    counts = np.round(1e6 * np.exp(-(((j + 0.5) / 300.0) ** 2) / 2.0)).astype(np.int64)
    print(entropy_bins(counts))
