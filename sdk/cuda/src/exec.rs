//! The executor: runs an edgert-core engine's plan on a CUDA device.
//!
//! Per context: the plan for its input shapes, the kernel of each step ([`crate::select`]),
//! one device arena (core planner offsets), the engine's weights uploaded once, one CUDA
//! stream, and a pinned host staging buffer for inputs and outputs. Kernels are compiled by
//! NVRTC for the device's own architecture on first use and cached on disk.
//!
//! The development machine has no GPU: host-side parts are unit-tested there, and
//! `tests/gpu/run.sh` is the prepared check for a machine with one (results from an H200 in
//! `tests/gpu/RESULTS.md`).

use std::collections::HashMap;
use std::sync::Arc;

use cudarc::driver::sys::{CUdeviceptr, CUfunction, CUgraphInstantiate_flags, CUstream, CUstreamCaptureMode};
use cudarc::driver::{CudaContext, CudaGraph, CudaModule, CudaStream, result};
use edgert_core::graph::ValueId;
use edgert_core::plan::{Plan, Slot};
use edgert_core::{Engine, Tensor};
use edgert_kernels::Module;

use crate::arena::{self, DeviceLayout};
use crate::cache::{ModuleCache, ModuleKey};
use crate::driver;
use crate::error::{Error, Result};
use crate::launch::LaunchConfig;
use crate::nvrtc::{self, Arch};
use crate::params::KernelArgs;
use crate::select::{self, SelectOptions, StepKernel};

/// Options for a GPU context.
#[derive(Clone, Copy, Debug, Default)]
pub struct ExecOptions {
    /// Device ordinal.
    pub device: usize,
    /// Run nodes with no CUDA kernel on the CPU (logged and reported) instead of failing.
    pub cpu_fallback: bool,
    /// Launch every kernel on every run. By default a context whose steps all run on the
    /// GPU captures its first run as a CUDA graph and replays it (one launch per run).
    pub kernel_by_kernel: bool,
    /// Never use the tensor-core conv: an FP16 engine's f16 weights are widened to f32 and
    /// its convolutions compute exactly what the CPU's do (f32 activations), more slowly.
    pub no_tensor_cores: bool,
    /// The tensor-core conv's tile: 64 (the default) or 128.
    pub tc_tile: Option<u32>,
}

