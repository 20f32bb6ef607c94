//! `edgert.QConv`: an INT8 2-D convolution with float32 input and output, made by
//! `passes::quantize_int8` from an `edgert.FusedConv` and a calibrated scale for its input.
//! It means: quantize X to uint8 (`QuantizeLinear(X, x_scale, x_zero_point)`), convolve
//! with the int8 weights, add the int32 bias, dequantize with `x_scale * w_scale[c]`, then
//! FusedConv's epilogue (residual, activation) in f32.
//!
//! Inputs: `X` f32 `[n, c, h, w]`; `W` int8 `[m, c/group, kh, kw]` (symmetric, per output
//! channel); `w_scale` f32 `[m]`; optional `B` int32 `[m]` in accumulator units
//! (`bias / (x_scale * w_scale[c])`); optional residual `R`; optional PRelu slope `S` (as
//! FusedConv). Attributes: Conv's, FusedConv's `activation` family, `x_scale` (float) and
//! `x_zero_point` (int, uint8 zero point, default 128).
//!
//! The weights are prepared for the GEMM kernel on first use, once per kernel kind (a build
//! step TensorRT does at engine build; here at the first run, so later runs allocate nothing).

use std::sync::OnceLock;

use super::fused_conv::{check_epilogue_inputs, conv2d_geometry, parse_activation, parse_clamp, residual_channels};
use crate::cpu::conv::Conv2d;
use crate::cpu::conv_i8::{PreparedWeights, QuantConv, conv2d_u8, scratch_bytes, scratch_parts};
use crate::cpu::conv_i8_implicit::{self, ImplicitWeights};
use crate::cpu::gemm_i8::{I8Kernel, I8Kind};
use crate::cpu::{Activation, Epilogue, Exec};
use crate::error::Result;
use crate::ops::nn::conv::Conv;
use crate::ops::{Attrs, InferInput, Op, TypeShape, optional, required};
use crate::tensor::{DType, DataRef, TensorMut, TensorRef};
use crate::{invalid, invalid_err};

/// The op type string.
pub const OP_TYPE: &str = "edgert.QConv";

/// Kernel kinds, in the order of [`QConv`]'s weight slots.
const KINDS: [I8Kind; 5] = [I8Kind::Vnni512, I8Kind::Avx2, I8Kind::Avx2U7, I8Kind::NeonDot, I8Kind::Portable];

/// INT8 convolution with a fused epilogue.
pub struct QConv {
    /// The convolution.
    pub conv: Conv,
    /// The activation.
    pub activation: Activation,
    /// `(lo, hi)` applied after the activation.
    pub clamp: Option<(f32, f32)>,
    /// X's quantization scale.
    pub x_scale: f32,
    /// X's uint8 zero point.
    pub x_zero: i32,
    /// The weights prepared for each kernel kind (see [`KINDS`]).
    prepared: [OnceLock<PreparedWeights>; KINDS.len()],
    /// Whether every weight is within [-63, 63] (the 7-bit kernel applies), on first use.
    fits_7_bits: OnceLock<bool>,
    /// The weights in the implicit GEMM's order (`conv_i8_implicit`), on first use.
    implicit: OnceLock<ImplicitWeights>,
}

impl std::fmt::Debug for QConv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QConv")
            .field("conv", &self.conv)
            .field("activation", &self.activation)
            .field("clamp", &self.clamp)
            .field("x_scale", &self.x_scale)
            .field("x_zero", &self.x_zero)
            .finish_non_exhaustive()
    }
}

