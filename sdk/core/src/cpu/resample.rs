//! Separable 2-D resampling of f32 planes from per-axis tap tables (Resize's fast path).
//!
//! Each output row is a weighted sum of a few input rows, and each output column a weighted
//! sum of a few columns of that blend. The op builds the tables from its own coordinate and
//! coefficient rules (`ops::nn::resize`), so this kernel knows nothing of modes: it blends
//! whole input rows into one row buffer (contiguous, vectorized), then gathers the columns.

/// The most taps one output index may use (cubic: 4).
pub const MAX_TAPS: usize = 4;

/// The input indices and weights for one output index along one axis.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AxisTaps {
    /// Input indices (already clamped into the axis).
    pub idx: [u32; MAX_TAPS],
    /// Weights; taps past the axis's tap count are unused.
    pub w: [f32; MAX_TAPS],
}

/// One axis of a resampling: a table per output index, all with `count` taps.
#[derive(Clone, Copy, Debug)]
pub struct Axis<'a> {
    /// Input length.
    pub input: usize,
    /// One entry per output index.
    pub taps: &'a [AxisTaps],
    /// Taps used per output index (1 to [`MAX_TAPS`]).
    pub count: usize,
}

/// Resamples `planes` planes of `rows.input x cols.input` in `x` into planes of
/// `rows.taps.len() x cols.taps.len()` in `y`. `tmp` holds one input row (`cols.input`
/// floats). A row with a single tap of weight 1 is read in place.
pub fn resample_planes(planes: usize, rows: Axis, cols: Axis, x: &[f32], y: &mut [f32], tmp: &mut [f32]) {
    let (ih, iw, oh, ow) = (rows.input, cols.input, rows.taps.len(), cols.taps.len());
    let tmp = &mut tmp[..iw];
    for p in 0..planes {
        let xp = &x[p * ih * iw..(p + 1) * ih * iw];
        let yp = &mut y[p * oh * ow..(p + 1) * oh * ow];
        for (r, yrow) in rows.taps.iter().zip(yp.chunks_exact_mut(ow)) {
            let row = |k: usize| &xp[r.idx[k] as usize * iw..(r.idx[k] as usize + 1) * iw];
            let src: &[f32] = if rows.count == 1 && r.w[0] == 1.0 {
                row(0)
            } else {
                blend_rows(&row, &r.w[..rows.count], tmp);
                tmp
            };
            match cols.count {
                1 => gather::<1>(cols.taps, src, yrow),
                2 => gather::<2>(cols.taps, src, yrow),
                3 => gather::<3>(cols.taps, src, yrow),
                _ => gather::<4>(cols.taps, src, yrow),
            }
        }
    }
}

/// `out = Σ_k w[k] · row(k)`, elementwise over whole rows.
fn blend_rows<'x>(row: &impl Fn(usize) -> &'x [f32], w: &[f32], out: &mut [f32]) {
    for (o, &v) in out.iter_mut().zip(row(0)) {
        *o = w[0] * v;
    }
    for (k, &wk) in w.iter().enumerate().skip(1) {
        for (o, &v) in out.iter_mut().zip(row(k)) {
            *o += wk * v;
        }
    }
}

/// `out[j] = Σ_k taps[j].w[k] · src[taps[j].idx[k]]` for `K` taps.
fn gather<const K: usize>(taps: &[AxisTaps], src: &[f32], out: &mut [f32]) {
    for (o, t) in out.iter_mut().zip(taps) {
        let mut acc = t.w[0] * src[t.idx[0] as usize];
        for k in 1..K {
            acc += t.w[k] * src[t.idx[k] as usize];
        }
        *o = acc;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::nn::test_util::Rng;

    /// Against the tensor-product sum written out, for every tap count on each axis, with
    /// repeated and clamped indices and the in-place single-tap row.
    #[test]
    fn matches_the_tensor_product_sum() {
        let mut rng = Rng::new(3);
        let (planes, ih, iw, oh, ow) = (3, 5, 7, 9, 11);
        let x: Vec<f32> = (0..planes * ih * iw).map(|_| rng.sym()).collect();
        for rc in 1..=MAX_TAPS {
            for cc in 1..=MAX_TAPS {
                let table = |rng: &mut Rng, n: usize, input: usize, count: usize| -> Vec<AxisTaps> {
                    (0..n)
                        .map(|_| {
                            let mut t = AxisTaps::default();
                            for k in 0..count {
                                t.idx[k] = rng.below(input) as u32;
                                t.w[k] = if count == 1 && rng.below(2) == 0 { 1.0 } else { rng.sym() };
                            }
                            t
                        })
                        .collect()
                };
                let rt = table(&mut rng, oh, ih, rc);
                let ct = table(&mut rng, ow, iw, cc);
                let mut y = vec![0f32; planes * oh * ow];
                let mut tmp = vec![0f32; iw];
                let rows = Axis { input: ih, taps: &rt, count: rc };
                let cols = Axis { input: iw, taps: &ct, count: cc };
                resample_planes(planes, rows, cols, &x, &mut y, &mut tmp);
                for p in 0..planes {
                    for oy in 0..oh {
                        for ox in 0..ow {
                            let mut want = 0f64;
                            for a in 0..rc {
                                for b in 0..cc {
                                    let v = x[p * ih * iw + rt[oy].idx[a] as usize * iw + ct[ox].idx[b] as usize];
                                    want += rt[oy].w[a] as f64 * ct[ox].w[b] as f64 * v as f64;
                                }
                            }
                            let got = y[(p * oh + oy) * ow + ox] as f64;
                            assert!((got - want).abs() <= 1e-5, "taps {rc}x{cc} at {p},{oy},{ox}: {got} vs {want}");
                        }
                    }
                }
            }
        }
    }
}