/// Whether runs replay a captured CUDA graph.
enum GraphState {
    /// Not captured yet (the next `run` tries).
    Untried,
    /// Captured: `run` replays it.
    Ready(CudaGraph),
    /// Not used, for the reason given (a CPU step, the option, or a failed capture).
    Off(&'static str),
}

/// An opened device: its context, architecture and the driver/NVRTC versions.
pub struct Device {
    ctx: Arc<CudaContext>,
    /// Compute capability.
    pub arch: Arch,
    /// Driver CUDA version.
    pub driver: (u32, u32),
    /// NVRTC version.
    pub nvrtc: (i32, i32),
    /// Device name.
    pub name: String,
    /// Streaming multiprocessors.
    pub sm_count: u32,
}

impl Device {
    /// Opens device `ordinal`. Checks for the driver and NVRTC first, so that a machine with
    /// neither gets an error ("no CUDA driver found: ..."), never a panic.
    pub fn open(ordinal: usize) -> Result<Device> {
        driver::check_driver()?;
        driver::check_nvrtc()?;
        let drv = driver::driver_version()?;
        let rtc = driver::nvrtc_version()?;
        // cudarc panics on a symbol the driver lacks; we are built for the oldest supported
        // API, but keep a panic from escaping as a last resort.
        let ctx = std::panic::catch_unwind(|| CudaContext::new(ordinal))
            .map_err(|_| Error::Driver(format!("creating a context on device {ordinal} panicked inside cudarc")))??;
        let (major, minor) = ctx.compute_capability()?;
        let name = ctx.name().unwrap_or_else(|_| "?".into());
        let sms = ctx.attribute(cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
        let arch = Arch { major: major as u32, minor: minor as u32 };
        Ok(Device { ctx, arch, driver: drv, nvrtc: rtc, name, sm_count: sms.max(0) as u32 })
    }

    /// Makes the device's context current on this thread.
    pub(crate) fn bind(&self) -> Result<()> {
        Ok(self.ctx.bind_to_thread()?)
    }

    /// One line: name, arch, versions.
    pub fn describe(&self) -> String {
        format!(
            "{} ({}, {} SMs), CUDA driver {}.{}, NVRTC {}.{}",
            self.name,
            self.arch.sm(),
            self.sm_count,
            self.driver.0,
            self.driver.1,
            self.nvrtc.0,
            self.nvrtc.1
        )
    }
}

/// Device memory freed on drop.
struct DevBuf {
    ptr: CUdeviceptr,
}

impl DevBuf {
    fn new(bytes: usize) -> Result<DevBuf> {
        // SAFETY: plain allocation in the current context (bound by the caller).
        let ptr = unsafe { result::malloc_sync(bytes.max(256)) }?;
        Ok(DevBuf { ptr })
    }
}

impl Drop for DevBuf {
    fn drop(&mut self) {
        // SAFETY: allocated by malloc_sync, freed once.
        unsafe {
            let _ = result::free_sync(self.ptr);
        }
    }
}

/// Pinned host memory freed on drop.
struct Pinned {
    ptr: *mut u8,
    len: usize,
}

impl Pinned {
    fn new(len: usize) -> Result<Pinned> {
        // SAFETY: page-locked host allocation; flags 0.
        let ptr = unsafe { result::malloc_host(len.max(64), 0) }? as *mut u8;
        Ok(Pinned { ptr, len })
    }
    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: `len` bytes allocated; exclusive borrow.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        // SAFETY: allocated by malloc_host, freed once.
        unsafe {
            let _ = result::free_host(self.ptr as *mut std::ffi::c_void);
        }
    }
}

/// A context on the GPU: what [`edgert_core::Context`] is on the CPU.
pub struct GpuContext {
    // First: a captured graph is destroyed before the stream and modules it uses.
    graph: GraphState,
    engine: Arc<Engine>,
    plan: Plan,
    kernels: Vec<StepKernel>,
    layout: DeviceLayout,
    functions: HashMap<&'static str, CUfunction>,
    // Field order is drop order: buffers are freed while the CUDA context still lives.
    arena: DevBuf,
    weights: DevBuf,
    staging: Pinned,
    stream: Arc<CudaStream>,
    _modules: Vec<Arc<CudaModule>>,
    device: Device,
}

impl GpuContext {
    /// Plans `engine` for the input shapes, selects kernels (failing on a node without one
    /// unless `opts.cpu_fallback`), opens the device, compiles (or loads from the cache) the
    /// kernels it needs, uploads the weights and allocates the arena and staging buffers.
    pub fn new(engine: Arc<Engine>, input_shapes: &HashMap<String, Vec<usize>>, opts: ExecOptions) -> Result<Self> {
        // The driver first: on a machine without one, that is the error to act on.
        driver::check_driver()?;
        driver::check_nvrtc()?;
        let plan = edgert_core::plan::plan(&engine.graph, input_shapes)?;
        let device = Device::open(opts.device)?;
        let tensor_cores = !opts.no_tensor_cores && device.arch.has_wmma_f16();
        let sel = SelectOptions { cpu_fallback: opts.cpu_fallback, tensor_cores, tc_tile: opts.tc_tile };
        let kernels = select::select(&engine.graph, &plan, sel)?;
        for (name, op, why) in select::fallbacks(&engine.graph, &plan, &kernels) {
            log::warn!("CPU fallback: node `{name}` ({op}): {why}");
        }
        let layout = arena::layout(&engine.graph, &plan, &kernels)?;
        if !layout.widened.is_empty() {
            let why = if opts.no_tensor_cores {
                "tensor cores turned off"
            } else if !device.arch.has_wmma_f16() {
                "no FP16 tensor cores before sm_70"
            } else {
                "read by f32 kernels"
            };
            log::info!("{} float16 weight tensor(s) widened to f32 on upload ({why})", layout.widened.len());
        }
        device.ctx.bind_to_thread()?;
        let stream = device.ctx.new_stream()?;

        // Kernels: every module with a kernel some step uses.
        let needed: Vec<&'static str> = kernels.iter().flat_map(|k| k.kernel_names()).collect();
        let cache = ModuleCache::new(ModuleCache::default_dir());
        let mut modules = Vec::new();
        let mut functions = HashMap::new();
        for m in edgert_kernels::MODULES.iter().filter(|m| m.kernels.iter().any(|k| needed.contains(k))) {
            let module = load_module(&device, &cache, m)?;
            for &k in m.kernels.iter().filter(|k| needed.contains(k)) {
                let f = module.load_function(k)?;
                functions.insert(k, f.cu_function());
            }
            modules.push(module);
        }

        let arena = DevBuf::new(layout.arena_bytes)?;
        let weights = DevBuf::new(layout.weights_bytes)?;
        // Weights: uploaded once, through pinned staging.
        let mut wstage = Pinned::new(layout.weights_bytes)?;
        for &(id, off, bytes) in &layout.weights {
            if let Slot::Const(t) = &plan.slots[id] {
                let dst = &mut wstage.bytes_mut()[off..off + bytes];
                if layout.widened.contains(&id) {
                    for (d, v) in dst.chunks_exact_mut(4).zip(t.to_f32_vec()?) {
                        d.copy_from_slice(&v.to_le_bytes());
                    }
                } else {
                    dst.copy_from_slice(t.view().data.as_bytes());
                }
            }
        }
        // SAFETY: both buffers hold weights_bytes bytes; synchronous copy.
        unsafe { result::memcpy_htod_sync(weights.ptr, &wstage.bytes_mut()[..layout.weights_bytes]) }?;
        drop(wstage);
        let staging = Pinned::new(layout.staging_bytes)?;
        log::info!(
            "GPU context on {}: arena {} B, weights {} B, {} steps, {} on the CPU",
            device.describe(),
            layout.arena_bytes,
            layout.weights_bytes,
            kernels.iter().filter(|k| !matches!(k, StepKernel::Skip)).count(),
            kernels.iter().filter(|k| matches!(k, StepKernel::Cpu { .. })).count()
        );
        let graph = if opts.kernel_by_kernel {
            GraphState::Off("turned off (kernel by kernel)")
        } else if kernels.iter().any(|k| matches!(k, StepKernel::Cpu { .. })) {
            GraphState::Off("some nodes run on the CPU")
        } else {
            GraphState::Untried
        };
        Ok(GpuContext {
            graph,
            engine,
            plan,
            kernels,
            layout,
            device,
            _modules: modules,
            functions,
            stream,
            arena,
            weights,
            staging,
        })
    }

