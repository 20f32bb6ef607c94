//! Device memory layout of a context: the activation arena (offsets straight from the core
//! planner, which already gives every live value its own region), the weights buffer (each
//! constant a step reads on the GPU, 256-byte aligned) and the pinned host staging buffer
//! for inputs and outputs. Host-side: tested without a GPU.

use edgert_core::graph::{Graph, ValueId};
use edgert_core::plan::{Plan, Slot};

use edgert_core::DType;

use crate::error::{Error, Result};
use crate::select::{StepKernel, is_tensor_core_conv};

/// Alignment of device buffers and of each weight (cudaMalloc's own alignment).
pub const DEVICE_ALIGN: usize = 256;

/// Where everything of one context lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceLayout {
    /// Arena bytes (the plan's, rounded up to [`DEVICE_ALIGN`]).
    pub arena_bytes: usize,
    /// (value, offset, bytes) of each constant uploaded, offsets multiples of [`DEVICE_ALIGN`].
    pub weights: Vec<(ValueId, usize, usize)>,
    /// Weights buffer bytes.
    pub weights_bytes: usize,
    /// Float16 constants uploaded widened to f32 (an FP16 engine's weights read by f32
    /// kernels; only the tensor-core conv reads f16 weights as they are). Their `weights`
    /// sizes are the f32 sizes.
    pub widened: Vec<ValueId>,
    /// (value, offset, bytes) in the pinned staging buffer for each graph input and output
    /// that lives in the arena.
    pub staging: Vec<(ValueId, usize, usize)>,
    /// Pinned staging bytes.
    pub staging_bytes: usize,
}

impl DeviceLayout {
    /// The weight offset of `id`, if uploaded.
    pub fn weight(&self, id: ValueId) -> Option<usize> {
        self.weights.iter().find(|w| w.0 == id).map(|w| w.1)
    }

    /// The staging offset and size of `id`.
    pub fn staging_of(&self, id: ValueId) -> Option<(usize, usize)> {
        self.staging.iter().find(|s| s.0 == id).map(|s| (s.1, s.2))
    }
}

/// Whether input `input` of a step running `kernel` is read as f16 on the device.
fn reads_f16(kernel: &StepKernel, input: usize) -> bool {
    matches!(kernel, StepKernel::Conv { kernel, .. } if is_tensor_core_conv(kernel)) && input == 1
}

