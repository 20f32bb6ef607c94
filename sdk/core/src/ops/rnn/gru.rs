//! GRU: a one-layer gated recurrent unit network, forward, reverse or bidirectional.
//!
//! Inputs: X, W, R, then optional B, sequence_lens, initial_h. Outputs Y and Y_h (both
//! computed; the model may omit either). Gates are ordered `zrh` in W, R and B; with f, g
//! the two activations of a direction:
//!
//! ```text
//! z = f(X·Wzᵀ + H·Rzᵀ + Wbz + Rbz)
//! r = f(X·Wrᵀ + H·Rrᵀ + Wbr + Rbr)
//! h = g(X·Whᵀ + (r ⊙ H)·Rhᵀ + Rbh + Wbh)        linear_before_reset = 0
//! h = g(X·Whᵀ + r ⊙ (H·Rhᵀ + Rbh) + Wbh)        linear_before_reset = 1
//! H' = (1 − z) ⊙ h + z ⊙ H
//! ```
//!
//! `clip` clamps every gate's pre-activation. Opset 14 adds `layout` (1: batch first);
//! opset 22 only adds types. The state is kept in f32 whatever the element type.

use half::f16;

use crate::error::Result;
use crate::invalid;
use crate::ops::{Attrs, InferInput, Op, TypeShape, optional, required};
use crate::tensor::{DataRef, Element, TensorMut, TensorRef};

use super::common::{
    Activation, Dims, RnnAttrs, check_inputs, check_len, check_types, dot_tf, dot_tt, drive, f32_scratch, get_or_zero,
    out_types, seq_len, shapes,
};

/// The GRU op.
#[derive(Debug, Clone, PartialEq)]
pub struct Gru {
    at: RnnAttrs,
    linear_before_reset: bool,
}

const B: usize = 3;
const SEQ: usize = 4;
const H0: usize = 5;

impl Gru {
    /// Parses the attributes (activations default to Sigmoid, Tanh).
    pub fn build(attrs: &Attrs, opset: i64) -> Result<Self> {
        let at = RnnAttrs::parse(attrs, opset, &[Activation::Sigmoid, Activation::Tanh])?;
        let linear_before_reset = match attrs.int_or("linear_before_reset", 0)? {
            0 => false,
            1 => true,
            v => invalid!("linear_before_reset must be 0 or 1, got {v}"),
        };
        Ok(Gru { at, linear_before_reset })
    }

    fn run_typed<T: Element>(
        &self,
        dims: &Dims,
        inputs: &[Option<TensorRef>],
        y: &mut [T],
        yh: &mut [T],
        scratch: &mut [f32],
    ) -> Result<()> {
        let x = required(inputs, 0, "X")?.typed::<T>()?;
        let w = required(inputs, 1, "W")?.typed::<T>()?;
        let r = required(inputs, 2, "R")?.typed::<T>()?;
        let bias = optional(inputs, B).map(|t| t.typed::<T>()).transpose()?;
        let h0 = optional(inputs, H0).map(|t| t.typed::<T>()).transpose()?;
        let (h, inp) = (dims.hidden, dims.input);
        let gh = 3 * h;
        let (at, lbr) = (&self.at, self.linear_before_reset);
        let cell = |d: usize, xr: &[T], hs: &mut [f32], work: &mut [f32]| {
            let (w, r) = (&w[d * gh * inp..(d + 1) * gh * inp], &r[d * gh * h..(d + 1) * gh * h]);
            let wb = |row: usize| get_or_zero(bias, d * 2 * gh + row);
            let rb = |row: usize| get_or_zero(bias, d * 2 * gh + gh + row);
            let rdot = |row: usize, v: &[f32]| dot_tf(&r[row * h..(row + 1) * h], v) as f32;
            // gx: the input parts of z, r, h; gr: the recurrent parts; rh: r ⊙ H.
            let (gx, rest) = work.split_at_mut(gh);
            let (gr, rest) = rest.split_at_mut(gh);
            let rh = &mut rest[..h];
            for (row, g) in gx.iter_mut().enumerate() {
                *g = dot_tt(&w[row * inp..(row + 1) * inp], xr) as f32 + wb(row);
            }
            for (row, g) in gr[..2 * h].iter_mut().enumerate() {
                *g = rdot(row, hs) + rb(row);
            }
            let (f, g) = (at.act(d, 0), at.act(d, 1));
            for j in 0..h {
                gx[j] = f.apply(at.clip(gx[j] + gr[j]));
                gx[h + j] = f.apply(at.clip(gx[h + j] + gr[h + j]));
                rh[j] = gx[h + j] * hs[j];
            }
            for j in 0..h {
                let rec = if lbr {
                    gx[h + j] * (rdot(2 * h + j, hs) + rb(2 * h + j))
                } else {
                    rdot(2 * h + j, rh) + rb(2 * h + j)
                };
                let hh = g.apply(at.clip(gx[2 * h + j] + rec));
                // gr's z slot is consumed: it holds the new H until every unit is done.
                gr[j] = (1.0 - gx[j]) * hh + gx[j] * hs[j];
            }
            hs.copy_from_slice(&gr[..h]);
        };
        drive(at, dims, optional(inputs, SEQ), x, &[h0], y, &mut [yh], scratch, cell)
    }
}

