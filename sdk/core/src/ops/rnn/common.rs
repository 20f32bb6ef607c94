//! Shared machinery of the recurrent ops (LSTM, GRU, RNN): attributes common to all three
//! (direction, hidden_size, activations, clip, layout), input shape checks, tensor layout
//! indexing, and the f32 scratch state.

use crate::cpu;
use crate::error::Result;
use crate::ops::{Attrs, InferInput, TypeShape, optional, required};
use crate::tensor::{DType, Element, TensorRef, numel};
use crate::{invalid, invalid_err};

/// Most activations one op holds: 3 per direction (LSTM's f, g, h), 2 directions.
pub const MAX_ACTIVATIONS: usize = 6;

/// An activation function of a recurrent cell, with its parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Activation {
    /// `max(0, x)`.
    Relu,
    /// `tanh(x)`.
    Tanh,
    /// `1 / (1 + e^-x)`.
    Sigmoid,
    /// `alpha·x + beta`.
    Affine(f32, f32),
    /// `x` if `x ≥ 0` else `alpha·x`.
    LeakyRelu(f32),
    /// `x` if `x ≥ alpha` else 0.
    ThresholdedRelu(f32),
    /// `alpha·tanh(beta·x)`.
    ScaledTanh(f32, f32),
    /// `min(max(alpha·x + beta, 0), 1)`.
    HardSigmoid(f32, f32),
    /// `x` if `x ≥ 0` else `alpha·(e^x − 1)`.
    Elu(f32),
    /// `x / (1 + |x|)`.
    Softsign,
    /// `ln(1 + e^x)`.
    Softplus,
}

impl Activation {
    /// Applies the function.
    pub fn apply(self, x: f32) -> f32 {
        match self {
            Activation::Relu => x.max(0.0),
            Activation::Tanh => x.tanh(),
            Activation::Sigmoid => 1.0 / (1.0 + (-x).exp()),
            Activation::Affine(a, b) => a * x + b,
            Activation::LeakyRelu(a) => {
                if x >= 0.0 {
                    x
                } else {
                    a * x
                }
            }
            Activation::ThresholdedRelu(a) => {
                if x >= a {
                    x
                } else {
                    0.0
                }
            }
            Activation::ScaledTanh(a, b) => a * (b * x).tanh(),
            Activation::HardSigmoid(a, b) => (a * x + b).clamp(0.0, 1.0),
            Activation::Elu(a) => {
                if x >= 0.0 {
                    x
                } else {
                    a * (x.exp() - 1.0)
                }
            }
            Activation::Softsign => x / (1.0 + x.abs()),
            // Stable for large |x|: ln(1 + e^x) = max(x, 0) + ln(1 + e^-|x|).
            Activation::Softplus => x.max(0.0) + (-x.abs()).exp().ln_1p(),
        }
    }

    /// Parses a name (case-insensitive, as onnxruntime accepts), taking `alpha`/`beta` from
    /// the lists where the function uses them, in order, else the default of the matching
    /// ONNX operator.
    fn parse(
        name: &str,
        alphas: &mut impl Iterator<Item = f32>,
        betas: &mut impl Iterator<Item = f32>,
    ) -> Result<Activation> {
        let mut a = |d: f32| alphas.next().unwrap_or(d);
        Ok(match name.to_ascii_lowercase().as_str() {
            "relu" => Activation::Relu,
            "tanh" => Activation::Tanh,
            "sigmoid" => Activation::Sigmoid,
            "affine" => {
                let al = a(1.0);
                Activation::Affine(al, betas.next().unwrap_or(0.0))
            }
            "leakyrelu" => Activation::LeakyRelu(a(0.01)),
            "thresholdedrelu" => Activation::ThresholdedRelu(a(1.0)),
            "scaledtanh" => {
                let al = a(1.0);
                Activation::ScaledTanh(al, betas.next().unwrap_or(1.0))
            }
            "hardsigmoid" => {
                let al = a(0.2);
                Activation::HardSigmoid(al, betas.next().unwrap_or(0.5))
            }
            "elu" => Activation::Elu(a(1.0)),
            "softsign" => Activation::Softsign,
            "softplus" => Activation::Softplus,
            _ => invalid!(
                "unknown activation `{name}` (expected one of Relu, Tanh, Sigmoid, Affine, LeakyRelu, \
                 ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus)"
            ),
        })
    }
}

