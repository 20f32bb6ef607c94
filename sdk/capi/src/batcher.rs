//! The dynamic batcher: batch-1 requests from many threads grouped into batched runs.

use std::ffi::{c_char, c_int, c_void};
use std::time::Duration;

use edgert_core::batcher::{Batcher, BatcherConfig};
use edgert_core::onnx::from_le_bytes;
use edgert_core::tensor::{Tensor, numel};

use crate::EdgertShape;
use crate::engine::{EdgertEngine, engine_arg};
use crate::{CapiError, EdgertStatus, dtype_arg, guard, non_null, put, shapes_arg, slice_arg, str_arg};

/// One request input: `bytes` bytes of type `dtype` (an [`crate::EdgertDtype`] value) at `data`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct EdgertInput {
    /// Input name (NUL-terminated UTF-8).
    pub name: *const c_char,
    /// An [`crate::EdgertDtype`] value.
    pub dtype: c_int,
    /// The data, in the machine's layout.
    pub data: *const c_void,
    /// Its size in bytes.
    pub bytes: usize,
}

/// One requested output: filled with up to `capacity` bytes at `data`; `bytes` is set to its
/// size (or to the size needed, with `EDGERT_STATUS_BUFFER_TOO_SMALL`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct EdgertOutput {
    /// Output name (NUL-terminated UTF-8).
    pub name: *const c_char,
    /// Where to copy the output.
    pub data: *mut c_void,
    /// Room at `data`, in bytes.
    pub capacity: usize,
    /// Set to the output's size in bytes.
    pub bytes: usize,
}

/// A dynamic batcher (opaque). Safe to use from many threads at once. Free with
/// [`edgert_batcher_free`] once no thread uses it.
pub struct EdgertBatcher {
    batcher: Batcher,
}

/// Starts a batcher over `engine`: requests (batch 1, shapes in `shapes`, which may leave
/// out inputs whose declared shape is complete apart from the batch) are grouped up to
/// `max_batch` or until the first has waited `max_delay_us` microseconds, then run on one
/// context planned for `max_batch`. The model must have the batch as the first dimension of
/// every input and output.
///
/// # Safety
/// `engine` is a live engine handle; `shapes` points to `n_shapes` entries (may be null when
/// 0); `out_batcher` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn edgert_batcher_create(
    engine: *const EdgertEngine,
    shapes: *const EdgertShape,
    n_shapes: usize,
    max_batch: usize,
    max_delay_us: u64,
    out_batcher: *mut *mut EdgertBatcher,
) -> EdgertStatus {
    guard(|| {
        put(out_batcher, std::ptr::null_mut(), "out_batcher")?;
        let e = unsafe { engine_arg(engine)? };
        let shapes = unsafe { shapes_arg(shapes, n_shapes)? };
        if max_batch == 0 {
            return Err(CapiError::Invalid("max_batch must be at least 1".into()));
        }
        let config = BatcherConfig { max_batch, max_delay: Duration::from_micros(max_delay_us) };
        let batcher = Batcher::new(e.engine.clone(), &shapes, config)?;
        put(out_batcher, Box::into_raw(Box::new(EdgertBatcher { batcher })), "out_batcher")
    })
}

/// Frees a batcher (null is a no-op), after answering any request still queued.
///
/// # Safety
/// `batcher` is null or a live batcher handle that no thread uses any more.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn edgert_batcher_free(batcher: *mut EdgertBatcher) {
    if !batcher.is_null() {
        // SAFETY: the caller's contract: made by Box::into_raw, freed once.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(unsafe { Box::from_raw(batcher) })));
    }
}

/// Runs one request: every input of the model (`n_inputs` entries) and the outputs wanted
/// (`n_outputs` entries, by name). Blocks until its batch has run. Output buffers are
/// checked before the request is queued, so a too-small one costs no run.
///
/// # Safety
/// `batcher` is a live batcher handle; `inputs` points to `n_inputs` entries and `outputs`
/// to `n_outputs` writable entries, each with valid name and data pointers.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn edgert_batcher_infer(
    batcher: *const EdgertBatcher,
    inputs: *const EdgertInput,
    n_inputs: usize,
    outputs: *mut EdgertOutput,
    n_outputs: usize,
) -> EdgertStatus {
    guard(|| {
        non_null(batcher, "batcher")?;
        // SAFETY: the caller's contract.
        let b = unsafe { &(*batcher).batcher };
        let inputs = unsafe { slice_arg(inputs, n_inputs, "inputs")? };
        non_null(outputs, "outputs")?;
        // SAFETY: non-null, `n_outputs` writable entries by the caller's contract.
        let outputs = unsafe { std::slice::from_raw_parts_mut(outputs, n_outputs) };
        let mut request = Vec::with_capacity(inputs.len());
        for inp in inputs {
            let name = unsafe { str_arg(inp.name, "inputs[].name")? };
            let dtype = dtype_arg(inp.dtype)?;
            non_null(inp.data, "inputs[].data")?;
            let src = unsafe { slice_arg(inp.data as *const u8, inp.bytes, "inputs[].data")? };
            let (want, shape) = b.input_type(name).ok_or_else(|| {
                CapiError::NotFound(format!("no input named `{name}` (inputs: {:?})", b.input_names()))
            })?;
            let need = numel(shape) * want.size();
            if dtype != want || src.len() != need {
                return Err(CapiError::Core(edgert_core::Error::Input {
                    name: name.to_string(),
                    message: format!(
                        "got {} bytes of {dtype}, a request is {want} {shape:?} ({need} bytes)",
                        src.len()
                    ),
                }));
            }
            if dtype == edgert_core::DType::Bool && src.iter().any(|&v| v > 1) {
                return Err(CapiError::Invalid(format!("input `{name}`: a bool byte must be 0 or 1")));
            }
            request.push((name.to_string(), Tensor::new(shape.to_vec(), from_le_bytes(dtype, src)?)?));
        }
        // Resolve and size-check every wanted output before queueing the request.
        let mut wanted = Vec::with_capacity(outputs.len());
        for out in outputs.iter_mut() {
            out.bytes = 0;
            let name = unsafe { str_arg(out.name, "outputs[].name")? };
            let i = b.output_names().iter().position(|n| n == name).ok_or_else(|| {
                CapiError::NotFound(format!("no output named `{name}` (outputs: {:?})", b.output_names()))
            })?;
            let (dtype, shape) = &b.output_types()[i];
            let need = numel(shape) * dtype.size();
            if out.capacity < need {
                out.bytes = need;
                return Err(CapiError::TooSmall { what: format!("output `{name}`"), have: out.capacity, need });
            }
            if need > 0 {
                non_null(out.data, "outputs[].data")?;
            }
            wanted.push(i);
        }
        let results = b.infer(request)?;
        for (out, &i) in outputs.iter_mut().zip(&wanted) {
            let src = results[i].view().data.as_bytes();
            out.bytes = src.len();
            if out.capacity < src.len() {
                return Err(CapiError::TooSmall {
                    what: format!("output `{}`", b.output_names()[i]),
                    have: out.capacity,
                    need: src.len(),
                });
            }
            if !src.is_empty() {
                non_null(out.data, "outputs[].data")?;
                // SAFETY: non-null with room for `capacity` ≥ len bytes (caller's contract).
                unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), out.data as *mut u8, src.len()) };
            }
        }
        Ok(())
    })
}
