//! Execution contexts. A context runs one engine for one set of input shapes; all its memory
//! (arena, scratch) is taken when it is created, so [`Context::run`] allocates nothing.
//! Several contexts may share one engine (its weights are behind an `Arc`).

use std::collections::HashMap;
use std::sync::Arc;

use arrayvec::ArrayVec;
use half::f16;

use crate::cpu::{Exec, Isa, ThreadPool};
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::graph::node_error;
use crate::plan::{self, MAX_INPUTS, MAX_OUTPUTS, Plan, Slot};
use crate::tensor::{DType, DataMut, DataRef, Tensor, TensorMut, TensorRef, numel};

/// A 64-byte aligned, zero-initialized byte buffer.
struct AlignedBuf {
    blocks: Vec<Block>,
    len: usize,
}

#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Block([u8; 64]);

impl AlignedBuf {
    fn new(len: usize) -> AlignedBuf {
        // One spare block keeps the base pointer valid (and aligned) for empty tensors.
        AlignedBuf { blocks: vec![Block([0; 64]); len.div_ceil(64) + 1], len }
    }
    fn ptr(&mut self) -> *mut u8 {
        self.blocks.as_mut_ptr() as *mut u8
    }
    fn bytes_mut(&mut self) -> &mut [u8] {
        let len = self.len;
        // SAFETY: the blocks hold at least `len` initialized bytes.
        unsafe { std::slice::from_raw_parts_mut(self.ptr(), len) }
    }
}

/// Runs an engine.
pub struct Context {
    engine: Arc<Engine>,
    plan: Plan,
    arena: AlignedBuf,
    scratch: AlignedBuf,
    /// Kernel family of this context's CPU kernels.
    isa: Isa,
    /// Workers for parallel kernels; `None` runs everything on the calling thread.
    pool: Option<ThreadPool>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context").field("arena_bytes", &self.plan.arena_bytes).finish()
    }
}

/// Builds a typed view of `n` elements at `ptr`.
///
/// # Safety
/// `ptr` must be aligned for `dtype`, point to `n` initialized elements valid for `'a`, and
/// no mutable view of the same memory may exist while this one does.
unsafe fn data_ref<'a>(dtype: DType, ptr: *const u8, n: usize) -> DataRef<'a> {
    use std::slice::from_raw_parts as s;
    unsafe {
        match dtype {
            DType::F32 => DataRef::F32(s(ptr as *const f32, n)),
            DType::F16 => DataRef::F16(s(ptr as *const f16, n)),
            DType::I8 => DataRef::I8(s(ptr as *const i8, n)),
            DType::U8 => DataRef::U8(s(ptr, n)),
            DType::I32 => DataRef::I32(s(ptr as *const i32, n)),
            DType::I64 => DataRef::I64(s(ptr as *const i64, n)),
            DType::Bool => DataRef::Bool(s(ptr as *const bool, n)),
        }
    }
}

/// Mutable counterpart of [`data_ref`].
///
/// # Safety
/// As for [`data_ref`], and no other view of the memory may exist while this one does.
unsafe fn data_mut<'a>(dtype: DType, ptr: *mut u8, n: usize) -> DataMut<'a> {
    use std::slice::from_raw_parts_mut as s;
    unsafe {
        match dtype {
            DType::F32 => DataMut::F32(s(ptr as *mut f32, n)),
            DType::F16 => DataMut::F16(s(ptr as *mut f16, n)),
            DType::I8 => DataMut::I8(s(ptr as *mut i8, n)),
            DType::U8 => DataMut::U8(s(ptr, n)),
            DType::I32 => DataMut::I32(s(ptr as *mut i32, n)),
            DType::I64 => DataMut::I64(s(ptr as *mut i64, n)),
            DType::Bool => {
                // A bool view must hold only 0/1: clear memory another tensor used before.
                std::ptr::write_bytes(ptr, 0, n);
                DataMut::Bool(s(ptr as *mut bool, n))
            }
        }
    }
}

