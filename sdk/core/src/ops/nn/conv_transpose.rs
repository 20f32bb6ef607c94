//! ConvTranspose: the gradient of Conv with respect to its input (a "deconvolution").

use crate::error::Result;
use crate::ops::nn::common::{
    AutoPad, MAX_SPATIAL, Real, WindowAttrs, conv_inputs, next_index, read_f32, require_spatial_rank,
};
use crate::ops::{Attrs, InferInput, Op, TypeShape, optional, required};
use crate::tensor::{DType, TensorMut, TensorRef};
use crate::{invalid, invalid_err};

/// ONNX ConvTranspose (opsets 11–21): `Y[o] = B + Σ X[i] · W[k]` over `o = i·s + k·d − pad`.
#[derive(Clone, PartialEq, Debug)]
pub struct ConvTranspose {
    /// Window attributes (kernel shape optional: taken from W).
    pub window: WindowAttrs,
    /// Number of groups.
    pub group: usize,
    /// `output_padding` (default 0), added at the end of each spatial dim.
    pub output_padding: Option<Vec<i64>>,
    /// `output_shape`: the spatial output dims; pads are then derived from it.
    pub output_shape: Option<Vec<i64>>,
}

/// Resolved transposed geometry; pads may be negative when `output_shape` asks for more.
#[derive(Clone, Copy, Debug, Default)]
struct TGeometry {
    nsp: usize,
    input: [usize; MAX_SPATIAL],
    output: [usize; MAX_SPATIAL],
    kernel: [usize; MAX_SPATIAL],
    stride: [usize; MAX_SPATIAL],
    dilation: [usize; MAX_SPATIAL],
    pad_begin: [i64; MAX_SPATIAL],
}

impl ConvTranspose {
    /// Parses the attributes.
    pub fn build(attrs: &Attrs, _opset: i64) -> Result<ConvTranspose> {
        let group = attrs.int_or("group", 1)?;
        if group < 1 {
            invalid!("group must be >= 1, got {group}");
        }
        let output_padding = attrs.ints("output_padding")?;
        if output_padding.as_ref().is_some_and(|v| v.iter().any(|&p| p < 0)) {
            invalid!("output_padding must be non-negative, got {output_padding:?}");
        }
        let output_shape = attrs.ints("output_shape")?;
        if output_shape.as_ref().is_some_and(|v| v.iter().any(|&p| p < 1)) {
            invalid!("output_shape must be positive, got {output_shape:?}");
        }
        Ok(ConvTranspose {
            window: WindowAttrs::parse(attrs, false)?,
            group: usize::try_from(group).map_err(|_| invalid_err!("group {group} is too large"))?,
            output_padding,
            output_shape,
        })
    }

    /// Validates shapes and resolves the geometry: (geometry, N, C, M).
    fn check(&self, x: &[usize], w: &[usize], b: Option<&[usize]>) -> Result<(TGeometry, usize, usize, usize)> {
        require_spatial_rank(x, "input X")?;
        if w.len() != x.len() {
            invalid!("weights W of shape {w:?} must have the rank of X {x:?}");
        }
        let nsp = x.len() - 2;
        let c = x[1];
        if w[0] != c {
            invalid!("weights W {w:?} need dim 0 = C = {c}");
        }
        if !c.is_multiple_of(self.group) {
            invalid!("channels C={c} must be divisible by group={}", self.group);
        }
        let m = w[1].checked_mul(self.group).ok_or_else(|| invalid_err!("output channels overflow"))?;
        if let Some(b) = b
            && b != [m]
        {
            invalid!("bias B must have shape [{m}], got {b:?}");
        }
        if let Some(ks) = &self.window.kernel_shape
            && (ks.len() != nsp || ks.iter().zip(&w[2..]).any(|(&a, &b)| a != b as i64))
        {
            invalid!("kernel_shape {ks:?} does not match weights W {w:?}");
        }
        let (stride, dilation, pb, pe) = self.window.basic(nsp)?;
        let mut g = TGeometry { nsp, stride, dilation, ..TGeometry::default() };
        let out_shape: Option<&[i64]> = match &self.output_shape {
            None => None,
            Some(v) if v.len() == nsp => Some(v),
            Some(v) if v.len() == nsp + 2 => Some(&v[2..]),
            Some(v) => invalid!("output_shape {v:?} must list the {nsp} spatial output dims"),
        };
        if let Some(op) = &self.output_padding
            && op.len() != nsp
        {
            invalid!("output_padding {op:?} must have {nsp} values");
        }
        for d in 0..nsp {
            if w[2 + d] == 0 {
                invalid!("weights W {w:?} have an empty kernel dim");
            }
            g.input[d] = x[2 + d];
            g.kernel[d] = w[2 + d];
            let big = |v: usize| i64::try_from(v).map_err(|_| invalid_err!("size {v} is too large"));
            let (n, s, k, dl) = (big(x[2 + d])?, big(stride[d])?, big(w[2 + d])?, big(dilation[d])?);
            let opad = self.output_padding.as_ref().map(|v| v[d]).unwrap_or(0);
            // Size of the full (unpadded) transposed output.
            let full = (n - 1)
                .checked_mul(s)
                .and_then(|v| v.checked_add(opad))
                .and_then(|v| v.checked_add((k - 1).checked_mul(dl)? + 1))
                .ok_or_else(|| invalid_err!("output size overflows"))?;
            let target = match (out_shape, self.window.auto_pad) {
                (Some(o), _) => Some(o[d]),
                (None, AutoPad::SameUpper | AutoPad::SameLower) => {
                    Some(n.checked_mul(s).ok_or_else(|| invalid_err!("output size overflows"))?)
                }
                _ => None,
            };
            let out = match target {
                Some(t) => {
                    let total = full - t;
                    g.pad_begin[d] = if self.window.auto_pad == AutoPad::SameUpper {
                        total.div_euclid(2)
                    } else {
                        total - total.div_euclid(2)
                    };
                    t
                }
                None => {
                    g.pad_begin[d] = big(pb[d])?;
                    full - big(pb[d])? - big(pe[d])?
                }
            };
            if out < 1 {
                invalid!("spatial dim {d}: output size {out} is not positive (pads too large)");
            }
            g.output[d] = usize::try_from(out).map_err(|_| invalid_err!("output size {out} is too large"))?;
        }
        Ok((g, x[0], c, m))
    }
}

