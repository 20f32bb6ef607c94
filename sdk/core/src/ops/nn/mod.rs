//! The nn op family: convolutions, pools, normalizations and resizing.

use super::{Attrs, Op};
use crate::error::Result;

pub mod average_pool;
pub mod batch_normalization;
pub mod common;
pub mod conv;
pub mod conv_transpose;
pub mod global_pool;
pub mod instance_normalization;
pub mod lrn;
pub mod max_pool;
pub mod resize;
#[cfg(test)]
mod resize_test_data;
#[cfg(test)]
pub(crate) mod test_util;

/// Op types this family builds.
pub const OP_TYPES: &[&str] = &[
    "AveragePool",
    "BatchNormalization",
    "Conv",
    "ConvTranspose",
    "GlobalAveragePool",
    "GlobalMaxPool",
    "InstanceNormalization",
    "LRN",
    "MaxPool",
    "Resize",
];

fn boxed<T: Op + 'static>(r: Result<T>) -> Option<Result<Box<dyn Op>>> {
    Some(r.map(|op| Box::new(op) as Box<dyn Op>))
}

/// Builds an op of this family, or `None` if the op type is not one of ours.
pub fn build(op_type: &str, attrs: &Attrs, opset: i64) -> Option<Result<Box<dyn Op>>> {
    match op_type {
        "AveragePool" => boxed(average_pool::AveragePool::build(attrs, opset)),
        "BatchNormalization" => boxed(batch_normalization::BatchNormalization::build(attrs, opset)),
        "Conv" => boxed(conv::Conv::build(attrs, opset)),
        "ConvTranspose" => boxed(conv_transpose::ConvTranspose::build(attrs, opset)),
        "GlobalAveragePool" => boxed(global_pool::GlobalPool::build(global_pool::GlobalKind::Average)),
        "GlobalMaxPool" => boxed(global_pool::GlobalPool::build(global_pool::GlobalKind::Max)),
        "InstanceNormalization" => boxed(instance_normalization::InstanceNormalization::build(attrs, opset)),
        "LRN" => boxed(lrn::Lrn::build(attrs, opset)),
        "MaxPool" => boxed(max_pool::MaxPool::build(attrs, opset)),
        "Resize" => boxed(resize::Resize::build(attrs, opset)),
        _ => None,
    }
}
