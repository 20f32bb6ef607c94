//! Test helpers of the rnn family: deterministic input patterns shared with the Python
//! script that produced the pasted onnxruntime expectations, and a case builder.

use crate::ops::{Attr, Attrs, Op, eval};
use crate::tensor::{Tensor, TensorData};

/// `((i·mul mod m) − m/2) · scale` for `i` in `0..n`: reproducible in numpy and here.
pub fn pat(n: usize, mul: usize, m: usize, scale: f32) -> Vec<f32> {
    (0..n).map(|i| ((i * mul % m) as i64 - (m / 2) as i64) as f32 * scale).collect()
}

/// The sizes of a test case.
#[derive(Clone, Copy, Debug)]
pub struct Case {
    pub seq: usize,
    pub batch: usize,
    pub input: usize,
    pub hidden: usize,
    pub nd: usize,
    pub gates: usize,
}

impl Case {
    /// The pattern inputs X, W, R, B, initial_h, initial_c, P of the Python generator
    /// (layout 0).
    pub fn pattern_inputs(&self) -> [Tensor; 7] {
        let Case { seq, batch, input, hidden: h, nd, gates: g } = *self;
        let t = |shape: &[usize], v: Vec<f32>| Tensor::from_f32(shape, v).unwrap();
        [
            t(&[seq, batch, input], pat(seq * batch * input, 7, 11, 0.2)),
            t(&[nd, g * h, input], pat(nd * g * h * input, 5, 13, 0.05)),
            t(&[nd, g * h, h], pat(nd * g * h * h, 3, 7, 0.1)),
            t(&[nd, 2 * g * h], pat(nd * 2 * g * h, 11, 17, 0.03)),
            t(&[nd, batch, h], pat(nd * batch * h, 13, 9, 0.1)),
            t(&[nd, batch, h], pat(nd * batch * h, 5, 7, 0.15)),
            t(&[nd, 3 * h], pat(nd * 3 * h, 3, 5, 0.2)),
        ]
    }
}

/// Attributes: strings, ints, floats and float lists by name.
pub fn attrs(strs: &[(&str, &str)], ints: &[(&str, i64)], floats: &[(&str, f32)]) -> Attrs {
    let mut a = Attrs::new();
    for (k, v) in strs {
        a.insert(k, Attr::String(v.as_bytes().to_vec()));
    }
    for (k, v) in ints {
        a.insert(k, Attr::Int(*v));
    }
    for (k, v) in floats {
        a.insert(k, Attr::Float(*v));
    }
    a
}

/// Adds `activations`, `activation_alpha` and `activation_beta`.
pub fn with_acts(mut a: Attrs, names: &[&str], alpha: &[f32], beta: &[f32]) -> Attrs {
    a.insert("activations", Attr::Strings(names.iter().map(|s| s.as_bytes().to_vec()).collect()));
    a.insert("activation_alpha", Attr::Floats(alpha.to_vec()));
    a.insert("activation_beta", Attr::Floats(beta.to_vec()));
    a
}

/// An int32 sequence_lens tensor.
pub fn lens(v: &[i32]) -> Tensor {
    Tensor::new(vec![v.len()], TensorData::I32(v.to_vec())).unwrap()
}

/// Runs an op, returning the outputs as f32 vectors.
pub fn run(op: &dyn Op, ins: &[Option<&Tensor>]) -> crate::error::Result<Vec<Vec<f32>>> {
    Ok(eval(op, ins)?.iter().map(|t| t.to_f32_vec().unwrap()).collect())
}

/// Swaps dims 0 and 1 of a row-major `[a, b, rest]` array.
pub fn swap01(v: &[f32], a: usize, b: usize, rest: usize) -> Vec<f32> {
    let mut out = vec![0f32; v.len()];
    for i in 0..a {
        for j in 0..b {
            for k in 0..rest {
                out[(j * a + i) * rest + k] = v[(i * b + j) * rest + k];
            }
        }
    }
    out
}
