//! Conv: N-d grouped, strided, dilated, padded convolution (a direct loop nest).

use crate::error::Result;
use crate::ops::nn::common::{MAX_SPATIAL, Real, WindowAttrs, conv_inputs, next_index, read_f32, require_spatial_rank};
use crate::ops::{Attrs, InferInput, Op, TypeShape, optional, required};
use crate::tensor::{DType, TensorMut, TensorRef};
use crate::{invalid, invalid_err};

/// ONNX Conv (opsets 1–21 share these semantics): `Y = conv(X, W) + B`.
#[derive(Clone, PartialEq, Debug)]
pub struct Conv {
    /// Window attributes (kernel shape optional: taken from W).
    pub window: WindowAttrs,
    /// Number of groups.
    pub group: usize,
}

impl Conv {
    /// Parses the attributes.
    pub fn build(attrs: &Attrs, _opset: i64) -> Result<Conv> {
        let group = attrs.int_or("group", 1)?;
        if group < 1 {
            invalid!("group must be >= 1, got {group}");
        }
        Ok(Conv {
            window: WindowAttrs::parse(attrs, false)?,
            group: usize::try_from(group).map_err(|_| invalid_err!("group {group} is too large"))?,
        })
    }

    /// Validates shapes and resolves the window geometry: (geometry, N, C, M).
    pub(crate) fn check(
        &self,
        x: &[usize],
        w: &[usize],
        b: Option<&[usize]>,
    ) -> Result<(super::common::Geometry, usize, usize, usize)> {
        require_spatial_rank(x, "input X")?;
        if w.len() != x.len() {
            invalid!("weights W of shape {w:?} must have the rank of X {x:?}");
        }
        let (c, m) = (x[1], w[0]);
        let g = self.group;
        if !c.is_multiple_of(g) || !m.is_multiple_of(g) {
            invalid!("channels C={c} and filters M={m} must both be divisible by group={g}");
        }
        if w[1] * g != c {
            invalid!("weights W {w:?} need dim 1 = C/group = {}, got {}", c / g, w[1]);
        }
        let nsp = x.len() - 2;
        let mut kernel = [1usize; MAX_SPATIAL];
        for d in 0..nsp {
            if w[2 + d] == 0 {
                invalid!("weights W {w:?} have an empty kernel dim");
            }
            kernel[d] = w[2 + d];
        }
        if let Some(ks) = &self.window.kernel_shape
            && (ks.len() != nsp || ks.iter().zip(&w[2..]).any(|(&a, &b)| a != b as i64))
        {
            invalid!("kernel_shape {ks:?} does not match weights W {w:?}");
        }
        if let Some(b) = b
            && b != [m]
        {
            invalid!("bias B must have shape [{m}], got {b:?}");
        }
        let geo = self.window.resolve(&x[2..], &kernel)?;
        Ok((geo, x[0], c, m))
    }
}

impl Op for Conv {
    fn op_type(&self) -> &'static str {
        "Conv"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        let (x, w, b) = conv_inputs("Conv", inputs)?;
        let (geo, n, _, m) = self.check(x.shape, w.shape, b.map(|b| b.shape))?;
        let mut shape = vec![n, m];
        shape.extend_from_slice(&geo.output[..geo.nsp]);
        Ok(vec![TypeShape::new(x.dtype, shape)])
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let x = required(inputs, 0, "X")?;
        let w = required(inputs, 1, "W")?;
        let b = optional(inputs, 2);
        let y = outputs.first_mut().ok_or_else(|| invalid_err!("Conv needs one output"))?;
        match x.dtype() {
            DType::F32 => conv::<f32>(self, x, w, b, y),
            DType::F16 => conv::<half::f16>(self, x, w, b, y),
            other => invalid!("Conv does not support {other}"),
        }
    }
}

