//! edgert-capi: the C ABI of edgert, for camera firmware written in C or C++.
//!
//! Built as `libedgert.so` (cdylib) and `libedgert.a` (staticlib); the header
//! `include/edgert.h` is generated from this crate by cbindgen and checked in CI.
//!
//! Conventions, for every function:
//! * The return value is an [`EdgertStatus`]; `EDGERT_STATUS_OK` (0) is success. On failure
//!   [`edgert_last_error`] gives a message naming what went wrong (per thread).
//! * Every pointer argument is checked: a null one is `EDGERT_STATUS_NULL_POINTER`, naming
//!   the argument. Output pointers are set (to null or 0) before anything can fail.
//! * No Rust panic crosses the boundary: each entry point catches one and returns
//!   `EDGERT_STATUS_PANIC`.
//! * Tensor data is passed as bytes in the machine's (little-endian) layout, with the byte
//!   count checked against the planned type and shape.
//! * Handles are owned by the caller and freed by their `_free` function (null is a no-op).
//!   An engine may be shared by many contexts and batchers and freed before them (they hold
//!   a reference). A context must be used by one thread at a time; a batcher by any number.

mod batcher;
mod context;
mod engine;

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{CStr, CString, c_char, c_int};
use std::panic::{AssertUnwindSafe, catch_unwind};

use edgert_core::DType;

pub use batcher::*;
pub use context::*;
pub use engine::*;

/// Result of every call.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EdgertStatus {
    /// Success.
    Ok = 0,
    /// A required pointer argument was null.
    NullPointer = 1,
    /// An argument is out of range or malformed (bad UTF-8 name, zero batch, ...).
    InvalidArgument = 2,
    /// A file could not be read or written.
    Io = 3,
    /// The ONNX model could not be imported (corrupt, or an unsupported op).
    Import = 4,
    /// A bad engine file, or one built for another target.
    Engine = 5,
    /// A wrong input: unknown name, wrong type, shape or byte count.
    Input = 6,
    /// The caller's buffer is too small; the message gives the size needed.
    BufferTooSmall = 7,
    /// A name that the model does not have.
    NotFound = 8,
    /// Planning or running the model failed.
    Runtime = 9,
    /// An internal error (a caught panic): please report it.
    Panic = 10,
}

/// Element type of a tensor.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EdgertDtype {
    /// 32-bit float.
    F32 = 0,
    /// 16-bit IEEE float.
    F16 = 1,
    /// Signed 8-bit integer.
    I8 = 2,
    /// Unsigned 8-bit integer.
    U8 = 3,
    /// Signed 32-bit integer.
    I32 = 4,
    /// Signed 64-bit integer.
    I64 = 5,
    /// Boolean, one byte holding 0 or 1.
    Bool = 6,
}

impl From<DType> for EdgertDtype {
    fn from(d: DType) -> Self {
        match d {
            DType::F32 => EdgertDtype::F32,
            DType::F16 => EdgertDtype::F16,
            DType::I8 => EdgertDtype::I8,
            DType::U8 => EdgertDtype::U8,
            DType::I32 => EdgertDtype::I32,
            DType::I64 => EdgertDtype::I64,
            DType::Bool => EdgertDtype::Bool,
        }
    }
}

/// The shape of one named input, for planning (`dims` holds `ndims` sizes).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct EdgertShape {
    /// Input name (NUL-terminated UTF-8).
    pub name: *const c_char,
    /// The sizes; may be null when `ndims` is 0 (a scalar).
    pub dims: *const usize,
    /// Number of dimensions.
    pub ndims: usize,
}

/// Errors of the C ABI layer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CapiError {
    /// A null pointer argument.
    #[error("argument `{0}` is null")]
    Null(&'static str),
    /// A malformed argument.
    #[error("{0}")]
    Invalid(String),
    /// A name the model does not have.
    #[error("{0}")]
    NotFound(String),
    /// The caller's buffer is too small.
    #[error("{what}: buffer holds {have}, {need} needed")]
    TooSmall {
        /// Which buffer.
        what: String,
        /// Its capacity.
        have: usize,
        /// What is needed.
        need: usize,
    },
    /// An error from edgert-core.
    #[error(transparent)]
    Core(#[from] edgert_core::Error),
}

impl CapiError {
    /// The status code for this error.
    pub fn status(&self) -> EdgertStatus {
        use edgert_core::Error as E;
        match self {
            CapiError::Null(_) => EdgertStatus::NullPointer,
            CapiError::Invalid(_) => EdgertStatus::InvalidArgument,
            CapiError::NotFound(_) => EdgertStatus::NotFound,
            CapiError::TooSmall { .. } => EdgertStatus::BufferTooSmall,
            CapiError::Core(e) => match e {
                E::Io { .. } => EdgertStatus::Io,
                E::Import(_) | E::UnsupportedOp { .. } => EdgertStatus::Import,
                E::Engine(_) => EdgertStatus::Engine,
                E::Input { .. } => EdgertStatus::Input,
                _ => EdgertStatus::Runtime,
            },
        }
    }
}

pub(crate) type CResult<T = ()> = Result<T, CapiError>;

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_last_error(msg: String) {
    let c = CString::new(msg.replace('\0', "\\0")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = c);
}

/// Runs one entry point: converts errors to a status and the thread's last error message,
/// and catches panics so none unwinds into C.
pub(crate) fn guard(f: impl FnOnce() -> CResult) -> EdgertStatus {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => EdgertStatus::Ok,
        Ok(Err(e)) => {
            let status = e.status();
            set_last_error(e.to_string());
            status
        }
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown".into());
            set_last_error(format!("internal error (panic: {what}); please report it"));
            EdgertStatus::Panic
        }
    }
}

