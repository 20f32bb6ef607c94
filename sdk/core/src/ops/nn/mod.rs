//! The nn op family: convolutions, pools, normalizations and resizing.

use super::{Attrs, Op};
use crate::error::Result;

pub mod common;
pub mod conv;
#[cfg(test)]
mod test_util;

/// Op types this family builds.
pub const OP_TYPES: &[&str] = &["Conv"];

fn boxed<T: Op + 'static>(r: Result<T>) -> Option<Result<Box<dyn Op>>> {
    Some(r.map(|op| Box::new(op) as Box<dyn Op>))
}

/// Builds an op of this family, or `None` if the op type is not one of ours.
pub fn build(op_type: &str, attrs: &Attrs, opset: i64) -> Option<Result<Box<dyn Op>>> {
    match op_type {
        "Conv" => boxed(conv::Conv::build(attrs, opset)),
        _ => None,
    }
}
