//! The rnn op family: LSTM, GRU and RNN (simple), forward, reverse or bidirectional.

pub mod common;
pub mod gru;
pub mod lstm;
pub mod simple_rnn;
#[cfg(test)]
mod testutil;

use super::{Attrs, Op};
use crate::error::Result;

/// Op types this family builds.
pub const OP_TYPES: &[&str] = &["GRU", "LSTM", "RNN"];

fn boxed<T: Op + 'static>(r: Result<T>) -> Result<Box<dyn Op>> {
    r.map(|op| Box::new(op) as Box<dyn Op>)
}

/// Builds an op of this family, or `None` if the op type is not one of ours.
pub fn build(op_type: &str, attrs: &Attrs, opset: i64) -> Option<Result<Box<dyn Op>>> {
    Some(match op_type {
        "GRU" => boxed(gru::Gru::build(attrs, opset)),
        "LSTM" => boxed(lstm::Lstm::build(attrs, opset)),
        "RNN" => boxed(simple_rnn::Rnn::build(attrs, opset)),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dispatch_knows_exactly_its_op_types() {
        for t in OP_TYPES {
            let op = build(t, &Attrs::new(), 14).expect("known").expect("builds");
            assert_eq!(op.op_type(), *t);
        }
        assert!(build("MatMul", &Attrs::new(), 14).is_none());
    }
}