    /// The device.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The plan.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// The kernel of each plan step.
    pub fn step_kernels(&self) -> &[StepKernel] {
        &self.kernels
    }

    /// How many convolutions run on the tensor-core kernel (an FP16 engine's).
    pub fn tensor_core_convs(&self) -> usize {
        self.kernels.iter().filter(|k| k.kernel_names().iter().any(|n| select::is_tensor_core_conv(n))).count()
    }

    /// The device memory layout: arena, weights and pinned staging bytes.
    pub fn layout(&self) -> &DeviceLayout {
        &self.layout
    }

    /// Waits until everything queued on this context's stream has run.
    pub fn synchronize(&self) -> Result<()> {
        self.stream.synchronize()?;
        Ok(())
    }

    /// Nodes that run on the CPU: (node, op type, reason).
    pub fn cpu_fallbacks(&self) -> Vec<(&str, &str, &str)> {
        select::fallbacks(&self.engine.graph, &self.plan, &self.kernels)
    }

    fn input_id(&self, name: &str) -> Result<ValueId> {
        let g = &self.engine.graph;
        g.inputs.iter().copied().find(|&i| g.values[i].name == name).ok_or_else(|| {
            Error::Core(edgert_core::Error::Input { name: name.into(), message: "no such input".into() })
        })
    }

