//! The quant op family: explicit quantization (QuantizeLinear, DequantizeLinear,
//! DynamicQuantizeLinear) and the quantized products (QLinearConv, QLinearMatMul,
//! MatMulInteger, ConvInteger). uint8 and int8 with int32 accumulation; per-tensor,
//! per-axis and blocked scales; rounding half to even and saturation, as ONNX defines them.

use super::{Attrs, Op};
use crate::error::Result;

pub mod common;
pub mod conv_integer;
pub mod dequantize_linear;
pub mod dynamic_quantize_linear;
pub(crate) mod integer;
pub mod matmul_integer;
pub mod qlinear_conv;
pub mod qlinear_matmul;
pub mod quantize_linear;

/// Op types this family builds.
pub const OP_TYPES: &[&str] = &[
    "ConvInteger",
    "DequantizeLinear",
    "DynamicQuantizeLinear",
    "MatMulInteger",
    "QLinearConv",
    "QLinearMatMul",
    "QuantizeLinear",
];

fn boxed<T: Op + 'static>(r: Result<T>) -> Option<Result<Box<dyn Op>>> {
    Some(r.map(|op| Box::new(op) as Box<dyn Op>))
}

/// Builds an op of this family, or `None` if the op type is not one of ours.
pub fn build(op_type: &str, attrs: &Attrs, opset: i64) -> Option<Result<Box<dyn Op>>> {
    match op_type {
        "ConvInteger" => boxed(conv_integer::ConvInteger::build(attrs, opset)),
        "DequantizeLinear" => boxed(dequantize_linear::DequantizeLinear::build(attrs, opset)),
        "DynamicQuantizeLinear" => boxed(dynamic_quantize_linear::DynamicQuantizeLinear::build(attrs, opset)),
        "MatMulInteger" => boxed(matmul_integer::MatMulInteger::build(attrs, opset)),
        "QLinearConv" => boxed(qlinear_conv::QLinearConv::build(attrs, opset)),
        "QLinearMatMul" => boxed(qlinear_matmul::QLinearMatMul::build(attrs, opset)),
        "QuantizeLinear" => boxed(quantize_linear::QuantizeLinear::build(attrs, opset)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dispatch_knows_exactly_its_op_types() {
        for t in OP_TYPES {
            let op = build(t, &Attrs::new(), 21).expect("known").expect("builds");
            assert_eq!(op.op_type(), *t);
        }
        assert!(build("Conv", &Attrs::new(), 21).is_none());
        assert!(crate::ops::supported_ops().contains(&"QLinearConv"));
    }

    /// In a graph, a bad scale is an error that names the node, its op type and the fix.
    #[test]
    fn graph_errors_name_the_node() {
        use crate::graph::{Dim, Graph};
        use crate::tensor::{DType, Tensor};
        let mut g = Graph { opset: 13, ..Graph::default() };
        let x = g.add_value("x", Some(DType::F32), Some(vec![Dim::Fixed(2), Dim::Fixed(3)]));
        let s = g.add_constant("s", Tensor::from_f32(&[2], vec![1.0, 2.0]).unwrap());
        let y = g.add_value("y", None, None);
        g.add_node("q_bad", "QuantizeLinear", Attrs::new(), vec![Some(x), Some(s)], vec![Some(y)]).unwrap();
        g.inputs.push(x);
        g.outputs.push(y);
        let inputs = [("x".to_string(), Tensor::from_f32(&[2, 3], vec![0.0; 6]).unwrap())].into();
        let e = g.run_reference(&inputs).unwrap_err().to_string();
        assert!(e.contains("q_bad") && e.contains("QuantizeLinear"), "{e}");
        assert!(e.contains("one value per index of axis 1 (size 3)") && e.contains("hint"), "{e}");
    }
}

#[cfg(test)]
mod onnx_cases;
