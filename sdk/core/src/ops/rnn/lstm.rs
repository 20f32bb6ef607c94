//! LSTM: a one-layer long short-term memory network, forward, reverse or bidirectional.
//!
//! Inputs: X, W, R, then optional B, sequence_lens, initial_h, initial_c, P (peepholes).
//! Outputs Y, Y_h, Y_c (all computed; the model may omit any). Gates are ordered `iofc` in
//! W, R and B, peepholes `iof`; with f, g, h the three activations of a direction:
//!
//! ```text
//! i = f(X·Wiᵀ + H·Riᵀ + Pi ⊙ C + Wbi + Rbi)       (input_forget: f_t = 1 − i)
//! f_t = f(X·Wfᵀ + H·Rfᵀ + Pf ⊙ C + Wbf + Rbf)
//! c = g(X·Wcᵀ + H·Rcᵀ + Wbc + Rbc)
//! C' = f_t ⊙ C + i ⊙ c
//! o = f(X·Woᵀ + H·Roᵀ + Po ⊙ C' + Wbo + Rbo)
//! H' = o ⊙ h(C')
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
    Activation, Dims, RnnAttrs, check_inputs, check_len, check_state, check_types, dot_tf, dot_tt, drive, f32_scratch,
    get_or_zero, out_types, seq_len, shapes,
};

/// The LSTM op.
#[derive(Debug, Clone, PartialEq)]
pub struct Lstm {
    at: RnnAttrs,
    input_forget: bool,
}

/// Input indices.
const B: usize = 3;
const SEQ: usize = 4;
const H0: usize = 5;
const C0: usize = 6;
const P: usize = 7;

impl Lstm {
    /// Parses the attributes (activations default to Sigmoid, Tanh, Tanh).
    pub fn build(attrs: &Attrs, opset: i64) -> Result<Self> {
        let at = RnnAttrs::parse(attrs, opset, &[Activation::Sigmoid, Activation::Tanh, Activation::Tanh])?;
        Ok(Lstm { at, input_forget: attrs.int_or("input_forget", 0)? == 1 })
    }

    fn dims(&self, s: &[Option<&[usize]>; 8]) -> Result<Dims> {
        let dims = check_inputs(&self.at, 4, s)?;
        if let Some(c) = s[C0] {
            check_state(c, &dims, "initial_c")?;
        }
        if let Some(p) = s[P]
            && p != [dims.nd, 3 * dims.hidden]
        {
            invalid!("P has shape {p:?}, expected [{}, {}]", dims.nd, 3 * dims.hidden);
        }
        Ok(dims)
    }

    #[allow(clippy::too_many_arguments)]
    fn run_typed<T: Element>(
        &self,
        dims: &Dims,
        inputs: &[Option<TensorRef>],
        y: &mut [T],
        yh: &mut [T],
        yc: &mut [T],
        scratch: &mut [f32],
    ) -> Result<()> {
        let typed = |i: usize| -> Result<Option<&[T]>> { optional(inputs, i).map(|t| t.typed::<T>()).transpose() };
        let x = required(inputs, 0, "X")?.typed::<T>()?;
        let w = required(inputs, 1, "W")?.typed::<T>()?;
        let r = required(inputs, 2, "R")?.typed::<T>()?;
        let (bias, h0, c0, peep) = (typed(B)?, typed(H0)?, typed(C0)?, typed(P)?);
        let (h, inp) = (dims.hidden, dims.input);
        let gh = 4 * h;
        let at = &self.at;
        let input_forget = self.input_forget;
        let cell = |d: usize, xr: &[T], state: &mut [f32], gates: &mut [f32]| {
            let (w, r) = (&w[d * gh * inp..(d + 1) * gh * inp], &r[d * gh * h..(d + 1) * gh * h]);
            let (hs, cs) = state.split_at_mut(h);
            for (row, g) in gates[..gh].iter_mut().enumerate() {
                let bias = get_or_zero(bias, d * 2 * gh + row) + get_or_zero(bias, d * 2 * gh + gh + row);
                *g =
                    (dot_tt(&w[row * inp..(row + 1) * inp], xr) + dot_tf(&r[row * h..(row + 1) * h], hs)) as f32 + bias;
            }
            let (f, g, hf) = (at.act(d, 0), at.act(d, 1), at.act(d, 2));
            let pp = |k: usize, j: usize| get_or_zero(peep, d * 3 * h + k * h + j);
            for j in 0..h {
                let c_prev = cs[j];
                let i = f.apply(at.clip(gates[j] + pp(0, j) * c_prev));
                let ft = if input_forget { 1.0 - i } else { f.apply(at.clip(gates[2 * h + j] + pp(2, j) * c_prev)) };
                let c = ft * c_prev + i * g.apply(at.clip(gates[3 * h + j]));
                let o = f.apply(at.clip(gates[h + j] + pp(1, j) * c));
                cs[j] = c;
                // Gate i of unit j is consumed: its slot holds the new h until all units are done.
                gates[j] = o * hf.apply(c);
            }
            hs.copy_from_slice(&gates[..h]);
        };
        let mut finals = [yh, yc];
        drive(at, dims, optional(inputs, SEQ), x, &[h0, c0], y, &mut finals, scratch, cell)
    }
}

