//! MaxPool: the maximum over each (dilated) window, with the optional Indices output.

use crate::cpu::gemm::SyncPtr;
use crate::cpu::{Exec, Isa};
use crate::error::Result;
use crate::ops::nn::common::{Geometry, MAX_SPATIAL, WindowAttrs, next_index, require_spatial_rank};
use crate::ops::{Attrs, InferInput, Op, TypeShape, required};
use crate::tensor::{DType, Element, TensorMut, TensorRef};
use crate::{invalid, invalid_err};

/// ONNX MaxPool (opsets 11–21). Always infers both outputs, Y and Indices (int64, the
/// flat index into X of each maximum, row-major or with `storage_order=1` column-major
/// over the spatial dims); `run` skips Indices when given only one output.
#[derive(Clone, PartialEq, Debug)]
pub struct MaxPool {
    /// Window attributes (`kernel_shape` required).
    pub window: WindowAttrs,
    /// `storage_order`: 0 row-major, 1 column-major indices.
    pub column_major: bool,
}

impl MaxPool {
    /// Parses the attributes.
    pub fn build(attrs: &Attrs, _opset: i64) -> Result<MaxPool> {
        let window = WindowAttrs::parse(attrs, true)?;
        if window.kernel_shape.is_none() {
            invalid!("MaxPool needs the `kernel_shape` attribute");
        }
        let column_major = match attrs.int_or("storage_order", 0)? {
            0 => false,
            1 => true,
            v => invalid!("storage_order must be 0 or 1, got {v}"),
        };
        Ok(MaxPool { window, column_major })
    }

    fn geometry(&self, x: &[usize]) -> Result<Geometry> {
        require_spatial_rank(x, "input X")?;
        let kernel = self.window.kernel_from_attr(x.len() - 2)?;
        self.window.resolve(&x[2..], &kernel)
    }
}

impl Op for MaxPool {
    fn op_type(&self) -> &'static str {
        "MaxPool"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        if inputs.len() != 1 {
            invalid!("MaxPool takes 1 input, got {}", inputs.len());
        }
        let x = required(inputs, 0, "X")?;
        if !matches!(x.dtype, DType::F32 | DType::F16 | DType::I8 | DType::U8) {
            invalid!("MaxPool supports float32, float16, int8 and uint8, got {}", x.dtype);
        }
        let geo = self.geometry(x.shape)?;
        let mut shape = x.shape[..2].to_vec();
        shape.extend_from_slice(&geo.output[..geo.nsp]);
        Ok(vec![TypeShape::new(x.dtype, shape.clone()), TypeShape::new(DType::I64, shape)])
    }

    fn required_outputs(&self) -> usize {
        1 // Indices only when the model reads it
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], scratch: &mut [u8]) -> Result<()> {
        self.run_exec(inputs, outputs, scratch, &Exec::single())
    }

    fn run_exec(
        &self,
        inputs: &[Option<TensorRef>],
        outputs: &mut [TensorMut],
        _scratch: &mut [u8],
        exec: &Exec,
    ) -> Result<()> {
        let x = required(inputs, 0, "X")?;
        let geo = self.geometry(x.shape)?;
        let (y, rest) = outputs.split_first_mut().ok_or_else(|| invalid_err!("MaxPool needs an output"))?;
        let mut indices = match rest.first_mut() {
            Some(t) => Some(t.typed_mut::<i64>()?),
            None => None,
        };
        match x.dtype() {
            DType::F32 if geo.nsp == 2 && indices.is_none() => max_pool_2d_f32_values(exec, &geo, x, y),
            DType::F32 if geo.nsp == 2 && !self.column_major => max_pool_2d_f32(&geo, x, y, &mut indices),
            DType::F32 => max_pool::<f32>(self, &geo, x, y, &mut indices),
            DType::F16 => max_pool::<half::f16>(self, &geo, x, y, &mut indices),
            DType::I8 => max_pool::<i8>(self, &geo, x, y, &mut indices),
            DType::U8 => max_pool::<u8>(self, &geo, x, y, &mut indices),
            other => invalid!("MaxPool does not support {other}"),
        }
    }
}

