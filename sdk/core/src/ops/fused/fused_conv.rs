//! `edgert.FusedConv`: Conv + bias, then an optional residual Add, then an optional
//! activation, in one pass over the output (made by `passes::fuse_conv_epilogue`).
//!
//! Inputs: `X`, `W`, optional `B`, optional residual `R` (shaped like the output, or with
//! fewer channels: the missing last channels count as zero, see `passes::fold_channel_pad`), optional
//! PRelu slope `S` (one per output channel). Attributes: Conv's, plus `activation`
//! (`Relu`, `LeakyRelu`, `Clip`, `HardSwish`, `Sigmoid`, `PRelu`; absent: none) with
//! `alpha` (LeakyRelu) or `min`/`max` (Clip), and an optional clamp after the activation,
//! `clamp_min`/`clamp_max` (a Max/Min with a constant that followed it in the model).
//!
//! 1-D and 2-D f32 convolutions run on the CPU backend (`cpu::conv`, a 1-D one as height 1);
//! any other rank or type runs the reference Conv, then the same epilogue.
//!
//! The weights `W` of a 1-D or 2-D, non-depthwise convolution of float32 `X` may be float16
//! (an `--precision fp16` layer, `passes::fp16_weights`): the GEMM converts them to f32 block
//! by block, so activations, bias and sums stay f32 and only the weights' storage halves.

use crate::cpu::conv::{Conv2d, conv2d};
use crate::cpu::conv_1x1_swapped::{self, PackedWeights};
use crate::cpu::gemm::AMatrix;
use crate::cpu::{Activation, Epilogue, Exec};
use crate::error::Result;
use crate::ops::nn::conv::Conv;
use crate::ops::{Attrs, InferInput, Op, TypeShape, optional, required};
use crate::tensor::{DType, DataRef, TensorMut, TensorRef};
use crate::{invalid, invalid_err};

/// The op type string.
pub const OP_TYPE: &str = "edgert.FusedConv";

/// Conv with a fused epilogue.
#[derive(Clone, PartialEq, Debug)]
pub struct FusedConv {
    /// The convolution.
    pub conv: Conv,
    /// The activation.
    pub activation: Activation,
    /// `(lo, hi)` applied after the activation.
    pub clamp: Option<(f32, f32)>,
    /// The weights transposed for `cpu::conv_1x1_swapped` (small-plane 1x1 convolutions),
    /// made on first use: W is constant (`passes::fuse_conv_epilogue` only fuses convolutions
    /// with constant weights).
    swapped: PackedWeights,
}

/// Parses `clamp_min`/`clamp_max` (either may be absent: unbounded on that side).
pub fn parse_clamp(attrs: &Attrs) -> Result<Option<(f32, f32)>> {
    let (lo, hi) = (attrs.float("clamp_min")?, attrs.float("clamp_max")?);
    if lo.is_none() && hi.is_none() {
        return Ok(None);
    }
    let (lo, hi) = (lo.unwrap_or(f32::NEG_INFINITY), hi.unwrap_or(f32::INFINITY));
    if lo.is_nan() || hi.is_nan() {
        invalid!("clamp bounds must be numbers, got {lo} and {hi}");
    }
    Ok(Some((lo, hi)))
}

/// Writes a clamp into attributes (the inverse of [`parse_clamp`]).
pub fn clamp_attrs(clamp: Option<(f32, f32)>, attrs: &mut Attrs) {
    use crate::ops::Attr;
    if let Some((lo, hi)) = clamp {
        if lo > f32::NEG_INFINITY {
            attrs.insert("clamp_min", Attr::Float(lo));
        }
        if hi < f32::INFINITY {
            attrs.insert("clamp_max", Attr::Float(hi));
        }
    }
}