impl QConv {
    /// Parses the attributes.
    pub fn build(attrs: &Attrs, opset: i64) -> Result<QConv> {
        let x_scale = attrs.float_or("x_scale", 0.0)?;
        if !(x_scale > 0.0 && x_scale.is_finite()) {
            invalid!("x_scale must be a positive finite number, got {x_scale}");
        }
        let x_zero = attrs.int_or("x_zero_point", 128)?;
        if !(0..=255).contains(&x_zero) {
            invalid!("x_zero_point must be a uint8 value, got {x_zero}");
        }
        Ok(QConv {
            conv: Conv::build(attrs, opset)?,
            activation: parse_activation(attrs)?,
            clamp: parse_clamp(attrs)?,
            x_scale,
            x_zero: x_zero as i32,
            prepared: Default::default(),
            fits_7_bits: OnceLock::new(),
            implicit: OnceLock::new(),
        })
    }

    /// The weights prepared for `kernel` (on first use).
    fn prepared(&self, kernel: I8Kernel, p: &Conv2d, w: &[i8]) -> &PreparedWeights {
        let slot = KINDS.iter().position(|&k| k == kernel.kind).unwrap_or(KINDS.len() - 1);
        self.prepared[slot].get_or_init(|| PreparedWeights::new(kernel, w, p.m, p.k()))
    }
}

impl Op for QConv {
    fn op_type(&self) -> &'static str {
        OP_TYPE
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        let get = |i: usize| inputs.get(i).copied().flatten();
        let x = get(0).ok_or_else(|| invalid_err!("QConv needs input X"))?;
        let w = get(1).ok_or_else(|| invalid_err!("QConv needs weights W"))?;
        let ws = get(2).ok_or_else(|| invalid_err!("QConv needs weight scales w_scale"))?;
        if x.dtype != DType::F32 || w.dtype != DType::I8 || ws.dtype != DType::F32 {
            invalid!("QConv takes X float32, W int8, w_scale float32; got {}, {}, {}", x.dtype, w.dtype, ws.dtype);
        }
        if w.value.is_none() {
            invalid!("QConv's weights W must be a constant (they are packed once)");
        }
        let b = get(3);
        if let Some(b) = b
            && b.dtype != DType::I32
        {
            invalid!("QConv's bias B must be int32 (accumulator units), got {}", b.dtype);
        }
        let Some(p) = conv2d_geometry(&self.conv, x.shape, w.shape, b.map(|b| b.shape))? else {
            invalid!("QConv is 2-D only; X has shape {:?}", x.shape);
        };
        if ws.shape.iter().product::<usize>() != p.m {
            invalid!("w_scale must hold one scale per output channel ({}), got {:?}", p.m, ws.shape);
        }
        let y = TypeShape::new(DType::F32, vec![p.n, p.m, p.oh, p.ow]);
        check_epilogue_inputs(&y, get(4), get(5), self.activation)?;
        Ok(vec![y])
    }

    fn scratch_bytes(&self, inputs: &[Option<TypeShape>], _outputs: &[TypeShape]) -> usize {
        let (Some(Some(x)), Some(Some(w))) = (inputs.first(), inputs.get(1)) else { return 0 };
        match conv2d_geometry(&self.conv, &x.shape, &w.shape, None) {
            Ok(Some(p)) => scratch_bytes(&p).max(conv_i8_implicit::scratch_bytes(&p)),
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
        let ws = required(inputs, 2, "w_scale")?.as_f32()?;
        let b = optional(inputs, 3);
        let r = optional(inputs, 4);
        let s = optional(inputs, 5);
        let y = outputs.first_mut().ok_or_else(|| invalid_err!("QConv needs one output"))?;
        let Some(p) = conv2d_geometry(&self.conv, x.shape, w.shape, b.map(|b| b.shape))? else {
            invalid!("QConv is 2-D only; X has shape {:?}", x.shape);
        };
        let DataRef::I8(wq) = w.data else { invalid!("QConv's weights must be int8, got {}", w.dtype()) };
        let bias = match b.map(|b| b.data) {
            None => None,
            Some(DataRef::I32(v)) => Some(v),
            Some(other) => invalid!("QConv's bias must be int32, got {}", other.dtype()),
        };
        let fits = *self.fits_7_bits.get_or_init(|| wq.iter().all(|&v| (-63..=63).contains(&v)));
        let kernel = I8Kernel::for_conv_weights(exec.isa, fits);
        let implicit = conv_i8_implicit::takes(&p, kernel);
        let need = if implicit {
            conv_i8_implicit::scratch_bytes(&p)
        } else {
            let (x, b, s) = scratch_parts(&p, kernel);
            x + b + s
        };
        if scratch.len() < need {
            invalid!("QConv: scratch of {} bytes is smaller than the {need} it needs", scratch.len());
        }
        if ws.len() != p.m || p.m > MAX_CHANNELS {
            invalid!("QConv: {} weight scales for {} output channels (at most {MAX_CHANNELS})", ws.len(), p.m);
        }
        // Dequantization multipliers, on the stack: steady-state runs allocate nothing.
        let mut mult = [0f32; MAX_CHANNELS];
        for (m, &s) in mult.iter_mut().zip(ws) {
            *m = self.x_scale * s;
        }
        let residual_channels = residual_channels(OP_TYPE, r, y.shape)?;
        let ep = Epilogue {
            bias: None,
            residual: r.map(|r| r.as_f32()).transpose()?,
            ld_residual: p.positions(),
            residual_rows: residual_channels,
            activation: self.activation,
            slope: s.map(|s| s.as_f32()).transpose()?,
            clamp: self.clamp,
        };
        #[cfg(target_arch = "x86_64")]
        if implicit {
            let q = QuantConv {
                x_scale: self.x_scale,
                x_zero: self.x_zero,
                weights: self.implicit.get_or_init(|| ImplicitWeights::new(&p, wq)),
                bias,
                mult: &mult[..p.m],
            };
            conv_i8_implicit::conv_i8_implicit(exec, kernel, &p, x.as_f32()?, &q, &ep, y.as_f32_mut()?, scratch);
            return Ok(());
        }
        let q = QuantConv {
            x_scale: self.x_scale,
            x_zero: self.x_zero,
            weights: self.prepared(kernel, &p, wq),
            bias,
            mult: &mult[..p.m],
        };
        conv2d_u8(exec, &p, x.as_f32()?, &q, &ep, y.as_f32_mut()?, scratch);
        Ok(())
    }
}

