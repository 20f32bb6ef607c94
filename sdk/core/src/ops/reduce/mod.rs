//! The reduce family: `Reduce*` reductions, ArgMax/ArgMin, Softmax/LogSoftmax/Hardmax,
//! CumSum and TopK.

pub mod arg_extreme;
pub mod common;
pub mod cum_sum;
pub mod hardmax;
pub mod reduce_l1;
pub mod reduce_l2;
pub mod reduce_log_sum;
pub mod reduce_log_sum_exp;
pub mod reduce_max;
pub mod reduce_mean;
pub mod reduce_min;
pub mod reduce_prod;
pub mod reduce_sum;
pub mod reduce_sum_square;
pub mod softmax;
pub mod top_k;

use super::{Attrs, Op};
use crate::error::Result;

/// Op types this family builds.
pub const OP_TYPES: &[&str] = &[
    "ArgMax",
    "ArgMin",
    "CumSum",
    "Hardmax",
    "LogSoftmax",
    "ReduceL1",
    "ReduceL2",
    "ReduceLogSum",
    "ReduceLogSumExp",
    "ReduceMax",
    "ReduceMean",
    "ReduceMin",
    "ReduceProd",
    "ReduceSum",
    "ReduceSumSquare",
    "Softmax",
    "TopK",
];

fn boxed<T: Op + 'static>(r: Result<T>) -> Result<Box<dyn Op>> {
    r.map(|op| Box::new(op) as Box<dyn Op>)
}

/// Builds an op of this family, or `None` if the op type is not one of ours.
pub fn build(op_type: &str, attrs: &Attrs, opset: i64) -> Option<Result<Box<dyn Op>>> {
    use arg_extreme::{ArgExtreme, Extreme};
    use softmax::{Softmax, SoftmaxKind};
    Some(match op_type {
        "ArgMax" => boxed(ArgExtreme::build(Extreme::Max, attrs, opset)),
        "ArgMin" => boxed(ArgExtreme::build(Extreme::Min, attrs, opset)),
        "CumSum" => boxed(cum_sum::CumSum::build(attrs, opset)),
        "Hardmax" => boxed(hardmax::Hardmax::build(attrs, opset)),
        "LogSoftmax" => boxed(Softmax::build(SoftmaxKind::LogSoftmax, attrs, opset)),
        "ReduceL1" => boxed(reduce_l1::ReduceL1::build(attrs, opset)),
        "ReduceL2" => boxed(reduce_l2::ReduceL2::build(attrs, opset)),
        "ReduceLogSum" => boxed(reduce_log_sum::ReduceLogSum::build(attrs, opset)),
        "ReduceLogSumExp" => boxed(reduce_log_sum_exp::ReduceLogSumExp::build(attrs, opset)),
        "ReduceMax" => boxed(reduce_max::ReduceMax::build(attrs, opset)),
        "ReduceMean" => boxed(reduce_mean::ReduceMean::build(attrs, opset)),
        "ReduceMin" => boxed(reduce_min::ReduceMin::build(attrs, opset)),
        "ReduceProd" => boxed(reduce_prod::ReduceProd::build(attrs, opset)),
        "ReduceSum" => boxed(reduce_sum::ReduceSum::build(attrs, opset)),
        "ReduceSumSquare" => boxed(reduce_sum_square::ReduceSumSquare::build(attrs, opset)),
        "Softmax" => boxed(Softmax::build(SoftmaxKind::Softmax, attrs, opset)),
        "TopK" => boxed(top_k::TopK::build(attrs, opset)),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dispatch_knows_exactly_its_op_types() {
        for t in OP_TYPES {
            let op = build(t, &Attrs::new(), 18).expect("known").expect("builds");
            assert_eq!(op.op_type(), *t);
        }
        assert!(build("Conv", &Attrs::new(), 18).is_none());
    }
}