    fn arena_ptr(&self, id: ValueId) -> Result<u64> {
        match &self.plan.slots[id] {
            Slot::Arena { offset } => Ok(self.arena.ptr + *offset as u64),
            Slot::Const(_) => self
                .layout
                .weight(id)
                .map(|o| self.weights.ptr + o as u64)
                .ok_or_else(|| Error::Invalid(format!("constant {id} was not uploaded"))),
            Slot::Unused => Err(Error::Invalid(format!("value {id} has no memory"))),
        }
    }

    /// Copies `value` into the named input (through pinned staging, on the context's stream).
    pub fn set_input(&mut self, name: &str, value: &Tensor) -> Result<()> {
        let id = self.input_id(name)?;
        let t = self.plan.types[id].as_ref().ok_or_else(|| Error::Invalid(format!("input `{name}` has no type")))?;
        if value.dtype() != t.dtype || value.shape() != t.shape.as_slice() {
            return Err(Error::Core(edgert_core::Error::Input {
                name: name.into(),
                message: format!(
                    "got {} {:?}, this context expects {} {:?}",
                    value.dtype(),
                    value.shape(),
                    t.dtype,
                    t.shape
                ),
            }));
        }
        if self.layout.staging_of(id).is_none() {
            return Ok(()); // an input no step reads
        }
        self.input_staging_mut(name)?.copy_from_slice(value.view().data.as_bytes());
        self.upload_input(name)
    }

    /// The pinned staging bytes of input `name` (little-endian, of the type and shape
    /// `plan().types` gives it), for a producer that writes the input in place, e.g.
    /// preprocessing straight into pinned memory: fill them, then call
    /// [`upload_input`](Self::upload_input); no host copy in between. Waits for the
    /// context's stream first, so a copy still in flight never sees the bytes change.
    pub fn input_staging_mut(&mut self, name: &str) -> Result<&mut [u8]> {
        let id = self.input_id(name)?;
        let (off, bytes) = self
            .layout
            .staging_of(id)
            .ok_or_else(|| Error::Invalid(format!("input `{name}` is not read by this context's plan")))?;
        self.stream.synchronize()?;
        Ok(&mut self.staging.bytes_mut()[off..off + bytes])
    }

    /// Queues the copy of input `name` from its pinned staging to the device, on the
    /// context's stream (asynchronous: a DMA from page-locked memory).
    pub fn upload_input(&mut self, name: &str) -> Result<()> {
        let id = self.input_id(name)?;
        let (off, bytes) = self
            .layout
            .staging_of(id)
            .ok_or_else(|| Error::Invalid(format!("input `{name}` is not read by this context's plan")))?;
        let dst = self.arena_ptr(id)?;
        // SAFETY: staging region and arena region both `bytes` long; staging is only written
        // through `input_staging_mut`, which waits for the stream first.
        let stream = self.cu_stream();
        unsafe { result::memcpy_htod_async(dst, &self.staging.bytes_mut()[off..off + bytes], stream) }?;
        Ok(())
    }

    fn cu_stream(&self) -> CUstream {
        self.stream.cu_stream()
    }

    fn launch(&self, kernel: &'static str, cfg: LaunchConfig, args: &mut KernelArgs) -> Result<()> {
        let f = *self.functions.get(kernel).ok_or_else(|| Error::Invalid(format!("kernel {kernel} not loaded")))?;
        let mut ptrs = args.pointers();
        let n = args.len();
        // SAFETY: the arguments match the kernel's parameters (params.rs layout tests); all
        // device pointers come from the plan's layout.
        unsafe { result::launch_kernel(f, cfg.grid, cfg.block, cfg.shared, self.cu_stream(), &mut ptrs[..n]) }?;
        Ok(())
    }

