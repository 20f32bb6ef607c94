//! The CUDA backend's error type.

/// Errors from the CUDA backend. Messages say what failed and, where one exists, what to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No CUDA driver library (`libcuda.so`) could be loaded: no GPU, or no driver installed.
    #[error("no CUDA driver found: {0}")]
    NoDriver(String),
    /// No NVRTC library (`libnvrtc.so.12`) could be loaded, so kernels can't be compiled.
    #[error("no NVRTC found: {0}")]
    NoNvrtc(String),
    /// A CUDA driver call failed.
    #[error("CUDA driver: {0}")]
    Driver(String),
    /// NVRTC rejected a kernel source.
    #[error("NVRTC compiling {module} for {arch}: {message}")]
    Compile {
        /// The `.cu` file.
        module: String,
        /// Target architecture, e.g. `compute_87`.
        arch: String,
        /// NVRTC's log.
        message: String,
    },
    /// A node has no CUDA kernel (and CPU fallback was not allowed).
    #[error(
        "node `{node}` ({op_type}): no CUDA kernel for {what}; run with --device cpu, or allow CPU fallback \
         (ExecOptions::cpu_fallback)"
    )]
    Unsupported {
        /// Node name.
        node: String,
        /// ONNX op type.
        op_type: String,
        /// What is unsupported (the op, a dtype, an attribute value).
        what: String,
    },
    /// A wrong argument (shape, size, parameter) given to the backend.
    #[error("{0}")]
    Invalid(String),
    /// The kernel cache folder could not be read or written.
    #[error("kernel cache {path}: {source}")]
    Cache {
        /// The file or folder.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// An error from edgert-core (planning, a CPU fallback op).
    #[error(transparent)]
    Core(#[from] edgert_core::Error),
}

/// Result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<cudarc::driver::DriverError> for Error {
    fn from(e: cudarc::driver::DriverError) -> Error {
        Error::Driver(e.to_string())
    }
}
