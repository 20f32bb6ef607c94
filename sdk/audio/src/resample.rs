//! Sample-rate conversion by windowed-sinc interpolation (Hann window, 16 zero crossings a
//! side, cutoff 0.95 × the lower Nyquist frequency): good enough for speech features, whose
//! mel bands stop at 8 kHz. Not used on the real-time path when the source is already 16 kHz.

/// Zero crossings of the sinc on each side.
const HALF_TAPS: f64 = 16.0;

/// Converts `x` from `from` Hz to `to` Hz. Same rate: a copy.
pub fn resample(x: &[f32], from: u32, to: u32) -> Vec<f32> {
    if from == to || x.is_empty() {
        return x.to_vec();
    }
    let ratio = to as f64 / from as f64;
    let n_out = ((x.len() as f64) * ratio).floor() as usize;
    // Low-pass at the lower of the two Nyquist frequencies, in input-sample units.
    let cutoff = 0.95 * ratio.min(1.0);
    let half_width = HALF_TAPS / cutoff;
    let mut out = Vec::with_capacity(n_out);
    for k in 0..n_out {
        let t = k as f64 / ratio;
        let lo = (t - half_width).ceil().max(0.0) as usize;
        let hi = ((t + half_width).floor() as usize).min(x.len() - 1);
        let mut acc = 0.0f64;
        for (j, &v) in x.iter().enumerate().take(hi + 1).skip(lo) {
            let d = j as f64 - t;
            let w = 0.5 + 0.5 * (std::f64::consts::PI * d / half_width).cos();
            let arg = std::f64::consts::PI * d * cutoff;
            let sinc = if arg.abs() < 1e-12 { 1.0 } else { arg.sin() / arg };
            acc += v as f64 * cutoff * sinc * w;
        }
        out.push(acc as f32);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tone(f: f64, rate: u32, n: usize) -> Vec<f32> {
        (0..n).map(|i| (2.0 * std::f64::consts::PI * f * i as f64 / rate as f64).sin() as f32).collect()
    }

    #[test]
    fn a_tone_keeps_its_frequency_and_level() {
        for from in [8000, 22050, 44100, 48000] {
            let x = tone(440.0, from, from as usize);
            let y = resample(&x, from, 16000);
            assert_eq!(y.len(), 16000);
            let want = tone(440.0, 16000, 16000);
            // Away from the edges the result is the tone sampled at 16 kHz.
            let err = y[200..15800].iter().zip(&want[200..15800]).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
            assert!(err < 0.01, "{from} Hz: max error {err}");
        }
    }

    #[test]
    fn content_above_the_new_nyquist_is_removed() {
        let x = tone(12000.0, 48000, 48000);
        let y = resample(&x, 48000, 16000);
        let rms = (y[200..15800].iter().map(|v| v * v).sum::<f32>() / 15600.0).sqrt();
        assert!(rms < 0.02, "12 kHz tone leaks through at rms {rms}");
    }
}