impl Op for Gru {
    fn op_type(&self) -> &'static str {
        "GRU"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        let dtype = check_types(inputs, 6)?;
        let dims = check_inputs(&self.at, 3, &shapes(inputs, |t: InferInput| t.shape))?;
        if let Some(s) = optional(inputs, SEQ).and_then(|t| t.value) {
            for b in 0..dims.batch {
                seq_len(Some(s.view()), b, &dims)?;
            }
        }
        Ok(out_types(dtype, &dims, 1))
    }

    fn scratch_bytes(&self, _inputs: &[Option<TypeShape>], outputs: &[TypeShape]) -> usize {
        // H, then the input and recurrent parts of the three gates, and r ⊙ H.
        outputs.get(1).and_then(|t| t.shape.get(2)).map_or(0, |&h| 8 * h * 4)
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], scratch: &mut [u8]) -> Result<()> {
        let dims = check_inputs(&self.at, 3, &shapes(inputs, |t: TensorRef| t.shape))?;
        for t in inputs.iter().flatten() {
            check_len(t, "an input")?;
        }
        let scratch = f32_scratch(scratch, 8 * dims.hidden)?;
        let [y, yh, ..] = outputs else { invalid!("GRU computes 2 outputs, got {}", outputs.len()) };
        if y.data.len() != dims.y_len() || yh.data.len() != dims.state_len() {
            invalid!("GRU outputs do not have the inferred sizes");
        }
        match required(inputs, 0, "X")?.data {
            DataRef::F32(_) => self.run_typed::<f32>(&dims, inputs, y.typed_mut()?, yh.typed_mut()?, scratch),
            DataRef::F16(_) => self.run_typed::<f16>(&dims, inputs, y.typed_mut()?, yh.typed_mut()?, scratch),
            other => invalid!("X of type {} is not supported (float32 or float16)", other.dtype()),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::excessive_precision)]
    use super::super::testutil::*;
    use super::*;
    use crate::ops::linalg::common::testutil::{Rng, assert_close, assert_close_tol, f16s, rand_vec};
    use crate::tensor::Tensor;

    fn gru(a: &Attrs) -> Gru {
        Gru::build(a, 14).unwrap()
    }

    #[test]
    fn hand_checked_single_step() {
        // One unit, X = 1, W = 1, R = 0.5, h0 = 0.5, no bias: z = r = σ(1.25),
        // h = tanh(1 + 0.5·(r·0.5)) (linear_before_reset 0 and 1 agree without biases).
        let x = Tensor::from_f32(&[1, 1, 1], vec![1.0]).unwrap();
        let w = Tensor::from_f32(&[1, 3, 1], vec![1.0; 3]).unwrap();
        let r = Tensor::from_f32(&[1, 3, 1], vec![0.5; 3]).unwrap();
        let h0 = Tensor::from_f32(&[1, 1, 1], vec![0.5]).unwrap();
        let s = 1.0 / (1.0 + (-1.25f64).exp());
        let hh = (1.0 + 0.5 * (s * 0.5)).tanh();
        let want = ((1.0 - s) * hh + s * 0.5) as f32;
        for lbr in [0, 1] {
            let op = gru(&attrs(&[], &[("linear_before_reset", lbr)], &[]));
            let out = run(&op, &[Some(&x), Some(&w), Some(&r), None, None, Some(&h0)]).unwrap();
            assert_close(&out[0], &[want]);
            assert_close(&out[1], &[want]);
        }
    }

    /// Expected values from onnxruntime 1.32 (see `testutil::pat` for the inputs).
    #[test]
    fn against_onnxruntime() {
        let case = Case { seq: 3, batch: 2, input: 3, hidden: 2, nd: 2, gates: 3 };
        let [x, w, r, b, h0, _, _] = case.pattern_inputs();
        let a = with_acts(
            attrs(&[("direction", "bidirectional")], &[("hidden_size", 2), ("linear_before_reset", 1)], &[]),
            &["Softplus", "Affine", "ThresholdedRelu", "Tanh"],
            &[0.5, 0.1],
            &[0.2],
        );
        let sl = lens(&[2, 3]);
        let out = run(&gru(&a), &[Some(&x), Some(&w), Some(&r), Some(&b), Some(&sl), Some(&h0)]).unwrap();
        let y = vec![
            -3.1977022e-01,
            -2.0433290e-02,
            3.1949556e-01,
            -3.4960266e-02,
            1.5628558e-02,
            -3.8689396e-01,
            4.5952529e-02,
            -8.2369983e-02,
            -4.0131181e-02,
            4.8971269e-02,
            3.1524482e-01,
            1.3439622e-02,
            1.2154990e-01,
            -5.9928104e-02,
            -3.7246387e-02,
            -4.1805752e-02,
            0.0000000e+00,
            0.0000000e+00,
            3.1394276e-01,
            2.7455408e-02,
            0.0000000e+00,
            0.0000000e+00,
            -9.5257916e-02,
            -5.9928086e-02,
        ];
        let yh = vec![
            -4.0131181e-02,
            4.8971269e-02,
            3.1394276e-01,
            2.7455408e-02,
            1.5628558e-02,
            -3.8689396e-01,
            4.5952529e-02,
            -8.2369983e-02,
        ];
        assert_close(&out[0], &y);
        assert_close(&out[1], &yh);

        let case = Case { nd: 1, ..case };
        let [x, w, r, b, h0, _, _] = case.pattern_inputs();
        let a = attrs(&[("direction", "reverse")], &[], &[("clip", 0.3)]);
        let out = run(&gru(&a), &[Some(&x), Some(&w), Some(&r), Some(&b), None, Some(&h0)]).unwrap();
        let y = vec![
            -5.2219175e-02,
            -1.9230740e-01,
            1.6278519e-01,
            -1.8466426e-01,
            3.8412206e-02,
            -1.1465963e-01,
            2.4667624e-01,
            -1.6840094e-01,
            -1.4272664e-01,
            -3.2793868e-02,
            2.9930255e-01,
            -1.1166939e-01,
        ];
        let yh = vec![-5.2219175e-02, -1.9230740e-01, 1.6278519e-01, -1.8466426e-01];
        assert_close(&out[0], &y);
        assert_close(&out[1], &yh);
    }

    /// A naive GRU (default activations, layout 0) with explicit per-gate loops.
    #[allow(clippy::too_many_arguments)]
    fn naive(
        c: Case,
        reverse: bool,
        lbr: bool,
        x: &[f32],
        w: &[f32],
        r: &[f32],
        b: &[f32],
        h0: &[f32],
    ) -> (Vec<f32>, Vec<f32>) {
        let (s, bs, n, h) = (c.seq, c.batch, c.input, c.hidden);
        let sig = |v: f64| 1.0 / (1.0 + (-v).exp());
        let mut y = vec![0f32; s * c.nd * bs * h];
        let mut yh = vec![0f32; c.nd * bs * h];
        for d in 0..c.nd {
            let times: Vec<usize> = if d == 1 || reverse { (0..s).rev().collect() } else { (0..s).collect() };
            for bi in 0..bs {
                let mut hs: Vec<f64> = (0..h).map(|j| h0[(d * bs + bi) * h + j] as f64).collect();
                for &t in &times {
                    let xw = |g: usize, j: usize| -> f64 {
                        let row = d * 3 * h + g * h + j;
                        (0..n).map(|k| x[(t * bs + bi) * n + k] as f64 * w[row * n + k] as f64).sum::<f64>()
                            + b[d * 6 * h + g * h + j] as f64
                    };
                    let hr = |g: usize, j: usize, v: &[f64]| -> f64 {
                        (0..h).map(|k| v[k] * r[(d * 3 * h + g * h + j) * h + k] as f64).sum::<f64>()
                    };
                    let rb = |g: usize, j: usize| b[d * 6 * h + 3 * h + g * h + j] as f64;
                    let z: Vec<f64> = (0..h).map(|j| sig(xw(0, j) + hr(0, j, &hs) + rb(0, j))).collect();
                    let rr: Vec<f64> = (0..h).map(|j| sig(xw(1, j) + hr(1, j, &hs) + rb(1, j))).collect();
                    let rh: Vec<f64> = (0..h).map(|j| rr[j] * hs[j]).collect();
                    let nh: Vec<f64> = (0..h)
                        .map(|j| {
                            let pre = if lbr {
                                xw(2, j) + rr[j] * (hr(2, j, &hs) + rb(2, j))
                            } else {
                                xw(2, j) + hr(2, j, &rh) + rb(2, j)
                            };
                            (1.0 - z[j]) * pre.tanh() + z[j] * hs[j]
                        })
                        .collect();
                    hs = nh;
                    for j in 0..h {
                        y[((t * c.nd + d) * bs + bi) * h + j] = hs[j] as f32;
                    }
                }
                for j in 0..h {
                    yh[(d * bs + bi) * h + j] = hs[j] as f32;
                }
            }
        }
        (y, yh)
    }

    #[test]
    fn random_against_naive() {
        let mut rng = Rng(23);
        for (dir, nd) in [("forward", 1), ("reverse", 1), ("bidirectional", 2)] {
            for lbr in [false, true] {
                let c = Case { seq: 4, batch: 3, input: 13, hidden: 7, nd, gates: 3 };
                let h = c.hidden;
                let x = rand_vec(&mut rng, c.seq * c.batch * c.input, -1.0, 1.0);
                let w = rand_vec(&mut rng, nd * 3 * h * c.input, -0.5, 0.5);
                let r = rand_vec(&mut rng, nd * 3 * h * h, -0.5, 0.5);
                let b = rand_vec(&mut rng, nd * 6 * h, -0.5, 0.5);
                let h0 = rand_vec(&mut rng, nd * c.batch * h, -1.0, 1.0);
                let (y, yh) = naive(c, dir == "reverse", lbr, &x, &w, &r, &b, &h0);
                let t = |shape: &[usize], v: &[f32]| Tensor::from_f32(shape, v.to_vec()).unwrap();
                let (xs, ws, rs, bs, hs) = (
                    t(&[c.seq, c.batch, c.input], &x),
                    t(&[nd, 3 * h, c.input], &w),
                    t(&[nd, 3 * h, h], &r),
                    t(&[nd, 6 * h], &b),
                    t(&[nd, c.batch, h], &h0),
                );
                let a = attrs(&[("direction", dir)], &[("linear_before_reset", lbr as i64)], &[]);
                let out = run(&gru(&a), &[Some(&xs), Some(&ws), Some(&rs), Some(&bs), None, Some(&hs)]).unwrap();
                assert_close(&out[0], &y);
                assert_close(&out[1], &yh);
                // Batch-first layout: the same numbers with batch and time (or direction) swapped.
                let xb = t(&[c.batch, c.seq, c.input], &swap01(&x, c.seq, c.batch, c.input));
                let hb = t(&[c.batch, nd, h], &swap01(&h0, nd, c.batch, h));
                let ab = attrs(&[("direction", dir)], &[("linear_before_reset", lbr as i64), ("layout", 1)], &[]);
                let outb = run(&gru(&ab), &[Some(&xb), Some(&ws), Some(&rs), Some(&bs), None, Some(&hb)]).unwrap();
                // Y [seq, nd, batch, h] seen as [seq·nd, batch, h] swaps to [batch, seq, nd, h].
                assert_close(&outb[0], &swap01(&y, c.seq * nd, c.batch, h));
                assert_close(&outb[1], &swap01(&yh, nd, c.batch, h));
                // f16 agrees within f16 precision.
                let h16 = |t: &Tensor| f16s(t.shape(), t.as_f32().unwrap());
                let outh = run(
                    &gru(&a),
                    &[Some(&h16(&xs)), Some(&h16(&ws)), Some(&h16(&rs)), Some(&h16(&bs)), None, Some(&h16(&hs))],
                )
                .unwrap();
                assert_close_tol(&outh[0], &y, 2e-2, 1e-2);
            }
        }
    }

    #[test]
    fn errors() {
        let c = Case { seq: 3, batch: 2, input: 3, hidden: 2, nd: 1, gates: 3 };
        let [x, w, r, b, h0, _, _] = c.pattern_inputs();
        let op = gru(&attrs(&[], &[], &[]));
        assert!(run(&op, &[Some(&x), Some(&w), Some(&r), Some(&b), None, Some(&h0)]).is_ok());
        assert!(run(&op, &[Some(&x), Some(&w), Some(&w)]).is_err(), "R of W's shape");
        assert!(run(&op, &[Some(&x), Some(&w), Some(&r), Some(&h0)]).is_err(), "B of initial_h's shape");
        assert!(run(&op, &[Some(&x), Some(&w), Some(&r), None, Some(&lens(&[-1, 2]))]).is_err(), "negative length");
        let lstm_w = Tensor::from_f32(&[1, 8, 3], vec![0.0; 24]).unwrap();
        assert!(run(&op, &[Some(&x), Some(&lstm_w), Some(&r)]).is_err(), "4 gates of weights");
        assert!(run(&op, &[Some(&x), Some(&w), Some(&r), None, None, None, None]).is_err(), "7 inputs");
        assert!(Gru::build(&attrs(&[], &[("linear_before_reset", 2)], &[]), 14).is_err());
        assert!(Gru::build(&with_acts(Attrs::new(), &["Sigmoid", "Tanh", "Tanh"], &[], &[]), 14).is_err());
    }
}
