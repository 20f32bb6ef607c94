//! Random attributes, shapes and parameter values for every op of the family: each must
//! return `Ok` or `Err`, never panic, including when `run` gets outputs whose shapes differ
//! from what `infer` said.

use super::{OP_TYPES, build};
use crate::ops::shape::util::testing::Rng;
use crate::ops::{Attr, Attrs, InferInput, eval};
use crate::tensor::{DType, Tensor, TensorData};

const WILD: [i64; 12] = [i64::MIN, i64::MAX, -(1 << 40), 1 << 40, -7, -3, -2, -1, 0, 1, 2, 3];

fn int(rng: &mut Rng) -> i64 {
    if rng.below(4) == 0 { WILD[rng.below(WILD.len())] } else { rng.range(-4, 4) }
}

fn tensor(rng: &mut Rng, dtype: DType, shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    let data = match dtype {
        DType::F32 => TensorData::F32((0..n).map(|_| rng.range(-3, 3) as f32).collect()),
        DType::F16 => TensorData::F16((0..n).map(|_| half::f16::from_f32(rng.range(-3, 3) as f32)).collect()),
        DType::I8 => TensorData::I8((0..n).map(|_| rng.range(-3, 3) as i8).collect()),
        DType::U8 => TensorData::U8((0..n).map(|_| rng.range(0, 3) as u8).collect()),
        DType::I32 => TensorData::I32((0..n).map(|_| int(rng) as i32).collect()),
        DType::I64 => TensorData::I64((0..n).map(|_| int(rng)).collect()),
        DType::Bool => TensorData::Bool((0..n).map(|_| rng.below(2) == 0).collect()),
    };
    Tensor::new(shape.to_vec(), data).unwrap()
}

fn attrs(rng: &mut Rng) -> Attrs {
    let mut a = Attrs::new();
    for name in ["axis", "allowzero", "start", "end", "num_outputs", "blocksize", "value_int"] {
        if rng.below(2) == 0 {
            a.insert(name, Attr::Int(int(rng)));
        }
    }
    for name in ["perm", "axes", "split", "value_ints"] {
        if rng.below(3) == 0 {
            let n = rng.below(5);
            a.insert(name, Attr::Ints((0..n).map(|_| int(rng)).collect()));
        }
    }
    if rng.below(3) == 0 {
        let modes = ["constant", "reflect", "edge", "wrap", "DCR", "CRD", "none", "add", "mul", "max", "min", "bad"];
        let m = modes[rng.below(modes.len())];
        a.insert("mode", Attr::String(m.into()));
        a.insert("reduction", Attr::String(m.into()));
    }
    if rng.below(4) == 0 {
        let dt = [DType::F32, DType::I64, DType::Bool][rng.below(3)];
        let n = rng.below(3);
        a.insert("value", Attr::Tensor(tensor(rng, dt, &[n])));
    }
    a
}

#[test]
fn random_inputs_never_panic() {
    let dtypes = [DType::F32, DType::F16, DType::I8, DType::U8, DType::I32, DType::I64, DType::Bool];
    let mut rng = Rng::new(1234);
    let (mut ok, mut err) = (0, 0);
    for round in 0..60000 {
        let op_type = OP_TYPES[round % OP_TYPES.len()];
        let opset = [11, 12, 13, 14, 15, 16, 18, 19, 21][rng.below(9)];
        let Some(Ok(op)) = build(op_type, &attrs(&mut rng), opset) else { continue };
        let n_in = rng.below(5);
        let mut inputs = Vec::new();
        for i in 0..n_in {
            if i > 0 && rng.below(5) == 0 {
                inputs.push(None);
                continue;
            }
            let rank = rng.below(if i == 0 { 5 } else { 2 });
            let shape: Vec<usize> = (0..rank).map(|_| rng.below(5)).collect();
            let dtype = if i == 0 || rng.below(4) == 0 { dtypes[rng.below(dtypes.len())] } else { DType::I64 };
            inputs.push(Some(tensor(&mut rng, dtype, &shape)));
        }
        let refs: Vec<Option<&Tensor>> = inputs.iter().map(|t| t.as_ref()).collect();
        match eval(op.as_ref(), &refs) {
            Ok(_) => ok += 1,
            Err(_) => err += 1,
        }
        // `run` with outputs of the inferred types but perturbed shapes.
        let infer_in: Vec<Option<InferInput>> =
            refs.iter().map(|t| t.map(|t| InferInput { dtype: t.dtype(), shape: t.shape(), value: Some(t) })).collect();
        if let Ok(types) = op.infer(&infer_in)
            && types.iter().all(|t| t.bytes() < 1 << 20)
        {
            let mut outs: Vec<Tensor> = types
                .iter()
                .map(|t| {
                    let mut s = t.shape.clone();
                    match rng.below(3) {
                        0 if !s.is_empty() => s.pop().map(|_| ()).unwrap_or(()),
                        1 => s.push(1 + rng.below(3)),
                        _ => s.iter_mut().for_each(|d| *d = rng.below(4)),
                    }
                    Tensor::zeros(t.dtype, &s)
                })
                .collect();
            let views: Vec<_> = refs.iter().map(|t| t.map(|t| t.view())).collect();
            let mut out_views: Vec<_> = outs.iter_mut().map(|t| t.view_mut()).collect();
            let _ = op.run(&views, &mut out_views, &mut []);
        }
    }
    println!("fuzz: {ok} ok, {err} errors");
    assert!(ok > 100 && err > 100, "the fuzz should hit both paths: {ok} ok, {err} errors");
}