impl Context {
    /// Plans the engine for the given input shapes (inputs with fully declared shapes may be
    /// left out) and allocates the arena.
    /// Runs on the calling thread only; see [`Context::with_threads`].
    pub fn new(engine: Arc<Engine>, input_shapes: &HashMap<String, Vec<usize>>) -> Result<Context> {
        Context::with_threads(engine, input_shapes, 1)
    }

    /// As [`Context::new`], with a fixed pool of `threads` threads in all (the caller plus
    /// `threads - 1` workers, made now: `run` spawns nothing) for the parallel kernels.
    pub fn with_threads(
        engine: Arc<Engine>,
        input_shapes: &HashMap<String, Vec<usize>>,
        threads: usize,
    ) -> Result<Context> {
        let plan = plan::plan(&engine.graph, input_shapes)?;
        let arena = AlignedBuf::new(plan.arena_bytes);
        let scratch = AlignedBuf::new(plan.scratch_bytes);
        let pool = if threads > 1 {
            Some(
                ThreadPool::new(threads)
                    .map_err(|e| Error::Invalid(format!("could not start {threads} threads: {e}")))?,
            )
        } else {
            None
        };
        Ok(Context { engine, plan, arena, scratch, isa: crate::cpu::isa::active(), pool })
    }

    /// Threads the kernels run on.
    pub fn threads(&self) -> usize {
        self.pool.as_ref().map_or(1, |p| p.threads())
    }

    /// The CPU kernel family in use.
    pub fn isa(&self) -> Isa {
        self.isa
    }

    /// The plan (types, layout, arena size).
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// The engine.
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    fn input_id(&self, name: &str) -> Result<usize> {
        let g = &self.engine.graph;
        g.inputs.iter().copied().find(|&i| g.values[i].name == name).ok_or_else(|| {
            let names: Vec<&str> = g.inputs.iter().map(|&i| g.values[i].name.as_str()).collect();
            Error::Input { name: name.to_string(), message: format!("no such input (inputs: {names:?})") }
        })
    }

    /// Copies `value` into the named input, checking its type and shape.
    pub fn set_input(&mut self, name: &str, value: &Tensor) -> Result<()> {
        let id = self.input_id(name)?;
        let (dtype, shape) = match &self.plan.types[id] {
            Some(t) => (t.dtype, t.shape.clone()),
            None => return Err(Error::Input { name: name.into(), message: "input has no planned type".into() }),
        };
        if value.dtype() != dtype || value.shape() != shape.as_slice() {
            return Err(Error::Input {
                name: name.to_string(),
                message: format!(
                    "got {} {:?}, this context expects {} {:?}",
                    value.dtype(),
                    value.shape(),
                    dtype,
                    shape
                ),
            });
        }
        let Slot::Arena { offset } = self.plan.slots[id] else {
            // An input nobody reads has no memory: nothing to store.
            return Ok(());
        };
        let src = value.view().data.as_bytes();
        self.arena.bytes_mut()[offset..offset + src.len()].copy_from_slice(src);
        Ok(())
    }

