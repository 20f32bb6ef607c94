//! Explicit quantization (QDQ graphs, as onnxruntime's `quantize_static` and PyTorch export
//! write them): `Conv(DequantizeLinear(QuantizeLinear(x, s, z), s, z),
//! DequantizeLinear(Wq, w_scale), [DequantizeLinear(Bq, s * w_scale)])` becomes one
//! `edgert.QConv(x, Wq, w_scale, Bq)` with `x_scale = s`, `x_zero_point = z`: the input's
//! quantize/dequantize pair is exactly QConv's input quantization, and the products are
//! accumulated in int32 instead of in float on dequantized values (so outputs differ from the
//! literal QDQ computation by float rounding only).
//!
//! Runs first, before constant folding would turn the weights' DequantizeLinear into float
//! weights. Folded only: 2-D convolutions; per-tensor uint8 input quantization with constant
//! scale and zero point; int8 weights with zero zero points and one scale per output channel
//! (or one for all); a bias that is constant float, or int32 dequantized (its scale need not
//! be `s * w_scale`: it is then requantized). Anything else is left as it is.

use super::producers;
use crate::error::Result;
use crate::graph::{Graph, Node, ValueId};
use crate::ops::Attr;
use crate::ops::fused::qconv::{MAX_CHANNELS, OP_TYPE as QCONV};
use crate::tensor::{DType, Tensor, TensorData};

/// Folds QDQ convolutions into QConv nodes; returns how many.
pub fn fold_qdq_conv(graph: &mut Graph) -> Result<usize> {
    let producer = producers(graph);
    let mut folded = 0;
    for i in 0..graph.nodes.len() {
        let Some(plan) = match_conv(graph, &graph.nodes[i], &|v| producer.get(&v).map(|&p| &graph.nodes[p])) else {
            continue;
        };
        let name = graph.nodes[i].name.clone();
        let m = plan.w_scale.len();
        let ws_id = graph.add_constant(&format!("{name}.w_scale"), Tensor::from_f32(&[m], plan.w_scale)?);
        let b_id = match plan.bias {
            Some(b) => Some(graph.add_constant(&format!("{name}.b_int32"), Tensor::new(vec![m], TensorData::I32(b))?)),
            None => None,
        };
        let mut attrs = graph.nodes[i].attrs.clone();
        attrs.insert("x_scale", Attr::Float(plan.x_scale));
        attrs.insert("x_zero_point", Attr::Int(plan.x_zero as i64));
        let op = crate::ops::build_op(QCONV, &attrs, graph.opset)
            .ok_or_else(|| crate::invalid_err!("{QCONV} is not registered"))??;
        let node = &mut graph.nodes[i];
        node.op_type = QCONV.to_string();
        node.attrs = attrs;
        node.inputs = vec![Some(plan.x), Some(plan.wq), Some(ws_id)];
        if b_id.is_some() {
            node.inputs.push(b_id);
        }
        node.op = op.into();
        folded += 1;
    }
    Ok(folded)
}

/// What a foldable QDQ convolution becomes.
struct Folded {
    x: ValueId,
    x_scale: f32,
    x_zero: i32,
    wq: ValueId,
    w_scale: Vec<f32>,
    bias: Option<Vec<i32>>,
}

