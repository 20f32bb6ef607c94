//! Operators: one file per op, grouped by family. Each op is a struct built from its ONNX
//! attributes, with shape/type inference and a plain reference implementation that is the
//! op's meaning (the oracle for constant folding, calibration and every test).
//!
//! An op computes into preallocated outputs (`Op::run`) and must not allocate on the heap
//! there: the arena executor calls it in steady state. Scratch memory an op needs is
//! declared by `Op::scratch_bytes` and handed to `run`.

pub mod attrs;
pub mod broadcast;
pub mod control;
pub mod elementwise;
pub mod fused;
pub mod linalg;
pub mod nn;
pub mod quant;
pub mod reduce;
pub mod rnn;
pub mod shape;

use std::fmt::Debug;

pub use attrs::{Attr, Attrs};

use crate::error::{Error, Result};
use crate::tensor::{DType, MAX_TENSOR_BYTES, Tensor, TensorMut, TensorRef, numel};

/// What shape inference knows about one input: its type, its concrete shape and, where the
/// value is a constant (an initializer, a folded value), the value itself. Ops whose output
/// shape depends on an input's value (Reshape's `shape`, Slice's `starts`, ...) read it from
/// `value` and fail with a clear error when it is `None`.
#[derive(Clone, Copy, Debug)]
pub struct InferInput<'a> {
    /// Element type.
    pub dtype: DType,
    /// Concrete shape.
    pub shape: &'a [usize],
    /// The value, when known at inference time.
    pub value: Option<&'a Tensor>,
}

/// An inferred output: element type and concrete shape.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct TypeShape {
    /// Element type.
    pub dtype: DType,
    /// Concrete shape.
    pub shape: Vec<usize>,
}

impl TypeShape {
    /// Builds one.
    pub fn new(dtype: DType, shape: Vec<usize>) -> TypeShape {
        TypeShape { dtype, shape }
    }
    /// Size in bytes of a tensor of this type and shape.
    pub fn bytes(&self) -> usize {
        numel(&self.shape).saturating_mul(self.dtype.size())
    }
}

/// An operator instance (an ONNX node's op type with its attributes parsed).
pub trait Op: Debug + Send + Sync {
    /// The ONNX op type, e.g. `"Conv"`.
    fn op_type(&self) -> &'static str;

    /// Output types and shapes from the inputs. `inputs[i]` is `None` for an omitted
    /// optional input. Errors name the problem (the caller adds the node name).
    fn infer(&self, inputs: &[Option<InferInput>]) -> Result<Vec<TypeShape>>;

    /// Scratch bytes `run` needs for these input and output shapes (default: none).
    fn scratch_bytes(&self, _inputs: &[Option<TypeShape>], _outputs: &[TypeShape]) -> usize {
        0
    }

    /// Computes the outputs, whose types and shapes are what `infer` returned. Must not
    /// allocate on the heap. `scratch` has at least `scratch_bytes` bytes, 64-byte aligned.
    fn run(&self, inputs: &[Option<TensorRef>], outputs: &mut [TensorMut], scratch: &mut [u8]) -> Result<()>;

    /// [`Op::run`] with the executing context's kernels and thread pool: ops with optimized
    /// CPU kernels override it; the default ignores `exec` and calls `run`.
    fn run_exec(
        &self,
        inputs: &[Option<TensorRef>],
        outputs: &mut [TensorMut],
        scratch: &mut [u8],
        _exec: &crate::cpu::Exec,
    ) -> Result<()> {
        self.run(inputs, outputs, scratch)
    }

    /// Output `i` may share memory with input `j` (an op that only reinterprets its input,
    /// like Reshape): returns `Some(j)`. The planner then gives both one buffer and `run`
    /// sees identical input and output data (and may do nothing). Default: none.
    fn alias_output(&self, _output: usize) -> Option<usize> {
        None
    }

    /// How many leading outputs `run` must be given: trailing outputs from this index on
    /// may be left out when the model does not read them (MaxPool's Indices), and `run`
    /// then skips computing them. Default: all (omitted outputs get hidden buffers).
    fn required_outputs(&self) -> usize {
        usize::MAX
    }
}