fn conv<T: Real>(op: &Conv, x: TensorRef, w: TensorRef, b: Option<TensorRef>, y: &mut TensorMut) -> Result<()> {
    let (geo, n, c, m) = op.check(x.shape, w.shape, b.map(|b| b.shape))?;
    let (xs, ws) = (x.typed::<T>()?, w.typed::<T>()?);
    let ys = y.typed_mut::<T>()?;
    let nsp = geo.nsp;
    let (in_size, out_size, k_size) = (geo.input_size(), geo.output_size(), geo.kernel_size());
    let (cg, mg) = (c / op.group, m / op.group);
    if xs.len() != n * c * in_size || ws.len() != m * cg * k_size || ys.len() != n * m * out_size {
        invalid!("Conv: tensor sizes do not match the inferred shapes");
    }
    for ni in 0..n {
        for mi in 0..m {
            let g = mi / mg;
            let bias = b.map(|b| read_f32(b.data, mi)).unwrap_or(0.0);
            let y_base = (ni * m + mi) * out_size;
            let mut o = [0usize; MAX_SPATIAL];
            for yo in 0..out_size {
                let mut acc = bias;
                for cl in 0..cg {
                    let x_base = (ni * c + g * cg + cl) * in_size;
                    let w_base = (mi * cg + cl) * k_size;
                    let mut k = [0usize; MAX_SPATIAL];
                    for wk in 0..k_size {
                        if let Some(off) = geo.tap_offset(&o, &k) {
                            acc += xs[x_base + off].f() * ws[w_base + wk].f();
                        }
                        next_index(&mut k[..nsp], &geo.kernel[..nsp]);
                    }
                }
                ys[y_base + yo] = T::r(acc);
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

    fn conv_op(a: Attrs) -> Conv {
        Conv::build(&a, 17).unwrap()
    }

    /// Independent naive 2-D conv (NCHW, explicit pads only).
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
    ) -> (Vec<usize>, Vec<f32>) {
        let [n, c, h, wd] = xs;
        let [m, cg, kh, kw] = ws;
        let oh = (h + p[0] + p[2] - (d[0] * (kh - 1) + 1)) / s[0] + 1;
        let ow = (wd + p[1] + p[3] - (d[1] * (kw - 1) + 1)) / s[1] + 1;
        let mut out = vec![0f32; n * m * oh * ow];
        let mg = m / group;
        for ni in 0..n {
            for mi in 0..m {
                let g = mi / mg;
                for i in 0..oh {
                    for j in 0..ow {
                        let mut acc = if b.is_empty() { 0.0 } else { b[mi] };
                        for cl in 0..cg {
                            let ci = g * cg + cl;
                            for a in 0..kh {
                                for bb in 0..kw {
                                    let yy = (i * s[0] + a * d[0]) as i64 - p[0] as i64;
                                    let xx = (j * s[1] + bb * d[1]) as i64 - p[1] as i64;
                                    if yy >= 0 && xx >= 0 && (yy as usize) < h && (xx as usize) < wd {
                                        acc += x[((ni * c + ci) * h + yy as usize) * wd + xx as usize]
                                            * w[((mi * cg + cl) * kh + a) * kw + bb];
                                    }
                                }
                            }
                        }
                        out[((ni * m + mi) * oh + i) * ow + j] = acc;
                    }
                }
            }
        }
        (vec![n, m, oh, ow], out)
    }

    #[test]
    fn basic_with_padding() {
        // ONNX's test_basic_conv_with_padding.
        let x = t(&[1, 1, 5, 5], &(0..25).map(|v| v as f32).collect::<Vec<_>>());
        let w = t(&[1, 1, 3, 3], &[1.0; 9]);
        let op = conv_op(Attrs::new().with("pads", Attr::Ints(vec![1, 1, 1, 1])));
        let y = eval(&op, &[Some(&x), Some(&w)]).unwrap();
        let want = [
            12., 21., 27., 33., 24., 33., 54., 63., 72., 51., 63., 99., 108., 117., 81., 93., 144., 153., 162., 111.,
            72., 111., 117., 123., 84.,
        ];
        assert_close(&y[0], &[1, 1, 5, 5], &want, 1e-6);
    }

    #[test]
    fn same_upper_and_bias_1d() {
        let x = t(&[1, 1, 4], &[1., 2., 3., 4.]);
        let w = t(&[2, 1, 2], &[1., 1., 1., -1.]);
        let b = t(&[2], &[0.5, 0.0]);
        let op = conv_op(Attrs::new().with("auto_pad", Attr::String(b"SAME_UPPER".to_vec())));
        let y = eval(&op, &[Some(&x), Some(&w), Some(&b)]).unwrap();
        assert_close(&y[0], &[1, 2, 4], &[3.5, 5.5, 7.5, 4.5, -1., -1., -1., 4.], 1e-6);
    }

    #[test]
    #[allow(clippy::type_complexity)]
    fn random_against_naive() {
        let mut rng = Rng::new(7);
        let cases: &[([usize; 4], usize, usize, [usize; 2], [usize; 2], [usize; 2], [usize; 4])] = &[
            ([2, 3, 7, 13], 4, 1, [3, 3], [1, 1], [1, 1], [1, 1, 1, 1]),
            ([1, 4, 13, 7], 6, 2, [3, 2], [2, 1], [1, 2], [0, 1, 2, 0]),
            ([3, 5, 9, 9], 5, 5, [3, 3], [2, 2], [1, 1], [1, 1, 1, 1]), // depthwise
            ([1, 2, 7, 7], 4, 1, [7, 7], [2, 2], [1, 1], [3, 3, 3, 3]),
            ([2, 6, 8, 11], 3, 3, [2, 3], [1, 3], [3, 2], [2, 0, 1, 3]),
        ];
        for &(xs, m, group, k, s, d, p) in cases {
            let x = rng.tensor(&xs);
            let w = rng.tensor(&[m, xs[1] / group, k[0], k[1]]);
            let b = rng.tensor(&[m]);
            let op = conv_op(
                Attrs::new()
                    .with("group", Attr::Int(group as i64))
                    .with("strides", Attr::Ints(s.iter().map(|&v| v as i64).collect()))
                    .with("dilations", Attr::Ints(d.iter().map(|&v| v as i64).collect()))
                    .with("pads", Attr::Ints(p.iter().map(|&v| v as i64).collect())),
            );
            let (shape, want) = naive2d(
                x.as_f32().unwrap(),
                xs,
                w.as_f32().unwrap(),
                [m, xs[1] / group, k[0], k[1]],
                b.as_f32().unwrap(),
                group,
                s,
                d,
                p,
            );
            let y = eval(&op, &[Some(&x), Some(&w), Some(&b)]).unwrap();
            assert_close(&y[0], &shape, &want, 1e-4);
            let y16 = eval(&op, &[Some(&to_f16(&x)), Some(&to_f16(&w)), Some(&to_f16(&b))]).unwrap();
            assert_eq!(y16[0].dtype(), DType::F16);
            assert_close(&y16[0], &shape, &want, 3e-2);
        }
    }

    #[test]
    fn conv3d_matches_2d_with_unit_depth() {
        let mut rng = Rng::new(3);
        let x = rng.tensor(&[2, 2, 1, 6, 5]);
        let w = rng.tensor(&[3, 2, 1, 3, 3]);
        let op = conv_op(Attrs::new().with("pads", Attr::Ints(vec![0, 1, 1, 0, 1, 1])));
        let y = eval(&op, &[Some(&x), Some(&w)]).unwrap();
        let (shape, want) = naive2d(
            x.as_f32().unwrap(),
            [2, 2, 6, 5],
            w.as_f32().unwrap(),
            [3, 2, 3, 3],
            &[],
            1,
            [1, 1],
            [1, 1],
            [1, 1, 1, 1],
        );
        assert_close(&y[0], &[2, 3, 1, shape[2], shape[3]], &want, 1e-4);
    }

    #[test]
    fn errors() {
        let x = Tensor::zeros(DType::F32, &[1, 3, 5, 5]);
        let op = conv_op(Attrs::new());
        assert!(eval(&op, &[Some(&x), Some(&Tensor::zeros(DType::F32, &[2, 2, 3, 3]))]).is_err());
        assert!(eval(&op, &[Some(&x), Some(&Tensor::zeros(DType::F32, &[2, 3, 7, 7]))]).is_err());
        assert!(eval(&op, &[Some(&x), Some(&Tensor::zeros(DType::F32, &[2, 3, 3]))]).is_err());
        let w = Tensor::zeros(DType::F32, &[2, 3, 3, 3]);
        assert!(eval(&op, &[Some(&x), Some(&w), Some(&Tensor::zeros(DType::F32, &[3]))]).is_err());
        assert!(eval(&op, &[Some(&Tensor::zeros(DType::I32, &[1, 3, 5, 5])), Some(&w)]).is_err());
        let op = conv_op(Attrs::new().with("group", Attr::Int(2)));
        assert!(eval(&op, &[Some(&x), Some(&w)]).is_err());
        let op = conv_op(Attrs::new().with("kernel_shape", Attr::Ints(vec![2, 2])));
        assert!(eval(&op, &[Some(&x), Some(&w)]).is_err());
        assert!(Conv::build(&Attrs::new().with("group", Attr::Int(0)), 17).is_err());
        assert!(Conv::build(&Attrs::new().with("auto_pad", Attr::String(b"BAD".to_vec())), 17).is_err());
    }
}
