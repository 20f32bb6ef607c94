//! A fixed pool of worker threads, made when a context is created, that runs a parallel loop
//! without allocating: `run(n, f)` calls `f(0..n)` spread over the workers and the calling
//! thread, and returns when all calls are done. No thread is spawned per run.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

/// The job being run: a type-erased pointer to the caller's closure, valid while `run` waits.
#[derive(Clone, Copy)]
struct Job {
    f: *const (dyn Fn(usize) + Sync),
    tasks: usize,
}

// SAFETY: the pointer is only dereferenced while `ThreadPool::run` keeps the closure alive
// (it waits for every worker to finish the job), and the closure is `Sync`.
unsafe impl Send for Job {}

struct State {
    job: Option<Job>,
    /// Bumped for every job, so a worker runs each job once.
    generation: u64,
    /// Workers still working on the current job.
    busy: usize,
    shutdown: bool,
    /// Workers that have started their loop.
    started: usize,
}

struct Shared {
    state: Mutex<State>,
    work: Condvar,
    done: Condvar,
    next: AtomicUsize,
}

/// A fixed-size thread pool for parallel loops.
pub struct ThreadPool {
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
    /// Serializes `run` calls from different threads on one pool.
    run_lock: Mutex<()>,
}

impl std::fmt::Debug for ThreadPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThreadPool").field("threads", &self.threads()).finish()
    }
}

impl ThreadPool {
    /// A pool running loops on `threads` threads in all: the caller plus `threads - 1`
    /// workers (`threads` 0 is taken as 1). Fails if the OS refuses a thread.
    pub fn new(threads: usize) -> std::io::Result<ThreadPool> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State { job: None, generation: 0, busy: 0, shutdown: false, started: 0 }),
            work: Condvar::new(),
            done: Condvar::new(),
            next: AtomicUsize::new(0),
        });
        let mut workers = Vec::new();
        for i in 1..threads.max(1) {
            let s = shared.clone();
            let spawned = std::thread::Builder::new().name(format!("edgert-cpu-{i}")).spawn(move || worker(&s));
            match spawned {
                Ok(h) => workers.push(h),
                Err(e) => {
                    // Dropping the pool stops and joins the workers already spawned.
                    drop(ThreadPool { shared, workers, run_lock: Mutex::new(()) });
                    return Err(e);
                }
            }
        }
        // Return only once every worker is running: a thread's start-up (done by std in the
        // new thread) allocates, and must not overlap a later, allocation-free `run` (a model
        // whose loops are all single-task never wakes the workers).
        {
            let mut st = shared.state.lock().unwrap_or_else(|e| e.into_inner());
            while st.started < workers.len() {
                st = shared.done.wait(st).unwrap_or_else(|e| e.into_inner());
            }
        }
        Ok(ThreadPool { shared, workers, run_lock: Mutex::new(()) })
    }

    /// Threads a loop runs on (workers plus the caller).
    pub fn threads(&self) -> usize {
        self.workers.len() + 1
    }

    /// Calls `f(i)` for every `i` in `0..tasks`, in parallel, and returns when all are done.
    /// Each index is run exactly once. Allocates nothing.
    pub fn run(&self, tasks: usize, f: &(dyn Fn(usize) + Sync)) {
        if tasks == 0 {
            return;
        }
        if self.workers.is_empty() || tasks == 1 {
            (0..tasks).for_each(f);
            return;
        }
        let _serial = self.run_lock.lock().unwrap_or_else(|e| e.into_inner());
        let sh = &*self.shared;
        // SAFETY (lifetime erasure): the job is cleared and every worker has finished with it
        // before this function returns, so the pointer never outlives `f`.
        let f_static: *const (dyn Fn(usize) + Sync) = unsafe { std::mem::transmute(f) };
        {
            let mut st = sh.state.lock().unwrap_or_else(|e| e.into_inner());
            sh.next.store(0, Ordering::Relaxed);
            st.job = Some(Job { f: f_static, tasks });
            st.generation = st.generation.wrapping_add(1);
            st.busy = self.workers.len();
            sh.work.notify_all();
        }
        drain(sh, f, tasks);
        let mut st = sh.state.lock().unwrap_or_else(|e| e.into_inner());
        while st.busy > 0 {
            st = sh.done.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        st.job = None;
    }
}

/// Takes task indices until none are left.
fn drain(sh: &Shared, f: &(dyn Fn(usize) + Sync), tasks: usize) {
    loop {
        let i = sh.next.fetch_add(1, Ordering::Relaxed);
        if i >= tasks {
            break;
        }
        f(i);
    }
}

fn worker(sh: &Shared) {
    let mut seen = 0u64;
    {
        let mut st = sh.state.lock().unwrap_or_else(|e| e.into_inner());
        st.started += 1;
        sh.done.notify_all();
    }
    loop {
        let job = {
            let mut st = sh.state.lock().unwrap_or_else(|e| e.into_inner());
            loop {
                if st.shutdown {
                    return;
                }
                if st.generation != seen
                    && let Some(job) = st.job
                {
                    seen = st.generation;
                    break job;
                }
                st = sh.work.wait(st).unwrap_or_else(|e| e.into_inner());
            }
        };
        // SAFETY: `run` keeps the closure alive until `busy` reaches 0 (see `run`).
        let f = unsafe { &*job.f };
        drain(sh, f, job.tasks);
        let mut st = sh.state.lock().unwrap_or_else(|e| e.into_inner());
        st.busy -= 1;
        if st.busy == 0 {
            sh.done.notify_all();
        }
    }
}

impl Drop for ThreadPool {
    fn drop(&mut self) {
        {
            let mut st = self.shared.state.lock().unwrap_or_else(|e| e.into_inner());
            st.shutdown = true;
            self.shared.work.notify_all();
        }
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

/// Runs `task(0..tasks)`: on `pool` when there is one and more than one task, else in order
/// on the calling thread.
pub fn run_tasks(pool: Option<&ThreadPool>, tasks: usize, task: &(dyn Fn(usize) + Sync)) {
    match pool {
        Some(pool) if tasks > 1 => pool.run(tasks, task),
        _ => (0..tasks).for_each(task),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_task_runs_exactly_once_on_any_pool_size() {
        for threads in [1, 2, 3, 5] {
            let pool = ThreadPool::new(threads).unwrap();
            assert_eq!(pool.threads(), threads);
            for tasks in [0, 1, 2, 7, 64, 1000] {
                let counts: Vec<AtomicUsize> = (0..tasks).map(|_| AtomicUsize::new(0)).collect();
                pool.run(tasks, &|i| {
                    counts[i].fetch_add(1, Ordering::Relaxed);
                });
                assert!(counts.iter().all(|c| c.load(Ordering::Relaxed) == 1), "threads {threads} tasks {tasks}");
            }
        }
    }

    #[test]
    fn runs_back_to_back_and_from_several_threads() {
        let pool = Arc::new(ThreadPool::new(3).unwrap());
        let total = Arc::new(AtomicUsize::new(0));
        std::thread::scope(|s| {
            for _ in 0..3 {
                let (pool, total) = (pool.clone(), total.clone());
                s.spawn(move || {
                    for _ in 0..200 {
                        pool.run(10, &|i| {
                            total.fetch_add(i, Ordering::Relaxed);
                        });
                    }
                });
            }
        });
        assert_eq!(total.load(Ordering::Relaxed), 3 * 200 * 45);
    }
}
