//! Direct kernel access for kernels the graph executor does not reach yet (FP16, INT8, the
//! fused preprocessing): load one kernel, move bytes, launch and wait. Used by the GPU tests
//! and by callers that drive a kernel themselves (a video pipeline feeding preprocessing).

use std::sync::Arc;

use cudarc::driver::sys::{CUdeviceptr, CUfunction};
use cudarc::driver::{CudaModule, result};
use edgert_kernels::Module;

use crate::cache::ModuleCache;
use crate::error::{Error, Result};
use crate::exec::{Device, load_module};
use crate::launch::LaunchConfig;
use crate::params::KernelArgs;

/// One loaded kernel (keeps its module alive).
pub struct RawKernel {
    _module: Arc<CudaModule>,
    f: CUfunction,
    name: &'static str,
}

/// Device memory, freed on drop.
pub struct DeviceBuffer {
    ptr: CUdeviceptr,
    len: usize,
}

impl DeviceBuffer {
    /// The device address, for kernel arguments.
    pub fn ptr(&self) -> u64 {
        self.ptr
    }
    /// Bytes.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Zero bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        // SAFETY: allocated by malloc_sync, freed once.
        unsafe {
            let _ = result::free_sync(self.ptr);
        }
    }
}

impl Device {
    /// Compiles (or loads from the cache) the module defining `name` and returns the kernel.
    pub fn load_kernel(&self, name: &'static str) -> Result<RawKernel> {
        let m = Module::of_kernel(name).ok_or_else(|| Error::Invalid(format!("no kernel named {name}")))?;
        let module = load_module(self, &ModuleCache::new(ModuleCache::default_dir()), m)?;
        let f = module.load_function(name)?.cu_function();
        Ok(RawKernel { _module: module, f, name })
    }

    /// A zeroed device buffer of `len` bytes.
    pub fn alloc_zeroed(&self, len: usize) -> Result<DeviceBuffer> {
        self.bind()?;
        // SAFETY: plain allocation and memset in the bound context.
        unsafe {
            let ptr = result::malloc_sync(len.max(256))?;
            let buf = DeviceBuffer { ptr, len };
            result::memset_d8_sync(ptr, 0, len.max(256))?;
            Ok(buf)
        }
    }

    /// Copies `bytes` to a new device buffer.
    pub fn upload(&self, bytes: &[u8]) -> Result<DeviceBuffer> {
        let buf = self.alloc_zeroed(bytes.len())?;
        // SAFETY: the buffer holds at least bytes.len() bytes.
        unsafe { result::memcpy_htod_sync(buf.ptr, bytes) }?;
        Ok(buf)
    }

    /// Copies a device buffer back.
    pub fn download(&self, buf: &DeviceBuffer) -> Result<Vec<u8>> {
        self.bind()?;
        let mut out = vec![0u8; buf.len];
        // SAFETY: the buffer holds buf.len bytes.
        unsafe { result::memcpy_dtoh_sync(&mut out, buf.ptr) }?;
        Ok(out)
    }

    /// Launches `k` on the default stream and waits for it.
    pub fn launch_sync(&self, k: &RawKernel, cfg: LaunchConfig, args: &mut KernelArgs) -> Result<()> {
        self.bind()?;
        let mut ptrs = args.pointers();
        let n = args.len();
        // SAFETY: the caller packs arguments matching the kernel's parameters.
        unsafe { result::launch_kernel(k.f, cfg.grid, cfg.block, cfg.shared, std::ptr::null_mut(), &mut ptrs[..n]) }
            .map_err(|e| Error::Driver(format!("launching {}: {e}", k.name)))?;
        result::ctx::synchronize().map_err(|e| Error::Driver(format!("{} failed: {e}", k.name)))?;
        Ok(())
    }
}