impl Op for Lstm {
    fn op_type(&self) -> &'static str {
        "LSTM"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        let dtype = check_types(inputs, 8)?;
        let dims = self.dims(&shapes(inputs, |t: InferInput| t.shape))?;
        if let Some(s) = optional(inputs, SEQ).and_then(|t| t.value) {
            for b in 0..dims.batch {
                seq_len(Some(s.view()), b, &dims)?;
            }
        }
        Ok(out_types(dtype, &dims, 2))
    }

    fn scratch_bytes(&self, _inputs: &[Option<TypeShape>], outputs: &[TypeShape]) -> usize {
        // h, c and the four gates of one batch entry.
        outputs.get(1).and_then(|t| t.shape.get(2)).map_or(0, |&h| 6 * h * 4)
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], scratch: &mut [u8]) -> Result<()> {
        let dims = self.dims(&shapes(inputs, |t: TensorRef| t.shape))?;
        for (i, t) in inputs.iter().enumerate() {
            if let Some(t) = t {
                check_len(t, if i == 0 { "X" } else { "an input" })?;
            }
        }
        let scratch = f32_scratch(scratch, 6 * dims.hidden)?;
        let [y, yh, yc, ..] = outputs else { invalid!("LSTM computes 3 outputs, got {}", outputs.len()) };
        let (ny, ns) = (dims.y_len(), dims.state_len());
        if y.data.len() != ny || yh.data.len() != ns || yc.data.len() != ns {
            invalid!("LSTM outputs do not have the inferred sizes");
        }
        match required(inputs, 0, "X")?.data {
            DataRef::F32(_) => {
                self.run_typed::<f32>(&dims, inputs, y.typed_mut()?, yh.typed_mut()?, yc.typed_mut()?, scratch)
            }
            DataRef::F16(_) => {
                self.run_typed::<f16>(&dims, inputs, y.typed_mut()?, yh.typed_mut()?, yc.typed_mut()?, scratch)
            }
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

    fn lstm(a: &Attrs) -> Lstm {
        Lstm::build(a, 14).unwrap()
    }

    #[test]
    fn hand_checked_single_step() {
        // One unit, one feature, X = 1, W = 1, R = 0.5, B = 0.1 + 0.1 per gate, h0 = 0.5,
        // c0 = -1, no peepholes: every gate's pre-activation is 1 + 0.25 + 0.2 = 1.45.
        let op = lstm(&attrs(&[], &[("hidden_size", 1)], &[]));
        let x = Tensor::from_f32(&[1, 1, 1], vec![1.0]).unwrap();
        let w = Tensor::from_f32(&[1, 4, 1], vec![1.0; 4]).unwrap();
        let r = Tensor::from_f32(&[1, 4, 1], vec![0.5; 4]).unwrap();
        let b = Tensor::from_f32(&[1, 8], vec![0.1; 8]).unwrap();
        let h0 = Tensor::from_f32(&[1, 1, 1], vec![0.5]).unwrap();
        let c0 = Tensor::from_f32(&[1, 1, 1], vec![-1.0]).unwrap();
        let out = run(&op, &[Some(&x), Some(&w), Some(&r), Some(&b), None, Some(&h0), Some(&c0)]).unwrap();
        let s = 1.0 / (1.0 + (-1.45f64).exp());
        let c = -s + s * 1.45f64.tanh(); // f·c0 + i·c with c0 = -1
        let h = s * c.tanh();
        assert_close(&out[0], &[h as f32]);
        assert_close(&out[1], &[h as f32]);
        assert_close(&out[2], &[c as f32]);
    }

    /// Expected values from onnxruntime 1.32 (see `testutil::pat` for the inputs).
    #[test]
    fn against_onnxruntime() {
        let case = Case { seq: 3, batch: 2, input: 3, hidden: 2, nd: 2, gates: 4 };
        let [x, w, r, b, h0, c0, p] = case.pattern_inputs();
        let a = with_acts(
            attrs(&[("direction", "bidirectional")], &[("hidden_size", 2)], &[("clip", 0.6)]),
            &["HardSigmoid", "LeakyRelu", "Elu", "Sigmoid", "ScaledTanh", "Softsign"],
            &[0.3, 0.2, 0.9, 0.7],
            &[0.4, 1.5],
        );
        let sl = lens(&[3, 1]);
        let ins = [Some(&x), Some(&w), Some(&r), Some(&b), Some(&sl), Some(&h0), Some(&c0), Some(&p)];
        let out = run(&lstm(&a), &ins).unwrap();
        let y = vec![
            -7.4629940e-02,
            1.3619448e-01,
            9.3649598e-03,
            -5.8911964e-02,
            -4.5145296e-02,
            5.3311478e-02,
            -1.5206313e-01,
            -4.3367945e-02,
            -2.5798241e-02,
            3.8716223e-02,
            0.0000000e+00,
            0.0000000e+00,
            -7.7760182e-02,
            3.1996850e-02,
            0.0000000e+00,
            0.0000000e+00,
            1.7267065e-02,
            7.3461086e-02,
            0.0000000e+00,
            0.0000000e+00,
            9.9026486e-02,
            -4.6772606e-04,
            0.0000000e+00,
            0.0000000e+00,
        ];
        let yh = vec![
            1.7267065e-02,
            7.3461086e-02,
            9.3649598e-03,
            -5.8911964e-02,
            -4.5145296e-02,
            5.3311478e-02,
            -1.5206313e-01,
            -4.3367945e-02,
        ];
        let yc = vec![
            6.6374347e-02,
            2.0235842e-01,
            2.1999998e-02,
            -1.5253401e-01,
            -8.4169716e-02,
            1.4612627e-01,
            -3.3777004e-01,
            -9.9321350e-02,
        ];
        assert_close(&out[0], &y);
        assert_close(&out[1], &yh);
        assert_close(&out[2], &yc);

        let case = Case { nd: 1, ..case };
        let [x, w, r, b, h0, c0, p] = case.pattern_inputs();
        let a = attrs(&[("direction", "reverse")], &[("hidden_size", 2), ("input_forget", 1)], &[]);
        let ins = [Some(&x), Some(&w), Some(&r), Some(&b), None, Some(&h0), Some(&c0), Some(&p)];
        let out = run(&lstm(&a), &ins).unwrap();
        let y = vec![
            -8.7205715e-02,
            1.1304393e-01,
            4.5482952e-02,
            -9.6371166e-02,
            9.0934327e-03,
            3.7939079e-02,
            2.8652836e-02,
            -6.1683372e-02,
            -1.3953452e-02,
            1.6439764e-01,
            2.5522159e-02,
            -6.0068956e-04,
        ];
        let yh = vec![-8.7205715e-02, 1.1304393e-01, 4.5482952e-02, -9.6371166e-02];
        let yc = vec![-1.6022731e-01, 2.0029679e-01, 9.1691576e-02, -1.8137990e-01];
        assert_close(&out[0], &y);
        assert_close(&out[1], &yh);
        assert_close(&out[2], &yc);
    }

    /// A naive LSTM in the style of onnx's Python reference: whole-batch matrix products per
    /// step, directions by flipping time, default activations. Layout 0; returns Y, Y_h, Y_c.
    #[allow(clippy::too_many_arguments)]
    fn naive(
        c: Case,
        reverse: bool,
        x: &[f32],
        w: &[f32],
        r: &[f32],
        b: &[f32],
        h0: &[f32],
        c0: &[f32],
        p: &[f32],
    ) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
        let (s, bs, n, h) = (c.seq, c.batch, c.input, c.hidden);
        let sig = |v: f64| 1.0 / (1.0 + (-v).exp());
        let mut y = vec![0f32; s * c.nd * bs * h];
        let (mut yh, mut yc) = (vec![0f32; c.nd * bs * h], vec![0f32; c.nd * bs * h]);
        for d in 0..c.nd {
            let mut hs: Vec<Vec<f64>> =
                (0..bs).map(|bi| (0..h).map(|j| h0[(d * bs + bi) * h + j] as f64).collect()).collect();
            let mut cs: Vec<Vec<f64>> =
                (0..bs).map(|bi| (0..h).map(|j| c0[(d * bs + bi) * h + j] as f64).collect()).collect();
            let times: Vec<usize> = if d == 1 || reverse { (0..s).rev().collect() } else { (0..s).collect() };
            for &t in &times {
                for bi in 0..bs {
                    let gate = |row: usize| -> f64 {
                        let mut v = b[d * 8 * h + row] as f64 + b[d * 8 * h + 4 * h + row] as f64;
                        for k in 0..n {
                            v += x[(t * bs + bi) * n + k] as f64 * w[(d * 4 * h + row) * n + k] as f64;
                        }
                        for k in 0..h {
                            v += hs[bi][k] * r[(d * 4 * h + row) * h + k] as f64;
                        }
                        v
                    };
                    let gates: Vec<f64> = (0..4 * h).map(gate).collect();
                    let pv = |k: usize, j: usize| p[d * 3 * h + k * h + j] as f64;
                    let mut nh = vec![0f64; h];
                    for j in 0..h {
                        let i = sig(gates[j] + pv(0, j) * cs[bi][j]);
                        let f = sig(gates[2 * h + j] + pv(2, j) * cs[bi][j]);
                        let cn = f * cs[bi][j] + i * gates[3 * h + j].tanh();
                        let o = sig(gates[h + j] + pv(1, j) * cn);
                        cs[bi][j] = cn;
                        nh[j] = o * cn.tanh();
                    }
                    hs[bi] = nh;
                    for j in 0..h {
                        y[((t * c.nd + d) * bs + bi) * h + j] = hs[bi][j] as f32;
                    }
                }
            }
            for bi in 0..bs {
                for j in 0..h {
                    yh[(d * bs + bi) * h + j] = hs[bi][j] as f32;
                    yc[(d * bs + bi) * h + j] = cs[bi][j] as f32;
                }
            }
        }
        (y, yh, yc)
    }

    #[test]
    fn random_against_naive_directions_and_layouts() {
        let mut rng = Rng(17);
        for (dir, nd) in [("forward", 1), ("reverse", 1), ("bidirectional", 2)] {
            for layout in [0i64, 1] {
                let c = Case { seq: 4, batch: 3, input: 13, hidden: 7, nd, gates: 4 };
                let h = c.hidden;
                let x = rand_vec(&mut rng, c.seq * c.batch * c.input, -1.0, 1.0);
                let w = rand_vec(&mut rng, nd * 4 * h * c.input, -0.5, 0.5);
                let r = rand_vec(&mut rng, nd * 4 * h * h, -0.5, 0.5);
                let b = rand_vec(&mut rng, nd * 8 * h, -0.5, 0.5);
                let h0 = rand_vec(&mut rng, nd * c.batch * h, -1.0, 1.0);
                let c0 = rand_vec(&mut rng, nd * c.batch * h, -1.0, 1.0);
                let p = rand_vec(&mut rng, nd * 3 * h, -0.5, 0.5);
                let (y, yh, yc) = naive(c, dir == "reverse", &x, &w, &r, &b, &h0, &c0, &p);
                let t = |shape: &[usize], v: &[f32]| Tensor::from_f32(shape, v.to_vec()).unwrap();
                let (xs, h0s, c0s, want_y, want_h, want_c) = if layout == 1 {
                    (
                        t(&[c.batch, c.seq, c.input], &swap01(&x, c.seq, c.batch, c.input)),
                        t(&[c.batch, nd, h], &swap01(&h0, nd, c.batch, h)),
                        t(&[c.batch, nd, h], &swap01(&c0, nd, c.batch, h)),
                        // [seq, nd, batch, h] → [batch, seq, nd, h].
                        {
                            let mut o = vec![0f32; y.len()];
                            for ti in 0..c.seq {
                                for d in 0..nd {
                                    for bi in 0..c.batch {
                                        for j in 0..h {
                                            o[((bi * c.seq + ti) * nd + d) * h + j] =
                                                y[((ti * nd + d) * c.batch + bi) * h + j];
                                        }
                                    }
                                }
                            }
                            o
                        },
                        swap01(&yh, nd, c.batch, h),
                        swap01(&yc, nd, c.batch, h),
                    )
                } else {
                    (
                        t(&[c.seq, c.batch, c.input], &x),
                        t(&[nd, c.batch, h], &h0),
                        t(&[nd, c.batch, h], &c0),
                        y.clone(),
                        yh.clone(),
                        yc.clone(),
                    )
                };
                let a = attrs(&[("direction", dir)], &[("layout", layout)], &[]);
                let (ws, rs, bs, ps) =
                    (t(&[nd, 4 * h, c.input], &w), t(&[nd, 4 * h, h], &r), t(&[nd, 8 * h], &b), t(&[nd, 3 * h], &p));
                let ins = [Some(&xs), Some(&ws), Some(&rs), Some(&bs), None, Some(&h0s), Some(&c0s), Some(&ps)];
                let out = run(&lstm(&a), &ins).unwrap();
                assert_close(&out[0], &want_y);
                assert_close(&out[1], &want_h);
                assert_close(&out[2], &want_c);
                // All lengths given as full equals no sequence_lens.
                let sl = lens(&[c.seq as i32; 3]);
                let ins2 = [Some(&xs), Some(&ws), Some(&rs), Some(&bs), Some(&sl), Some(&h0s), Some(&c0s), Some(&ps)];
                assert_eq!(run(&lstm(&a), &ins2).unwrap(), out);
                // f16 inputs agree with the f32 path within f16 precision.
                let h16 = |t: &Tensor| f16s(t.shape(), t.as_f32().unwrap());
                let (xh, wh, rh, bh, h0h, c0h, ph) =
                    (h16(&xs), h16(&ws), h16(&rs), h16(&bs), h16(&h0s), h16(&c0s), h16(&ps));
                let outh = run(
                    &lstm(&a),
                    &[Some(&xh), Some(&wh), Some(&rh), Some(&bh), None, Some(&h0h), Some(&c0h), Some(&ph)],
                )
                .unwrap();
                assert_close_tol(&outh[0], &want_y, 2e-2, 1e-2);
            }
        }
    }

    #[test]
    fn defaults_and_short_sequences() {
        // Without B, initial states and P everything starts from zero; a zero length
        // keeps the initial state and zero rows of Y.
        let c = Case { seq: 3, batch: 2, input: 3, hidden: 2, nd: 1, gates: 4 };
        let [x, w, r, _, h0, c0, _] = c.pattern_inputs();
        let op = lstm(&attrs(&[], &[], &[]));
        let out = run(&op, &[Some(&x), Some(&w), Some(&r)]).unwrap();
        assert_eq!(out[0].len(), 3 * 2 * 2);
        let sl = lens(&[0, 2]);
        let out = run(&op, &[Some(&x), Some(&w), Some(&r), None, Some(&sl), Some(&h0), Some(&c0)]).unwrap();
        let (h0v, c0v) = (h0.as_f32().unwrap(), c0.as_f32().unwrap());
        assert_eq!(&out[1][..2], &h0v[..2]);
        assert_eq!(&out[2][..2], &c0v[..2]);
        for t in 0..3 {
            assert_eq!(&out[0][t * 4..t * 4 + 2], &[0.0, 0.0], "batch 0 has no valid step");
        }
        assert_eq!(&out[0][2 * 4 + 2..], &[0.0, 0.0], "batch 1's step 2 is past its length");
        assert_eq!(&out[1][2..], &out[0][4 + 2..4 + 4], "Y_h is the last valid step");
    }

    #[test]
    fn errors() {
        let c = Case { seq: 3, batch: 2, input: 3, hidden: 2, nd: 1, gates: 4 };
        let [x, w, r, b, h0, c0, p] = c.pattern_inputs();
        let op = lstm(&attrs(&[], &[], &[]));
        let ok = run(&op, &[Some(&x), Some(&w), Some(&r), Some(&b), None, Some(&h0), Some(&c0), Some(&p)]);
        assert!(ok.is_ok());
        assert!(run(&op, &[Some(&x), Some(&w)]).is_err(), "missing R");
        assert!(run(&op, &[Some(&x), Some(&r), Some(&r)]).is_err(), "W of R's shape");
        assert!(run(&op, &[Some(&x), Some(&w), Some(&r), Some(&p)]).is_err(), "B of P's shape");
        assert!(run(&op, &[Some(&x), Some(&w), Some(&r), None, Some(&lens(&[1, 4]))]).is_err(), "length 4 > 3");
        assert!(run(&op, &[Some(&x), Some(&w), Some(&r), None, Some(&lens(&[1]))]).is_err(), "lengths of batch 1");
        assert!(run(&op, &[Some(&x), Some(&w), Some(&r), None, None, Some(&p)]).is_err(), "initial_h of P's shape");
        assert!(run(&op, &[Some(&x), Some(&w), Some(&r), None, None, None, None, Some(&b)]).is_err(), "P of B's shape");
        let x2 = Tensor::from_f32(&[3, 6], vec![0.0; 18]).unwrap();
        assert!(run(&op, &[Some(&x2), Some(&w), Some(&r)]).is_err(), "2-D X");
        let xi = lens(&[1, 2, 3]).reshaped(vec![1, 1, 3]).unwrap();
        assert!(run(&op, &[Some(&xi), Some(&w), Some(&r)]).is_err(), "int X");
        let op3 = lstm(&attrs(&[], &[("hidden_size", 3)], &[]));
        assert!(run(&op3, &[Some(&x), Some(&w), Some(&r)]).is_err(), "hidden_size 3 vs R");
        let bi = lstm(&attrs(&[("direction", "bidirectional")], &[], &[]));
        assert!(run(&bi, &[Some(&x), Some(&w), Some(&r)]).is_err(), "one direction of weights");
        assert!(Lstm::build(&attrs(&[("direction", "sideways")], &[], &[]), 14).is_err());
        assert!(Lstm::build(&attrs(&[], &[("layout", 1)], &[]), 13).is_err());
        assert!(Lstm::build(&attrs(&[], &[("layout", 2)], &[]), 14).is_err());
        assert!(Lstm::build(&attrs(&[], &[("hidden_size", 0)], &[]), 14).is_err());
        assert!(Lstm::build(&attrs(&[], &[], &[("clip", -1.0)]), 14).is_err());
        assert!(Lstm::build(&with_acts(Attrs::new(), &["Sigmoid", "Tanh"], &[], &[]), 14).is_err());
        assert!(Lstm::build(&with_acts(Attrs::new(), &["Sigmoid", "Tanh", "Gelu"], &[], &[]), 14).is_err());
    }
}
