//! Engines: build from ONNX, load and save engine files, list input and output names.

use std::collections::HashMap;
use std::ffi::{CString, c_char};
use std::path::Path;
use std::sync::Arc;

use edgert_core::graph::Dim;
use edgert_core::{Engine, Graph, onnx};

use crate::{CResult, CapiError, EdgertShape, EdgertStatus, guard, non_null, put, shapes_arg, slice_arg, str_arg};

/// An optimized model with its weights (opaque). Free with [`edgert_engine_free`].
pub struct EdgertEngine {
    pub(crate) engine: Arc<Engine>,
    inputs: Vec<CString>,
    outputs: Vec<CString>,
}

fn c_names(g: &Graph, ids: &[usize]) -> Vec<CString> {
    ids.iter().map(|&i| CString::new(g.values[i].name.replace('\0', "")).unwrap_or_default()).collect()
}

impl EdgertEngine {
    pub(crate) fn new(engine: Engine) -> Box<EdgertEngine> {
        let g = &engine.graph;
        let (inputs, outputs) = (c_names(g, &g.inputs), c_names(g, &g.outputs));
        Box::new(EdgertEngine { engine: Arc::new(engine), inputs, outputs })
    }
}

/// Fills in inputs not given, taking 1 for each symbolic dim (as `edgert build` does).
fn with_default_dims(graph: &Graph, mut given: HashMap<String, Vec<usize>>) -> HashMap<String, Vec<usize>> {
    for &id in &graph.inputs {
        let v = &graph.values[id];
        if let (false, Some(d)) = (given.contains_key(&v.name), &v.shape)
            && d.iter().any(|x| matches!(x, Dim::Sym(_)))
        {
            given.insert(v.name.clone(), d.iter().map(|x| if let Dim::Fixed(n) = x { *n } else { 1 }).collect());
        }
    }
    given
}

/// Borrows an engine handle.
///
/// # Safety
/// `p`, when not null, must come from an `edgert_engine_*` constructor and not be freed.
pub(crate) unsafe fn engine_arg<'a>(p: *const EdgertEngine) -> CResult<&'a EdgertEngine> {
    non_null(p, "engine")?;
    // SAFETY: the caller's contract.
    Ok(unsafe { &*p })
}

fn build(graph: Graph, shapes: HashMap<String, Vec<usize>>, out: *mut *mut EdgertEngine) -> CResult {
    let shapes = with_default_dims(&graph, shapes);
    let engine = Engine::build(graph, Some(&shapes))?;
    put(out, Box::into_raw(EdgertEngine::new(engine)), "out_engine")
}

/// Imports the ONNX model at `onnx_path`, optimizes it and plans it for `shapes` (`n_shapes`
/// entries; inputs left out take 1 for each symbolic dimension). On success `*out_engine`
/// holds a new engine.
///
/// # Safety
/// `onnx_path` is a NUL-terminated string; `shapes` points to `n_shapes` entries (may be
/// null when 0); `out_engine` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn edgert_engine_build(
    onnx_path: *const c_char,
    shapes: *const EdgertShape,
    n_shapes: usize,
    out_engine: *mut *mut EdgertEngine,
) -> EdgertStatus {
    guard(|| {
        put(out_engine, std::ptr::null_mut(), "out_engine")?;
        let path = unsafe { str_arg(onnx_path, "onnx_path")? };
        let shapes = unsafe { shapes_arg(shapes, n_shapes)? };
        build(onnx::load_model(Path::new(path))?, shapes, out_engine)
    })
}

/// As [`edgert_engine_build`], from a serialized ONNX model in memory (`len` bytes at
/// `onnx_bytes`). Models with external data are refused (no folder to read it from).
///
/// # Safety
/// `onnx_bytes` points to `len` readable bytes; otherwise as [`edgert_engine_build`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn edgert_engine_build_from_memory(
    onnx_bytes: *const u8,
    len: usize,
    shapes: *const EdgertShape,
    n_shapes: usize,
    out_engine: *mut *mut EdgertEngine,
) -> EdgertStatus {
    guard(|| {
        put(out_engine, std::ptr::null_mut(), "out_engine")?;
        non_null(onnx_bytes, "onnx_bytes")?;
        let bytes = unsafe { slice_arg(onnx_bytes, len, "onnx_bytes")? };
        let shapes = unsafe { shapes_arg(shapes, n_shapes)? };
        build(onnx::import_model(bytes, None)?, shapes, out_engine)
    })
}

