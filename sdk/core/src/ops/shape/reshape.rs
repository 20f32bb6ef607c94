//! Reshape: the same elements under a new shape (with ONNX's 0 and -1 rules).

use crate::error::Result;
use crate::invalid;
use crate::ops::shape::util::{check_inputs, checked_numel, const_ints, copy_all, single_output};
use crate::ops::{Attrs, InferInput, Op, TypeShape, required};
use crate::tensor::{DType, TensorMut, TensorRef};

/// ONNX `Reshape`.
#[derive(Clone, Debug, Default)]
pub struct Reshape {
    /// `allowzero` (opset 14+): a 0 in `shape` means a zero dim rather than "copy the input dim".
    pub allowzero: bool,
}

impl Reshape {
    /// Builds from attributes; `allowzero` exists from opset 14.
    pub fn build(attrs: &Attrs, opset: i64) -> Result<Reshape> {
        let allowzero = if opset >= 14 { attrs.int_or("allowzero", 0)? } else { 0 };
        match allowzero {
            0 | 1 => Ok(Reshape { allowzero: allowzero == 1 }),
            v => invalid!("allowzero must be 0 or 1, got {v}"),
        }
    }

    /// The output shape for an input of shape `input` and a requested `shape`.
    pub fn output_shape(&self, input: &[usize], shape: &[i64]) -> Result<Vec<usize>> {
        let total = checked_numel(input)?;
        let mut out = Vec::with_capacity(shape.len());
        let mut infer_at = None;
        for (i, &v) in shape.iter().enumerate() {
            match v {
                -1 => {
                    if infer_at.is_some() {
                        invalid!("shape {shape:?} has more than one -1");
                    }
                    infer_at = Some(i);
                    out.push(1);
                }
                0 if !self.allowzero => match input.get(i) {
                    Some(&d) => out.push(d),
                    None => {
                        invalid!("shape {shape:?} copies dim {i} (0) but the input {input:?} has rank {}", input.len())
                    }
                },
                v if v < 0 => invalid!("shape {shape:?} has invalid dim {v}"),
                v => out.push(usize::try_from(v).map_err(|_| crate::invalid_err!("dim {v} too large"))?),
            }
        }
        let known = checked_numel(&out)?;
        if let Some(i) = infer_at {
            if self.allowzero && shape.contains(&0) {
                invalid!("shape {shape:?} has both 0 and -1, not allowed with allowzero=1");
            }
            if known == 0 || total % known != 0 {
                invalid!("cannot reshape {input:?} ({total} elements) to {shape:?}");
            }
            out[i] = total / known;
        } else if known != total {
            invalid!("cannot reshape {input:?} ({total} elements) to {shape:?} ({known} elements)");
        }
        Ok(out)
    }
}

