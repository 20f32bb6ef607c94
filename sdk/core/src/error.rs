//! The library's error type.

/// Errors from every part of edgert-core. Messages name what went wrong and where.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A malformed value, shape or type.
    #[error("{0}")]
    Invalid(String),
    /// An ONNX model that can't be decoded or uses something the importer can't express.
    #[error("ONNX import: {0}")]
    Import(String),
    /// An op that the importer does not know.
    #[error(
        "unsupported op `{op_type}` (domain `{domain}`, opset {opset}) at node #{index} `{node}`; \
         supported ops are listed by `edgert inspect --ops`"
    )]
    UnsupportedOp {
        /// Node name (or a generated one).
        node: String,
        /// ONNX op type.
        op_type: String,
        /// ONNX domain ("" is the default domain).
        domain: String,
        /// Position of the node in the graph.
        index: usize,
        /// Opset version in force for the domain.
        opset: i64,
    },
    /// An op rejected its inputs or attributes.
    #[error("node `{node}` ({op_type}): {message}")]
    Node {
        /// Node name.
        node: String,
        /// ONNX op type.
        op_type: String,
        /// What went wrong.
        message: String,
    },
    /// A bad engine file.
    #[error("engine file: {0}")]
    Engine(String),
    /// A wrong input given to a context.
    #[error("input `{name}`: {message}")]
    Input {
        /// Input name.
        name: String,
        /// What is wrong, with the expected shape/type.
        message: String,
    },
    /// File I/O.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
}

/// Result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Shorthand for `Err(Error::Invalid(format!(...)))`.
#[macro_export]
macro_rules! invalid {
    ($($arg:tt)*) => {
        return Err($crate::error::Error::Invalid(format!($($arg)*)))
    };
}

/// Builds an [`Error::Invalid`] from a format string (for `ok_or_else`).
#[macro_export]
macro_rules! invalid_err {
    ($($arg:tt)*) => {
        $crate::error::Error::Invalid(format!($($arg)*))
    };
}
