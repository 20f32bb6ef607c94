//! Turning float weights, biases and calibrated scales into what the INT8 kernels take:
//! symmetric per-output-channel int8 weights, int32 biases in accumulator units, and the
//! per-channel requantization multipliers (DESIGN.md: weights symmetric per channel,
//! activations per tensor).

/// Symmetric per-channel quantization of `w`, laid out as `channels` consecutive rows:
/// `scale[c] = max|w[c]| / 127` (1 for an all-zero row) and
/// `q = clamp(round_half_even(w / scale[c]), -127, 127)`. Returns (values, scales).
pub fn quantize_per_channel(w: &[f32], channels: usize) -> (Vec<i8>, Vec<f32>) {
    quantize_per_channel_bits(w, channels, 8)
}

/// As [`quantize_per_channel`] with `bits` of precision (2..=8): `qmax = 2^(bits-1) - 1`
/// replaces 127 (7 bits: [-63, 63], for the AVX2 `vpmaddubsw` convolution kernel).
pub fn quantize_per_channel_bits(w: &[f32], channels: usize, bits: u32) -> (Vec<i8>, Vec<f32>) {
    let qmax = ((1i32 << (bits.clamp(2, 8) - 1)) - 1) as f32;
    if channels == 0 {
        return (Vec::new(), Vec::new());
    }
    let per = w.len() / channels;
    let mut q = Vec::with_capacity(w.len());
    let mut scales = Vec::with_capacity(channels);
    for row in w.chunks(per.max(1)).take(channels) {
        let amax = row.iter().fold(0f32, |m, v| m.max(v.abs()));
        let s = if amax > 0.0 && amax.is_finite() { amax / qmax } else { 1.0 };
        scales.push(s);
        q.extend(row.iter().map(|&v| (v / s).round_ties_even().clamp(-qmax, qmax) as i8));
    }
    (q, scales)
}

/// A float bias as int32 in accumulator units: `round_half_even(b[c] / (a_scale * w_scale[c]))`,
/// saturated to int32.
pub fn quantize_bias(b: &[f32], a_scale: f32, w_scales: &[f32]) -> Vec<i32> {
    b.iter()
        .zip(w_scales)
        .map(|(&v, &ws)| {
            ((v as f64 / (a_scale as f64 * ws as f64)).round_ties_even()).clamp(i32::MIN as f64, i32::MAX as f64) as i32
        })
        .collect()
}

/// The requantization multipliers `a_scale * w_scale[c] / y_scale` (pass `y_scale = 1` for a
/// dequantized float32 output).
pub fn multipliers(a_scale: f32, w_scales: &[f32], y_scale: f32) -> Vec<f32> {
    w_scales.iter().map(|&ws| ((a_scale as f64 * ws as f64) / y_scale as f64) as f32).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::gemm_i8::{I8Kernel, I8Out, QAct, Requant, gemm_u8s8, pack_b};
    use crate::quant::{Collector, Method};

    #[test]
    fn per_channel_weights_hand_checked() {
        let w = [0.5, -1.0, 0.25, 0.0, 0.0, 0.0, 2.54, -0.01, 1.27];
        let (q, s) = quantize_per_channel(&w, 3);
        assert_eq!(s, vec![1.0 / 127.0, 1.0, 2.54 / 127.0]);
        // 0.5 * 127 = 63.5 -> 64 (even); 0.25 * 127 = 31.75 -> 32; 1.27 / 0.02 = 63.5 -> 64.
        assert_eq!(q, vec![64, -127, 32, 0, 0, 0, 127, 0, 64]);
        // Every value within half a step of the original.
        for (i, (&qv, &wv)) in q.iter().zip(&w).enumerate() {
            assert!((qv as f32 * s[i / 3] - wv).abs() <= s[i / 3] / 2.0 + 1e-7, "{i}");
        }
        // 7 bits: scale max / 63; 0.5 / (1/63) is 31.499998 in f32 (1/63 is inexact) -> 31;
        // 0.25 / (1/63) = 15.75 -> 16.
        let (q7, s7) = quantize_per_channel_bits(&w[..3], 1, 7);
        assert_eq!((q7, s7), (vec![31, -63, 16], vec![1.0 / 63.0]));
        assert_eq!(quantize_bias(&[1.0, -0.5], 0.5, &[0.25, 1.0]), vec![8, -1]); // -1.0 stays -1
        assert_eq!(multipliers(0.5, &[0.25, 1.0], 2.0), vec![0.0625, 0.25]);
    }

    /// The pieces together: calibrate activations (min-max), quantize them to uint8 with
    /// zero point 128, quantize weights per channel, run the INT8 GEMM with a float32
    /// output, and land within a few quantization steps of the float product.
    #[test]
    fn int8_product_tracks_the_float_product() {
        let mut rng = crate::ops::nn::test_util::Rng::new(5);
        let (m, n, k) = (13, 7, 64);
        let a: Vec<f32> = (0..m * k).map(|_| rng.sym() * 3.0).collect();
        let w: Vec<f32> = (0..n * k).map(|_| rng.sym() * (1.0 + rng.sym().abs())).collect(); // [n][k]
        let bias: Vec<f32> = (0..n).map(|_| rng.sym()).collect();
        let mut c = Collector::default();
        c.observe(&a);
        let a_scale = c.scale(Method::MinMax);
        let aq: Vec<u8> =
            a.iter().map(|&v| ((v / a_scale).round_ties_even() + 128.0).clamp(0.0, 255.0) as u8).collect();
        let (wq, ws) = quantize_per_channel(&w, n);
        // The GEMM wants B as [k][n].
        let bt: Vec<i8> = (0..k * n).map(|i| wq[(i % n) * k + i / n]).collect();
        let bq = quantize_bias(&bias, a_scale, &ws);
        let mult = multipliers(a_scale, &ws, 1.0);
        let bp = pack_b(I8Kernel::for_isa(crate::cpu::isa::active()), &bt, n, k, n);
        let mut y = vec![0f32; m * n];
        let ep = Requant { a_zero: 128, bias: Some(&bq), mult: &mult, y_scale: 1.0, y_zero: 0, act: QAct::None };
        gemm_u8s8(None, m, &aq, k, &bp, I8Out::F32(&mut y), n, &ep);
        for i in 0..m {
            for j in 0..n {
                let exact: f64 =
                    (0..k).map(|p| a[i * k + p] as f64 * w[j * k + p] as f64).sum::<f64>() + bias[j] as f64;
                // Error budget: half a step of each operand per product, summed over K.
                let budget: f64 = (0..k)
                    .map(|p| (a[i * k + p].abs() * ws[j] + w[j * k + p].abs() * a_scale) as f64 / 2.0)
                    .sum::<f64>()
                    + (a_scale * ws[j]) as f64;
                let err = (y[i * n + j] as f64 - exact).abs();
                assert!(err <= budget, "({i},{j}): {} vs {exact} (error {err}, budget {budget})", y[i * n + j]);
            }
        }
    }
}