/// Parses the `activation` attribute family into an [`Activation`].
pub fn parse_activation(attrs: &Attrs) -> Result<Activation> {
    Ok(match attrs.string("activation")?.as_deref() {
        None | Some("") => Activation::None,
        Some("Relu") => Activation::Relu,
        Some("LeakyRelu") => Activation::LeakyRelu(attrs.float_or("alpha", 0.01)?),
        Some("Clip") => {
            Activation::Clip(attrs.float_or("min", f32::NEG_INFINITY)?, attrs.float_or("max", f32::INFINITY)?)
        }
        Some("HardSwish") => Activation::HardSwish,
        Some("Sigmoid") => Activation::Sigmoid,
        Some("PRelu") => Activation::PRelu,
        Some(other) => invalid!("unknown fused activation `{other}`"),
    })
}

/// Writes an [`Activation`] into attributes (the inverse of [`parse_activation`]).
pub fn activation_attrs(act: Activation, attrs: &mut Attrs) {
    use crate::ops::Attr;
    let name = match act {
        Activation::None => return,
        Activation::Relu => "Relu",
        Activation::LeakyRelu(a) => {
            attrs.insert("alpha", Attr::Float(a));
            "LeakyRelu"
        }
        Activation::Clip(lo, hi) => {
            attrs.insert("min", Attr::Float(lo));
            attrs.insert("max", Attr::Float(hi));
            "Clip"
        }
        Activation::HardSwish => "HardSwish",
        Activation::Sigmoid => "Sigmoid",
        Activation::PRelu => "PRelu",
    };
    attrs.insert("activation", Attr::String(name.as_bytes().to_vec()));
}

impl FusedConv {
    /// Parses the attributes.
    pub fn build(attrs: &Attrs, opset: i64) -> Result<FusedConv> {
        Ok(FusedConv {
            conv: Conv::build(attrs, opset)?,
            activation: parse_activation(attrs)?,
            clamp: parse_clamp(attrs)?,
            swapped: PackedWeights::default(),
        })
    }

    /// The 2-D geometry for the fast kernel, when it applies.
    fn conv2d(&self, x: &[usize], w: &[usize], b: Option<&[usize]>) -> Result<Option<Conv2d>> {
        conv2d_geometry(&self.conv, x, w, b)
    }
}

/// The 2-D geometry of `conv` for these shapes, or `None` for another spatial rank. A 1-D
/// convolution (`[N, C, L]`) is the 2-D one of height 1: its tensors have the same memory
/// layout as `[N, C, 1, L]`, so it runs on the same kernels.
pub(crate) fn conv2d_geometry(conv: &Conv, x: &[usize], w: &[usize], b: Option<&[usize]>) -> Result<Option<Conv2d>> {
    let (geo, n, c, m) = conv.check(x, w, b)?;
    // (height, width) for each field; a 1-D convolution gets the height-1 identity.
    let pick = |v: &[usize], unit: usize| -> Option<[usize; 2]> {
        match geo.nsp {
            2 => Some([v[0], v[1]]),
            1 => Some([unit, v[0]]),
            _ => None,
        }
    };
    let (Some(input), Some(kernel), Some(stride), Some(dilation), Some(pad), Some(output)) = (
        pick(&geo.input, 1),
        pick(&geo.kernel, 1),
        pick(&geo.stride, 1),
        pick(&geo.dilation, 1),
        pick(&geo.pad_begin, 0),
        pick(&geo.output, 1),
    ) else {
        return Ok(None);
    };
    Ok(Some(Conv2d {
        n,
        c,
        h: input[0],
        w: input[1],
        m,
        group: conv.group,
        kh: kernel[0],
        kw: kernel[1],
        stride,
        dilation,
        pad,
        oh: output[0],
        ow: output[1],
    }))
}

/// The channels of the residual `r` (0 without one) for an output of shape `y`: R may have
/// fewer channels than Y (a folded zero channel Pad), never more (`infer` checks it too).
pub(crate) fn residual_channels(op: &str, r: Option<TensorRef>, y: &[usize]) -> Result<usize> {
    match r {
        Some(r) if r.shape.len() >= 2 && y.len() >= 2 && r.shape[1] <= y[1] => Ok(r.shape[1]),
        Some(r) => invalid!("{op}: residual R of shape {:?} for an output of {:?}", r.shape, y),
        None => Ok(0),
    }
}