impl Op for ConvTranspose {
    fn op_type(&self) -> &'static str {
        "ConvTranspose"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        let (x, w, b) = conv_inputs("ConvTranspose", inputs)?;
        let (geo, n, _, m) = self.check(x.shape, w.shape, b.map(|b| b.shape))?;
        let mut shape = vec![n, m];
        shape.extend_from_slice(&geo.output[..geo.nsp]);
        Ok(vec![TypeShape::new(x.dtype, shape)])
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let x = required(inputs, 0, "X")?;
        let w = required(inputs, 1, "W")?;
        let b = optional(inputs, 2);
        let y = outputs.first_mut().ok_or_else(|| invalid_err!("ConvTranspose needs one output"))?;
        match x.dtype() {
            DType::F32 => conv_transpose::<f32>(self, x, w, b, y),
            DType::F16 => conv_transpose::<half::f16>(self, x, w, b, y),
            other => invalid!("ConvTranspose does not support {other}"),
        }
    }
}

fn conv_transpose<T: Real>(
    op: &ConvTranspose,
    x: TensorRef,
    w: TensorRef,
    b: Option<TensorRef>,
    y: &mut TensorMut,
) -> Result<()> {
    let (geo, n, c, m) = op.check(x.shape, w.shape, b.map(|b| b.shape))?;
    let (xs, ws) = (x.typed::<T>()?, w.typed::<T>()?);
    let ys = y.typed_mut::<T>()?;
    let nsp = geo.nsp;
    let in_size: usize = geo.input[..nsp].iter().product();
    let out_size: usize = geo.output[..nsp].iter().product();
    let k_size: usize = geo.kernel[..nsp].iter().product();
    let (cg, mg) = (c / op.group, m / op.group);
    if xs.len() != n * c * in_size || ws.len() != c * mg * k_size || ys.len() != n * m * out_size {
        invalid!("ConvTranspose: tensor sizes do not match the inferred shapes");
    }
    for ni in 0..n {
        for mi in 0..m {
            let (g, ml) = (mi / mg, mi % mg);
            let bias = b.map(|b| read_f32(b.data, mi)).unwrap_or(0.0);
            let mut o = [0usize; MAX_SPATIAL];
            for yo in 0..out_size {
                let mut acc = bias;
                let mut k = [0usize; MAX_SPATIAL];
                for wk in 0..k_size {
                    // The input position i with i·s + k·d − pad = o, if there is one.
                    let mut off = 0usize;
                    let mut hit = true;
                    for d in 0..nsp {
                        let t = o[d] as i64 + geo.pad_begin[d] - (k[d] * geo.dilation[d]) as i64;
                        let s = geo.stride[d] as i64;
                        if t < 0 || t % s != 0 || (t / s) as usize >= geo.input[d] {
                            hit = false;
                            break;
                        }
                        off = off * geo.input[d] + (t / s) as usize;
                    }
                    if hit {
                        for cl in 0..cg {
                            let ci = g * cg + cl;
                            acc += xs[(ni * c + ci) * in_size + off].f() * ws[(ci * mg + ml) * k_size + wk].f();
                        }
                    }
                    next_index(&mut k[..nsp], &geo.kernel[..nsp]);
                }
                ys[(ni * m + mi) * out_size + yo] = T::r(acc);
                next_index(&mut o[..nsp], &geo.output[..nsp]);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::nn::test_util::{Rng, assert_close, t, to_f16};
    use crate::ops::{Attr, eval};
    use crate::tensor::Tensor;

    fn ints(v: &[i64]) -> Attr {
        Attr::Ints(v.to_vec())
    }

    /// Independent scatter-form 2-D transposed conv (explicit pads, output_padding).
    #[allow(clippy::too_many_arguments)]
    fn naive2d(
        x: &[f32],
        xs: [usize; 4],
        w: &[f32],
        ws: [usize; 4],
        b: &[f32],
        group: usize,
        s: [usize; 2],
        d: [usize; 2],
        p: [usize; 4],
        op: [usize; 2],
    ) -> (Vec<usize>, Vec<f32>) {
        let [n, c, h, wd] = xs;
        let [_, mg, kh, kw] = ws;
        let m = mg * group;
        let fh = (h - 1) * s[0] + op[0] + (kh - 1) * d[0] + 1;
        let fw = (wd - 1) * s[1] + op[1] + (kw - 1) * d[1] + 1;
        let (oh, ow) = (fh - p[0] - p[2], fw - p[1] - p[3]);
        let mut out = vec![0f32; n * m * oh * ow];
        let cg = c / group;
        for ni in 0..n {
            for ci in 0..c {
                let g = ci / cg;
                for i in 0..h {
                    for j in 0..wd {
                        let xv = x[((ni * c + ci) * h + i) * wd + j];
                        for ml in 0..mg {
                            for a in 0..kh {
                                for bb in 0..kw {
                                    let yy = (i * s[0] + a * d[0]) as i64 - p[0] as i64;
                                    let xx = (j * s[1] + bb * d[1]) as i64 - p[1] as i64;
                                    if yy >= 0 && xx >= 0 && (yy as usize) < oh && (xx as usize) < ow {
                                        let mi = g * mg + ml;
                                        out[((ni * m + mi) * oh + yy as usize) * ow + xx as usize] +=
                                            xv * w[((ci * mg + ml) * kh + a) * kw + bb];
                                    }
                                }
                            }
                        }
                    }
                }
            }
            for mi in 0..m {
                for v in &mut out[(ni * m + mi) * oh * ow..(ni * m + mi + 1) * oh * ow] {
                    *v += b[mi];
                }
            }
        }
        (vec![n, m, oh, ow], out)
    }

    #[test]
    fn onnx_example() {
        // ONNX's test_convtranspose: 3x3 input, 2 output channels of ones.
        let x = t(&[1, 1, 3, 3], &(0..9).map(|v| v as f32).collect::<Vec<_>>());
        let w = t(&[1, 2, 3, 3], &[1.0; 18]);
        let op = ConvTranspose::build(&Attrs::new(), 17).unwrap();
        let y = eval(&op, &[Some(&x), Some(&w)]).unwrap();
        let plane = [
            0., 1., 3., 3., 2., 3., 8., 15., 12., 7., 9., 21., 36., 27., 15., 9., 20., 33., 24., 13., 6., 13., 21.,
            15., 8.,
        ];
        let want: Vec<f32> = plane.iter().chain(plane.iter()).copied().collect();
        assert_close(&y[0], &[1, 2, 5, 5], &want, 1e-6);
    }

    #[test]
    fn output_shape_and_same() {
        let x = t(&[1, 1, 3], &[1., 2., 3.]);
        let w = t(&[1, 1, 2], &[1., 10.]);
        // Full output (stride 2): [1, 10, 2, 20, 3, 30]; output_shape 7 pads one zero at the end.
        let op = ConvTranspose::build(&Attrs::new().with("strides", ints(&[2])).with("output_shape", ints(&[7])), 17)
            .unwrap();
        let y = eval(&op, &[Some(&x), Some(&w)]).unwrap();
        assert_close(&y[0], &[1, 1, 7], &[1., 10., 2., 20., 3., 30., 0.], 1e-6);
        // SAME_UPPER: output = in * stride = 6, total padding 0.
        let op = ConvTranspose::build(
            &Attrs::new().with("strides", ints(&[2])).with("auto_pad", Attr::String(b"SAME_UPPER".to_vec())),
            17,
        )
        .unwrap();
        let y = eval(&op, &[Some(&x), Some(&w)]).unwrap();
        assert_close(&y[0], &[1, 1, 6], &[1., 10., 2., 20., 3., 30.], 1e-6);
        // Stride 1, SAME_UPPER: full = 4, target 3, total 1 -> pad end 1; SAME_LOWER pads the start.
        let same = |mode: &[u8]| {
            ConvTranspose::build(&Attrs::new().with("auto_pad", Attr::String(mode.to_vec())), 17).unwrap()
        };
        let y = eval(&same(b"SAME_UPPER"), &[Some(&x), Some(&w)]).unwrap();
        assert_close(&y[0], &[1, 1, 3], &[1., 12., 23.], 1e-6);
        let y = eval(&same(b"SAME_LOWER"), &[Some(&x), Some(&w)]).unwrap();
        assert_close(&y[0], &[1, 1, 3], &[12., 23., 30.], 1e-6);
    }

    #[test]
    #[allow(clippy::type_complexity)]
    fn random_against_naive() {
        let mut rng = Rng::new(11);
        let cases: &[([usize; 4], usize, usize, [usize; 2], [usize; 2], [usize; 2], [usize; 4], [usize; 2])] = &[
            ([2, 3, 7, 5], 2, 1, [3, 3], [2, 2], [1, 1], [1, 1, 1, 1], [1, 0]),
            ([1, 4, 5, 7], 3, 2, [2, 3], [3, 1], [1, 2], [0, 1, 2, 0], [2, 0]),
            ([3, 6, 4, 4], 1, 6, [3, 3], [1, 1], [2, 2], [0, 0, 0, 0], [0, 0]),
            ([1, 2, 13, 7], 4, 1, [4, 4], [2, 2], [1, 1], [1, 1, 1, 1], [0, 1]),
        ];
        for &(xs, mg, group, k, s, d, p, opad) in cases {
            let x = rng.tensor(&xs);
            let ws = [xs[1], mg, k[0], k[1]];
            let w = rng.tensor(&ws);
            let b = rng.tensor(&[mg * group]);
            let attrs = Attrs::new()
                .with("group", Attr::Int(group as i64))
                .with("strides", Attr::Ints(s.iter().map(|&v| v as i64).collect()))
                .with("dilations", Attr::Ints(d.iter().map(|&v| v as i64).collect()))
                .with("pads", Attr::Ints(p.iter().map(|&v| v as i64).collect()))
                .with("output_padding", Attr::Ints(opad.iter().map(|&v| v as i64).collect()));
            let op = ConvTranspose::build(&attrs, 17).unwrap();
            let (shape, want) =
                naive2d(x.as_f32().unwrap(), xs, w.as_f32().unwrap(), ws, b.as_f32().unwrap(), group, s, d, p, opad);
            let y = eval(&op, &[Some(&x), Some(&w), Some(&b)]).unwrap();
            assert_close(&y[0], &shape, &want, 1e-4);
            let y16 = eval(&op, &[Some(&to_f16(&x)), Some(&to_f16(&w)), Some(&to_f16(&b))]).unwrap();
            assert_close(&y16[0], &shape, &want, 3e-2);
        }
    }

    #[test]
    fn errors() {
        let x = Tensor::zeros(DType::F32, &[1, 2, 3, 3]);
        let op = ConvTranspose::build(&Attrs::new(), 17).unwrap();
        assert!(eval(&op, &[Some(&x), Some(&Tensor::zeros(DType::F32, &[3, 1, 3, 3]))]).is_err());
        assert!(eval(&op, &[Some(&x), Some(&Tensor::zeros(DType::F32, &[2, 1, 3]))]).is_err());
        let w = Tensor::zeros(DType::F32, &[2, 1, 3, 3]);
        assert!(eval(&op, &[Some(&x), Some(&w), Some(&Tensor::zeros(DType::F32, &[2]))]).is_err());
        let op = ConvTranspose::build(&Attrs::new().with("pads", ints(&[3, 3, 3, 3])), 17).unwrap();
        assert!(eval(&op, &[Some(&x), Some(&w)]).is_err());
        assert!(ConvTranspose::build(&Attrs::new().with("output_padding", ints(&[-1, 0])), 17).is_err());
        let op = ConvTranspose::build(&Attrs::new().with("output_shape", ints(&[5])), 17).unwrap();
        assert!(eval(&op, &[Some(&x), Some(&w)]).is_err());
    }
}
