//! AveragePool: the mean over each (dilated) window.

use crate::error::Result;
use crate::ops::nn::common::{
    Geometry, MAX_SPATIAL, Real, WindowAttrs, next_index, require_float, require_spatial_rank,
};
use crate::ops::{Attrs, InferInput, Op, TypeShape, required};
use crate::tensor::{DType, TensorMut, TensorRef};
use crate::{invalid, invalid_err};

/// ONNX AveragePool (opsets 11–21; `dilations` exists from opset 19 and is accepted at
/// any opset). With `count_include_pad=0` the divisor counts the window's taps inside the
/// input; with 1 it also counts taps in the explicit (or auto) padding, but not the extra
/// room that `ceil_mode` adds past the end padding.
#[derive(Clone, PartialEq, Debug)]
pub struct AveragePool {
    /// Window attributes (`kernel_shape` required).
    pub window: WindowAttrs,
    /// `count_include_pad`.
    pub count_include_pad: bool,
}

impl AveragePool {
    /// Parses the attributes.
    pub fn build(attrs: &Attrs, _opset: i64) -> Result<AveragePool> {
        let window = WindowAttrs::parse(attrs, true)?;
        if window.kernel_shape.is_none() {
            invalid!("AveragePool needs the `kernel_shape` attribute");
        }
        let count_include_pad = match attrs.int_or("count_include_pad", 0)? {
            0 => false,
            1 => true,
            v => invalid!("count_include_pad must be 0 or 1, got {v}"),
        };
        Ok(AveragePool { window, count_include_pad })
    }

    fn geometry(&self, x: &[usize]) -> Result<Geometry> {
        require_spatial_rank(x, "input X")?;
        let kernel = self.window.kernel_from_attr(x.len() - 2)?;
        self.window.resolve(&x[2..], &kernel)
    }
}

impl Op for AveragePool {
    fn op_type(&self) -> &'static str {
        "AveragePool"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        if inputs.len() != 1 {
            invalid!("AveragePool takes 1 input, got {}", inputs.len());
        }
        let x = required(inputs, 0, "X")?;
        require_float(x.dtype, "X")?;
        let geo = self.geometry(x.shape)?;
        let mut shape = x.shape[..2].to_vec();
        shape.extend_from_slice(&geo.output[..geo.nsp]);
        Ok(vec![TypeShape::new(x.dtype, shape)])
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let x = required(inputs, 0, "X")?;
        let geo = self.geometry(x.shape)?;
        let y = outputs.first_mut().ok_or_else(|| invalid_err!("AveragePool needs an output"))?;
        match x.dtype() {
            DType::F32 => avg_pool::<f32>(self, &geo, x, y),
            DType::F16 => avg_pool::<half::f16>(self, &geo, x, y),
            other => invalid!("AveragePool does not support {other}"),
        }
    }
}

