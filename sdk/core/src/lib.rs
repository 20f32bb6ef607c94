//! edgert-core: the runtime core of the edgert SDK.
//!
//! ONNX in ([`onnx`]), an IR ([`graph`]), ops with reference implementations ([`ops`]),
//! an arena planner and executor ([`plan`], [`context`]) and the engine file ([`engine`]).

pub mod error;
pub mod ops;
pub mod tensor;

pub use error::{Error, Result};
pub use tensor::{DType, Tensor, TensorData, TensorMut, TensorRef};