/// Builds an op from its ONNX type, attributes and the opset in force for its domain.
/// Returns `None` when no family knows the op type.
pub fn build_op(op_type: &str, attrs: &Attrs, opset: i64) -> Option<Result<Box<dyn Op>>> {
    // Each family answers for the op types it owns.
    elementwise::build(op_type, attrs, opset)
        .or_else(|| nn::build(op_type, attrs, opset))
        .or_else(|| shape::build(op_type, attrs, opset))
        .or_else(|| reduce::build(op_type, attrs, opset))
        .or_else(|| linalg::build(op_type, attrs, opset))
        .or_else(|| rnn::build(op_type, attrs, opset))
        .or_else(|| fused::build(op_type, attrs, opset))
        .or_else(|| control::build(op_type, attrs, opset))
        .or_else(|| quant::build(op_type, attrs, opset))
}

/// All op types `build_op` knows, sorted (for `edgert inspect --ops` and error hints).
pub fn supported_ops() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = elementwise::OP_TYPES
        .iter()
        .chain(nn::OP_TYPES)
        .chain(shape::OP_TYPES)
        .chain(reduce::OP_TYPES)
        .chain(linalg::OP_TYPES)
        .chain(rnn::OP_TYPES)
        .chain(control::OP_TYPES)
        .chain(quant::OP_TYPES)
        .copied()
        .collect();
    v.sort_unstable();
    v
}

/// Runs an op on owned inputs, allocating its outputs: the reference path used by constant
/// folding, the reference executor and tests.
pub fn eval(op: &dyn Op, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>> {
    let infer_inputs: Vec<Option<InferInput>> =
        inputs.iter().map(|t| t.map(|t| InferInput { dtype: t.dtype(), shape: t.shape(), value: Some(t) })).collect();
    let out_types = op.infer(&infer_inputs)?;
    check_sizes(&out_types)?;
    let in_types: Vec<Option<TypeShape>> =
        inputs.iter().map(|t| t.map(|t| TypeShape::new(t.dtype(), t.shape().to_vec()))).collect();
    let scratch_len = op.scratch_bytes(&in_types, &out_types);
    // u64 storage keeps the scratch 8-byte aligned; kernels needing more align themselves.
    let mut scratch_words = vec![0u64; scratch_len.div_ceil(8)];
    // SAFETY: u64 storage viewed as bytes, same length in bytes.
    let scratch: &mut [u8] =
        unsafe { std::slice::from_raw_parts_mut(scratch_words.as_mut_ptr() as *mut u8, scratch_words.len() * 8) };
    let mut outputs: Vec<Tensor> = out_types.iter().map(|t| Tensor::zeros(t.dtype, &t.shape)).collect();
    // Aliasing outputs start as a copy of their input, as the arena would give them.
    for (i, out) in outputs.iter_mut().enumerate() {
        if let Some(j) = op.alias_output(i)
            && let Some(Some(src)) = inputs.get(j)
            && src.dtype() == out.dtype()
            && src.len() == out.len()
        {
            *out = (*src).clone().reshaped(out.shape().to_vec())?;
        }
    }
    {
        let in_views: Vec<Option<TensorRef>> = inputs.iter().map(|t| t.map(|t| t.view())).collect();
        let mut out_views: Vec<TensorMut> = outputs.iter_mut().map(|t| t.view_mut()).collect();
        op.run(&in_views, &mut out_views, &mut scratch[..scratch_len])?;
    }
    Ok(outputs)
}

/// Refuses outputs larger than [`MAX_TENSOR_BYTES`] (corrupt or hostile shapes).
pub fn check_sizes(types: &[TypeShape]) -> Result<()> {
    for t in types {
        if t.bytes() > MAX_TENSOR_BYTES {
            return Err(Error::Invalid(format!(
                "output of shape {:?} ({}) would take {} bytes, over the {} byte limit",
                t.shape,
                t.dtype,
                t.bytes(),
                MAX_TENSOR_BYTES
            )));
        }
    }
    Ok(())
}

/// Returns input `i`, or an error if it is missing.
pub fn required<T: Copy>(inputs: &[Option<T>], i: usize, what: &str) -> Result<T> {
    match inputs.get(i) {
        Some(Some(t)) => Ok(*t),
        _ => Err(Error::Invalid(format!("missing required input #{i} ({what})"))),
    }
}

/// Returns input `i` if present.
pub fn optional<T: Copy>(inputs: &[Option<T>], i: usize) -> Option<T> {
    inputs.get(i).copied().flatten()
}

/// Returns the constant value of input `i`, or an error saying the op needs it constant.
pub fn const_value<'a>(inputs: &[Option<InferInput<'a>>], i: usize, what: &str) -> Result<&'a Tensor> {
    let inp = required(inputs, i, what)?;
    inp.value.ok_or_else(|| {
        Error::Invalid(format!(
            "input #{i} ({what}) must be known when shapes are planned (a constant, or computed \
             only from constants and input shapes)"
        ))
    })
}