/// The QConv inputs for `conv`, if it is a foldable QDQ convolution.
fn match_conv<'g>(graph: &'g Graph, conv: &Node, producer: &dyn Fn(ValueId) -> Option<&'g Node>) -> Option<Folded> {
    if conv.op_type != "Conv" || conv.inputs.len() < 2 {
        return None;
    }
    let konst = |v: Option<ValueId>| -> Option<&Tensor> { v.and_then(|v| graph.constants.get(&v)).map(|t| &**t) };
    let input = |n: &Node, k: usize| n.inputs.get(k).copied().flatten();
    // x -> QuantizeLinear -> DequantizeLinear, same constant scalar scale and uint8 zero point.
    let dq_x = producer(input(conv, 0)?).filter(|n| n.op_type == "DequantizeLinear")?;
    let q_x = producer(input(dq_x, 0)?).filter(|n| n.op_type == "QuantizeLinear")?;
    // An optional input: absent (`Some(None)`), constant (`Some(Some(t))`), or neither (`None`).
    let optional = |n: &Node, k: usize| -> Option<Option<&Tensor>> {
        match input(n, k) {
            None => Some(None),
            Some(v) => konst(Some(v)).map(Some),
        }
    };
    if q_x.attrs.int_or("output_dtype", 2).ok()? != 2 {
        return None; // opset 21's output_dtype other than uint8
    }
    let (s_dq, z_dq) = (scalar_f32(konst(input(dq_x, 1)))?, zero_point_u8(optional(dq_x, 2)?)?);
    let (s_q, z_q) = (scalar_f32(konst(input(q_x, 1)))?, zero_point_u8(optional(q_x, 2)?)?);
    if s_dq != s_q || z_dq != z_q || !(s_q > 0.0 && s_q.is_finite()) {
        return None;
    }
    // Weights: DequantizeLinear(int8 constant, scales per output channel, zero zero points).
    let dq_w = producer(input(conv, 1)?).filter(|n| n.op_type == "DequantizeLinear")?;
    let wq_id = input(dq_w, 0)?;
    let wq = konst(Some(wq_id))?;
    let shape = wq.shape();
    if wq.dtype() != DType::I8 || shape.len() != 4 || shape[0] == 0 || shape[0] > MAX_CHANNELS {
        return None;
    }
    let m = shape[0];
    let ws = konst(input(dq_w, 1))?.to_f32_vec().ok()?;
    let axis = dq_w.attrs.int_or("axis", 1).ok()?;
    let w_scale = match ws.len() {
        1 => vec![ws[0]; m],
        n if n == m && (axis == 0 || axis == -4) => ws,
        _ => return None,
    };
    if w_scale.iter().any(|&s| !(s > 0.0 && s.is_finite())) {
        return None;
    }
    if let Some(z) = optional(dq_w, 2)?
        && (z.dtype() != DType::I8 || z.to_i64_vec().ok()?.iter().any(|&v| v != 0))
    {
        return None;
    }
    // Bias: none, a float constant, or DequantizeLinear(int32 constant, scale).
    let bias = match input(conv, 2) {
        None => None,
        Some(b) => {
            let real: Vec<f64> = if let Some(t) = konst(Some(b)) {
                t.to_f32_vec().ok()?.iter().map(|&v| v as f64).collect()
            } else {
                let dq_b = producer(b).filter(|n| n.op_type == "DequantizeLinear")?;
                let bq = konst(input(dq_b, 0)).filter(|t| t.dtype() == DType::I32)?.to_i64_vec().ok()?;
                let sb = konst(input(dq_b, 1))?.to_f32_vec().ok()?;
                if let Some(z) = optional(dq_b, 2)?
                    && z.to_i64_vec().ok()?.iter().any(|&x| x != 0)
                {
                    return None;
                }
                let sb_at = |c: usize| if sb.len() == 1 { sb[0] } else { sb[c] };
                if sb.len() != 1 && sb.len() != bq.len() {
                    return None;
                }
                bq.iter().enumerate().map(|(c, &q)| q as f64 * sb_at(c) as f64).collect()
            };
            if real.len() != m {
                return None;
            }
            Some(
                real.iter()
                    .zip(&w_scale)
                    .map(|(&v, &ws)| {
                        (v / (s_q as f64 * ws as f64)).round_ties_even().clamp(i32::MIN as f64, i32::MAX as f64) as i32
                    })
                    .collect(),
            )
        }
    };
    Some(Folded { x: input(q_x, 0)?, x_scale: s_q, x_zero: z_q, wq: wq_id, w_scale, bias })
}

/// A constant one-value float32 tensor's value.
fn scalar_f32(t: Option<&Tensor>) -> Option<f32> {
    let t = t?;
    if t.dtype() != DType::F32 || t.len() != 1 {
        return None;
    }
    t.to_f32_vec().ok()?.first().copied()
}