/// The common case (2-D, f32, row-major indices) as a plain loop nest: same results as
/// [`max_pool`], which walks N-d windows generically.
fn max_pool_2d_f32(geo: &Geometry, x: TensorRef, y: &mut TensorMut, indices: &mut Option<&mut [i64]>) -> Result<()> {
    let xs = x.typed::<f32>()?;
    let ys = y.typed_mut::<f32>()?;
    let planes = x.shape[0] * x.shape[1];
    let (h, w, oh, ow) = (geo.input[0], geo.input[1], geo.output[0], geo.output[1]);
    if xs.len() != planes * h * w
        || ys.len() != planes * oh * ow
        || indices.as_ref().is_some_and(|i| i.len() != ys.len())
    {
        invalid!("MaxPool: tensor sizes do not match the inferred shapes");
    }
    let (kh, kw) = (geo.kernel[0], geo.kernel[1]);
    let (sy, sx, dy, dx) = (geo.stride[0], geo.stride[1], geo.dilation[0], geo.dilation[1]);
    let taps = window_taps;
    for plane in 0..planes {
        let xp = &xs[plane * h * w..(plane + 1) * h * w];
        for oy in 0..oh {
            let y0 = (oy * sy) as isize - geo.pad_begin[0] as isize;
            let (ky0, ky1) = taps(y0, h, kh, dy);
            for ox in 0..ow {
                let x0 = (ox * sx) as isize - geo.pad_begin[1] as isize;
                // Windows wholly inside the row need no clipping.
                let (kx0, kx1) = if x0 >= 0 && x0 as usize + (kw - 1) * dx < w { (0, kw) } else { taps(x0, w, kw, dx) };
                let (mut best, mut at) = (f32::NEG_INFINITY, usize::MAX);
                for ky in ky0..ky1 {
                    let iy = (y0 + (ky * dy) as isize) as usize;
                    for kx in kx0..kx1 {
                        let off = iy * w + (x0 + (kx * dx) as isize) as usize;
                        let v = xp[off];
                        // The first tap inside the input, then strictly greater ones.
                        if at == usize::MAX || v > best {
                            best = v;
                            at = off;
                        }
                    }
                }
                let i = (plane * oh + oy) * ow + ox;
                ys[i] = best;
                if let Some(ind) = indices.as_deref_mut() {
                    ind[i] = if at == usize::MAX { -1 } else { (plane * h * w + at) as i64 };
                }
            }
        }
    }
    Ok(())
}

/// Taps `lo..hi` of a window starting at `start` (may be negative) that fall in `0..n`,
/// stepping by the dilation `d`.
fn window_taps(start: isize, n: usize, k: usize, d: usize) -> (usize, usize) {
    let lo = if start < 0 { ((-start) as usize).div_ceil(d) } else { 0 };
    let past = n as isize - start; // taps with start + t*d < n
    let hi = if past <= 0 { 0 } else { k.min((past as usize).div_ceil(d)) };
    (lo, hi.max(lo))
}

/// 2-D f32 MaxPool when Indices is not wanted (the usual case in inference graphs): the
/// same maxima as [`max_pool_2d_f32`] (the first tap, then strictly greater ones), but the
/// columns whose window lies inside the row take a loop with no clipping and no index
/// bookkeeping, specialised for the common 2-wide and 3-wide windows.
fn max_pool_2d_f32_values(exec: &Exec, geo: &Geometry, x: TensorRef, y: &mut TensorMut) -> Result<()> {
    let xs = x.typed::<f32>()?;
    let ys = y.typed_mut::<f32>()?;
    let planes = x.shape[0] * x.shape[1];
    let (h, w, oh, ow) = (geo.input[0], geo.input[1], geo.output[0], geo.output[1]);
    if xs.len() != planes * h * w || ys.len() != planes * oh * ow {
        invalid!("MaxPool: tensor sizes do not match the inferred shapes");
    }
    // Planes split evenly over the pool's threads.
    let tasks = exec.threads().min(planes).max(1);
    let per = planes.div_ceil(tasks);
    let (y_ptr, y_len) = (SyncPtr(ys.as_mut_ptr()), ys.len());
    let task = |t: usize| {
        let (p0, p1) = (t * per, ((t + 1) * per).min(planes));
        if p0 >= p1 {
            return;
        }
        // SAFETY: task t alone writes planes p0..p1 of Y (disjoint ranges).
        let ys = unsafe { std::slice::from_raw_parts_mut(y_ptr.get(), y_len) };
        max_pool_planes(exec.isa, geo, p1 - p0, &xs[p0 * h * w..p1 * h * w], &mut ys[p0 * oh * ow..p1 * oh * ow]);
    };
    crate::cpu::pool::run_tasks(exec.pool, tasks, &task);
    Ok(())
}