    /// Runs every step on the stream (CPU fallback steps synchronize around themselves).
    /// The first run of a context that is all GPU is captured as a CUDA graph, which later
    /// runs replay; if capture fails the context says so once and launches kernel by kernel.
    pub fn run(&mut self) -> Result<()> {
        match &self.graph {
            GraphState::Ready(g) => {
                g.launch()?;
                return Ok(());
            }
            GraphState::Off(_) => return self.run_steps(None),
            GraphState::Untried => {}
        }
        match self.capture() {
            Ok(g) => {
                g.launch()?;
                self.graph = GraphState::Ready(g);
                Ok(())
            }
            Err(e) => {
                log::warn!("CUDA graph capture failed ({e}); launching kernel by kernel");
                self.graph = GraphState::Off("capture failed");
                self.run_steps(None)
            }
        }
    }

    /// Records one run's launches as a CUDA graph (nothing runs while capturing). Kernel
    /// arguments are fixed for the context's life (arena, weights and parameters never
    /// move), so replays see new inputs that `set_input` copied into the arena.
    fn capture(&mut self) -> Result<CudaGraph> {
        self.device.ctx.bind_to_thread()?;
        self.stream.synchronize()?;
        self.stream.begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)?;
        let recorded = self.run_steps(None);
        // End the capture whatever happened, so the stream is usable again.
        let ended = self.stream.end_capture(CUgraphInstantiate_flags(0));
        recorded?;
        ended?.ok_or_else(|| Error::Invalid("stream capture produced no graph".into()))
    }