/// A uint8 zero point (absent: 0, the default uint8 one).
fn zero_point_u8(t: Option<&Tensor>) -> Option<i32> {
    match t {
        None => Some(0),
        Some(t) if t.dtype() == DType::U8 && t.len() == 1 => Some(*t.to_i64_vec().ok()?.first()? as i32),
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::Dim;
    use crate::ops::Attrs;
    use crate::ops::nn::test_util::Rng;
    use crate::passes::{remove_dead_nodes, test_util::assert_same_outputs};

    /// x -> QuantizeLinear(s, z) -> DequantizeLinear(s', z) -> Conv 3x3 (8 -> 6) with weights
    /// DequantizeLinear(Wq, w_scale, w_zero, axis 0) and bias DequantizeLinear(Bq, s * w_scale)
    /// (or a float bias).
    fn qdq_conv(s_dq: f32, w_zero: i8, float_bias: bool) -> Graph {
        let mut rng = Rng::new(8);
        let (m, c) = (6usize, 8usize);
        let mut g = Graph { opset: 13, ..Graph::default() };
        let x = g.add_value("x", Some(DType::F32), Some([2, c, 7, 9].iter().map(|&d| Dim::Fixed(d)).collect()));
        g.inputs.push(x);
        let s = 0.02f32;
        let cs = |g: &mut Graph, name: &str, t: Tensor| g.add_constant(name, t);
        let s_q = cs(&mut g, "s", Tensor::scalar_f32(s));
        let s_d = cs(&mut g, "s_dq", Tensor::scalar_f32(s_dq));
        let z = cs(&mut g, "z", Tensor::new(vec![], TensorData::U8(vec![120])).unwrap());
        let wq: Vec<i8> = (0..m * c * 9).map(|_| (rng.sym() * 127.0) as i8).collect();
        let wq = cs(&mut g, "wq", Tensor::new(vec![m, c, 3, 3], TensorData::I8(wq)).unwrap());
        let w_scale: Vec<f32> = (0..m).map(|i| 0.001 * (i + 1) as f32).collect();
        let ws = cs(&mut g, "ws", Tensor::from_f32(&[m], w_scale.clone()).unwrap());
        let wz = cs(&mut g, "wz", Tensor::new(vec![m], TensorData::I8(vec![w_zero; m])).unwrap());
        let v: Vec<ValueId> = (0..5).map(|i| g.add_value(&format!("v{i}"), None, None)).collect();
        g.add_node("q", "QuantizeLinear", Attrs::new(), vec![Some(x), Some(s_q), Some(z)], vec![Some(v[0])]).unwrap();
        g.add_node("dq", "DequantizeLinear", Attrs::new(), vec![Some(v[0]), Some(s_d), Some(z)], vec![Some(v[1])])
            .unwrap();
        let axis0 = Attrs::new().with("axis", Attr::Int(0));
        g.add_node("dqw", "DequantizeLinear", axis0.clone(), vec![Some(wq), Some(ws), Some(wz)], vec![Some(v[2])])
            .unwrap();
        let bias = if float_bias {
            cs(&mut g, "b", rng.tensor(&[m]))
        } else {
            let bq: Vec<i32> = (0..m).map(|i| i as i32 * 37 - 90).collect();
            let bq = cs(&mut g, "bq", Tensor::new(vec![m], TensorData::I32(bq)).unwrap());
            let bs = cs(&mut g, "bs", Tensor::from_f32(&[m], w_scale.iter().map(|w| w * s).collect()).unwrap());
            g.add_node("dqb", "DequantizeLinear", axis0, vec![Some(bq), Some(bs)], vec![Some(v[3])]).unwrap();
            v[3]
        };
        let pads = Attrs::new().with("pads", Attr::Ints(vec![1; 4]));
        g.add_node("conv", "Conv", pads, vec![Some(v[1]), Some(v[2]), Some(bias)], vec![Some(v[4])]).unwrap();
        g.outputs.push(v[4]);
        g
    }

    #[test]
    fn folds_a_qdq_convolution_into_qconv() {
        for float_bias in [false, true] {
            let mut g = qdq_conv(0.02, 0, float_bias);
            let orig = g.clone();
            assert_eq!(fold_qdq_conv(&mut g).unwrap(), 1);
            remove_dead_nodes(&mut g).unwrap();
            let types: Vec<&str> = g.nodes.iter().map(|n| n.op_type.as_str()).collect();
            assert_eq!(types, [QCONV], "the Q/DQ nodes are gone");
            assert_eq!(g.nodes[0].inputs[0], Some(g.inputs[0]), "QConv reads x itself");
            assert_eq!(g.nodes[0].attrs.float_or("x_scale", 0.0).unwrap(), 0.02);
            assert_eq!(g.nodes[0].attrs.int_or("x_zero_point", 0).unwrap(), 120);
            let x = Rng::new(4).tensor(&[2, 8, 7, 9]);
            assert_same_outputs(&orig, &g, &[("x", x)]);
        }
    }

    #[test]
    fn leaves_what_qconv_cannot_express() {
        // The dequantize scale differs from the quantize scale; weights with a zero point.
        for (s_dq, w_zero) in [(0.03, 0), (0.02, 3)] {
            let mut g = qdq_conv(s_dq, w_zero, false);
            assert_eq!(fold_qdq_conv(&mut g).unwrap(), 0, "s_dq {s_dq}, w_zero {w_zero}");
            assert!(g.nodes.iter().all(|n| n.op_type != QCONV));
        }
        // A plain float Conv.
        let mut g = qdq_conv(0.02, 0, false);
        let x = g.inputs[0];
        let conv = g.nodes.iter_mut().find(|n| n.name == "conv").unwrap();
        conv.inputs[0] = Some(x);
        assert_eq!(fold_qdq_conv(&mut g).unwrap(), 0);
    }
}
