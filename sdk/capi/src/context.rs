//! Contexts: plan an engine for input shapes, bind inputs and outputs by name, run.

use std::ffi::{c_char, c_int, c_void};

use edgert_core::Context;
use edgert_core::onnx::from_le_bytes;
use edgert_core::ops::TypeShape;
use edgert_core::tensor::{Tensor, numel};

use crate::engine::{EdgertEngine, engine_arg};
use crate::{
    CResult, CapiError, EdgertDtype, EdgertShape, EdgertStatus, dtype_arg, guard, non_null, put, shapes_arg, slice_arg,
    str_arg,
};

/// An execution context (opaque): one engine planned for one set of input shapes, with its
/// own memory. Use it from one thread at a time. Free with [`edgert_context_free`].
pub struct EdgertContext {
    ctx: Context,
    outputs: Vec<String>,
}

/// Borrows a context handle mutably.
///
/// # Safety
/// `p`, when not null, must come from [`edgert_context_create`], not be freed, and not be in
/// use on another thread.
unsafe fn context_arg<'a>(p: *mut EdgertContext) -> CResult<&'a mut EdgertContext> {
    non_null(p, "context")?;
    // SAFETY: the caller's contract.
    Ok(unsafe { &mut *p })
}

impl EdgertContext {
    /// The planned type of a graph input (`input`) or output by name.
    fn planned(&self, name: &str, input: bool) -> CResult<&TypeShape> {
        let g = &self.ctx.engine().graph;
        let ids = if input { &g.inputs } else { &g.outputs };
        let kind = if input { "input" } else { "output" };
        let id = ids.iter().copied().find(|&i| g.values[i].name == name).ok_or_else(|| {
            let names: Vec<&str> = ids.iter().map(|&i| g.values[i].name.as_str()).collect();
            CapiError::NotFound(format!("no {kind} named `{name}` ({kind}s: {names:?})"))
        })?;
        self.ctx.plan().types[id]
            .as_ref()
            .ok_or_else(|| CapiError::Invalid(format!("{kind} `{name}` has no planned type")))
    }

    fn output_index(&self, name: &str) -> CResult<usize> {
        self.outputs
            .iter()
            .position(|n| n == name)
            .ok_or_else(|| CapiError::NotFound(format!("no output named `{name}` (outputs: {:?})", self.outputs)))
    }
}

/// Creates a context for `engine` planned for `shapes` (`n_shapes` entries; inputs whose
/// declared shape is complete may be left out). All its memory is taken here.
///
/// # Safety
/// `engine` is a live engine handle; `shapes` points to `n_shapes` entries (may be null when
/// 0); `out_context` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn edgert_context_create(
    engine: *const EdgertEngine,
    shapes: *const EdgertShape,
    n_shapes: usize,
    out_context: *mut *mut EdgertContext,
) -> EdgertStatus {
    guard(|| {
        put(out_context, std::ptr::null_mut(), "out_context")?;
        let e = unsafe { engine_arg(engine)? };
        let shapes = unsafe { shapes_arg(shapes, n_shapes)? };
        let ctx = Context::new(e.engine.clone(), &shapes)?;
        let outputs = ctx.output_names();
        put(out_context, Box::into_raw(Box::new(EdgertContext { ctx, outputs })), "out_context")
    })
}

/// Frees a context (null is a no-op).
///
/// # Safety
/// `context` is null or a live context handle, not used again after this call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn edgert_context_free(context: *mut EdgertContext) {
    if !context.is_null() {
        // SAFETY: the caller's contract: made by Box::into_raw, freed once.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(unsafe { Box::from_raw(context) })));
    }
}

/// Copies `bytes` bytes at `data` into the input `name`. `dtype` (an [`EdgertDtype`] value)
/// and `bytes` must match the planned input exactly (see [`edgert_context_input_info`]).
///
/// # Safety
/// `context` is a live context handle; `name` a NUL-terminated string; `data` points to
/// `bytes` readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn edgert_context_set_input(
    context: *mut EdgertContext,
    name: *const c_char,
    dtype: c_int,
    data: *const c_void,
    bytes: usize,
) -> EdgertStatus {
    guard(|| {
        let c = unsafe { context_arg(context)? };
        let name = unsafe { str_arg(name, "name")? };
        let dtype = dtype_arg(dtype)?;
        non_null(data, "data")?;
        let src = unsafe { slice_arg(data as *const u8, bytes, "data")? };
        let t = c.planned(name, true)?;
        let need = numel(&t.shape) * t.dtype.size();
        if dtype != t.dtype || bytes != need {
            return Err(CapiError::Core(edgert_core::Error::Input {
                name: name.to_string(),
                message: format!(
                    "got {bytes} bytes of {dtype}, this context expects {} {:?} ({need} bytes)",
                    t.dtype, t.shape
                ),
            }));
        }
        let shape = t.shape.clone();
        if dtype == edgert_core::DType::Bool && src.iter().any(|&b| b > 1) {
            return Err(CapiError::Invalid(format!("input `{name}`: a bool byte must be 0 or 1")));
        }
        let value = Tensor::new(shape, from_le_bytes(dtype, src)?)?;
        Ok(c.ctx.set_input(name, &value)?)
    })
}