/// [`max_pool_2d_f32_values`] over `planes` whole planes of `xs` and `ys`.
fn max_pool_planes(isa: Isa, geo: &Geometry, planes: usize, xs: &[f32], ys: &mut [f32]) {
    let (h, w, oh, ow) = (geo.input[0], geo.input[1], geo.output[0], geo.output[1]);
    let (kh, kw) = (geo.kernel[0], geo.kernel[1]);
    let (sy, sx, dy, dx) = (geo.stride[0], geo.stride[1], geo.dilation[0], geo.dilation[1]);
    let pad_x = geo.pad_begin[1];
    // Output columns whose window is wholly inside the row: ox*sx >= pad_x and
    // ox*sx - pad_x + (kw-1)*dx < w.
    let ox_lo = pad_x.div_ceil(sx).min(ow);
    let reach = (kw - 1) * dx;
    let ox_hi = if w + pad_x > reach { ((w + pad_x - reach - 1) / sx + 1).min(ow).max(ox_lo) } else { ox_lo };
    let max_in = |v: f32, best: f32| if v > best { v } else { best };
    for plane in 0..planes {
        let xp = &xs[plane * h * w..(plane + 1) * h * w];
        for oy in 0..oh {
            let y0 = (oy * sy) as isize - geo.pad_begin[0] as isize;
            let (ky0, ky1) = window_taps(y0, h, kh, dy);
            let out = &mut ys[(plane * oh + oy) * ow..(plane * oh + oy + 1) * ow];
            if ky0 == ky1 {
                out.fill(f32::NEG_INFINITY);
                continue;
            }
            let row = |ky: usize| {
                let iy = (y0 + (ky * dy) as isize) as usize;
                &xp[iy * w..(iy + 1) * w]
            };
            // Clipped columns: the generic walk.
            for ox in (0..ox_lo).chain(ox_hi..ow) {
                let x0 = (ox * sx) as isize - pad_x as isize;
                let (kx0, kx1) = window_taps(x0, w, kw, dx);
                let mut best = f32::NEG_INFINITY;
                let mut first = true;
                for ky in ky0..ky1 {
                    let r = row(ky);
                    for kx in kx0..kx1 {
                        let v = r[(x0 + (kx * dx) as isize) as usize];
                        if first || v > best {
                            best = v;
                            first = false;
                        }
                    }
                }
                out[ox] = best;
            }
            // Interior columns: first row's taps, then the others, no clipping.
            let interior = &mut out[ox_lo..ox_hi];
            let at = |ox: usize| (ox_lo + ox) * sx - pad_x;
            if (kh, kw, sy, sx, dy, dx) == (2, 2, 2, 2, 1, 1) && ky1 - ky0 == 2 {
                let b = at(0);
                crate::cpu::max_pool::max_2x2_row(isa, &row(ky0)[b..], &row(ky0 + 1)[b..], interior);
                continue;
            }
            if (kh, kw, sy, sx, dy, dx) == (3, 3, 2, 2, 1, 1) && ky1 - ky0 == 3 {
                let b = at(0);
                let (r0, r1, r2) = (&row(ky0)[b..], &row(ky0 + 1)[b..], &row(ky0 + 2)[b..]);
                crate::cpu::max_pool::max_3x3_s2_row(isa, r0, r1, r2, interior);
                continue;
            }
            let r = row(ky0);
            match (kw, dx) {
                (2, 1) => interior.iter_mut().enumerate().for_each(|(i, o)| {
                    let b = at(i);
                    *o = max_in(r[b + 1], r[b]);
                }),
                (3, 1) => interior.iter_mut().enumerate().for_each(|(i, o)| {
                    let b = at(i);
                    *o = max_in(r[b + 2], max_in(r[b + 1], r[b]));
                }),
                _ => interior.iter_mut().enumerate().for_each(|(i, o)| {
                    let b = at(i);
                    *o = (1..kw).fold(r[b], |best, kx| max_in(r[b + kx * dx], best));
                }),
            }
            for ky in ky0 + 1..ky1 {
                let r = row(ky);
                interior.iter_mut().enumerate().for_each(|(i, o)| {
                    let b = at(i);
                    *o = (0..kw).fold(*o, |best, kx| max_in(r[b + kx * dx], best));
                });
            }
        }
    }
}