    /// Whether runs replay a CUDA graph, or why not.
    pub fn cuda_graph(&self) -> std::result::Result<(), &'static str> {
        match &self.graph {
            GraphState::Ready(_) => Ok(()),
            GraphState::Untried => Err("not captured yet (captured by the first run)"),
            GraphState::Off(why) => Err(why),
        }
    }

    /// Runs like [`run`](Self::run), but waits for the stream after each step and then
    /// calls `observe(step index)`: per-node timing for `edgert bench --profile`. The waits
    /// make the whole run slower than `run`.
    pub fn run_observed(&mut self, mut observe: impl FnMut(usize)) -> Result<()> {
        self.run_steps(Some(&mut observe))
    }

    fn run_steps(&mut self, mut observe: Option<&mut dyn FnMut(usize)>) -> Result<()> {
        self.device.ctx.bind_to_thread()?;
        for (si, step) in self.plan.steps.iter().enumerate() {
            let node = &self.engine.graph.nodes[step.node];
            let ins: Vec<Option<u64>> = node.inputs.iter().map(|i| i.and_then(|i| self.arena_ptr(i).ok())).collect();
            let input = |i: usize| -> Result<u64> {
                ins.get(i).copied().flatten().ok_or_else(|| Error::Invalid(format!("node `{}`: input #{i}", node.name)))
            };
            let out = match step.outputs.first() {
                Some(&o) => self.arena_ptr(o)?,
                None => 0,
            };
            let mut a = KernelArgs::new();
            match &self.kernels[si] {
                StepKernel::Skip => {}
                StepKernel::Conv { kernel, params, epilogue } => {
                    let mut ep = *epilogue;
                    if ep.bias_mode != 0 {
                        ep.bias = input(2)?;
                    }
                    // edgert.FusedConv's residual.
                    if node.op_type == "edgert.FusedConv" && matches!(node.inputs.get(3), Some(Some(_))) {
                        ep.residual = input(3)?;
                    }
                    a.push(input(0)?)?.push(input(1)?)?.push(out)?.push(*params)?.push(ep)?;
                    let total = (params.n as u64) * (params.k as u64) * (params.p as u64) * (params.q as u64);
                    let kg = (params.k / params.groups) as u64;
                    let cols = params.n as u64 * params.p as u64 * params.q as u64;
                    let cfg = if *kernel == edgert_kernels::names::conv_igemm_f32 {
                        LaunchConfig::gemm_tiles(kg, cols, params.groups as u64)?
                    } else if *kernel == edgert_kernels::names::conv_tc128_f16w {
                        LaunchConfig::conv_tc(kg, cols, params.groups as u64, 128)?
                    } else if *kernel == edgert_kernels::names::conv_tc64_f16w {
                        LaunchConfig::conv_tc(kg, cols, params.groups as u64, 64)?
                    } else {
                        LaunchConfig::linear(total)
                    };
                    self.launch(kernel, cfg, &mut a)?;
                }
                StepKernel::Gemm { kernel, params, epilogue, batches } => {
                    let mut ep = *epilogue;
                    if ep.bias_mode != 0 {
                        ep.bias = input(2)?;
                    }
                    a.push(input(0)?)?.push(input(1)?)?.push(out)?.push(*params)?.push(ep)?;
                    self.launch(kernel, LaunchConfig::gemm_tiles(params.m as u64, params.n as u64, *batches)?, &mut a)?;
                }
                StepKernel::Unary { op, a: p1, b: p2, n } => {
                    a.push(input(0)?)?.push(out)?.push(*n as i64)?.push(*op)?.push(*p1)?.push(*p2)?;
                    self.launch(edgert_kernels::names::unary_f32, LaunchConfig::linear(*n), &mut a)?;
                }
                StepKernel::Binary(p) => {
                    a.push(input(0)?)?.push(input(1)?)?.push(out)?.push(*p)?;
                    self.launch(edgert_kernels::names::binary_f32, LaunchConfig::linear(p.n as u64), &mut a)?;
                }
                StepKernel::Pool(p) => {
                    a.push(input(0)?)?.push(out)?.push(*p)?;
                    let total = p.n as u64 * p.c as u64 * p.p as u64 * p.q as u64;
                    self.launch(edgert_kernels::names::pool_f32, LaunchConfig::linear(total), &mut a)?;
                }
                StepKernel::GlobalAvgPool { planes, hw } => {
                    a.push(input(0)?)?.push(out)?.push(*planes as i64)?.push(*hw as i64)?;
                    self.launch(
                        edgert_kernels::names::global_avg_pool_f32,
                        LaunchConfig::warp_per_item(*planes),
                        &mut a,
                    )?;
                }
                StepKernel::Softmax { outer, len, inner, log } => {
                    if *inner == 1 {
                        a.push(input(0)?)?.push(out)?.push(*outer as i64)?.push(*len as i64)?.push(*log as i32)?;
                        self.launch(edgert_kernels::names::softmax_rows_f32, LaunchConfig::rows(*outer)?, &mut a)?;
                    } else {
                        a.push(input(0)?)?.push(out)?;
                        a.push(*outer as i64)?.push(*len as i64)?.push(*inner as i64)?.push(*log as i32)?;
                        let cfg = LaunchConfig::linear(outer * inner);
                        self.launch(edgert_kernels::names::softmax_strided_f32, cfg, &mut a)?;
                    }
                }
                StepKernel::Gather { kernel, params } => {
                    a.push(input(0)?)?.push(out)?.push(*params)?;
                    self.launch(kernel, LaunchConfig::linear(params.n as u64), &mut a)?;
                }
                StepKernel::Concat { kernel, copies } => {
                    for (i, &(rows, src_row, dst_row, off)) in copies.iter().enumerate() {
                        let mut a = KernelArgs::new();
                        a.push(input(i)?)?.push(out)?;
                        a.push(rows as i64)?.push(src_row as i64)?.push(dst_row as i64)?.push(off as i64)?;
                        self.launch(kernel, LaunchConfig::linear(rows * src_row), &mut a)?;
                    }
                }
                StepKernel::Cpu { .. } => self.run_on_cpu(si)?,
            }
            if let Some(observe) = observe.as_mut() {
                self.stream.synchronize()?;
                observe(si);
            }
        }
        Ok(())
    }

    /// One step on the CPU: copy its arena inputs down, run the reference op, copy the
    /// outputs up. Allocates (a fallback is not the fast path).
    fn run_on_cpu(&self, si: usize) -> Result<()> {
        let step = &self.plan.steps[si];
        let node = &self.engine.graph.nodes[step.node];
        self.stream.synchronize()?;
        let mut owned: Vec<Option<Tensor>> = Vec::new();
        for inp in &node.inputs {
            owned.push(match inp {
                None => None,
                Some(id) => match &self.plan.slots[*id] {
                    Slot::Const(t) => Some((**t).clone()),
                    Slot::Arena { offset } => {
                        let t = self.plan.types[*id].as_ref().ok_or_else(|| Error::Invalid("untyped input".into()))?;
                        let mut bytes = vec![0u8; t.bytes()];
                        // SAFETY: the arena region holds t.bytes() bytes; synchronous copy.
                        unsafe { result::memcpy_dtoh_sync(&mut bytes, self.arena.ptr + *offset as u64) }?;
                        let data = edgert_core::onnx::from_le_bytes(t.dtype, &bytes)?;
                        Some(Tensor::new(t.shape.clone(), data)?)
                    }
                    Slot::Unused => None,
                },
            });
        }
        let refs: Vec<Option<&Tensor>> = owned.iter().map(|t| t.as_ref()).collect();
        let outs =
            edgert_core::ops::eval(node.op.as_ref(), &refs).map_err(|e| edgert_core::graph::node_error(node, e))?;
        // The copies back go on this context's stream. Not cuMemcpyHtoD: from pageable memory
        // it returns before its DMA lands, and on the legacy stream, which a non-blocking
        // stream does not wait for, so the next kernel could read stale memory (seen on an
        // H200: one BlazeFace golden of two failed, depending on timing).
        let stream = self.cu_stream();
        for (&id, t) in step.outputs.iter().zip(&outs) {
            if let Slot::Arena { offset } = self.plan.slots[id] {
                // SAFETY: the arena region holds the output's bytes; `outs` outlives the copy
                // (the stream is synchronized below).
                unsafe { result::memcpy_htod_async(self.arena.ptr + offset as u64, t.view().data.as_bytes(), stream) }?;
            }
        }
        self.stream.synchronize()?;
        Ok(())
    }

    /// Names of the outputs.
    pub fn output_names(&self) -> Vec<String> {
        let g = &self.engine.graph;
        g.outputs.iter().map(|&o| g.values[o].name.clone()).collect()
    }

    /// A copy of output `i` (waits for the stream).
    pub fn output(&mut self, i: usize) -> Result<Tensor> {
        let g = &self.engine.graph;
        let id = *g.outputs.get(i).ok_or_else(|| Error::Invalid(format!("no output #{i}")))?;
        let t = self.plan.types[id].clone().ok_or_else(|| Error::Invalid(format!("output #{i} has no type")))?;
        if let Slot::Const(c) = &self.plan.slots[id] {
            return Ok((**c).clone());
        }
        let (off, bytes) =
            self.layout.staging_of(id).ok_or_else(|| Error::Invalid(format!("output #{i} has no staging")))?;
        let src = self.arena_ptr(id)?;
        let stream = self.cu_stream();
        // SAFETY: staging and arena regions are `bytes` long; synchronized below before use.
        unsafe { result::memcpy_dtoh_async(&mut self.staging.bytes_mut()[off..off + bytes], src, stream) }?;
        self.stream.synchronize()?;
        let data = edgert_core::onnx::from_le_bytes(t.dtype, &self.staging.bytes_mut()[off..off + bytes])?;
        Ok(Tensor::new(t.shape, data)?)
    }
}

/// Loads module `m` for the device: from the cache, else compiled by NVRTC (and cached).
pub(crate) fn load_module(device: &Device, cache: &ModuleCache, m: &Module) -> Result<Arc<CudaModule>> {
    let key = ModuleKey::new(m, device.arch, device.nvrtc, device.driver);
    let ptx = match cache.get(&key) {
        Some(p) => p,
        None => {
            let p = nvrtc::compile(m, device.arch)?;
            if let Err(e) = cache.put(&key, &p) {
                log::warn!("{e} (kernels will be recompiled next time)");
            }
            p
        }
    };
    Ok(device.ctx.load_module(cudarc::nvrtc::Ptx::from_src(ptx))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_without_a_driver_is_an_error_not_a_panic() {
        match Device::open(0) {
            Ok(d) => eprintln!("GPU present: {}", d.describe()),
            Err(e) => {
                let msg = e.to_string();
                assert!(msg.starts_with("no CUDA driver found") || msg.starts_with("no NVRTC found"), "{msg}");
                eprintln!("skipped: no GPU ({msg})");
            }
        }
    }
}
