//! The optimized CPU backend: vectorized kernels chosen at run time by CPU features
//! ([`isa`]), a fixed thread pool ([`pool`]), a blocked GEMM with fused epilogues ([`gemm`]),
//! and the convolution kernels built on it ([`conv`]). Ops call these from their `run`; every
//! kernel is tested against the op's reference implementation on every ISA path the machine
//! has (`EDGERT_ISA` forces one).

pub mod conv;
pub mod conv_1x1_swapped;
pub mod conv_i8;
pub mod conv_i8_implicit;
pub mod conv_implicit;
pub mod conv_row_dot;
pub mod depthwise_lanes;
pub mod dot;
pub mod epilogue;
pub mod gemm;
pub mod gemm_i8;
#[cfg(target_arch = "aarch64")]
mod gemm_i8_neon;
#[cfg(target_arch = "x86_64")]
mod gemm_i8_x86;
#[cfg(target_arch = "aarch64")]
mod gemm_neon;
#[cfg(target_arch = "x86_64")]
mod gemm_x86;
pub mod isa;
pub mod matmul;
pub mod max_pool;
pub mod pool;
pub mod resample;

pub use epilogue::{Activation, Epilogue};
pub use isa::Isa;
pub use pool::ThreadPool;

/// What a kernel may use while it runs: the instruction set and, for parallel loops, the
/// context's thread pool.
#[derive(Clone, Copy, Debug)]
pub struct Exec<'a> {
    /// Kernel family.
    pub isa: Isa,
    /// The context's pool (`None`: run on the calling thread only).
    pub pool: Option<&'a ThreadPool>,
}

impl Exec<'_> {
    /// Single-threaded, with the active ISA ([`isa::active`]).
    pub fn single() -> Exec<'static> {
        Exec { isa: isa::active(), pool: None }
    }
    /// Threads available to a parallel loop.
    pub fn threads(&self) -> usize {
        self.pool.map_or(1, |p| p.threads())
    }
}
