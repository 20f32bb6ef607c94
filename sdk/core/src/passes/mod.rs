//! Graph passes: each rewrites the IR and keeps outputs unchanged. One pass, one file.

mod eliminate_transposes;
mod fold_batchnorm;
mod fold_channel_pad;
mod fold_constants;
mod fold_qdq_conv;
mod fold_spatial_pad;
pub mod fp16_weights;
mod fuse_conv_epilogue;
pub mod quantize_int8;
mod remove_dead_nodes;
mod remove_identity;
mod set_batch;

pub use eliminate_transposes::eliminate_transposes;
pub use fold_batchnorm::fold_batchnorm;
pub use fold_channel_pad::fold_channel_pad;
pub use fold_constants::fold_constants;
pub use fold_qdq_conv::fold_qdq_conv;
pub use fold_spatial_pad::fold_spatial_pad;
pub use fp16_weights::fp16_weights;
pub use fuse_conv_epilogue::fuse_conv_epilogue;
pub use quantize_int8::{LayerPrecision, quantize_int8};
pub use remove_dead_nodes::remove_dead_nodes;
pub use remove_identity::remove_identity;
pub use set_batch::set_batch;

use std::collections::HashMap;

use crate::error::Result;
use crate::graph::{Graph, ValueId};

/// A pass: rewrites the graph, returns how many rewrites it made.
pub type Pass = fn(&mut Graph) -> Result<usize>;

/// The passes every engine build runs, in order, with their names (for `inspect --passes`).
pub fn default_passes() -> Vec<(&'static str, Pass)> {
    vec![
        // First: constant folding would turn the weights' DequantizeLinear into floats.
        ("fold_qdq_conv", fold_qdq_conv),
        ("fold_constants", fold_constants),
        ("remove_identity", remove_identity),
        ("eliminate_transposes", eliminate_transposes),
        ("fold_spatial_pad", fold_spatial_pad),
        ("fold_batchnorm", fold_batchnorm),
        ("fuse_conv_epilogue", fuse_conv_epilogue),
        ("fold_channel_pad", fold_channel_pad),
        ("remove_dead_nodes", remove_dead_nodes),
    ]
}

/// How many node inputs read each value (graph outputs not counted).
pub(crate) fn use_counts(graph: &Graph) -> Vec<usize> {
    let mut uses = vec![0usize; graph.values.len()];
    for n in &graph.nodes {
        for &i in n.inputs.iter().flatten() {
            if let Some(u) = uses.get_mut(i) {
                *u += 1;
            }
        }
    }
    uses
}

/// The input and the pads (`[begin of every axis, end of every axis]`) of a `Pad` node that
/// pads with zeros in constant mode, with constant pads and no `axes` input; `None` for
/// anything else (reflect/edge modes, a non-zero value, pads computed at run time).
pub(crate) fn zero_constant_pad(graph: &Graph, pad: &crate::graph::Node) -> Option<(ValueId, Vec<i64>)> {
    if pad.op_type != "Pad" {
        return None;
    }
    let mode = pad.attrs.string("mode").ok().flatten();
    if !matches!(mode.as_deref(), None | Some("constant")) {
        return None;
    }
    // Some(None): the input is absent; None: present but not a constant.
    let konst = |i: usize| -> Option<Option<&crate::tensor::Tensor>> {
        match pad.inputs.get(i).copied().flatten() {
            None => Some(None),
            Some(v) => graph.constants.get(&v).map(|t| Some(&**t)),
        }
    };
    let (pads, value): (Vec<i64>, f32) = if graph.opset < 11 {
        (pad.attrs.ints("pads").ok().flatten()?, pad.attrs.float_or("value", 0.0).ok()?)
    } else {
        let pads = konst(1)??.to_i64_vec().ok()?;
        let value = match konst(2)? {
            None => 0.0,
            Some(t) => *t.to_f32_vec().ok()?.first()?,
        };
        if konst(3)?.is_some() {
            return None; // an `axes` input (opset 18): keep it simple, leave it
        }
        (pads, value)
    };
    let src = pad.inputs.first().copied().flatten()?;
    (value == 0.0 && !pads.is_empty() && pads.len() % 2 == 0).then_some((src, pads))
}

/// The index of the node that produces each value.
pub(crate) fn producers(graph: &Graph) -> HashMap<ValueId, usize> {
    let mut m = HashMap::new();
    for (i, n) in graph.nodes.iter().enumerate() {
        for &o in n.outputs.iter().flatten() {
            m.insert(o, i);
        }
    }
    m
}

#[cfg(test)]
pub(crate) mod test_util {
    use std::collections::HashMap;

    use crate::compare::{Tolerance, mismatch};
    use crate::graph::Graph;
    use crate::tensor::Tensor;

    /// Runs both graphs with the reference executor on the same inputs and checks that every
    /// output agrees within f32 tolerance.
    pub fn assert_same_outputs(before: &Graph, after: &Graph, inputs: &[(&str, Tensor)]) {
        let map: HashMap<String, Tensor> = inputs.iter().map(|(n, t)| (n.to_string(), t.clone())).collect();
        let want = before.run_reference(&map).expect("graph before the pass runs");
        let got = after.run_reference(&map).expect("graph after the pass runs");
        assert_eq!(want.len(), got.len());
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g.shape(), w.shape(), "output {i}");
            if let Some(m) = mismatch(g, w, Tolerance::F32) {
                panic!("output {i} changed by the pass: {m}");
            }
        }
    }
}