    /// A mutable view of the named input's memory, to fill it in place (no copy).
    pub fn input_mut(&mut self, name: &str) -> Result<TensorMut<'_>> {
        let id = self.input_id(name)?;
        let t = self.plan.types[id]
            .as_ref()
            .ok_or_else(|| Error::Input { name: name.into(), message: "no type".into() })?;
        let Slot::Arena { offset } = self.plan.slots[id] else {
            return Err(Error::Input { name: name.into(), message: "input is unused by the model".into() });
        };
        // SAFETY: offset and size come from the plan, within the arena; the returned view
        // borrows `self` mutably, so no other view exists.
        let data = unsafe { data_mut(t.dtype, self.arena.ptr().add(offset), numel(&t.shape)) };
        Ok(TensorMut { shape: &t.shape, data })
    }

    /// Number of graph outputs.
    pub fn num_outputs(&self) -> usize {
        self.engine.graph.outputs.len()
    }

    /// A view of output `i` (valid until the next `run`); no allocation.
    pub fn output_ref(&mut self, i: usize) -> Result<TensorRef<'_>> {
        let g = &self.engine.graph;
        let id = *g.outputs.get(i).ok_or_else(|| Error::Invalid(format!("no output #{i}")))?;
        let t = self.plan.types[id].as_ref().ok_or_else(|| Error::Invalid(format!("output #{i} has no type")))?;
        match &self.plan.slots[id] {
            Slot::Const(c) => Ok(c.view()),
            Slot::Arena { offset } => {
                let n = numel(&t.shape);
                // SAFETY: planned region; shared borrow of self.
                let data = unsafe { data_ref(t.dtype, self.arena.ptr().add(*offset), n) };
                Ok(TensorRef { shape: &t.shape, data })
            }
            Slot::Unused => Err(Error::Invalid(format!("output #{i} has no memory"))),
        }
    }

    /// A copy of output `i`.
    pub fn output(&mut self, i: usize) -> Result<Tensor> {
        Ok(self.output_ref(i)?.to_tensor())
    }

    /// Names of the outputs, in order.
    pub fn output_names(&self) -> Vec<String> {
        let g = &self.engine.graph;
        g.outputs.iter().map(|&o| g.values[o].name.clone()).collect()
    }

    /// Runs every step. Allocates nothing on success.
    pub fn run(&mut self) -> Result<()> {
        self.run_observed(|_, _| {})
    }

    /// As [`Context::run`], calling `observe(step index, node index)` after each step (the
    /// per-node profile of `edgert bench --profile` times steps with it).
    pub fn run_observed(&mut self, mut observe: impl FnMut(usize, usize)) -> Result<()> {
        let graph = &self.engine.graph;
        let exec = Exec { isa: self.isa, pool: self.pool.as_ref() };
        let base = self.arena.ptr();
        let scratch_len = self.plan.scratch_bytes;
        let scratch_ptr = self.scratch.ptr();
        for (si, step) in self.plan.steps.iter().enumerate() {
            if step.skip {
                continue;
            }
            let node = &graph.nodes[step.node];
            let mut inputs: ArrayVec<Option<TensorRef>, MAX_INPUTS> = ArrayVec::new();
            for inp in &node.inputs {
                let view = match inp {
                    None => None,
                    Some(id) => {
                        let t = self.plan.types[*id].as_ref();
                        match (&self.plan.slots[*id], t) {
                            (Slot::Const(c), _) => Some(c.view()),
                            (Slot::Arena { offset }, Some(t)) => {
                                // SAFETY: planned region, live at this step; outputs of this
                                // step never overlap it (live ranges overlap at this step).
                                let data = unsafe { data_ref(t.dtype, base.add(*offset), numel(&t.shape)) };
                                Some(TensorRef { shape: &t.shape, data })
                            }
                            _ => return Err(node_error(node, Error::Invalid("an input has no memory".into()))),
                        }
                    }
                };
                inputs.push(view);
            }
            let mut outputs: ArrayVec<TensorMut, MAX_OUTPUTS> = ArrayVec::new();
            for &id in &step.outputs {
                let (Slot::Arena { offset }, Some(t)) = (&self.plan.slots[id], self.plan.types[id].as_ref()) else {
                    return Err(node_error(node, Error::Invalid("an output has no memory".into())));
                };
                // SAFETY: outputs of one step are distinct planned regions, disjoint from
                // its inputs.
                let data = unsafe { data_mut(t.dtype, base.add(*offset), numel(&t.shape)) };
                outputs.push(TensorMut { shape: &t.shape, data });
            }
            // SAFETY: the scratch buffer is exclusively ours and has `scratch_len` bytes.
            let scratch = unsafe { std::slice::from_raw_parts_mut(scratch_ptr, scratch_len) };
            node.op.run_exec(&inputs, &mut outputs, scratch, &exec).map_err(|e| node_error(node, e))?;
            observe(si, step.node);
        }
        Ok(())
    }
}