impl Op for Reshape {
    fn op_type(&self) -> &'static str {
        "Reshape"
    }

    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>> {
        check_inputs(inputs, 2, 2, "Reshape")?;
        let x = required(inputs, 0, "data")?;
        let shape = const_ints(inputs, 1, "shape", &[DType::I64])?;
        Ok(vec![TypeShape::new(x.dtype, self.output_shape(x.shape, &shape)?)])
    }

    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], _scratch: &mut [u8]) -> Result<()> {
        let x = required(inputs, 0, "data")?;
        copy_all(x, single_output(outputs)?)
    }

    fn alias_output(&self, output: usize) -> Option<usize> {
        (output == 0).then_some(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::eval;
    use crate::ops::shape::util::testing::*;
    use crate::tensor::{Tensor, TensorData};

    fn shape_of(op: &Reshape, input: &[usize], shape: &[i64]) -> Result<Vec<usize>> {
        let x = iota(input);
        let s = ints1(shape);
        let out = eval(op, &[Some(&x), Some(&s)])?;
        assert_eq!(f32s(&out[0]), f32s(&x), "elements keep their order");
        Ok(out[0].shape().to_vec())
    }

    #[test]
    fn zero_and_minus_one_rules() {
        let op = Reshape::default();
        assert_eq!(shape_of(&op, &[2, 3, 4], &[4, 2, 3]).unwrap(), vec![4, 2, 3]);
        assert_eq!(shape_of(&op, &[2, 3, 4], &[-1]).unwrap(), vec![24]);
        assert_eq!(shape_of(&op, &[2, 3, 4], &[0, -1]).unwrap(), vec![2, 12]);
        assert_eq!(shape_of(&op, &[2, 3, 4], &[2, 0, 4, 1]).unwrap(), vec![2, 3, 4, 1]);
        assert_eq!(shape_of(&op, &[7, 13], &[13, -1]).unwrap(), vec![13, 7]);
        assert_eq!(shape_of(&op, &[1], &[]).unwrap(), Vec::<usize>::new());
        assert_eq!(shape_of(&op, &[0, 3], &[0, 3]).unwrap(), vec![0, 3]);
    }

    #[test]
    fn allowzero() {
        let op = Reshape::build(&Attrs::new().with("allowzero", crate::ops::Attr::Int(1)), 14).unwrap();
        assert_eq!(shape_of(&op, &[0, 3, 4], &[3, 4, 0]).unwrap(), vec![3, 4, 0]);
        assert!(shape_of(&op, &[2, 3], &[0, -1]).is_err());
        assert!(shape_of(&op, &[2, 3], &[0, 6]).is_err());
        // Before opset 14 the attribute does not exist.
        let old = Reshape::build(&Attrs::new().with("allowzero", crate::ops::Attr::Int(1)), 13).unwrap();
        assert!(!old.allowzero);
        assert!(Reshape::build(&Attrs::new().with("allowzero", crate::ops::Attr::Int(2)), 14).is_err());
    }

    #[test]
    fn bad_shapes() {
        let op = Reshape::default();
        assert!(shape_of(&op, &[2, 3], &[4, -1]).is_err());
        assert!(shape_of(&op, &[2, 3], &[-1, -1]).is_err());
        assert!(shape_of(&op, &[2, 3], &[7]).is_err());
        assert!(shape_of(&op, &[2, 3], &[-2, 3]).is_err());
        assert!(shape_of(&op, &[6], &[0, 0]).is_err());
        assert!(shape_of(&op, &[0, 3], &[-1, 0, 0]).is_err());
        assert_eq!(shape_of(&op, &[0, 3], &[-1, 3]).unwrap(), vec![0, 3]);
        assert!(shape_of(&op, &[3, 0], &[-1, 0]).is_err(), "-1 next to a copied zero dim is ambiguous");
        let x = iota(&[6]);
        let s = Tensor::new(vec![1], TensorData::I32(vec![6])).unwrap();
        assert!(eval(&op, &[Some(&x), Some(&s)]).is_err(), "shape must be int64");
        assert!(eval(&op, &[Some(&x)]).is_err());
    }

    #[test]
    fn random_against_naive() {
        let mut rng = Rng::new(5);
        let op = Reshape::default();
        for _ in 0..50 {
            let rank = rng.below(4) + 1;
            let input = rng.shape(rank, 7);
            let n: usize = input.iter().product();
            // Factor n into a random new shape, then hide one dim behind -1.
            let mut rest = n;
            let mut want = Vec::new();
            for d in 2..=n {
                while rest.is_multiple_of(d) && rng.below(2) == 0 {
                    want.push(d);
                    rest /= d;
                }
            }
            want.push(rest);
            let mut req: Vec<i64> = want.iter().map(|&d| d as i64).collect();
            let hide = rng.below(req.len());
            req[hide] = -1;
            assert_eq!(shape_of(&op, &input, &req).unwrap(), want);
        }
    }

    #[test]
    fn bool_data() {
        let op = Reshape::default();
        let x = Tensor::new(vec![2, 2], TensorData::Bool(vec![true, false, false, true])).unwrap();
        let out = eval(&op, &[Some(&x), Some(&ints1(&[4]))]).unwrap();
        assert_eq!(out[0].data(), x.data());
        assert_eq!(out[0].shape(), &[4]);
    }
}