fn max_pool<T: Element>(
    op: &MaxPool,
    geo: &Geometry,
    x: TensorRef,
    y: &mut TensorMut,
    indices: &mut Option<&mut [i64]>,
) -> Result<()> {
    let xs = x.typed::<T>()?;
    let ys = y.typed_mut::<T>()?;
    let nsp = geo.nsp;
    let planes = x.shape[0] * x.shape[1];
    let (in_size, out_size) = (geo.input_size(), geo.output_size());
    if xs.len() != planes * in_size
        || ys.len() != planes * out_size
        || indices.as_ref().is_some_and(|i| i.len() != ys.len())
    {
        invalid!("MaxPool: tensor sizes do not match the inferred shapes");
    }
    for plane in 0..planes {
        let mut o = [0usize; MAX_SPATIAL];
        for yo in 0..out_size {
            let mut best: Option<(T, usize)> = None;
            let mut k = [0usize; MAX_SPATIAL];
            loop {
                let mut pos = [0usize; MAX_SPATIAL];
                let mut inside = true;
                for d in 0..nsp {
                    let p = geo.input_pos(d, o[d], k[d]);
                    if p < 0 || p as usize >= geo.input[d] {
                        inside = false;
                        break;
                    }
                    pos[d] = p as usize;
                }
                if inside {
                    let off = pos[..nsp].iter().zip(&geo.input[..nsp]).fold(0, |a, (&p, &n)| a * n + p);
                    let v = xs[plane * in_size + off];
                    if best.is_none_or(|(b, _)| v > b) {
                        let flat = if op.column_major {
                            pos[..nsp].iter().zip(&geo.input[..nsp]).rev().fold(0, |a, (&p, &n)| a * n + p)
                        } else {
                            off
                        };
                        best = Some((v, flat));
                    }
                }
                if !next_index(&mut k[..nsp], &geo.kernel[..nsp]) {
                    break;
                }
            }
            let i = plane * out_size + yo;
            // A window entirely in padding (only possible with pads >= kernel) gives the lowest value.
            let (v, flat) =
                best.map(|(v, f)| (v, (plane * in_size + f) as i64)).unwrap_or((T::from_f64(f64::NEG_INFINITY), -1));
            ys[i] = v;
            if let Some(ind) = indices.as_deref_mut() {
                ind[i] = flat;
            }
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
    use crate::tensor::{Tensor, TensorData};

    fn ints(v: &[i64]) -> Attr {
        Attr::Ints(v.to_vec())
    }

    #[test]
    fn basic_and_indices() {
        let x = t(&[1, 1, 4, 4], &(0..16).map(|v| v as f32).collect::<Vec<_>>());
        let op = MaxPool::build(&Attrs::new().with("kernel_shape", ints(&[2, 2])).with("strides", ints(&[2, 2])), 17)
            .unwrap();
        let y = eval(&op, &[Some(&x)]).unwrap();
        assert_close(&y[0], &[1, 1, 2, 2], &[5., 7., 13., 15.], 0.0);
        assert_eq!(y[1].to_i64_vec().unwrap(), vec![5, 7, 13, 15]);
        let op = MaxPool::build(
            &Attrs::new()
                .with("kernel_shape", ints(&[2, 2]))
                .with("strides", ints(&[2, 2]))
                .with("storage_order", Attr::Int(1)),
            17,
        )
        .unwrap();
        let y = eval(&op, &[Some(&x)]).unwrap();
        // (h, w) = (1, 1) -> 1 + 1*4 = 5; (1, 3) -> 1 + 12 = 13; (3, 1) -> 7; (3, 3) -> 15.
        assert_eq!(y[1].to_i64_vec().unwrap(), vec![5, 13, 7, 15]);
    }

    #[test]
    fn resnet_stem_pool_and_ceil() {
        // 3x3 stride 2 pad 1 on 7x7 -> 4x4 (ResNet's stem pool shape rule).
        let x = Tensor::zeros(DType::F32, &[2, 3, 7, 7]);
        let op = MaxPool::build(
            &Attrs::new()
                .with("kernel_shape", ints(&[3, 3]))
                .with("strides", ints(&[2, 2]))
                .with("pads", ints(&[1, 1, 1, 1])),
            17,
        )
        .unwrap();
        assert_eq!(eval(&op, &[Some(&x)]).unwrap()[0].shape(), &[2, 3, 4, 4]);
        let x = t(&[1, 1, 5], &[1., 5., 2., 0., 9.]);
        let op = MaxPool::build(
            &Attrs::new().with("kernel_shape", ints(&[2])).with("strides", ints(&[2])).with("ceil_mode", Attr::Int(1)),
            17,
        )
        .unwrap();
        let y = eval(&op, &[Some(&x)]).unwrap();
        assert_close(&y[0], &[1, 1, 3], &[5., 2., 9.], 0.0);
    }

    #[test]
    fn random_against_naive() {
        let mut rng = Rng::new(5);
        for &(shape, k, s, d, p) in &[
            ([2usize, 3, 7, 13], [3usize, 3], [2usize, 2], [1usize, 1], [1usize, 1, 1, 1]),
            ([1, 2, 13, 7], [2, 3], [1, 2], [2, 1], [1, 0, 0, 2]),
            ([3, 1, 9, 9], [3, 3], [3, 3], [1, 2], [0, 0, 0, 0]),
        ] {
            let x = rng.tensor(&shape);
            let xv = x.as_f32().unwrap();
            let attrs = Attrs::new()
                .with("kernel_shape", Attr::Ints(k.iter().map(|&v| v as i64).collect()))
                .with("strides", Attr::Ints(s.iter().map(|&v| v as i64).collect()))
                .with("dilations", Attr::Ints(d.iter().map(|&v| v as i64).collect()))
                .with("pads", Attr::Ints(p.iter().map(|&v| v as i64).collect()));
            let op = MaxPool::build(&attrs, 17).unwrap();
            let [n, c, h, w] = shape;
            let oh = (h + p[0] + p[2] - (k[0] - 1) * d[0] - 1) / s[0] + 1;
            let ow = (w + p[1] + p[3] - (k[1] - 1) * d[1] - 1) / s[1] + 1;
            let mut want = vec![];
            let mut want_idx = vec![];
            for pl in 0..n * c {
                for i in 0..oh {
                    for j in 0..ow {
                        let mut best = (f32::NEG_INFINITY, -1i64);
                        for a in 0..k[0] {
                            for b in 0..k[1] {
                                let yy = (i * s[0] + a * d[0]) as i64 - p[0] as i64;
                                let xx = (j * s[1] + b * d[1]) as i64 - p[1] as i64;
                                if yy >= 0 && xx >= 0 && (yy as usize) < h && (xx as usize) < w {
                                    let idx = pl * h * w + yy as usize * w + xx as usize;
                                    if xv[idx] > best.0 {
                                        best = (xv[idx], idx as i64);
                                    }
                                }
                            }
                        }
                        want.push(best.0);
                        want_idx.push(best.1);
                    }
                }
            }
            let y = eval(&op, &[Some(&x)]).unwrap();
            assert_close(&y[0], &[n, c, oh, ow], &want, 0.0);
            assert_eq!(y[1].to_i64_vec().unwrap(), want_idx);
            let y16 = eval(&op, &[Some(&to_f16(&x))]).unwrap();
            assert_close(&y16[0], &[n, c, oh, ow], &want, 1e-3);
        }
    }

    /// Runs the op with only the Y output (as inference graphs do), which takes the
    /// values-only path: on every ISA, on one thread and on a pool of 3, which must agree
    /// bit for bit.
    fn values_only(op: &MaxPool, x: &Tensor) -> Tensor {
        let ts = op.infer(&[Some(InferInput { dtype: x.dtype(), shape: x.shape(), value: None })]).unwrap();
        let pool = crate::cpu::ThreadPool::new(3).unwrap();
        let mut first: Option<Tensor> = None;
        for isa in Isa::all_supported() {
            for threaded in [false, true] {
                let mut y = Tensor::zeros(DType::F32, &ts[0].shape);
                let exec = Exec { isa, pool: threaded.then_some(&pool) };
                op.run_exec(&[Some(x.view())], &mut [y.view_mut()], &mut [], &exec).unwrap();
                match &first {
                    None => first = Some(y),
                    Some(f) => {
                        let bits = |t: &Tensor| t.as_f32().unwrap().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
                        assert_eq!(bits(&y), bits(f), "{isa} threaded {threaded}");
                    }
                }
            }
        }
        first.unwrap()
    }

    #[test]
    fn values_only_path_matches_the_indices_path() {
        let mut rng = Rng::new(11);
        // (shape, kernel, stride, dilation, pads, auto_pad, ceil_mode): BlazeFace's 2x2/2
        // SAME_UPPER, ResNet's 3x3/2 pad 1, odd sizes, dilation, windows wholly in padding.
        type Case = ([usize; 4], [i64; 2], [i64; 2], [i64; 2], [i64; 4], &'static str, i64);
        let cases: &[Case] = &[
            ([1, 28, 64, 64], [2, 2], [2, 2], [1, 1], [0, 0, 0, 0], "SAME_UPPER", 0),
            ([2, 3, 13, 7], [2, 2], [2, 2], [1, 1], [0, 0, 0, 0], "SAME_UPPER", 0),
            ([1, 4, 17, 17], [3, 3], [2, 2], [1, 1], [1, 1, 1, 1], "NOTSET", 0),
            ([2, 5, 30, 56], [3, 3], [2, 2], [1, 1], [1, 1, 1, 1], "NOTSET", 0),
            ([1, 3, 21, 45], [3, 3], [2, 2], [1, 1], [0, 0, 0, 0], "NOTSET", 1),
            ([1, 2, 9, 11], [3, 2], [1, 3], [2, 1], [2, 0, 1, 2], "NOTSET", 1),
            ([1, 1, 5, 6], [4, 5], [2, 2], [1, 1], [3, 4, 3, 4], "NOTSET", 0),
            ([1, 2, 8, 8], [1, 1], [3, 3], [1, 1], [0, 0, 0, 0], "NOTSET", 1),
        ];
        for &(shape, k, s, d, p, auto_pad, ceil) in cases {
            let x = rng.tensor(&shape);
            let mut attrs = Attrs::new()
                .with("kernel_shape", ints(&k))
                .with("strides", ints(&s))
                .with("dilations", ints(&d))
                .with("ceil_mode", Attr::Int(ceil))
                .with("auto_pad", Attr::String(auto_pad.as_bytes().to_vec()));
            if auto_pad == "NOTSET" {
                attrs = attrs.with("pads", ints(&p));
            }
            let op = MaxPool::build(&attrs, 17).unwrap();
            let want = eval(&op, &[Some(&x)]).unwrap();
            let got = values_only(&op, &x);
            assert_eq!(got.shape(), want[0].shape(), "{shape:?} k{k:?} s{s:?}");
            assert_eq!(got.as_f32().unwrap(), want[0].as_f32().unwrap(), "{shape:?} k{k:?} s{s:?} d{d:?} p{p:?}");
        }
    }

    #[test]
    fn uint8_and_errors() {
        let x = Tensor::new(vec![1, 1, 3], TensorData::U8(vec![3, 200, 7])).unwrap();
        let op = MaxPool::build(&Attrs::new().with("kernel_shape", ints(&[2])), 17).unwrap();
        assert_eq!(eval(&op, &[Some(&x)]).unwrap()[0].data(), &TensorData::U8(vec![200, 200]));
        assert!(MaxPool::build(&Attrs::new(), 17).is_err());
        assert!(eval(&op, &[Some(&Tensor::zeros(DType::F32, &[1, 1, 1]))]).is_err());
        assert!(eval(&op, &[Some(&Tensor::zeros(DType::F32, &[1, 1]))]).is_err());
        assert!(eval(&op, &[Some(&Tensor::zeros(DType::I64, &[1, 1, 4]))]).is_err());
        let op = MaxPool::build(&Attrs::new().with("kernel_shape", ints(&[2, 2])), 17).unwrap();
        assert!(eval(&op, &[Some(&Tensor::zeros(DType::F32, &[1, 1, 4]))]).is_err());
        // An empty input plane with padding around it: every window lies in the padding, so
        // every output is -inf, on the indices path and the values-only path alike (which
        // once divided by the empty plane's size).
        let attrs = Attrs::new().with("kernel_shape", ints(&[1, 1])).with("pads", ints(&[1, 1, 1, 1]));
        let op = MaxPool::build(&attrs, 17).unwrap();
        for (shape, out) in
            [([1usize, 2, 0, 3], [1usize, 2, 2, 5]), ([1, 2, 3, 0], [1, 2, 5, 2]), ([0, 2, 3, 3], [0, 2, 5, 5])]
        {
            let x = Tensor::zeros(DType::F32, &shape);
            let y = eval(&op, &[Some(&x)]).unwrap().remove(0);
            assert_eq!(y.shape(), out, "{shape:?}");
            assert!(y.as_f32().unwrap().iter().all(|&v| v == f32::NEG_INFINITY), "{shape:?}");
            assert_eq!(values_only(&op, &x).as_f32().unwrap(), y.as_f32().unwrap(), "{shape:?}");
        }
    }
}
