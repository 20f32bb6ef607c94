//! INT8 calibration: per-tensor statistics over user data, the methods that turn them into
//! symmetric int8 scales (min-max, percentile, entropy/KL as TensorRT's entropy calibrator),
//! and the human-readable calibration cache that later builds reuse.

pub mod cache;
pub mod calibrate;
pub mod collect;
pub mod histogram;
pub mod weights;

pub use cache::CalibrationCache;
pub use calibrate::{Calibrator, Collector, Method};
pub use histogram::Histogram;

#[cfg(test)]
mod qdq_golden;
