//! RNN: a one-layer simple (Elman) recurrent network, forward, reverse or bidirectional.
//!
//! Inputs: X, W, R, then optional B, sequence_lens, initial_h. Outputs Y and Y_h (both
//! computed; the model may omit either). With f the activation of a direction (default
//! Tanh): `H' = f(X·Wᵀ + H·Rᵀ + Wb + Rb)`, the pre-activation clamped by `clip` if set.
//! Opset 14 adds `layout` (1: batch first); opset 22 only adds types.

use half::f16;

use crate::error::Result;
use crate::invalid;
use crate::ops::{Attrs, InferInput, Op, TypeShape, optional, required};
use crate::tensor::{DataRef, Element, TensorMut, TensorRef};

use super::common::{
    Activation, Dims, RnnAttrs, check_inputs, check_len, check_types, dot_tf, dot_tt, drive, f32_scratch, get_or_zero,
    out_types, seq_len, shapes,
};

/// The RNN op.
#[derive(Debug, Clone, PartialEq)]
pub struct Rnn {
    at: RnnAttrs,
}

const B: usize = 3;
const SEQ: usize = 4;
const H0: usize = 5;

impl Rnn {
    /// Parses the attributes (the activation defaults to Tanh).
    pub fn build(attrs: &Attrs, opset: i64) -> Result<Self> {
        Ok(Rnn { at: RnnAttrs::parse(attrs, opset, &[Activation::Tanh])? })
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
        let at = &self.at;
        let cell = |d: usize, xr: &[T], hs: &mut [f32], next: &mut [f32]| {
            let (w, r) = (&w[d * h * inp..(d + 1) * h * inp], &r[d * h * h..(d + 1) * h * h]);
            let f = at.act(d, 0);
            for (j, n) in next[..h].iter_mut().enumerate() {
                let pre = dot_tt(&w[j * inp..(j + 1) * inp], xr) + dot_tf(&r[j * h..(j + 1) * h], hs);
                let b = get_or_zero(bias, d * 2 * h + j) + get_or_zero(bias, d * 2 * h + h + j);
                *n = f.apply(at.clip(pre as f32 + b));
            }
            hs.copy_from_slice(&next[..h]);
        };
        drive(at, dims, optional(inputs, SEQ), x, &[h0], y, &mut [yh], scratch, cell)
    }
}