/// The most output channels a QConv takes (its multipliers live on the stack).
pub const MAX_CHANNELS: usize = 4096;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::conv_i8::quantize_u8;
    use crate::cpu::{Isa, ThreadPool};
    use crate::ops::fused::FusedConv;
    use crate::ops::fused::fused_conv::activation_attrs;
    use crate::ops::nn::test_util::Rng;
    use crate::ops::{Attr, eval};
    use crate::quant::weights::{quantize_bias, quantize_per_channel_bits};
    use crate::tensor::Tensor;

    fn type_of(t: &Tensor) -> TypeShape {
        TypeShape::new(t.dtype(), t.shape().to_vec())
    }

    /// QConv against its definition: FusedConv (itself tested against the ONNX reference) on
    /// the dequantized input, weights and bias. Every kernel kind this CPU has, one and three
    /// threads, random geometries (pointwise, grouped, strided, dilated, padded, batch 2),
    /// every activation, residuals with all or fewer channels, and several zero points.
    #[test]
    fn qconv_matches_fused_conv_on_dequantized_values() {
        let mut rng = Rng::new(5);
        let pool = ThreadPool::new(3).unwrap();
        let acts = [
            Activation::None,
            Activation::Relu,
            Activation::LeakyRelu(0.1),
            Activation::Clip(-0.3, 0.4),
            Activation::HardSwish,
            Activation::PRelu,
        ];
        // (n, c, h, w, m, group, kh, kw, stride, dilation, pads[t,l,b,r], x_zero)
        type Case = (usize, usize, usize, usize, usize, usize, usize, usize, usize, usize, [i64; 4], i32);
        let cases: &[Case] = &[
            (1, 3, 13, 7, 5, 1, 3, 3, 1, 1, [1, 1, 1, 1], 128),
            (2, 4, 9, 11, 8, 1, 1, 1, 1, 1, [0, 0, 0, 0], 128),
            (1, 16, 7, 7, 33, 1, 1, 1, 2, 1, [0, 0, 0, 0], 100),
            (1, 6, 10, 10, 9, 3, 3, 2, 2, 2, [0, 1, 1, 0], 128),
            (1, 3, 33, 31, 13, 1, 7, 7, 2, 1, [3, 3, 3, 3], 0),
            (1, 40, 6, 5, 70, 1, 3, 3, 1, 1, [1, 1, 1, 1], 128),
            (2, 5, 20, 36, 7, 1, 3, 3, 3, 2, [2, 3, 0, 1], 77),
            (1, 24, 16, 16, 48, 2, 3, 3, 1, 1, [1, 1, 1, 1], 128),
            (1, 67, 9, 9, 130, 1, 1, 1, 1, 1, [0, 0, 0, 0], 128),
            // The VNNI implicit GEMM (`conv_i8_implicit`): batch 2 with a partial channel
            // quad, more quads than one K block holds, stride 2 at odd sizes and over rows
            // wider than one 16-column block, dilation, asymmetric pads.
            (2, 13, 15, 14, 20, 1, 3, 3, 1, 1, [1, 1, 1, 1], 90),
            (1, 130, 9, 8, 17, 1, 3, 3, 1, 1, [1, 1, 1, 1], 128),
            (1, 9, 17, 15, 40, 1, 3, 3, 2, 1, [1, 1, 1, 1], 128),
            (1, 5, 6, 70, 9, 1, 3, 3, 2, 1, [1, 1, 1, 1], 200),
            (1, 6, 5, 45, 11, 1, 3, 3, 1, 1, [1, 1, 1, 1], 128),
            (1, 8, 20, 21, 12, 1, 3, 3, 1, 2, [2, 2, 2, 2], 128),
            (2, 16, 14, 14, 36, 1, 3, 3, 2, 1, [1, 0, 0, 1], 128),
        ];
        // 8-bit weights, and 7-bit ones (the AVX2 vpmaddubsw kernel where the CPU has AVX2).
        let with_bits = cases.iter().enumerate().flat_map(|(ci, c)| [8u32, 7].map(move |bits| (ci, bits, c)));
        for (ci, bits, &(n, c, h, w, m, group, kh, kw, stride, dil, pads, x_zero)) in with_bits {
            let x = rng.tensor(&[n, c, h, w]);
            let wf = rng.tensor(&[m, c / group, kh, kw]);
            let bf: Vec<f32> = (0..m).map(|_| rng.sym()).collect();
            let act = acts[ci % acts.len()];
            let slope: Vec<f32> = (0..m).map(|_| rng.sym()).collect();
            // Zero point 0 takes non-negative inputs (a tensor after ReLU).
            let x = if x_zero == 0 {
                Tensor::from_f32(x.shape(), x.as_f32().unwrap().iter().map(|v| v.abs()).collect()).unwrap()
            } else {
                x
            };
            let amax = x.as_f32().unwrap().iter().fold(0f32, |a, v| a.max(v.abs()));
            let x_scale = amax / 120.0;
            let (wq, w_scale) = quantize_per_channel_bits(wf.as_f32().unwrap(), m, bits);
            let bq = quantize_bias(&bf, x_scale, &w_scale);
            // The dequantized values QConv computes with.
            let xd: Vec<f32> = x
                .as_f32()
                .unwrap()
                .iter()
                .map(|&v| (quantize_u8(v, x_scale, x_zero) as i32 - x_zero) as f32 * x_scale)
                .collect();
            let per = wq.len() / m;
            let wd: Vec<f32> = wq.iter().enumerate().map(|(i, &q)| q as f32 * w_scale[i / per]).collect();
            let bd: Vec<f32> =
                bq.iter().zip(&w_scale).map(|(&b, &s)| (b as f64 * x_scale as f64 * s as f64) as f32).collect();
            let mut attrs = Attrs::new()
                .with("group", Attr::Int(group as i64))
                .with("strides", Attr::Ints(vec![stride as i64; 2]))
                .with("dilations", Attr::Ints(vec![dil as i64; 2]))
                .with("pads", Attr::Ints(pads.to_vec()));
            activation_attrs(act, &mut attrs);
            let fused = FusedConv::build(&attrs, 17).unwrap();
            let xd_t = Tensor::from_f32(x.shape(), xd).unwrap();
            let wd_t = Tensor::from_f32(wf.shape(), wd).unwrap();
            let bd_t = Tensor::from_f32(&[m], bd).unwrap();
            let out_shape = eval(
                &FusedConv::build(
                    &Attrs::new()
                        .with("group", Attr::Int(group as i64))
                        .with("strides", Attr::Ints(vec![stride as i64; 2]))
                        .with("dilations", Attr::Ints(vec![dil as i64; 2]))
                        .with("pads", Attr::Ints(pads.to_vec())),
                    17,
                )
                .unwrap(),
                &[Some(&xd_t), Some(&wd_t), Some(&bd_t)],
            )
            .unwrap()[0]
                .shape()
                .to_vec();
            let mut res_shape = out_shape.clone();
            if ci % 2 == 1 {
                res_shape[1] = m - m / 3;
            }
            let res = rng.tensor(&res_shape);
            let s_t = Tensor::from_f32(&[m], slope).unwrap();
            let s_in = (act == Activation::PRelu).then_some(&s_t);
            let want = eval(&fused, &[Some(&xd_t), Some(&wd_t), Some(&bd_t), Some(&res), s_in]).unwrap().remove(0);

            attrs.insert("x_scale", Attr::Float(x_scale));
            attrs.insert("x_zero_point", Attr::Int(x_zero as i64));
            let op = QConv::build(&attrs, 17).unwrap();
            let wq_t = Tensor::new(wf.shape().to_vec(), crate::tensor::TensorData::I8(wq)).unwrap();
            let ws_t = Tensor::from_f32(&[m], w_scale).unwrap();
            let bq_t = Tensor::new(vec![m], crate::tensor::TensorData::I32(bq)).unwrap();
            let ins = [
                Some(x.view()),
                Some(wq_t.view()),
                Some(ws_t.view()),
                Some(bq_t.view()),
                Some(res.view()),
                s_in.map(|s| s.view()),
            ];
            let types: Vec<Option<TypeShape>> = [Some(&x), Some(&wq_t), Some(&ws_t), Some(&bq_t), Some(&res), s_in]
                .iter()
                .map(|t| t.map(type_of))
                .collect();
            let out_t = TypeShape::new(DType::F32, out_shape.clone());
            let mut scratch = vec![0u64; op.scratch_bytes(&types, std::slice::from_ref(&out_t)).div_ceil(8) + 8];
            // SAFETY: u64 storage viewed as bytes, offset to a 64-byte boundary.
            let bytes = unsafe { std::slice::from_raw_parts_mut(scratch.as_mut_ptr() as *mut u8, scratch.len() * 8) };
            let off = bytes.as_ptr().align_offset(64);
            let bytes = &mut bytes[off..];
            for isa in Isa::all_supported() {
                for threaded in [false, true] {
                    let exec = Exec { isa, pool: threaded.then_some(&pool) };
                    let mut y = Tensor::zeros(DType::F32, &out_shape);
                    op.run_exec(&ins, &mut [y.view_mut()], bytes, &exec).unwrap();
                    for (i, (&g, &e)) in y.as_f32().unwrap().iter().zip(want.as_f32().unwrap()).enumerate() {
                        assert!(
                            (g - e).abs() <= 2e-4 * (1.0 + e.abs()),
                            "case {ci} {bits}-bit {isa} ({:?}) threads {threaded} {act:?} at {i}: {g} vs {e}",
                            I8Kernel::for_conv_weights(isa, bits == 7).kind
                        );
                    }
                }
            }
            // The implicit GEMM ran where its geometry fits and the CPU has VNNI, or AVX2 and
            // the weights 7 bits.
            let p = conv2d_geometry(&op.conv, x.shape(), wf.shape(), None).unwrap().unwrap();
            let vnni = I8Kernel::supported(I8Kind::Vnni512);
            let avx2 = Isa::all_supported().contains(&Isa::Avx2);
            let fits = conv_i8_implicit::takes(&p, I8Kernel::of(I8Kind::Vnni512));
            let implicit = fits && (vnni || avx2 && bits == 7);
            assert_eq!(op.implicit.get().is_some(), implicit, "case {ci} {bits}-bit: implicit GEMM");
            if !vnni && ci == 0 && bits == 8 {
                println!("skipped: the INT8 implicit GEMM, VNNI kernel: this CPU lacks AVX-512 VNNI");
            }
            // The 7-bit weights really ran on the vpmaddubsw kernels where there is AVX2 (the
            // implicit GEMM's where the geometry fits, else conv_i8's), and every weight on
            // the sdot kernel where there is NEON with DotProd.
            let slot = |kind| KINDS.iter().position(|&k| k == kind).unwrap();
            let packed_u7 = bits == 7 && avx2 && !fits;
            assert_eq!(op.prepared[slot(I8Kind::Avx2U7)].get().is_some(), packed_u7, "case {ci} {bits}-bit");
            let dot = Isa::all_supported().contains(&Isa::Neon) && I8Kernel::supported(I8Kind::NeonDot);
            assert_eq!(op.prepared[slot(I8Kind::NeonDot)].get().is_some(), dot, "case {ci} {bits}-bit");
            if !dot && cfg!(target_arch = "aarch64") {
                println!("skipped: NeonDot kernel: this CPU lacks DotProd");
            }
        }
    }

    #[test]
    fn bad_inputs_are_errors() {
        let op = QConv::build(&Attrs::new().with("x_scale", Attr::Float(0.1)), 17).unwrap();
        let x = Tensor::zeros(DType::F32, &[1, 2, 4, 4]);
        let wq = Tensor::zeros(DType::I8, &[3, 2, 1, 1]);
        let wf = Tensor::zeros(DType::F32, &[3, 2, 1, 1]);
        let ws = Tensor::zeros(DType::F32, &[3]);
        fn i(t: &Tensor, konst: bool) -> Option<InferInput<'_>> {
            Some(InferInput { dtype: t.dtype(), shape: t.shape(), value: konst.then_some(t) })
        }
        let err = |ins: &[Option<InferInput>]| op.infer(ins).unwrap_err().to_string();
        assert_eq!(op.infer(&[i(&x, false), i(&wq, true), i(&ws, true)]).unwrap()[0].shape, vec![1, 3, 4, 4]);
        assert!(err(&[i(&x, false), i(&wf, true), i(&ws, true)]).contains("int8"));
        assert!(err(&[i(&x, false), i(&wq, false), i(&ws, true)]).contains("constant"));
        assert!(err(&[i(&x, false), i(&wq, true), i(&x, true)]).contains("one scale per output channel"));
        assert!(err(&[i(&x, false), i(&wq, true), i(&ws, true), i(&ws, true)]).contains("int32"));
        for bad in [0.0, -1.0, f32::NAN] {
            assert!(QConv::build(&Attrs::new().with("x_scale", Attr::Float(bad)), 17).is_err());
        }
        assert!(
            QConv::build(&Attrs::new().with("x_scale", Attr::Float(1.0)).with("x_zero_point", Attr::Int(256)), 17)
                .is_err()
        );
    }
}