/// Runs the model once on the inputs set so far. Allocates nothing in steady state.
///
/// # Safety
/// `context` is a live context handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn edgert_context_run(context: *mut EdgertContext) -> EdgertStatus {
    guard(|| Ok(unsafe { context_arg(context)? }.ctx.run()?))
}

/// Writes a planned type and shape to the caller's buffers.
fn write_info(
    t: &TypeShape,
    out_dtype: *mut EdgertDtype,
    dims: *mut usize,
    dims_cap: usize,
    out_ndims: *mut usize,
) -> CResult {
    put(out_ndims, t.shape.len(), "out_ndims")?;
    put(out_dtype, t.dtype.into(), "out_dtype")?;
    if dims_cap < t.shape.len() {
        return Err(CapiError::TooSmall { what: "dims".into(), have: dims_cap, need: t.shape.len() });
    }
    if !t.shape.is_empty() {
        non_null(dims, "dims")?;
        // SAFETY: non-null, `dims_cap` ≥ len writable elements by the caller's contract.
        unsafe { std::ptr::copy_nonoverlapping(t.shape.as_ptr(), dims, t.shape.len()) };
    }
    Ok(())
}

/// Describes input `name` as planned: its type in `*out_dtype`, its rank in `*out_ndims` and
/// its sizes in `dims` (room for `dims_cap`; `EDGERT_STATUS_BUFFER_TOO_SMALL` if the rank is
/// larger, with `*out_ndims` set).
///
/// # Safety
/// `context` is a live context handle; `name` a NUL-terminated string; `out_dtype` and
/// `out_ndims` writable; `dims` has room for `dims_cap` elements (may be null when 0).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn edgert_context_input_info(
    context: *mut EdgertContext,
    name: *const c_char,
    out_dtype: *mut EdgertDtype,
    dims: *mut usize,
    dims_cap: usize,
    out_ndims: *mut usize,
) -> EdgertStatus {
    guard(|| {
        let c = unsafe { context_arg(context)? };
        let name = unsafe { str_arg(name, "name")? };
        write_info(c.planned(name, true)?, out_dtype, dims, dims_cap, out_ndims)
    })
}

/// Describes output `name` as planned, as [`edgert_context_input_info`] does for inputs.
///
/// # Safety
/// As for [`edgert_context_input_info`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn edgert_context_output_info(
    context: *mut EdgertContext,
    name: *const c_char,
    out_dtype: *mut EdgertDtype,
    dims: *mut usize,
    dims_cap: usize,
    out_ndims: *mut usize,
) -> EdgertStatus {
    guard(|| {
        let c = unsafe { context_arg(context)? };
        let name = unsafe { str_arg(name, "name")? };
        write_info(c.planned(name, false)?, out_dtype, dims, dims_cap, out_ndims)
    })
}

/// Copies output `name` of the last run into `data` (room for `capacity` bytes) and sets
/// `*out_bytes` to its size; if `capacity` is too small, sets `*out_bytes` to the size
/// needed and returns `EDGERT_STATUS_BUFFER_TOO_SMALL` without copying.
///
/// # Safety
/// `context` is a live context handle; `name` a NUL-terminated string; `data` has room for
/// `capacity` bytes (may be null when 0); `out_bytes` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn edgert_context_get_output(
    context: *mut EdgertContext,
    name: *const c_char,
    data: *mut c_void,
    capacity: usize,
    out_bytes: *mut usize,
) -> EdgertStatus {
    guard(|| {
        put(out_bytes, 0, "out_bytes")?;
        let c = unsafe { context_arg(context)? };
        let name = unsafe { str_arg(name, "name")? };
        let i = c.output_index(name)?;
        let view = c.ctx.output_ref(i)?;
        let src = view.data.as_bytes();
        put(out_bytes, src.len(), "out_bytes")?;
        if capacity < src.len() {
            return Err(CapiError::TooSmall { what: format!("output `{name}`"), have: capacity, need: src.len() });
        }
        if !src.is_empty() {
            non_null(data, "data")?;
            // SAFETY: non-null, room for `capacity` ≥ len bytes by the caller's contract;
            // the source is our arena, distinct from the caller's buffer.
            unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), data as *mut u8, src.len()) };
        }
        Ok(())
    })
}