impl Op for Rnn {
    fn op_type(&self) -> &'static str {
        "RNN"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        let dtype = check_types(inputs, 6)?;
        let dims = check_inputs(&self.at, 1, &shapes(inputs, |t: InferInput| t.shape))?;
        if let Some(s) = optional(inputs, SEQ).and_then(|t| t.value) {
            for b in 0..dims.batch {
                seq_len(Some(s.view()), b, &dims)?;
            }
        }
        Ok(out_types(dtype, &dims, 1))
    }

    fn scratch_bytes(&self, _inputs: &[Option<TypeShape>], outputs: &[TypeShape]) -> usize {
        // H and the next H.
        outputs.get(1).and_then(|t| t.shape.get(2)).map_or(0, |&h| 2 * h * 4)
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], scratch: &mut [u8]) -> Result<()> {
        let dims = check_inputs(&self.at, 1, &shapes(inputs, |t: TensorRef| t.shape))?;
        for t in inputs.iter().flatten() {
            check_len(t, "an input")?;
        }
        let scratch = f32_scratch(scratch, 2 * dims.hidden)?;
        let [y, yh, ..] = outputs else { invalid!("RNN computes 2 outputs, got {}", outputs.len()) };
        if y.data.len() != dims.y_len() || yh.data.len() != dims.state_len() {
            invalid!("RNN outputs do not have the inferred sizes");
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
    use crate::ops::linalg::common::testutil::{Rng, assert_close, rand_vec};
    use crate::tensor::Tensor;

    fn rnn(a: &Attrs) -> Rnn {
        Rnn::build(a, 14).unwrap()
    }

    #[test]
    fn hand_checked_two_steps() {
        // One unit: H1 = tanh(1·1 + 0.5·0 + 0.25) , H2 = tanh(−1 + 0.5·H1 + 0.25).
        let x = Tensor::from_f32(&[2, 1, 1], vec![1.0, -1.0]).unwrap();
        let w = Tensor::from_f32(&[1, 1, 1], vec![1.0]).unwrap();
        let r = Tensor::from_f32(&[1, 1, 1], vec![0.5]).unwrap();
        let b = Tensor::from_f32(&[1, 2], vec![0.125, 0.125]).unwrap();
        let out = run(&rnn(&Attrs::new()), &[Some(&x), Some(&w), Some(&r), Some(&b)]).unwrap();
        let h1 = 1.25f64.tanh();
        let h2 = (-0.75 + 0.5 * h1).tanh();
        assert_close(&out[0], &[h1 as f32, h2 as f32]);
        assert_close(&out[1], &[h2 as f32]);
    }

    /// Expected values from onnxruntime 1.32 (see `testutil::pat` for the inputs).
    #[test]
    fn against_onnxruntime() {
        let case = Case { seq: 3, batch: 2, input: 3, hidden: 2, nd: 2, gates: 1 };
        let [x, w, r, b, h0, _, _] = case.pattern_inputs();
        let a = with_acts(attrs(&[("direction", "bidirectional")], &[], &[]), &["Relu", "Sigmoid"], &[], &[]);
        let sl = lens(&[1, 3]);
        let out = run(&rnn(&a), &[Some(&x), Some(&w), Some(&r), Some(&b), Some(&sl), Some(&h0)]).unwrap();
        let y = vec![
            0.0000000e+00,
            3.0999997e-01,
            0.0000000e+00,
            8.9999989e-02,
            6.5248948e-01,
            5.3991491e-01,
            5.9276354e-01,
            4.9154878e-01,
            0.0000000e+00,
            0.0000000e+00,
            0.0000000e+00,
            0.0000000e+00,
            0.0000000e+00,
            0.0000000e+00,
            6.0955316e-01,
            4.8254523e-01,
            0.0000000e+00,
            0.0000000e+00,
            0.0000000e+00,
            5.0000000e-01,
            0.0000000e+00,
            0.0000000e+00,
            5.1499552e-01,
            4.3782350e-01,
        ];
        let yh = vec![
            0.0000000e+00,
            3.0999997e-01,
            0.0000000e+00,
            5.0000000e-01,
            6.5248948e-01,
            5.3991491e-01,
            5.9276354e-01,
            4.9154878e-01,
        ];
        assert_close(&out[0], &y);
        assert_close(&out[1], &yh);
    }

    #[test]
    fn random_against_naive() {
        let mut rng = Rng(29);
        for (dir, nd) in [("forward", 1), ("reverse", 1), ("bidirectional", 2)] {
            let c = Case { seq: 5, batch: 3, input: 13, hidden: 7, nd, gates: 1 };
            let h = c.hidden;
            let x = rand_vec(&mut rng, c.seq * c.batch * c.input, -1.0, 1.0);
            let w = rand_vec(&mut rng, nd * h * c.input, -0.5, 0.5);
            let r = rand_vec(&mut rng, nd * h * h, -0.5, 0.5);
            let b = rand_vec(&mut rng, nd * 2 * h, -0.5, 0.5);
            let lengths = [5i32, 2, 4];
            // Naive: explicit loops, each batch entry over its own valid steps.
            let mut y = vec![0f32; c.seq * nd * c.batch * h];
            let mut yh = vec![0f32; nd * c.batch * h];
            for d in 0..nd {
                for bi in 0..c.batch {
                    let len = lengths[bi] as usize;
                    let times: Vec<usize> =
                        if d == 1 || dir == "reverse" { (0..len).rev().collect() } else { (0..len).collect() };
                    let mut hs = vec![0f64; h];
                    for &t in &times {
                        hs = (0..h)
                            .map(|j| {
                                let mut v = b[d * 2 * h + j] as f64 + b[d * 2 * h + h + j] as f64;
                                v += (0..c.input)
                                    .map(|k| {
                                        x[(t * c.batch + bi) * c.input + k] as f64 * w[(d * h + j) * c.input + k] as f64
                                    })
                                    .sum::<f64>();
                                v += (0..h).map(|k| hs[k] * r[(d * h + j) * h + k] as f64).sum::<f64>();
                                v.tanh()
                            })
                            .collect();
                        for j in 0..h {
                            y[((t * nd + d) * c.batch + bi) * h + j] = hs[j] as f32;
                        }
                    }
                    for j in 0..h {
                        yh[(d * c.batch + bi) * h + j] = hs[j] as f32;
                    }
                }
            }
            let t = |shape: &[usize], v: &[f32]| Tensor::from_f32(shape, v.to_vec()).unwrap();
            let (xs, ws, rs, bs) =
                (t(&[c.seq, c.batch, c.input], &x), t(&[nd, h, c.input], &w), t(&[nd, h, h], &r), t(&[nd, 2 * h], &b));
            let sl = lens(&lengths);
            let out = run(
                &rnn(&attrs(&[("direction", dir)], &[], &[])),
                &[Some(&xs), Some(&ws), Some(&rs), Some(&bs), Some(&sl)],
            )
            .unwrap();
            assert_close(&out[0], &y);
            assert_close(&out[1], &yh);
        }
    }

    #[test]
    fn errors() {
        let c = Case { seq: 3, batch: 2, input: 3, hidden: 2, nd: 1, gates: 1 };
        let [x, w, r, b, h0, _, _] = c.pattern_inputs();
        let op = rnn(&Attrs::new());
        assert!(run(&op, &[Some(&x), Some(&w), Some(&r), Some(&b), None, Some(&h0)]).is_ok());
        let bad_h0 = Tensor::from_f32(&[1, 3, 2], vec![0.0; 6]).unwrap();
        assert!(run(&op, &[Some(&x), Some(&w), Some(&r), None, None, Some(&bad_h0)]).is_err(), "initial_h batch 3");
        let bad_x = Tensor::from_f32(&[3, 2, 4], vec![0.0; 24]).unwrap();
        assert!(run(&op, &[Some(&bad_x), Some(&w), Some(&r)]).is_err(), "input size 4 vs W's 3");
        let f16_w = crate::ops::linalg::common::testutil::f16s(&[1, 2, 3], &[0.0; 6]);
        assert!(run(&op, &[Some(&x), Some(&f16_w), Some(&r)]).is_err(), "mixed types");
        assert!(Rnn::build(&with_acts(Attrs::new(), &["Tanh", "Tanh", "Tanh"], &[], &[]), 14).is_err());
    }
}
