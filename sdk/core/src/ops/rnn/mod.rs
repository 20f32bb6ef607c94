//! The rnn op family: LSTM, GRU and RNN (simple), forward, reverse or bidirectional.

pub mod common;
pub mod lstm;
#[cfg(test)]
mod testutil;

use super::{Attrs, Op};
use crate::error::Result;

/// Op types this family builds.
pub const OP_TYPES: &[&str] = &["LSTM"];

fn boxed<T: Op + 'static>(r: Result<T>) -> Result<Box<dyn Op>> {
    r.map(|op| Box::new(op) as Box<dyn Op>)
}

/// Builds an op of this family, or `None` if the op type is not one of ours.
pub fn build(op_type: &str, attrs: &Attrs, opset: i64) -> Option<Result<Box<dyn Op>>> {
    Some(match op_type {
        "LSTM" => boxed(lstm::Lstm::build(attrs, opset)),
        _ => return None,
    })
}
