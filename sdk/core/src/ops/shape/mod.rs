//! The shape op family: ops that move, select or create elements without arithmetic on
//! them (Reshape, Transpose, Slice, Gather, Pad, ...). Every op works for every element
//! type, Bool included.

use super::{Attrs, Op};
use crate::error::Result;

mod util;

#[cfg(test)]
mod fuzz_tests;

pub mod concat;
pub mod constant;
pub mod constant_of_shape;
pub mod depth_to_space;
pub mod expand;
pub mod flatten;
pub mod gather;
pub mod gather_elements;
pub mod identity;
pub mod non_zero;
pub mod pad;
pub mod range;
pub mod reshape;
pub mod scatter_nd;
pub mod shape_op;
pub mod size;
pub mod slice;
pub mod space_to_depth;
pub mod split;
pub mod squeeze;
pub mod tile;
pub mod transpose;
pub mod unsqueeze;

/// Op types this family builds.
pub const OP_TYPES: &[&str] = &[
    "Concat",
    "Constant",
    "ConstantOfShape",
    "DepthToSpace",
    "Expand",
    "Flatten",
    "Gather",
    "GatherElements",
    "Identity",
    "NonZero",
    "Pad",
    "Range",
    "Reshape",
    "ScatterND",
    "Shape",
    "Size",
    "Slice",
    "SpaceToDepth",
    "Split",
    "Squeeze",
    "Tile",
    "Transpose",
    "Unsqueeze",
];

fn boxed<T: Op + 'static>(r: Result<T>) -> Option<Result<Box<dyn Op>>> {
    Some(r.map(|op| Box::new(op) as Box<dyn Op>))
}

/// Builds an op of this family, or `None` if the op type is not one of ours.
pub fn build(op_type: &str, attrs: &Attrs, opset: i64) -> Option<Result<Box<dyn Op>>> {
    match op_type {
        "Concat" => boxed(concat::Concat::build(attrs, opset)),
        "Constant" => boxed(constant::Constant::build(attrs, opset)),
        "ConstantOfShape" => boxed(constant_of_shape::ConstantOfShape::build(attrs, opset)),
        "DepthToSpace" => boxed(depth_to_space::DepthToSpace::build(attrs, opset)),
        "Expand" => boxed(expand::Expand::build(attrs, opset)),
        "Flatten" => boxed(flatten::Flatten::build(attrs, opset)),
        "Gather" => boxed(gather::Gather::build(attrs, opset)),
        "GatherElements" => boxed(gather_elements::GatherElements::build(attrs, opset)),
        "Identity" => boxed(identity::Identity::build(attrs, opset)),
        "NonZero" => boxed(non_zero::NonZero::build(attrs, opset)),
        "Pad" => boxed(pad::Pad::build(attrs, opset)),
        "Range" => boxed(range::Range::build(attrs, opset)),
        "Reshape" => boxed(reshape::Reshape::build(attrs, opset)),
        "ScatterND" => boxed(scatter_nd::ScatterNd::build(attrs, opset)),
        "Shape" => boxed(shape_op::Shape::build(attrs, opset)),
        "Size" => boxed(size::Size::build(attrs, opset)),
        "Slice" => boxed(slice::Slice::build(attrs, opset)),
        "SpaceToDepth" => boxed(space_to_depth::SpaceToDepth::build(attrs, opset)),
        "Split" => boxed(split::Split::build(attrs, opset)),
        "Squeeze" => boxed(squeeze::Squeeze::build(attrs, opset)),
        "Tile" => boxed(tile::Tile::build(attrs, opset)),
        "Transpose" => boxed(transpose::Transpose::build(attrs, opset)),
        "Unsqueeze" => boxed(unsqueeze::Unsqueeze::build(attrs, opset)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_type_builds() {
        for &t in OP_TYPES {
            assert!(build(t, &Attrs::new(), 21).is_some(), "{t} is listed but not dispatched");
        }
        assert!(build("Conv", &Attrs::new(), 21).is_none());
    }
}
