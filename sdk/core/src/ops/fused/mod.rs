//! Fused ops made by the optimizer's passes (never by ONNX import): one node that does what a
//! chain of ONNX nodes did, on the optimized CPU kernels. Each fused op's meaning is the
//! composition of the ops it replaced; tests check it against those reference ops.
//! Their op types carry the `edgert.` prefix, which no ONNX op type has.

use super::{Attrs, Op};
use crate::error::Result;

pub mod fused_conv;
pub mod qconv;

pub use fused_conv::FusedConv;
pub use qconv::QConv;

/// Op types this family builds.
pub const OP_TYPES: &[&str] = &[fused_conv::OP_TYPE, qconv::OP_TYPE];

/// Builds a fused op, or `None` when `op_type` is not one.
pub fn build(op_type: &str, attrs: &Attrs, opset: i64) -> Option<Result<Box<dyn Op>>> {
    match op_type {
        fused_conv::OP_TYPE => Some(FusedConv::build(attrs, opset).map(|o| Box::new(o) as Box<dyn Op>)),
        qconv::OP_TYPE => Some(QConv::build(attrs, opset).map(|o| Box::new(o) as Box<dyn Op>)),
        _ => None,
    }
}
