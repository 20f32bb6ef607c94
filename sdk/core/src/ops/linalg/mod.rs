//! The linalg op family: MatMul and Gemm.

pub mod common;
pub mod gemm;
pub mod matmul;

use super::{Attrs, Op};
use crate::error::Result;

/// Op types this family builds.
pub const OP_TYPES: &[&str] = &["Gemm", "MatMul"];

fn boxed<T: Op + 'static>(r: Result<T>) -> Result<Box<dyn Op>> {
    r.map(|op| Box::new(op) as Box<dyn Op>)
}

/// Builds an op of this family, or `None` if the op type is not one of ours.
pub fn build(op_type: &str, attrs: &Attrs, opset: i64) -> Option<Result<Box<dyn Op>>> {
    Some(match op_type {
        "Gemm" => boxed(gemm::Gemm::build(attrs, opset)),
        "MatMul" => boxed(matmul::MatMul::build(attrs, opset)),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dispatch_knows_exactly_its_op_types() {
        for t in OP_TYPES {
            let op = build(t, &Attrs::new(), 13).expect("known").expect("builds");
            assert_eq!(op.op_type(), *t);
        }
        assert!(build("Conv", &Attrs::new(), 13).is_none());
    }
}
