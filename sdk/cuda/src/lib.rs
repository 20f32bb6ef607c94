//! edgert-cuda: the CUDA backend of edgert, on cudarc with dynamic loading, so it builds
//! with no CUDA toolkit and no driver, and reports their absence as an error (never a panic).
//!
//! * [`driver`]: finding libcuda and NVRTC.
//! * [`nvrtc`]: compiling `edgert-kernels` sources for a GPU architecture; [`cache`] keeps
//!   compiled modules on disk keyed by source hash, architecture and driver/NVRTC versions.
//! * [`launch`]: launch configurations; [`params`]: kernel parameter structs mirroring
//!   `kernels/cuda/common.cuh` and the host-side packing of broadcasts, gathers, convs.
//! * [`arena`]: the device memory layout of a context (arena from the core planner, weights).
//! * [`select`]: which kernel runs each node of a plan (host-side, testable without a GPU).
//! * [`exec`]: the executor: weights uploaded once, one arena and stream per context.
//! * [`preprocess`]: the fused NV12/I420 preprocessing kernel's parameters and host reference.

pub mod arena;
pub mod cache;
pub mod driver;
pub mod error;
pub mod exec;
pub mod launch;
pub mod nvrtc;
pub mod params;
pub mod preprocess;
pub mod raw;
pub mod select;

pub use error::{Error, Result};
pub use exec::{Device, ExecOptions, GpuContext};
