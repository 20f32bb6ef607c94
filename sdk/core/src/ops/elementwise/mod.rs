//! The elementwise op family: unary math and activations, broadcasting binary arithmetic,
//! comparisons and logic, variadic Max/Min/Sum/Mean, Where, and Cast/CastLike.
//!
//! Every op has its own file. Shared pieces: `common` (input checks, type sets, the
//! per-type dispatch macros), `num` (per-type arithmetic), `unary`/`binary`/`variadic`
//! (inference and loops for each op shape) and `special` (erf).

pub mod binary;
pub mod common;
pub mod num;
pub mod special;
#[cfg(test)]
mod testutil;
pub mod unary;
pub mod variadic;

pub mod abs;
pub mod add;
pub mod and;
pub mod bit_shift;
pub mod cast;
pub mod cast_like;
pub mod ceil;
pub mod clip;
pub mod div;
pub mod elu;
pub mod equal;
pub mod erf;
pub mod exp;
pub mod floor;
pub mod gelu;
pub mod greater;
pub mod greater_or_equal;
pub mod hard_sigmoid;
pub mod hard_swish;
pub mod leaky_relu;
pub mod less;
pub mod less_or_equal;
pub mod log;
pub mod max;
pub mod mean;
pub mod min;
pub mod modulo;
pub mod mul;
pub mod neg;
pub mod not;
pub mod or;
pub mod pow;
pub mod prelu;
pub mod reciprocal;
pub mod relu;
pub mod round;
pub mod selu;
pub mod sigmoid;
pub mod sign;
pub mod softplus;
pub mod sqrt;
pub mod sub;
pub mod sum;
pub mod tanh;
pub mod where_op;
pub mod xor;

use super::{Attrs, Op};
use crate::error::Result;

/// Op types this family builds.
pub const OP_TYPES: &[&str] = &[
    "Abs",
    "Add",
    "And",
    "BitShift",
    "Cast",
    "CastLike",
    "Ceil",
    "Clip",
    "Div",
    "Elu",
    "Equal",
    "Erf",
    "Exp",
    "Floor",
    "Gelu",
    "Greater",
    "GreaterOrEqual",
    "HardSigmoid",
    "HardSwish",
    "LeakyRelu",
    "Less",
    "LessOrEqual",
    "Log",
    "Max",
    "Mean",
    "Min",
    "Mod",
    "Mul",
    "Neg",
    "Not",
    "Or",
    "PRelu",
    "Pow",
    "Reciprocal",
    "Relu",
    "Round",
    "Selu",
    "Sigmoid",
    "Sign",
    "Softplus",
    "Sqrt",
    "Sub",
    "Sum",
    "Tanh",
    "Where",
    "Xor",
];

fn boxed<T: Op + 'static>(r: Result<T>) -> Result<Box<dyn Op>> {
    r.map(|op| Box::new(op) as Box<dyn Op>)
}

/// Builds an op of this family, or `None` if the op type is not one of ours.
pub fn build(op_type: &str, attrs: &Attrs, opset: i64) -> Option<Result<Box<dyn Op>>> {
    let (a, v) = (attrs, opset);
    Some(match op_type {
        "Abs" => boxed(abs::Abs::build(a, v)),
        "Add" => boxed(add::Add::build(a, v)),
        "And" => boxed(and::And::build(a, v)),
        "BitShift" => boxed(bit_shift::BitShift::build(a, v)),
        "Cast" => boxed(cast::Cast::build(a, v)),
        "CastLike" => boxed(cast_like::CastLike::build(a, v)),
        "Ceil" => boxed(ceil::Ceil::build(a, v)),
        "Clip" => boxed(clip::Clip::build(a, v)),
        "Div" => boxed(div::Div::build(a, v)),
        "Elu" => boxed(elu::Elu::build(a, v)),
        "Equal" => boxed(equal::Equal::build(a, v)),
        "Erf" => boxed(erf::Erf::build(a, v)),
        "Exp" => boxed(exp::Exp::build(a, v)),
        "Floor" => boxed(floor::Floor::build(a, v)),
        "Gelu" => boxed(gelu::Gelu::build(a, v)),
        "Greater" => boxed(greater::Greater::build(a, v)),
        "GreaterOrEqual" => boxed(greater_or_equal::GreaterOrEqual::build(a, v)),
        "HardSigmoid" => boxed(hard_sigmoid::HardSigmoid::build(a, v)),
        "HardSwish" => boxed(hard_swish::HardSwish::build(a, v)),
        "LeakyRelu" => boxed(leaky_relu::LeakyRelu::build(a, v)),
        "Less" => boxed(less::Less::build(a, v)),
        "LessOrEqual" => boxed(less_or_equal::LessOrEqual::build(a, v)),
        "Log" => boxed(log::Log::build(a, v)),
        "Max" => boxed(max::Max::build(a, v)),
        "Mean" => boxed(mean::Mean::build(a, v)),
        "Min" => boxed(min::Min::build(a, v)),
        "Mod" => boxed(modulo::Mod::build(a, v)),
        "Mul" => boxed(mul::Mul::build(a, v)),
        "Neg" => boxed(neg::Neg::build(a, v)),
        "Not" => boxed(not::Not::build(a, v)),
        "Or" => boxed(or::Or::build(a, v)),
        "PRelu" => boxed(prelu::PRelu::build(a, v)),
        "Pow" => boxed(pow::Pow::build(a, v)),
        "Reciprocal" => boxed(reciprocal::Reciprocal::build(a, v)),
        "Relu" => boxed(relu::Relu::build(a, v)),
        "Round" => boxed(round::Round::build(a, v)),
        "Selu" => boxed(selu::Selu::build(a, v)),
        "Sigmoid" => boxed(sigmoid::Sigmoid::build(a, v)),
        "Sign" => boxed(sign::Sign::build(a, v)),
        "Softplus" => boxed(softplus::Softplus::build(a, v)),
        "Sqrt" => boxed(sqrt::Sqrt::build(a, v)),
        "Sub" => boxed(sub::Sub::build(a, v)),
        "Sum" => boxed(sum::Sum::build(a, v)),
        "Tanh" => boxed(tanh::Tanh::build(a, v)),
        "Where" => boxed(where_op::Where::build(a, v)),
        "Xor" => boxed(xor::Xor::build(a, v)),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_every_listed_op() {
        let mut sorted = OP_TYPES.to_vec();
        sorted.sort_unstable();
        assert_eq!(sorted, OP_TYPES, "keep OP_TYPES sorted");
        for op in OP_TYPES {
            // Cast and BitShift need an attribute; everything else builds bare.
            match build(op, &Attrs::new(), 21) {
                Some(Ok(built)) => assert_eq!(built.op_type(), *op),
                Some(Err(_)) => assert!(matches!(*op, "Cast" | "BitShift"), "{op} failed to build"),
                None => panic!("{op} is listed but not built"),
            }
        }
        assert!(build("Conv", &Attrs::new(), 21).is_none());
    }
}