/// Direction of a recurrent op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Over time steps 0, 1, ...
    Forward,
    /// From the last valid time step back to 0.
    Reverse,
    /// Both, forward as direction 0 and reverse as direction 1.
    Bidirectional,
}

impl Direction {
    /// 1 or 2.
    pub fn count(self) -> usize {
        if self == Direction::Bidirectional { 2 } else { 1 }
    }
    /// Whether direction index `d` runs backwards in time.
    pub fn is_reverse(self, d: usize) -> bool {
        self == Direction::Reverse || (self == Direction::Bidirectional && d == 1)
    }
}

/// Attributes all recurrent ops share.
#[derive(Clone, Debug, PartialEq)]
pub struct RnnAttrs {
    /// `hidden_size`, if given (else taken from R's shape).
    pub hidden_size: Option<usize>,
    /// `direction`.
    pub direction: Direction,
    /// `clip`: gate pre-activations are clamped to `[-clip, clip]`.
    pub clip: Option<f32>,
    /// `layout` 1 puts the batch dim first (opset 14).
    pub batch_first: bool,
    /// The activations, `per_dir` for each direction.
    pub acts: [Activation; MAX_ACTIVATIONS],
    /// Activations per direction.
    pub per_dir: usize,
}

impl RnnAttrs {
    /// Parses the shared attributes; `defaults` are the activations of one direction.
    pub fn parse(attrs: &Attrs, opset: i64, defaults: &[Activation]) -> Result<RnnAttrs> {
        let per_dir = defaults.len();
        let hidden_size = match attrs.int("hidden_size")? {
            None => None,
            Some(h) if h > 0 => Some(usize::try_from(h).map_err(|_| invalid_err!("hidden_size {h} is too large"))?),
            Some(h) => invalid!("hidden_size must be positive, got {h}"),
        };
        let direction = match attrs.string_or("direction", "forward")?.as_str() {
            "forward" => Direction::Forward,
            "reverse" => Direction::Reverse,
            "bidirectional" => Direction::Bidirectional,
            other => invalid!("direction must be forward, reverse or bidirectional, got `{other}`"),
        };
        let clip = match attrs.float("clip")? {
            None => None,
            Some(c) if c > 0.0 => Some(c),
            Some(c) => invalid!("clip must be positive, got {c}"),
        };
        let batch_first = match attrs.int("layout")? {
            None | Some(0) => false,
            Some(1) if opset >= 14 => true,
            Some(1) => invalid!("layout = 1 needs opset 14, the model has opset {opset}"),
            Some(v) => invalid!("layout must be 0 or 1, got {v}"),
        };
        if attrs.int("input_forget")?.is_some_and(|v| v != 0 && v != 1) {
            invalid!("input_forget must be 0 or 1");
        }
        let nd = direction.count();
        let mut acts = [Activation::Tanh; MAX_ACTIVATIONS];
        match attrs.strings("activations")? {
            None => {
                for d in 0..nd {
                    acts[d * per_dir..(d + 1) * per_dir].copy_from_slice(defaults);
                }
            }
            Some(names) => {
                // One direction's list serves both directions of a bidirectional op.
                if names.len() != per_dir * nd && names.len() != per_dir {
                    invalid!(
                        "activations lists {} functions, expected {} ({} per direction)",
                        names.len(),
                        per_dir * nd,
                        per_dir
                    );
                }
                let alphas = attrs.floats("activation_alpha")?.unwrap_or_default();
                let betas = attrs.floats("activation_beta")?.unwrap_or_default();
                let (mut al, mut be) = (alphas.into_iter(), betas.into_iter());
                for (i, n) in names.iter().enumerate() {
                    acts[i] = Activation::parse(n, &mut al, &mut be)?;
                }
                if names.len() < per_dir * nd {
                    let (first, rest) = acts.split_at_mut(per_dir);
                    rest[..per_dir].copy_from_slice(first);
                }
            }
        }
        Ok(RnnAttrs { hidden_size, direction, clip, batch_first, acts, per_dir })
    }

    /// Activation `i` of direction `d`.
    pub fn act(&self, d: usize, i: usize) -> Activation {
        self.acts[d * self.per_dir + i]
    }