/// Loads an engine file written by [`edgert_engine_save`] or `edgert build`. Fails with
/// `EDGERT_STATUS_ENGINE` for a corrupt file or one built for another target.
///
/// # Safety
/// `path` is a NUL-terminated string; `out_engine` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn edgert_engine_load(path: *const c_char, out_engine: *mut *mut EdgertEngine) -> EdgertStatus {
    guard(|| {
        put(out_engine, std::ptr::null_mut(), "out_engine")?;
        let path = unsafe { str_arg(path, "path")? };
        let engine = Engine::load(Path::new(path))?;
        put(out_engine, Box::into_raw(EdgertEngine::new(engine)), "out_engine")
    })
}

/// As [`edgert_engine_load`], from `len` bytes of an engine file in memory.
///
/// # Safety
/// `bytes` points to `len` readable bytes; `out_engine` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn edgert_engine_load_from_memory(
    bytes: *const u8,
    len: usize,
    out_engine: *mut *mut EdgertEngine,
) -> EdgertStatus {
    guard(|| {
        put(out_engine, std::ptr::null_mut(), "out_engine")?;
        non_null(bytes, "bytes")?;
        let bytes = unsafe { slice_arg(bytes, len, "bytes")? };
        let engine = Engine::from_bytes(bytes)?;
        put(out_engine, Box::into_raw(EdgertEngine::new(engine)), "out_engine")
    })
}

/// Writes the engine file to `path`.
///
/// # Safety
/// `engine` is a live engine handle; `path` is a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn edgert_engine_save(engine: *const EdgertEngine, path: *const c_char) -> EdgertStatus {
    guard(|| {
        let e = unsafe { engine_arg(engine)? };
        let path = unsafe { str_arg(path, "path")? };
        Ok(e.engine.save(Path::new(path))?)
    })
}

/// Frees an engine (null is a no-op). Contexts and batchers made from it stay valid.
///
/// # Safety
/// `engine` is null or a live engine handle, not used again after this call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn edgert_engine_free(engine: *mut EdgertEngine) {
    if !engine.is_null() {
        // SAFETY: the caller's contract: made by Box::into_raw, freed once.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(unsafe { Box::from_raw(engine) })));
    }
}

/// Sets `*out_count` to the number of model inputs.
///
/// # Safety
/// `engine` is a live engine handle; `out_count` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn edgert_engine_num_inputs(engine: *const EdgertEngine, out_count: *mut usize) -> EdgertStatus {
    guard(|| put(out_count, unsafe { engine_arg(engine)? }.inputs.len(), "out_count"))
}

/// Sets `*out_count` to the number of model outputs.
///
/// # Safety
/// `engine` is a live engine handle; `out_count` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn edgert_engine_num_outputs(engine: *const EdgertEngine, out_count: *mut usize) -> EdgertStatus {
    guard(|| put(out_count, unsafe { engine_arg(engine)? }.outputs.len(), "out_count"))
}

fn name_at(names: &[CString], index: usize, kind: &str) -> CResult<*const c_char> {
    names
        .get(index)
        .map(|n| n.as_ptr())
        .ok_or_else(|| CapiError::NotFound(format!("{kind} #{index} does not exist (the model has {})", names.len())))
}

/// Sets `*out_name` to the name of input `index` (a string owned by the engine, valid until
/// it is freed).
///
/// # Safety
/// `engine` is a live engine handle; `out_name` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn edgert_engine_input_name(
    engine: *const EdgertEngine,
    index: usize,
    out_name: *mut *const c_char,
) -> EdgertStatus {
    guard(|| {
        put(out_name, std::ptr::null(), "out_name")?;
        put(out_name, name_at(&unsafe { engine_arg(engine)? }.inputs, index, "input")?, "out_name")
    })
}

/// Sets `*out_name` to the name of output `index` (owned by the engine, as for inputs).
///
/// # Safety
/// `engine` is a live engine handle; `out_name` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn edgert_engine_output_name(
    engine: *const EdgertEngine,
    index: usize,
    out_name: *mut *const c_char,
) -> EdgertStatus {
    guard(|| {
        put(out_name, std::ptr::null(), "out_name")?;
        put(out_name, name_at(&unsafe { engine_arg(engine)? }.outputs, index, "output")?, "out_name")
    })
}
