//! SpaceToDepth: move spatial blocks into channels (`[N, C, H, W]` to
//! `[N, C·b², H/b, W/b]`), the inverse of DepthToSpace in the same mode.

use crate::error::Result;
use crate::ops::shape::depth_to_space::D2sMode;
use crate::ops::shape::util::{Strided, check_inputs, copy_strided, dispatch, single_output};
use crate::ops::{Attrs, InferInput, Op, TypeShape, required};
use crate::tensor::{Element, MAX_RANK, TensorMut, TensorRef};
use crate::{invalid, invalid_err};

/// ONNX `SpaceToDepth`: output channel `(i·b + j)·C + c` holds `in[n, c, h·b + i, w·b + j]`
/// (DCR). The `mode` attribute (CRD: channel `c·b² + i·b + j`) is an opset 28 addition,
/// accepted here since it costs nothing.
#[derive(Clone, Debug)]
pub struct SpaceToDepth {
    /// Block size `b`.
    pub blocksize: usize,
    /// Channel order.
    pub mode: D2sMode,
}

impl SpaceToDepth {
    /// Builds from attributes; `blocksize` is required.
    pub fn build(attrs: &Attrs, _opset: i64) -> Result<SpaceToDepth> {
        let b = attrs.int("blocksize")?.ok_or_else(|| invalid_err!("SpaceToDepth needs `blocksize`"))?;
        if !(1..=1 << 16).contains(&b) {
            invalid!("blocksize must be positive, got {b}");
        }
        let mode = match attrs.string_or("mode", "DCR")?.as_str() {
            "DCR" => D2sMode::Dcr,
            "CRD" => D2sMode::Crd,
            other => invalid!("mode must be DCR or CRD, got `{other}`"),
        };
        Ok(SpaceToDepth { blocksize: b as usize, mode })
    }
}

fn run_t<T: Element>(x: TensorRef, out: &mut TensorMut, b: usize, mode: D2sMode) -> Result<()> {
    let [n, c, h, w] = *x.shape else { invalid!("input must be 4-D") };
    let (bi, wi, hw) = (b as isize, w as isize, (h * w) as isize);
    let mut s = Strided { offset: 0, strides: [0; MAX_RANK] };
    let nst = c as isize * hw;
    // Output viewed as [N, b, b, C, H/b, W/b] (DCR) or [N, C, b, b, H/b, W/b] (CRD).
    let shape = match mode {
        D2sMode::Dcr => {
            s.strides[..6].copy_from_slice(&[nst, wi, 1, hw, bi * wi, bi]);
            [n, b, b, c, h / b, w / b]
        }
        D2sMode::Crd => {
            s.strides[..6].copy_from_slice(&[nst, hw, wi, 1, bi * wi, bi]);
            [n, c, b, b, h / b, w / b]
        }
    };
    copy_strided(x.typed::<T>()?, &s, out.typed_mut::<T>()?, &Strided::row_major(&shape, 0), &shape)
}

impl Op for SpaceToDepth {
    fn op_type(&self) -> &'static str {
        "SpaceToDepth"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        check_inputs(inputs, 1, 1, "SpaceToDepth")?;
        let x = required(inputs, 0, "input")?;
        let &[n, c, h, w] = x.shape else { invalid!("input must be 4-D [N, C, H, W], got {:?}", x.shape) };
        let b = self.blocksize;
        if h % b != 0 || w % b != 0 {
            invalid!("spatial dims {h}x{w} are not multiples of blocksize {b}");
        }
        let c2 = c.checked_mul(b * b).ok_or_else(|| invalid_err!("output channels overflow"))?;
        Ok(vec![TypeShape::new(x.dtype, vec![n, c2, h / b, w / b])])
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
    use crate::ops::shape::depth_to_space::DepthToSpace;
    use crate::ops::shape::util::testing::*;

    fn op(b: i64) -> SpaceToDepth {
        SpaceToDepth::build(&Attrs::new().with("blocksize", Attr::Int(b)), 13).unwrap()
    }

    fn with_mode(b: i64, mode: &str) -> Attrs {
        Attrs::new().with("blocksize", Attr::Int(b)).with("mode", Attr::String(mode.into()))
    }

    #[test]
    fn hand_checked() {
        // [1, 1, 2, 2] -> [1, 4, 1, 1]: the four pixels become four channels.
        let out = eval(&op(2), &[Some(&iota(&[1, 1, 2, 2]))]).unwrap();
        assert_eq!(out[0].shape(), &[1, 4, 1, 1]);
        assert_eq!(f32s(&out[0]), vec![0., 1., 2., 3.]);
        let out = eval(&op(2), &[Some(&iota(&[1, 2, 2, 2]))]).unwrap();
        assert_eq!(f32s(&out[0]), vec![0., 4., 1., 5., 2., 6., 3., 7.]);
    }

    #[test]
    fn random_against_naive_and_inverse() {
        let mut rng = Rng::new(43);
        for _ in 0..30 {
            let b = 1 + rng.below(3);
            let shape = [1 + rng.below(2), 1 + rng.below(3), b * (1 + rng.below(4)), b * [1, 7][rng.below(2)]];
            let x = iota(&shape);
            let out = eval(&op(b as i64), &[Some(&x)]).unwrap();
            let (c, h, w) = (shape[1], shape[2] / b, shape[3] / b);
            let os = [shape[0], c * b * b, h, w];
            assert_eq!(out[0].shape(), &os);
            let want: Vec<f32> = (0..os.iter().product())
                .map(|o| {
                    let i = unravel(o, &os);
                    let (blk, ch) = (i[1] / c, i[1] % c);
                    ravel(&[i[0], ch, i[2] * b + blk / b, i[3] * b + blk % b], &shape) as f32
                })
                .collect();
            assert_eq!(f32s(&out[0]), want);
            let d2s = DepthToSpace::build(&Attrs::new().with("blocksize", Attr::Int(b as i64)), 13).unwrap();
            assert_eq!(eval(&d2s, &[Some(&out[0])]).unwrap()[0], x, "DCR DepthToSpace inverts it");
            let crd = eval(&SpaceToDepth::build(&with_mode(b as i64, "CRD"), 13).unwrap(), &[Some(&x)]).unwrap();
            let d2s_crd = DepthToSpace::build(&with_mode(b as i64, "CRD"), 13).unwrap();
            assert_eq!(eval(&d2s_crd, &[Some(&crd[0])]).unwrap()[0], x, "CRD DepthToSpace inverts CRD");
        }
    }

    #[test]
    fn errors() {
        assert!(eval(&op(2), &[Some(&iota(&[1, 1, 3, 2]))]).is_err());
        assert!(eval(&op(2), &[Some(&iota(&[1, 2, 2]))]).is_err());
        assert!(SpaceToDepth::build(&Attrs::new(), 13).is_err());
        assert!(SpaceToDepth::build(&with_mode(2, "XYZ"), 13).is_err());
    }
}