    /// Clamps a gate pre-activation when `clip` is set.
    pub fn clip(&self, x: f32) -> f32 {
        match self.clip {
            Some(c) => x.clamp(-c, c),
            None => x,
        }
    }
}

/// The sizes of one recurrent op's computation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dims {
    /// Time steps.
    pub seq: usize,
    /// Batch size.
    pub batch: usize,
    /// Input features.
    pub input: usize,
    /// Hidden size.
    pub hidden: usize,
    /// Number of directions.
    pub nd: usize,
    /// Whether the batch dim comes first (layout 1).
    pub batch_first: bool,
}

impl Dims {
    /// The shape of Y.
    pub fn y_shape(&self) -> Vec<usize> {
        if self.batch_first {
            vec![self.batch, self.seq, self.nd, self.hidden]
        } else {
            vec![self.seq, self.nd, self.batch, self.hidden]
        }
    }
    /// Number of elements of Y.
    pub fn y_len(&self) -> usize {
        self.seq * self.nd * self.batch * self.hidden
    }
    /// Number of elements of a state tensor.
    pub fn state_len(&self) -> usize {
        self.nd * self.batch * self.hidden
    }
    /// The shape of a state tensor (initial_h, Y_h, ...).
    pub fn state_shape(&self) -> [usize; 3] {
        if self.batch_first { [self.batch, self.nd, self.hidden] } else { [self.nd, self.batch, self.hidden] }
    }
    /// Offset of X's row for time `t`, batch `b`.
    pub fn x_at(&self, t: usize, b: usize) -> usize {
        let row = if self.batch_first { b * self.seq + t } else { t * self.batch + b };
        row * self.input
    }
    /// Offset of Y's row for time `t`, direction `d`, batch `b`.
    pub fn y_at(&self, t: usize, d: usize, b: usize) -> usize {
        let row = if self.batch_first { (b * self.seq + t) * self.nd + d } else { (t * self.nd + d) * self.batch + b };
        row * self.hidden
    }
    /// Offset of a state tensor's row for direction `d`, batch `b`.
    pub fn s_at(&self, d: usize, b: usize) -> usize {
        let row = if self.batch_first { b * self.nd + d } else { d * self.batch + b };
        row * self.hidden
    }
}

/// Checks the shapes of X, W, R, B, sequence_lens and initial_h (inputs 0 to 5, the same in
/// all three ops) for an op with `gates` gates, and returns the sizes. Allocates nothing unless it fails.
pub fn check_inputs(at: &RnnAttrs, gates: usize, s: &[Option<&[usize]>; 8]) -> Result<Dims> {
    let need = |i: usize, what: &str| s[i].ok_or_else(|| invalid_err!("missing required input #{i} ({what})"));
    let (x, w, r) = (need(0, "X")?, need(1, "W")?, need(2, "R")?);
    let (b, seq_lens, h0) = (s[3], s[4], s[5]);
    if x.len() != 3 {
        invalid!("X must be 3-D, got {x:?}");
    }
    let (seq, batch) = if at.batch_first { (x[1], x[0]) } else { (x[0], x[1]) };
    let input = x[2];
    let nd = at.direction.count();
    if r.len() != 3 {
        invalid!("R must be 3-D [num_directions, {gates}·hidden_size, hidden_size], got {r:?}");
    }
    let hidden = at.hidden_size.unwrap_or(r[2]);
    let gh = gates.checked_mul(hidden).ok_or_else(|| invalid_err!("hidden_size {hidden} is too large"))?;
    if r != [nd, gh, hidden] {
        invalid!(
            "R has shape {r:?}, expected [{nd}, {gh}, {hidden}] (num_directions, {gates}·hidden_size, hidden_size)"
        );
    }
    if w != [nd, gh, input] {
        invalid!("W has shape {w:?}, expected [{nd}, {gh}, {input}] (num_directions, {gates}·hidden_size, input_size)");
    }
    if let Some(b) = b
        && b != [nd, 2 * gh]
    {
        invalid!("B has shape {b:?}, expected [{nd}, {}]", 2 * gh);
    }
    if let Some(s) = seq_lens
        && s != [batch]
    {
        invalid!("sequence_lens has shape {s:?}, expected [{batch}]");
    }
    if [seq, nd, batch, hidden].iter().try_fold(1usize, |acc, &d| acc.checked_mul(d)).is_none() {
        invalid!("Y of X {x:?} and hidden_size {hidden} would have more elements than fit in memory");
    }
    let dims = Dims { seq, batch, input, hidden, nd, batch_first: at.batch_first };
    if let Some(h) = h0 {
        check_state(h, &dims, "initial_h")?;
    }
    Ok(dims)
}