/// Checks a fused convolution's epilogue inputs against its output `y`: the residual `r`
/// (shaped like `y`, or with fewer channels) and the PRelu slope `s` (one per channel, given
/// exactly when the activation is PRelu).
pub(crate) fn check_epilogue_inputs(
    y: &TypeShape,
    r: Option<InferInput>,
    s: Option<InferInput>,
    activation: Activation,
) -> Result<()> {
    // R is shaped like Y, or has fewer channels (a folded zero channel Pad).
    if let Some(r) = r
        && (r.dtype != y.dtype
            || r.shape.len() != y.shape.len()
            || r.shape.len() < 2
            || r.shape[1] > y.shape[1]
            || r.shape[0] != y.shape[0]
            || r.shape[2..] != y.shape[2..])
    {
        invalid!(
            "residual R must be {} {:?} like the output (or with fewer channels), got {} {:?}",
            y.dtype,
            y.shape,
            r.dtype,
            r.shape
        );
    }
    match (s, activation) {
        (Some(s), Activation::PRelu) => {
            if s.dtype != y.dtype || s.shape.iter().product::<usize>() != y.shape[1] {
                invalid!(
                    "PRelu slope S must hold one {} per output channel ({}), got {:?}",
                    y.dtype,
                    y.shape[1],
                    s.shape
                );
            }
        }
        (None, Activation::PRelu) => invalid!("activation PRelu needs the slope input S"),
        (Some(_), _) => invalid!("slope input S is only used with activation PRelu"),
        (None, _) => {}
    }
    Ok(())
}