fn avg_pool<T: Real>(op: &AveragePool, geo: &Geometry, x: TensorRef, y: &mut TensorMut) -> Result<()> {
    let xs = x.typed::<T>()?;
    let ys = y.typed_mut::<T>()?;
    let nsp = geo.nsp;
    let planes = x.shape[0] * x.shape[1];
    let (in_size, out_size) = (geo.input_size(), geo.output_size());
    if xs.len() != planes * in_size || ys.len() != planes * out_size {
        invalid!("AveragePool: tensor sizes do not match the inferred shapes");
    }
    for plane in 0..planes {
        let mut o = [0usize; MAX_SPATIAL];
        for yo in 0..out_size {
            let mut sum = 0f32;
            let mut count = 0usize;
            let mut k = [0usize; MAX_SPATIAL];
            loop {
                let mut off = 0usize;
                let mut inside = true;
                let mut in_pads = true;
                for d in 0..nsp {
                    let p = geo.input_pos(d, o[d], k[d]);
                    let n = geo.input[d] as isize;
                    if p < 0 || p >= n {
                        inside = false;
                        if p >= n + geo.pad_end[d] as isize {
                            in_pads = false;
                        }
                    } else {
                        off = off * geo.input[d] + p as usize;
                    }
                }
                if inside {
                    sum += xs[plane * in_size + off].f();
                    count += 1;
                } else if op.count_include_pad && in_pads {
                    count += 1;
                }
                if !next_index(&mut k[..nsp], &geo.kernel[..nsp]) {
                    break;
                }
            }
            ys[plane * out_size + yo] = T::r(if count == 0 { 0.0 } else { sum / count as f32 });
            next_index(&mut o[..nsp], &geo.output[..nsp]);
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

    #[test]
    fn pads_with_and_without_count() {
        let x = t(&[1, 1, 3], &[3., 6., 9.]);
        let base = Attrs::new().with("kernel_shape", ints(&[2])).with("pads", ints(&[1, 1]));
        let op = AveragePool::build(&base, 17).unwrap();
        assert_close(&eval(&op, &[Some(&x)]).unwrap()[0], &[1, 1, 4], &[3., 4.5, 7.5, 9.], 1e-6);
        let op = AveragePool::build(&base.clone().with("count_include_pad", Attr::Int(1)), 17).unwrap();
        assert_close(&eval(&op, &[Some(&x)]).unwrap()[0], &[1, 1, 4], &[1.5, 4.5, 7.5, 4.5], 1e-6);
    }

    #[test]
    fn ceil_mode_does_not_count_extra() {
        // in 5, k 2, s 2, ceil: windows [0,1] [2,3] [4]; the last has one real tap.
        let x = t(&[1, 1, 5], &[1., 3., 5., 7., 9.]);
        let a = Attrs::new()
            .with("kernel_shape", ints(&[2]))
            .with("strides", ints(&[2]))
            .with("ceil_mode", Attr::Int(1))
            .with("count_include_pad", Attr::Int(1));
        let op = AveragePool::build(&a, 17).unwrap();
        assert_close(&eval(&op, &[Some(&x)]).unwrap()[0], &[1, 1, 3], &[2., 6., 9.], 1e-6);
    }

    #[test]
    fn random_against_naive() {
        let mut rng = Rng::new(9);
        for &(shape, k, s, p, cip) in &[
            ([2usize, 3, 7, 13], [3usize, 3], [2usize, 2], [1usize, 1, 1, 1], false),
            ([1, 2, 13, 7], [2, 3], [1, 2], [1, 0, 0, 2], true),
            ([3, 1, 8, 8], [8, 8], [1, 1], [0, 0, 0, 0], false),
        ] {
            let x = rng.tensor(&shape);
            let xv = x.as_f32().unwrap();
            let attrs = Attrs::new()
                .with("kernel_shape", Attr::Ints(k.iter().map(|&v| v as i64).collect()))
                .with("strides", Attr::Ints(s.iter().map(|&v| v as i64).collect()))
                .with("pads", Attr::Ints(p.iter().map(|&v| v as i64).collect()))
                .with("count_include_pad", Attr::Int(cip as i64));
            let op = AveragePool::build(&attrs, 17).unwrap();
            let [n, c, h, w] = shape;
            let oh = (h + p[0] + p[2] - k[0]) / s[0] + 1;
            let ow = (w + p[1] + p[3] - k[1]) / s[1] + 1;
            let mut want = vec![];
            for pl in 0..n * c {
                for i in 0..oh {
                    for j in 0..ow {
                        let (mut sum, mut cnt) = (0f32, 0);
                        for a in 0..k[0] {
                            for b in 0..k[1] {
                                let yy = (i * s[0] + a) as i64 - p[0] as i64;
                                let xx = (j * s[1] + b) as i64 - p[1] as i64;
                                if yy >= 0 && xx >= 0 && (yy as usize) < h && (xx as usize) < w {
                                    sum += xv[pl * h * w + yy as usize * w + xx as usize];
                                    cnt += 1;
                                }
                            }
                        }
                        let div = if cip { k[0] * k[1] } else { cnt };
                        want.push(sum / div as f32);
                    }
                }
            }
            let y = eval(&op, &[Some(&x)]).unwrap();
            assert_close(&y[0], &[n, c, oh, ow], &want, 1e-5);
            assert_close(&eval(&op, &[Some(&to_f16(&x))]).unwrap()[0], &[n, c, oh, ow], &want, 1e-2);
        }
    }

    #[test]
    fn errors() {
        assert!(AveragePool::build(&Attrs::new(), 17).is_err());
        let op = AveragePool::build(&Attrs::new().with("kernel_shape", ints(&[2])), 17).unwrap();
        assert!(eval(&op, &[Some(&Tensor::zeros(DType::I8, &[1, 1, 4]))]).is_err());
        assert!(eval(&op, &[Some(&Tensor::zeros(DType::F32, &[1, 1, 4, 4]))]).is_err());
        assert!(
            AveragePool::build(
                &Attrs::new().with("kernel_shape", ints(&[2])).with("count_include_pad", Attr::Int(2)),
                17
            )
            .is_err()
        );
    }
}