/// The shapes of up to 8 inputs (`None` where omitted), gathered without allocating.
pub fn shapes<'a, T: Copy>(inputs: &[Option<T>], shape: impl Fn(T) -> &'a [usize]) -> [Option<&'a [usize]>; 8] {
    std::array::from_fn(|i| optional(inputs, i).map(&shape))
}

/// Errors unless a state tensor's shape is `dims.state_shape()`.
pub fn check_state(shape: &[usize], dims: &Dims, what: &str) -> Result<()> {
    if shape != dims.state_shape() {
        invalid!("{what} has shape {shape:?}, expected {:?}", dims.state_shape());
    }
    Ok(())
}

/// Type checks for inference: X float, every other float input of X's type,
/// sequence_lens (input 4) integer. Returns X's type.
pub fn check_types(inputs: &[Option<InferInput>], max_inputs: usize) -> Result<DType> {
    if inputs.len() < 3 || inputs.len() > max_inputs {
        invalid!("expects 3 to {max_inputs} inputs, got {}", inputs.len());
    }
    let x = required(inputs, 0, "X")?;
    if !x.dtype.is_float() {
        invalid!("X of type {} is not supported (float32 or float16)", x.dtype);
    }
    required(inputs, 1, "W")?;
    required(inputs, 2, "R")?;
    for i in 1..inputs.len() {
        if let Some(t) = optional(inputs, i) {
            if i == 4 {
                if !matches!(t.dtype, DType::I32 | DType::I64) {
                    invalid!("sequence_lens must be int32, got {}", t.dtype);
                }
            } else if t.dtype != x.dtype {
                invalid!("input #{i} is {}, X is {}: types must match", t.dtype, x.dtype);
            }
        }
    }
    Ok(x.dtype)
}

/// Output types: Y, then `n_states` state outputs (Y_h, and Y_c for LSTM).
pub fn out_types(dtype: DType, dims: &Dims, n_states: usize) -> Vec<TypeShape> {
    let mut v = vec![TypeShape::new(dtype, dims.y_shape())];
    for _ in 0..n_states {
        v.push(TypeShape::new(dtype, dims.state_shape().to_vec()));
    }
    v
}

/// Errors unless a run-time view's element count matches its shape.
pub fn check_len(t: &TensorRef, what: &str) -> Result<()> {
    if t.data.len() != numel(t.shape) {
        invalid!("{what} has {} elements but shape {:?}", t.data.len(), t.shape);
    }
    Ok(())
}

/// The valid length of batch entry `b`: `sequence_lens[b]`, or all steps without it.
pub fn seq_len(seq_lens: Option<TensorRef>, b: usize, dims: &Dims) -> Result<usize> {
    let Some(s) = seq_lens else { return Ok(dims.seq) };
    let v = match s.data {
        crate::tensor::DataRef::I32(v) => v.get(b).map(|&x| x as i64),
        crate::tensor::DataRef::I64(v) => v.get(b).copied(),
        _ => None,
    };
    match v {
        Some(n) if n >= 0 && n as u64 <= dims.seq as u64 => Ok(n as usize),
        Some(n) => invalid!("sequence_lens[{b}] = {n} is outside [0, {}]", dims.seq),
        None => invalid!("sequence_lens has no int32 entry {b}"),
    }
}

/// Views `scratch` as `n` f32 values (the executor's scratch is at least 8-byte aligned).
pub fn f32_scratch(scratch: &mut [u8], n: usize) -> Result<&mut [f32]> {
    // SAFETY: any bit pattern is a valid f32; align_to_mut only yields aligned whole f32s.
    let bytes = scratch.len();
    let (pre, mid, _) = unsafe { scratch.align_to_mut::<f32>() };
    if !pre.is_empty() || mid.len() < n {
        invalid!("scratch of {bytes} bytes is misaligned or smaller than the {} bytes needed", n * 4);
    }
    Ok(&mut mid[..n])
}