impl Op for FusedConv {
    fn op_type(&self) -> &'static str {
        OP_TYPE
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        let mut conv_inputs: Vec<Option<InferInput>> = inputs[..inputs.len().min(3)].to_vec();
        if let [Some(x), Some(w), ..] = conv_inputs.as_mut_slice()
            && x.dtype == DType::F32
            && w.dtype == DType::F16
        {
            // Float16 weights: only where the fast GEMM path runs (1-D/2-D, not depthwise).
            let depthwise = w.shape.len() >= 2 && w.shape[1] == 1 && self.conv.group > 1;
            if !(3..=4).contains(&w.shape.len()) || depthwise {
                invalid!("float16 weights {:?} need a 1-D or 2-D, non-depthwise convolution", w.shape);
            }
            w.dtype = DType::F32;
        }
        let out = self.conv.infer(&conv_inputs)?;
        let y = &out[0];
        check_epilogue_inputs(y, inputs.get(3).copied().flatten(), inputs.get(4).copied().flatten(), self.activation)?;
        if y.dtype != DType::F32 && (inputs.len() > 3 || self.activation != Activation::None || self.clamp.is_some()) {
            invalid!("a fused epilogue needs f32 tensors, got {}", y.dtype);
        }
        Ok(out)
    }

    fn scratch_bytes(&self, inputs: &[Option<TypeShape>], _outputs: &[TypeShape]) -> usize {
        let (Some(Some(x)), Some(Some(w))) = (inputs.first(), inputs.get(1)) else { return 0 };
        let b = inputs.get(2).and_then(|b| b.as_ref()).map(|b| b.shape.as_slice());
        match self.conv2d(&x.shape, &w.shape, b) {
            Ok(Some(p)) if x.dtype == DType::F32 => p.scratch_floats() * 4,
            _ => 0,
        }
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], scratch: &mut [u8]) -> Result<()> {
        self.run_exec(inputs, outputs, scratch, &Exec::single())
    }

    fn run_exec(
        &self,
        inputs: &[Option<TensorRef>],
        outputs: &mut [TensorMut],
        scratch: &mut [u8],
        exec: &Exec,
    ) -> Result<()> {
        let x = required(inputs, 0, "X")?;
        let w = required(inputs, 1, "W")?;
        let b = optional(inputs, 2);
        let r = optional(inputs, 3);
        let s = optional(inputs, 4);
        let y = outputs.first_mut().ok_or_else(|| invalid_err!("FusedConv needs one output"))?;
        fn f32_data<'a>(t: Option<TensorRef<'a>>) -> Result<Option<&'a [f32]>> {
            t.map(|t| t.as_f32()).transpose()
        }
        let geo = self.conv2d(x.shape, w.shape, b.map(|b| b.shape))?;
        let residual_channels = residual_channels(OP_TYPE, r, y.shape)?;
        if let (Some(p), DType::F32) = (geo, x.dtype()) {
            let bias = f32_data(b)?;
            let ep = Epilogue {
                bias,
                residual: f32_data(r)?,
                ld_residual: p.positions(),
                residual_rows: residual_channels,
                activation: self.activation,
                slope: f32_data(s)?,
                clamp: self.clamp,
            };
            let need = p.scratch_floats();
            if scratch.len() < need * 4 {
                invalid!("FusedConv: scratch of {} bytes is smaller than the {} it needs", scratch.len(), need * 4);
            }
            // SAFETY: the scratch is 64-byte aligned (Op::run's contract) and holds `need` floats.
            let sc = unsafe { std::slice::from_raw_parts_mut(scratch.as_mut_ptr() as *mut f32, need) };
            let ws = match w.data {
                DataRef::F16(h) => AMatrix::F16(h),
                _ => AMatrix::F32(w.as_f32()?),
            };
            if let AMatrix::F32(wf) = ws
                && conv_1x1_swapped::takes(&p, exec.isa)
            {
                let packed = self.swapped.get(exec.isa, wf, p.m, p.c);
                conv_1x1_swapped::conv_1x1_swapped(exec, &p, x.as_f32()?, packed, &ep, y.as_f32_mut()?, sc);
                return Ok(());
            }
            return conv2d(exec, &p, x.as_f32()?, ws, &ep, y.as_f32_mut()?, sc);
        }
        // Any other rank or type: the reference Conv, then the epilogue on the whole output.
        self.conv.run(&inputs[..inputs.len().min(3)], std::slice::from_mut(y), scratch)?;
        if r.is_none() && self.activation == Activation::None && self.clamp.is_none() {
            return Ok(());
        }
        let (batch, m) = (y.shape[0], y.shape[1]);
        let per = y.shape[2..].iter().product::<usize>();
        let ep = Epilogue {
            bias: None,
            residual: f32_data(r)?,
            ld_residual: per,
            residual_rows: residual_channels,
            activation: self.activation,
            slope: f32_data(s)?,
            clamp: self.clamp,
        };
        let ys = y.as_f32_mut()?;
        for ni in 0..batch {
            let img = &mut ys[ni * m * per..(ni + 1) * m * per];
            let res_img = residual_channels * per;
            let sub = Epilogue { residual: ep.residual.map(|r| &r[ni * res_img..(ni + 1) * res_img]), ..ep };
            sub.apply_tile(img, per, 0, m, 0, per);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::{Isa, ThreadPool};
    use crate::ops::nn::test_util::Rng;
    use crate::ops::{Attr, eval};
    use crate::tensor::Tensor;

    /// Reference: the ONNX Conv op, then bias-free epilogue steps written out plainly.
    #[allow(clippy::too_many_arguments)]
    fn reference(
        attrs: &Attrs,
        x: &Tensor,
        w: &Tensor,
        b: &Tensor,
        r: Option<&Tensor>,
        act: Activation,
        s: &[f32],
        clamp: Option<(f32, f32)>,
    ) -> Vec<f32> {
        let conv = Conv::build(attrs, 17).unwrap();
        let y = eval(&conv, &[Some(x), Some(w), Some(b)]).unwrap().remove(0);
        let (m, per) = (y.shape()[1], y.shape()[2..].iter().product::<usize>());
        let mut v = y.as_f32().unwrap().to_vec();
        for (i, e) in v.iter_mut().enumerate() {
            // R may have fewer channels than Y: the missing ones count as zero.
            if let Some(r) = r {
                let (img, ch, pos, cr) = (i / (per * m), (i / per) % m, i % per, r.shape()[1]);
                if ch < cr {
                    *e += r.as_f32().unwrap()[(img * cr + ch) * per + pos];
                }
            }
            *e = act.apply(*e, s[(i / per) % m]);
            if let Some((lo, hi)) = clamp {
                *e = e.max(lo).min(hi);
            }
        }
        v
    }

    /// The fast 2-D path on every ISA this CPU has, single- and multi-threaded, against the
    /// reference over random geometries (remainder sizes, batch > 1, groups, depthwise,
    /// strides, dilations, asymmetric pads) and every activation.
    #[test]
    fn fast_conv_matches_reference_on_every_isa() {
        let mut rng = Rng::new(11);
        let pool = ThreadPool::new(3).unwrap();
        let acts = [
            Activation::None,
            Activation::Relu,
            Activation::LeakyRelu(0.1),
            Activation::Clip(-0.3, 0.4),
            Activation::HardSwish,
            Activation::Sigmoid,
            Activation::PRelu,
        ];
        // (n, c, h, w, m, group, kh, kw, stride, dilation, pads[t,l,b,r])
        type Case = (usize, usize, usize, usize, usize, usize, usize, usize, usize, usize, [i64; 4]);
        let cases: &[Case] = &[
            (1, 3, 13, 7, 5, 1, 3, 3, 1, 1, [1, 1, 1, 1]),
            (2, 4, 9, 11, 8, 1, 1, 1, 1, 1, [0, 0, 0, 0]),
            (1, 8, 12, 12, 8, 8, 3, 3, 1, 1, [1, 1, 1, 1]),
            (2, 6, 15, 9, 6, 6, 5, 5, 2, 1, [1, 2, 2, 1]),
            (1, 6, 10, 10, 9, 3, 3, 2, 2, 2, [0, 1, 1, 0]),
            (1, 16, 7, 7, 33, 1, 1, 1, 2, 1, [0, 0, 0, 0]),
            (1, 24, 32, 32, 24, 24, 3, 3, 2, 1, [0, 0, 1, 1]),
            (1, 3, 33, 31, 13, 1, 7, 7, 2, 1, [3, 3, 3, 3]),
            (1, 40, 6, 5, 70, 1, 3, 3, 1, 1, [1, 1, 1, 1]),
            (1, 5, 17, 19, 5, 5, 3, 3, 3, 2, [2, 1, 0, 2]),
            (2, 4, 9, 40, 4, 4, 7, 7, 1, 1, [3, 3, 3, 3]),
            (1, 3, 8, 33, 3, 3, 5, 5, 2, 1, [0, 0, 0, 0]),
            (1, 3, 128, 128, 24, 1, 5, 5, 2, 1, [1, 1, 2, 2]),
            (2, 5, 20, 36, 7, 1, 3, 3, 3, 2, [2, 3, 0, 1]),
            // im2col runs of every length class (rows of 52, 7 and 3 output columns across
            // one panel), and enough columns (2080) for the pack-per-block GEMM on 3 threads.
            (1, 16, 40, 52, 12, 1, 3, 3, 1, 1, [1, 1, 1, 1]),
            (2, 12, 14, 14, 10, 1, 3, 3, 2, 1, [1, 1, 1, 1]),
            (1, 10, 6, 6, 9, 1, 3, 3, 2, 1, [1, 0, 1, 1]),
            // Few input channels (the direct kernel on AVX2): dilated, batch 2, 5x3 with
            // asymmetric pads and odd widths.
            (2, 2, 11, 21, 7, 1, 3, 3, 1, 2, [2, 1, 0, 2]),
            (2, 4, 9, 17, 9, 1, 5, 3, 1, 1, [2, 1, 2, 1]),
            // Stride-1 depthwise read in place (masked loads, no padded copy): MediaPipe's
            // 5x5 at 7x7 and 14x14, blocks of 16 + a last of 8 or fewer, planes narrower
            // than the kernel, pads wider than the kernel's reach, an unpadded 3x3 whose
            // middle blocks need no mask, a 2x4 kernel (the generic loop), batch 2.
            (1, 6, 7, 7, 6, 6, 5, 5, 1, 1, [2, 2, 2, 2]),
            (2, 5, 14, 14, 5, 5, 5, 5, 1, 1, [2, 2, 2, 2]),
            (1, 3, 9, 29, 3, 3, 3, 3, 1, 1, [1, 1, 1, 1]),
            (1, 4, 3, 2, 4, 4, 5, 5, 1, 1, [3, 4, 2, 1]),
            (1, 3, 6, 45, 3, 3, 3, 3, 1, 1, [0, 0, 0, 0]),
            (2, 7, 5, 23, 7, 7, 2, 4, 1, 1, [1, 0, 0, 3]),
            // Stride 2 read in place on AVX-512 (even columns of two loads): 5x5 at 14 -> 7,
            // 70 columns -> blocks of 16, 16 and 3, a 3x3 with only right/bottom padding.
            (1, 4, 14, 14, 4, 4, 5, 5, 2, 1, [2, 2, 2, 2]),
            (2, 3, 9, 70, 3, 3, 3, 3, 2, 1, [1, 1, 1, 1]),
            (1, 5, 12, 11, 5, 5, 3, 3, 2, 1, [0, 0, 1, 1]),
            // Wide planes whose interior blocks take the unmasked AVX-512 loads: stride 2
            // (3x3, 75 columns) and stride 1 (5x5, 60 columns, batch 2).
            (1, 5, 21, 75, 5, 5, 3, 3, 2, 1, [1, 1, 1, 1]),
            (2, 4, 13, 60, 4, 4, 5, 5, 1, 1, [2, 2, 2, 2]),
            // Depthwise with channels in the lanes (cpu::depthwise_lanes, AVX-512, rows
            // narrower than 32): one whole group of 16, 3 groups with a last of 8 at batch
            // 2, stride 2 with asymmetric pads, dilation 2 with 31 columns and a group of
            // one channel, pads wider than the kernel's reach, stride 3 with a 3x7 kernel,
            // and 1-D.
            (1, 16, 7, 7, 16, 16, 5, 5, 1, 1, [2, 2, 2, 2]),
            (2, 40, 14, 14, 40, 40, 3, 3, 1, 1, [1, 1, 1, 1]),
            (1, 20, 28, 28, 20, 20, 5, 5, 2, 1, [1, 1, 2, 2]),
            (1, 17, 9, 31, 17, 17, 3, 3, 1, 2, [2, 2, 2, 2]),
            (1, 16, 3, 2, 16, 16, 5, 5, 1, 1, [3, 4, 2, 1]),
            (1, 18, 10, 23, 18, 18, 3, 7, 3, 1, [0, 3, 1, 0]),
            (1, 32, 0, 50, 32, 32, 1, 5, 2, 3, [0, 4, 0, 1]),
            // 1-D (h = 0 marks it: X is [n, c, w], pads are [left, right] from [_, l, _, r]),
            // as in Silero VAD: an STFT as a strided conv, a k=3 encoder, depthwise, pointwise.
            (1, 1, 0, 640, 258, 1, 1, 256, 128, 1, [0, 0, 0, 0]),
            (2, 129, 0, 5, 128, 1, 1, 3, 1, 1, [0, 1, 0, 1]),
            (1, 7, 0, 50, 7, 7, 1, 5, 2, 3, [0, 4, 0, 1]),
            (2, 9, 0, 17, 19, 1, 1, 1, 1, 1, [0, 0, 0, 0]),
            // Stride-1 implicit GEMM over the padded input (cpu::conv_implicit, AVX2 and
            // AVX-512): batch 2 with 13 outputs (partial tiles of 8 and 6), groups with
            // dilation 2 and asymmetric pads, 5x5 with 70 outputs (two row blocks; AVX2's
            // blocks are 60 rows), unpadded 3x3, a 2x4 kernel (no 9-tap kernel), and a
            // 7x7 grid with 3x3 taps (2 junk columns in every 7).
            (2, 9, 11, 13, 13, 1, 3, 3, 1, 1, [1, 1, 1, 1]),
            (1, 10, 9, 12, 8, 2, 3, 3, 1, 2, [2, 1, 2, 3]),
            (1, 6, 8, 10, 70, 1, 5, 5, 1, 1, [2, 2, 2, 2]),
            (1, 8, 7, 7, 9, 1, 3, 3, 1, 1, [0, 0, 0, 0]),
            (2, 7, 6, 9, 17, 1, 2, 4, 1, 1, [1, 2, 0, 1]),
            (1, 33, 7, 7, 40, 1, 3, 3, 1, 1, [1, 1, 1, 1]),
            // Stride 2 on the same path, over four phase planes: ResNet's 3x3 (even input,
            // 28 -> 14) and 7x7 stem (3 channels) at odd sizes, batch 2, dilation 3 (taps
            // alternate phases), asymmetric pads, groups, and a 2x5 kernel.
            (2, 20, 28, 28, 24, 1, 3, 3, 2, 1, [1, 1, 1, 1]),
            (1, 3, 37, 41, 16, 1, 7, 7, 2, 1, [3, 3, 3, 3]),
            (2, 9, 23, 26, 20, 1, 3, 3, 2, 3, [2, 1, 3, 2]),
            (1, 8, 15, 17, 12, 2, 3, 3, 2, 1, [0, 1, 1, 0]),
            (1, 6, 13, 21, 10, 1, 2, 5, 2, 1, [1, 2, 0, 2]),
            // Few input channels and many outputs: the implicit GEMM's grid buffer is larger
            // than the im2col matrix the scratch was once sized for (BlazeFace-full's stem).
            (1, 2, 12, 12, 40, 1, 3, 3, 2, 1, [1, 1, 1, 1]),
            // 1x1 over small planes with the GEMM's roles swapped (cpu::conv_1x1_swapped,
            // AVX2 and AVX-512): 7x7 (the 7-row AVX-512 tile) with channels that are no
            // multiple of 8 or 32, batch 2 at 14x14, stride 2 from 14x14 and from an odd 9x13
            // (into 5x7 = 35: 7-row tiles), 5x9 = 45 positions (8-row tiles, a partial
            // one), and 130 output channels (5 panels of 32, the last of 2 channels).
            (1, 40, 7, 7, 70, 1, 1, 1, 1, 1, [0, 0, 0, 0]),
            (2, 24, 14, 14, 33, 1, 1, 1, 1, 1, [0, 0, 0, 0]),
            (1, 17, 14, 14, 40, 1, 1, 1, 2, 1, [0, 0, 0, 0]),
            (2, 9, 9, 13, 16, 1, 1, 1, 2, 1, [0, 0, 0, 0]),
            (1, 35, 5, 9, 130, 1, 1, 1, 1, 1, [0, 0, 0, 0]),
            // Long kernel rows (cpu::conv_row_dot on AVX2/AVX-512): the speech frontend's DFT
            // (400 taps, stride 160, 514 channels); padded 2-D with 70-tap rows, a partial
            // channel block and batch 2; padded 1-D with 65 taps.
            (1, 1, 1, 1520, 514, 1, 1, 400, 160, 1, [0, 0, 0, 0]),
            (2, 3, 5, 90, 6, 1, 2, 70, 3, 1, [1, 5, 0, 7]),
            (1, 2, 0, 300, 9, 1, 1, 65, 7, 1, [0, 3, 0, 2]),
        ];
        for (ci, &(n, c, h, w, m, group, kh, kw, stride, dil, pads)) in cases.iter().enumerate() {
            let one_d = h == 0;
            let (x_shape, w_shape, pads, sp) = if one_d {
                (vec![n, c, w], vec![m, c / group, kw], vec![pads[1], pads[3]], 1)
            } else {
                (vec![n, c, h, w], vec![m, c / group, kh, kw], pads.to_vec(), 2)
            };
            let x = rng.tensor(&x_shape);
            let wt = rng.tensor(&w_shape);
            let b = rng.tensor(&[m]);
            let act = acts[ci % acts.len()];
            let slope: Vec<f32> = (0..m).map(|_| rng.sym()).collect();
            let mut attrs = Attrs::new()
                .with("group", Attr::Int(group as i64))
                .with("strides", Attr::Ints(vec![stride as i64; sp]))
                .with("dilations", Attr::Ints(vec![dil as i64; sp]))
                .with("pads", Attr::Ints(pads));
            // Every case must take the fast kernel, not the reference fallback.
            let conv = Conv::build(&attrs, 17).unwrap();
            assert!(conv2d_geometry(&conv, &x_shape, &w_shape, None).unwrap().is_some(), "case {ci}");
            let plain = reference(&attrs, &x, &wt, &b, None, Activation::None, &slope, None);
            let shape = {
                let conv = Conv::build(&attrs, 17).unwrap();
                eval(&conv, &[Some(&x), Some(&wt), Some(&b)]).unwrap().remove(0).shape().to_vec()
            };
            // Every other case, and the grouped one, has a residual with fewer channels (a
            // folded channel Pad).
            let mut res_shape = shape.clone();
            if ci % 2 == 1 || group > 1 && group < c {
                res_shape[1] = m - m / 3;
            }
            let res = rng.tensor(&res_shape);
            // Every third case clamps after the activation.
            let clamp = (ci % 3 == 0).then_some((-0.2 - 0.1 * ci as f32, 0.3 + 0.1 * ci as f32));
            let want = reference(&attrs, &x, &wt, &b, Some(&res), act, &slope, clamp);
            let plain_op = FusedConv::build(&attrs, 17).unwrap();
            activation_attrs(act, &mut attrs);
            clamp_attrs(clamp, &mut attrs);
            let op = FusedConv::build(&attrs, 17).unwrap();
            let s_t = Tensor::from_f32(&[m], slope.clone()).unwrap();
            let ins = [
                Some(x.view()),
                Some(wt.view()),
                Some(b.view()),
                Some(res.view()),
                (act == Activation::PRelu).then(|| s_t.view()),
            ];
            let in_types: Vec<Option<TypeShape>> =
                ins.iter().map(|t| t.map(|t| TypeShape::new(t.dtype(), t.shape.to_vec()))).collect();
            let out_t = TypeShape::new(DType::F32, shape.clone());
            let mut scratch = vec![0u64; op.scratch_bytes(&in_types, std::slice::from_ref(&out_t)).div_ceil(8)];
            // SAFETY: u64 storage viewed as bytes (8-byte aligned: enough for f32 scratch).
            let scratch = unsafe { std::slice::from_raw_parts_mut(scratch.as_mut_ptr() as *mut u8, scratch.len() * 8) };
            for isa in Isa::all_supported() {
                for threaded in [false, true] {
                    let exec = Exec { isa, pool: threaded.then_some(&pool) };
                    let mut y = Tensor::zeros(DType::F32, &shape);
                    // Plain conv (bias only) first, then the full epilogue.
                    for (op_used, inputs, expect) in [(&plain_op, &ins[..3], &plain), (&op, &ins[..], &want)] {
                        // The arena's scratch holds whatever the node before left there:
                        // NaN everywhere makes a kernel that reads a float it did not write
                        // fail here.
                        scratch.fill(0xff);
                        op_used.run_exec(inputs, &mut [y.view_mut()], scratch, &exec).unwrap();
                        let got = y.as_f32().unwrap();
                        for (i, (&g, &e)) in got.iter().zip(expect.iter()).enumerate() {
                            assert!(
                                (g - e).abs() <= 1e-4 * (1.0 + e.abs()),
                                "case {ci} {isa} threads {threaded} {act:?} at {i}: {g} vs {e}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn residual_and_slope_are_checked() {
        fn i(s: &[usize]) -> Option<InferInput<'_>> {
            Some(InferInput { dtype: DType::F32, shape: s, value: None })
        }
        let op = FusedConv::build(&Attrs::new().with("activation", Attr::String(b"PRelu".to_vec())), 17).unwrap();
        let (x, w) = ([1usize, 2, 4, 4], [3usize, 2, 1, 1]);
        let err = |ins: &[Option<InferInput>]| op.infer(ins).unwrap_err().to_string();
        assert!(err(&[i(&x), i(&w), None, i(&[1, 3, 4, 5]), i(&[3])]).contains("residual"));
        assert!(err(&[i(&x), i(&w), None, None, None]).contains("slope"));
        assert!(err(&[i(&x), i(&w), None, None, i(&[2])]).contains("slope"));
        assert_eq!(op.infer(&[i(&x), i(&w), None, None, i(&[3, 1, 1])]).unwrap()[0].shape, vec![1, 3, 4, 4]);
    }
}
