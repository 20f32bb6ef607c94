//! DepthToSpace: move channel blocks into spatial blocks (`[N, C, H, W]` to
//! `[N, C/b², H·b, W·b]`).

use crate::error::Result;
use crate::ops::shape::util::{Strided, check_inputs, copy_strided, dispatch, single_output};
use crate::ops::{Attrs, InferInput, Op, TypeShape, required};
use crate::tensor::{Element, MAX_RANK, TensorMut, TensorRef};
use crate::{invalid, invalid_err};

/// Channel order of the blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum D2sMode {
    /// depth-column-row (default): input channel `(i·b + j)·C' + c`.
    Dcr,
    /// column-row-depth: input channel `c·b² + i·b + j`.
    Crd,
}

/// ONNX `DepthToSpace`.
#[derive(Clone, Debug)]
pub struct DepthToSpace {
    /// Block size `b`.
    pub blocksize: usize,
    /// Channel order.
    pub mode: D2sMode,
}

impl DepthToSpace {
    /// Builds from attributes; `blocksize` is required, `mode` exists from opset 11.
    pub fn build(attrs: &Attrs, opset: i64) -> Result<DepthToSpace> {
        let b = attrs.int("blocksize")?.ok_or_else(|| invalid_err!("DepthToSpace needs `blocksize`"))?;
        if !(1..=1 << 16).contains(&b) {
            invalid!("blocksize must be positive, got {b}");
        }
        let m = if opset >= 11 { attrs.string_or("mode", "DCR")? } else { "DCR".into() };
        let mode = match m.as_str() {
            "DCR" => D2sMode::Dcr,
            "CRD" => D2sMode::Crd,
            other => invalid!("mode must be DCR or CRD, got `{other}`"),
        };
        Ok(DepthToSpace { blocksize: b as usize, mode })
    }
}

fn run_t<T: Element>(x: TensorRef, out: &mut TensorMut, b: usize, mode: D2sMode) -> Result<()> {
    let [n, c, h, w] = *x.shape else { invalid!("input must be 4-D") };
    let c2 = c / (b * b);
    let hw = (h * w) as isize;
    let (b_, w_) = (b as isize, w as isize);
    // Output viewed as [N, C', H, b, W, b] (row-major, the same bytes as [N, C', H·b, W·b]).
    let shape = [n, c2, h, b, w, b];
    let mut s = Strided { offset: 0, strides: [0; MAX_RANK] };
    let cs = c2 as isize * hw;
    s.strides[..6].copy_from_slice(&match mode {
        D2sMode::Dcr => [c as isize * hw, hw, w_, b_ * cs, 1, cs],
        D2sMode::Crd => [c as isize * hw, b_ * b_ * hw, w_, b_ * hw, 1, hw],
    });
    copy_strided(x.typed::<T>()?, &s, out.typed_mut::<T>()?, &Strided::row_major(&shape, 0), &shape)
}

impl Op for DepthToSpace {
    fn op_type(&self) -> &'static str {
        "DepthToSpace"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        check_inputs(inputs, 1, 1, "DepthToSpace")?;
        let x = required(inputs, 0, "input")?;
        let &[n, c, h, w] = x.shape else { invalid!("input must be 4-D [N, C, H, W], got {:?}", x.shape) };
        let bb = self.blocksize * self.blocksize;
        if c % bb != 0 {
            invalid!("channels {c} are not a multiple of blocksize² = {bb}");
        }
        let grow = |d: usize| d.checked_mul(self.blocksize).ok_or_else(|| invalid_err!("output dim overflows"));
        Ok(vec![TypeShape::new(x.dtype, vec![n, c / bb, grow(h)?, grow(w)?])])
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let x = required(inputs, 0, "input")?;
        dispatch!(x.dtype(), run_t(x, single_output(outputs)?, self.blocksize, self.mode))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::Attr;
    use crate::ops::eval;
    use crate::ops::shape::util::testing::*;

    fn op(b: i64, mode: &str) -> DepthToSpace {
        DepthToSpace::build(&Attrs::new().with("blocksize", Attr::Int(b)).with("mode", Attr::String(mode.into())), 13)
            .unwrap()
    }

    /// The reshape-transpose-reshape definition from the spec, done with index arithmetic.
    fn naive(shape: &[usize], b: usize, crd: bool) -> Vec<f32> {
        let (n, c, h, w) = (shape[0], shape[1], shape[2], shape[3]);
        let c2 = c / (b * b);
        let os = [n, c2, h * b, w * b];
        (0..os.iter().product())
            .map(|o| {
                let i = unravel(o, &os);
                let (bi, bj) = (i[2] % b, i[3] % b);
                let ch = if crd { i[1] * b * b + bi * b + bj } else { (bi * b + bj) * c2 + i[1] };
                ravel(&[i[0], ch, i[2] / b, i[3] / b], shape) as f32
            })
            .collect()
    }

    #[test]
    fn spec_example_dcr_and_crd() {
        // The ONNX doc example: x = arange(48).reshape(1, 8, 2, 3), blocksize 2.
        let x = iota(&[1, 8, 2, 3]);
        let dcr = eval(&op(2, "DCR"), &[Some(&x)]).unwrap();
        assert_eq!(dcr[0].shape(), &[1, 2, 4, 6]);
        assert_eq!(f32s(&dcr[0])[..12], [0., 12., 1., 13., 2., 14., 24., 36., 25., 37., 26., 38.]);
        let crd = eval(&op(2, "CRD"), &[Some(&x)]).unwrap();
        assert_eq!(f32s(&crd[0])[..12], [0., 6., 1., 7., 2., 8., 12., 18., 13., 19., 14., 20.]);
    }

    #[test]
    fn random_against_naive() {
        let mut rng = Rng::new(37);
        for _ in 0..30 {
            let b = 1 + rng.below(3);
            let shape = [1 + rng.below(2), b * b * (1 + rng.below(3)), 1 + rng.below(7), [1, 7, 13][rng.below(3)]];
            let x = iota(&shape);
            for (mode, crd) in [("DCR", false), ("CRD", true)] {
                let out = eval(&op(b as i64, mode), &[Some(&x)]).unwrap();
                assert_eq!(f32s(&out[0]), naive(&shape, b, crd), "{shape:?} b={b} {mode}");
            }
        }
    }

    #[test]
    fn errors() {
        assert!(eval(&op(2, "DCR"), &[Some(&iota(&[1, 6, 2, 2]))]).is_err());
        assert!(eval(&op(2, "DCR"), &[Some(&iota(&[4, 2, 2]))]).is_err());
        assert!(DepthToSpace::build(&Attrs::new(), 13).is_err());
        assert!(DepthToSpace::build(&Attrs::new().with("blocksize", Attr::Int(0)), 13).is_err());
        assert!(
            DepthToSpace::build(
                &Attrs::new().with("blocksize", Attr::Int(2)).with("mode", Attr::String("X".into())),
                13
            )
            .is_err()
        );
    }
}