/// `Σ w[i]·x[i]`, for a weight row and an input row of the op's element type: f32 rows on
/// the vectorized kernel ([`cpu::dot`]), other types summed in f64.
pub fn dot_tt<T: Element>(w: &[T], x: &[T]) -> f64 {
    if let (Some(w), Some(x)) = (as_f32(w), as_f32(x)) {
        return cpu::dot::dot(cpu::isa::active(), w, x) as f64;
    }
    w.iter().zip(x).map(|(a, b)| a.to_f64() * b.to_f64()).sum()
}

/// `Σ w[i]·h[i]`, for a weight row and an f32 state row (as [`dot_tt`]).
pub fn dot_tf<T: Element>(w: &[T], h: &[f32]) -> f64 {
    if let Some(w) = as_f32(w) {
        return cpu::dot::dot(cpu::isa::active(), w, h) as f64;
    }
    w.iter().zip(h).map(|(a, &b)| a.to_f64() * b as f64).sum()
}

/// The slice itself when the element type is f32.
fn as_f32<T: Element>(s: &[T]) -> Option<&[f32]> {
    // SAFETY: f32 is the only Element whose DTYPE is F32, so T is f32 here.
    (T::DTYPE == DType::F32).then(|| unsafe { std::slice::from_raw_parts(s.as_ptr() as *const f32, s.len()) })
}

/// Element `i` of an optional tensor as f32, or 0 when the tensor is absent.
pub fn get_or_zero<T: Element>(s: Option<&[T]>, i: usize) -> f32 {
    s.and_then(|s| s.get(i)).map_or(0.0, |v| v.to_f64() as f32)
}

/// Writes an f32 row into an output of the op's element type.
pub fn store<T: Element>(dst: &mut [T], src: &[f32]) {
    for (d, &s) in dst.iter_mut().zip(src) {
        *d = T::from_f64(s as f64);
    }
}

/// Runs a recurrent cell over every direction, batch entry and valid time step, and writes
/// Y and the final states. The state of one batch entry is `n_states` rows of `hidden` f32
/// (row 0 is `h`; LSTM's row 1 is `c`), started from `init[i]` (or zeros) and kept in
/// `scratch`, whose remainder is handed to the cell as work space.
///
/// `cell(d, x_row, state, work)` advances `state` by one step. Time steps past a batch
/// entry's `sequence_lens` give zero rows of Y; the final states are those after its last
/// valid step (its initial state when the length is 0). A reverse direction runs from the
/// last valid step down to step 0.
#[allow(clippy::too_many_arguments)]
pub fn drive<T: Element>(
    at: &RnnAttrs,
    dims: &Dims,
    seq_lens: Option<TensorRef>,
    x: &[T],
    init: &[Option<&[T]>],
    y: &mut [T],
    finals: &mut [&mut [T]],
    scratch: &mut [f32],
    mut cell: impl FnMut(usize, &[T], &mut [f32], &mut [f32]),
) -> Result<()> {
    let h = dims.hidden;
    let n_states = init.len();
    let (state, work) = scratch.split_at_mut(n_states * h);
    for d in 0..dims.nd {
        let rev = at.direction.is_reverse(d);
        for b in 0..dims.batch {
            let len = seq_len(seq_lens, b, dims)?;
            let s0 = dims.s_at(d, b);
            for (i, src) in init.iter().enumerate() {
                let row = &mut state[i * h..(i + 1) * h];
                match src {
                    Some(src) => {
                        for (v, s) in row.iter_mut().zip(&src[s0..s0 + h]) {
                            *v = s.to_f64() as f32;
                        }
                    }
                    None => row.fill(0.0),
                }
            }
            for step in 0..len {
                let t = if rev { len - 1 - step } else { step };
                let x0 = dims.x_at(t, b);
                cell(d, &x[x0..x0 + dims.input], state, work);
                let y0 = dims.y_at(t, d, b);
                store(&mut y[y0..y0 + h], &state[..h]);
            }
            for t in len..dims.seq {
                let y0 = dims.y_at(t, d, b);
                y[y0..y0 + h].fill(T::default());
            }
            for (i, out) in finals.iter_mut().enumerate() {
                store(&mut out[s0..s0 + h], &state[i * h..(i + 1) * h]);
            }
        }
    }
    Ok(())
}
