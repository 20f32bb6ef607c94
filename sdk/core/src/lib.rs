//! edgert-core: the runtime core of the edgert SDK.
//!
//! ONNX in ([`onnx`]), an IR ([`graph`]), ops with reference implementations ([`ops`]),
//! graph passes ([`passes`]), an arena planner ([`plan`]) and executor ([`context`]), the
//! engine file ([`engine`]) and `.npy` I/O ([`npy`]).

pub mod batcher;
pub mod best;
pub mod compare;
pub mod context;
pub mod cpu;
pub mod engine;
pub mod error;
pub mod graph;
pub mod npy;
pub mod onnx;
pub mod ops;
pub mod passes;
pub mod plan;
pub mod quant;
pub mod tensor;
pub mod tune;

pub use context::Context;
pub use engine::Engine;
pub use error::{Error, Result};
pub use graph::Graph;
pub use tensor::{DType, Tensor, TensorData, TensorMut, TensorRef};
