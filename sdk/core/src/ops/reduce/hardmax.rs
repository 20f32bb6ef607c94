//! Hardmax: 1 at the first maximum along the axis, 0 elsewhere.
//!
//! Before opset 13 the input is coerced to 2-D at `axis` (default 1), so the maximum is
//! taken over all dims from `axis` on; from opset 13 over the single dim `axis` (default −1).

use crate::error::Result;
use crate::ops::{Attrs, InferInput, Op, TypeShape, required};
use crate::tensor::{DataMut, DataRef, Element, TensorMut, TensorRef};
use crate::{invalid, invalid_err};

use super::softmax::{infer_split, run_split};

/// The Hardmax op.
#[derive(Debug)]
pub struct Hardmax {
    axis: i64,
    coerce_2d: bool,
}

impl Hardmax {
    /// Parses `axis`, whose default and meaning depend on `opset`.
    pub fn build(attrs: &Attrs, opset: i64) -> Result<Self> {
        let coerce_2d = opset < 13;
        Ok(Hardmax { axis: attrs.int_or("axis", if coerce_2d { 1 } else { -1 })?, coerce_2d })
    }

    fn run_typed<T: Element>(xs: &[T], ys: &mut [T], (outer, n, inner): (usize, usize, usize)) {
        let (zero, one) = (T::from_f64(0.0), T::from_f64(1.0));
        for o in 0..outer {
            for i in 0..inner {
                let base = o * n * inner + i;
                let mut at = 0;
                for k in 0..n {
                    ys[base + k * inner] = zero;
                    if xs[base + k * inner] > xs[base + at * inner] {
                        at = k;
                    }
                }
                if n > 0 {
                    ys[base + at * inner] = one;
                }
            }
        }
    }
}

impl Op for Hardmax {
    fn op_type(&self) -> &'static str {
        "Hardmax"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        Ok(vec![infer_split(inputs, self.axis, self.coerce_2d)?.0])
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let x = required(inputs, 0, "input")?;
        let y = outputs.first_mut().ok_or_else(|| invalid_err!("missing output"))?;
        let split = run_split(&x, y, self.axis, self.coerce_2d)?;
        match (x.data, &mut y.data) {
            (DataRef::F32(xs), DataMut::F32(ys)) => Self::run_typed(xs, ys, split),
            (DataRef::F16(xs), DataMut::F16(ys)) => Self::run_typed(xs, ys, split),
            _ => invalid!("input of type {} is not supported (float32 or float16)", x.dtype()),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::testutil::*;
    use super::*;
    use crate::ops::eval;
    use crate::tensor::Tensor;

    #[test]
    fn hand_checked() {
        // Ties pick the first maximum.
        let x = Tensor::from_f32(&[2, 3], vec![3., 1., 3., 0., 5., 4.]).unwrap();
        let op = Hardmax::build(&Attrs::new(), 13).unwrap();
        let y = eval(&op, &[Some(&x)]).unwrap().remove(0);
        assert_eq!(y.as_f32().unwrap(), &[1., 0., 0., 0., 1., 0.]);
        let op0 = Hardmax::build(&int_attrs(&[("axis", 0)]), 13).unwrap();
        let y = eval(&op0, &[Some(&x)]).unwrap().remove(0);
        assert_eq!(y.as_f32().unwrap(), &[1., 0., 0., 0., 1., 1.]);
        // Opset 11, axis 0: one maximum over the whole tensor.
        let old = Hardmax::build(&int_attrs(&[("axis", 0)]), 11).unwrap();
        let y = eval(&old, &[Some(&x)]).unwrap().remove(0);
        assert_eq!(y.as_f32().unwrap(), &[0., 0., 0., 0., 1., 0.]);
    }

    #[test]
    fn random_against_naive() {
        let mut rng = Rng(11);
        let shape = [2, 7, 13];
        let x = rand_f32(&mut rng, &shape, -1.0, 1.0);
        let xs = x.as_f32().unwrap();
        for (opset, axis) in [(13, 1i64), (13, -1), (11, 1), (11, 2)] {
            let op = Hardmax::build(&int_attrs(&[("axis", axis)]), opset).unwrap();
            let y = eval(&op, &[Some(&x)]).unwrap().remove(0);
            let a = axis.rem_euclid(3) as usize;
            let (outer, n, inner) = if opset < 13 {
                (shape[..a].iter().product::<usize>(), shape[a..].iter().product::<usize>(), 1)
            } else {
                (shape[..a].iter().product(), shape[a], shape[a + 1..].iter().product())
            };
            let mut want = vec![0f32; xs.len()];
            for o in 0..outer {
                for i in 0..inner {
                    let idx: Vec<usize> = (0..n).map(|k| (o * n + k) * inner + i).collect();
                    let best = idx.iter().copied().reduce(|b, j| if xs[j] > xs[b] { j } else { b }).unwrap();
                    want[best] = 1.0;
                }
            }
            assert_eq!(y.as_f32().unwrap(), &want[..], "opset {opset} axis {axis}");
        }
    }

    #[test]
    fn errors() {
        let x = Tensor::from_f32(&[2, 3], vec![0.; 6]).unwrap();
        let op = Hardmax::build(&int_attrs(&[("axis", 2)]), 13).unwrap();
        assert!(eval(&op, &[Some(&x)]).is_err());
        let i = Tensor::from_i64(&[2], vec![1, 2]).unwrap();
        assert!(eval(&Hardmax::build(&Attrs::new(), 13).unwrap(), &[Some(&i)]).is_err());
    }
}