/// Lays out `plan` whose steps run `kernels` (constants read only by skipped or CPU steps
/// stay on the host). Fails if one f16 constant is read both as f16 and as f32.
pub fn layout(graph: &Graph, plan: &Plan, kernels: &[StepKernel]) -> Result<DeviceLayout> {
    let mut weights = Vec::new();
    let mut widened = Vec::new();
    let mut as_f16 = Vec::new();
    let mut off = 0usize;
    for (step, k) in plan.steps.iter().zip(kernels) {
        if matches!(k, StepKernel::Skip | StepKernel::Cpu { .. }) {
            continue;
        }
        for (i, id) in graph.nodes[step.node].inputs.iter().enumerate() {
            let Some(id) = *id else { continue };
            if let Slot::Const(t) = &plan.slots[id] {
                let widen = t.dtype() == DType::F16 && !reads_f16(k, i);
                if t.dtype() == DType::F16 && !widen {
                    as_f16.push(id);
                }
                if widen && !widened.contains(&id) {
                    widened.push(id);
                }
                if widened.contains(&id) && as_f16.contains(&id) {
                    let name = &graph.values[id].name;
                    return Err(Error::Invalid(format!("float16 constant `{name}` is read both as f16 and as f32")));
                }
                if weights.iter().any(|w: &(ValueId, usize, usize)| w.0 == id) {
                    continue;
                }
                let bytes = t.len() * if widen { DType::F32.size() } else { t.dtype().size() };
                weights.push((id, off, bytes));
                off = (off + bytes).next_multiple_of(DEVICE_ALIGN);
            }
        }
    }
    let mut staging = Vec::new();
    let mut soff = 0usize;
    for &id in graph.inputs.iter().chain(&graph.outputs) {
        if let (Slot::Arena { .. }, Some(t)) = (&plan.slots[id], &plan.types[id]) {
            if staging.iter().any(|s: &(ValueId, usize, usize)| s.0 == id) {
                continue;
            }
            staging.push((id, soff, t.bytes()));
            soff = (soff + t.bytes()).next_multiple_of(64);
        }
    }
    Ok(DeviceLayout {
        arena_bytes: plan.arena_bytes.next_multiple_of(DEVICE_ALIGN),
        weights,
        weights_bytes: off,
        widened,
        staging,
        staging_bytes: soff,
    })
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use edgert_core::graph::Dim;
    use edgert_core::ops::Attrs;
    use edgert_core::{DType, Tensor};

    use super::*;
    use crate::select::{SelectOptions, select};

    #[test]
    fn weights_are_aligned_disjoint_and_only_what_gpu_steps_read() {
        let mut g = Graph { opset: 17, ..Default::default() };
        let x = g.add_value("x", Some(DType::F32), Some(vec![Dim::Fixed(3), Dim::Fixed(7)]));
        g.inputs.push(x);
        let w = g.add_constant("w", Tensor::from_f32(&[7, 13], vec![0.5; 91]).unwrap());
        let b = g.add_constant("b", Tensor::from_f32(&[13], vec![0.0; 13]).unwrap());
        let s = g.add_constant("s", Tensor::from_f32(&[1], vec![2.0]).unwrap());
        let (y, z, u) = (g.add_value("y", None, None), g.add_value("z", None, None), g.add_value("u", None, None));
        g.add_node("fc", "Gemm", Attrs::new(), vec![Some(x), Some(w), Some(b)], vec![Some(y)]).unwrap();
        g.add_node("scale", "Mul", Attrs::new(), vec![Some(y), Some(s)], vec![Some(z)]).unwrap();
        g.add_node("again", "Mul", Attrs::new(), vec![Some(z), Some(s)], vec![Some(u)]).unwrap();
        g.outputs.push(u);
        let plan = edgert_core::plan::plan(&g, &HashMap::new()).unwrap();
        let ks = select(&g, &plan, SelectOptions::default()).unwrap();
        let l = layout(&g, &plan, &ks).unwrap();
        assert_eq!(l.weights.len(), 3, "w, b and s once each: {:?}", l.weights);
        for (i, a) in l.weights.iter().enumerate() {
            assert_eq!(a.1 % DEVICE_ALIGN, 0);
            assert!(a.1 + a.2 <= l.weights_bytes.max(a.1 + a.2));
            for bb in &l.weights[..i] {
                assert!(a.1 >= bb.1 + bb.2 || bb.1 >= a.1 + a.2, "{a:?} overlaps {bb:?}");
            }
        }
        assert_eq!(l.weight(w), Some(0));
        assert_eq!(l.weight(b), Some(512)); // 91 * 4 = 364 bytes, rounded to 512
        assert_eq!(l.arena_bytes % DEVICE_ALIGN, 0);
        assert!(l.arena_bytes >= plan.arena_bytes);
        // Staging: the input (3x7 f32) and the output (3x13 f32).
        assert_eq!(l.staging_of(x), Some((0, 84)));
        assert_eq!(l.staging_of(u), Some((128, 156)));
        assert_eq!(l.staging_bytes, 320);
        // With the Mul steps on the CPU, `s` stays on the host.
        let mut ks2 = ks.clone();
        ks2[1] = StepKernel::Cpu { reason: "test".into() };
        ks2[2] = StepKernel::Cpu { reason: "test".into() };
        assert_eq!(layout(&g, &plan, &ks2).unwrap().weight(s), None);
    }
}