/// Checks a pointer argument for null.
pub(crate) fn non_null<T>(p: *const T, name: &'static str) -> CResult<*const T> {
    if p.is_null() { Err(CapiError::Null(name)) } else { Ok(p) }
}

/// Reads a NUL-terminated UTF-8 string argument.
///
/// # Safety
/// `p`, when not null, must point to a NUL-terminated string valid for `'a`.
pub(crate) unsafe fn str_arg<'a>(p: *const c_char, name: &'static str) -> CResult<&'a str> {
    non_null(p, name)?;
    // SAFETY: non-null, NUL-terminated by the caller's contract.
    let s = unsafe { CStr::from_ptr(p) };
    s.to_str().map_err(|_| CapiError::Invalid(format!("argument `{name}` is not valid UTF-8")))
}

/// Borrows `n` elements at `p` (null is allowed when `n` is 0).
///
/// # Safety
/// `p`, when not null, must point to `n` initialized elements valid for `'a`.
pub(crate) unsafe fn slice_arg<'a, T>(p: *const T, n: usize, name: &'static str) -> CResult<&'a [T]> {
    if n == 0 {
        return Ok(&[]);
    }
    non_null(p, name)?;
    if n.checked_mul(std::mem::size_of::<T>()).is_none_or(|b| b > isize::MAX as usize) {
        return Err(CapiError::Invalid(format!("argument `{name}`: {n} elements is too many")));
    }
    // SAFETY: non-null, `n` elements by the caller's contract, size checked above.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// Reads an array of [`EdgertShape`] into a map.
///
/// # Safety
/// As for [`slice_arg`], and every entry's pointers as for [`str_arg`] and [`slice_arg`].
pub(crate) unsafe fn shapes_arg(p: *const EdgertShape, n: usize) -> CResult<HashMap<String, Vec<usize>>> {
    let mut out = HashMap::new();
    // SAFETY: the caller's contract.
    for s in unsafe { slice_arg(p, n, "shapes")? } {
        let name = unsafe { str_arg(s.name, "shapes[].name")? };
        let dims = unsafe { slice_arg(s.dims, s.ndims, "shapes[].dims")? };
        if out.insert(name.to_string(), dims.to_vec()).is_some() {
            return Err(CapiError::Invalid(format!("shape of `{name}` given twice")));
        }
    }
    Ok(out)
}

/// Writes `value` through an output pointer checked for null.
pub(crate) fn put<T>(p: *mut T, value: T, name: &'static str) -> CResult {
    non_null(p, name)?;
    // SAFETY: non-null; the caller provides a writable `T`.
    unsafe { p.write(value) };
    Ok(())
}

/// The message of the most recent failed call on this thread ("" if none). The pointer stays
/// valid until the next failing call on the same thread; copy it to keep it.
#[unsafe(no_mangle)]
pub extern "C" fn edgert_last_error() -> *const c_char {
    catch_unwind(|| LAST_ERROR.with(|e| e.borrow().as_ptr())).unwrap_or(c"internal error".as_ptr())
}

/// The SDK version, e.g. `"0.1.0"` (a static string).
#[unsafe(no_mangle)]
pub extern "C" fn edgert_version() -> *const c_char {
    static VERSION: &CStr = match CStr::from_bytes_with_nul(concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes()) {
        Ok(s) => s,
        Err(_) => c"unknown",
    };
    VERSION.as_ptr()
}

/// A short static name for a status code (`"EDGERT_STATUS_OK"`, ...; `"unknown"` for a value
/// that is not an [`EdgertStatus`]). Takes an `int` so any value from C is safe to pass.
#[unsafe(no_mangle)]
pub extern "C" fn edgert_status_name(status: c_int) -> *const c_char {
    let s: &CStr = match status {
        0 => c"EDGERT_STATUS_OK",
        1 => c"EDGERT_STATUS_NULL_POINTER",
        2 => c"EDGERT_STATUS_INVALID_ARGUMENT",
        3 => c"EDGERT_STATUS_IO",
        4 => c"EDGERT_STATUS_IMPORT",
        5 => c"EDGERT_STATUS_ENGINE",
        6 => c"EDGERT_STATUS_INPUT",
        7 => c"EDGERT_STATUS_BUFFER_TOO_SMALL",
        8 => c"EDGERT_STATUS_NOT_FOUND",
        9 => c"EDGERT_STATUS_RUNTIME",
        10 => c"EDGERT_STATUS_PANIC",
        _ => c"unknown",
    };
    s.as_ptr()
}

/// Converts an `int` from C to a type; C may pass any value, so this is checked (a Rust enum
/// parameter holding an undeclared value would be undefined behaviour).
pub(crate) fn dtype_arg(v: c_int) -> CResult<DType> {
    Ok(match v {
        0 => DType::F32,
        1 => DType::F16,
        2 => DType::I8,
        3 => DType::U8,
        4 => DType::I32,
        5 => DType::I64,
        6 => DType::Bool,
        _ => return Err(CapiError::Invalid(format!("{v} is not an EdgertDtype"))),
    })
}

/// Bytes per element of an [`EdgertDtype`] value (0 for a value that is not one).
#[unsafe(no_mangle)]
pub extern "C" fn edgert_dtype_size(dtype: c_int) -> usize {
    dtype_arg(dtype).map(|d| d.size()).unwrap_or(0)
}
