//! A fixed pool of worker threads, made when a context is created, that runs a parallel loop
//! without allocating: `run(n, f)` calls `f(0..n)` spread over the workers and the calling
//! thread, and returns when all calls are done. No thread is spawned per run.
//!
//! Between jobs a worker first spins for a while ([`ThreadPool::with_spin`], default
//! [`DEFAULT_SPIN`]) watching for the next job, and only then sleeps on a condition variable;
//! the caller spins the same way for the last worker to finish. A network runs one job per
//! layer, and on a VM waking a sleeping thread costs tens of microseconds each way (an
//! inter-processor interrupt through the hypervisor): ResNet-50 at 2 threads spent ~15% of
//! its time in those wake-ups. Spinning ends after the budget, so an idle pool costs no CPU.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a worker (or the caller) spins before it sleeps, unless `EDGERT_POOL_SPIN_US`
/// says otherwise (`0`: sleep at once, the behaviour before spinning was added).
pub const DEFAULT_SPIN: Duration = Duration::from_micros(200);

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
    shutdown: bool,
    /// Workers that have started their loop.
    started: usize,
    /// Workers asleep on `work` (a job is announced to them with a notify).
    sleeping: usize,
    /// Whether the caller of `run` sleeps on `done`.
    caller_sleeping: bool,
}

struct Shared {
    state: Mutex<State>,
    work: Condvar,
    done: Condvar,
    next: AtomicUsize,
    /// Bumped (under the lock, after `job` is set) for every job, so a worker runs each job
    /// once; spinning workers watch it without the lock.
    generation: AtomicU64,
    /// Workers still working on the current job.
    busy: AtomicUsize,
    spin: Duration,
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
        f.debug_struct("ThreadPool").field("threads", &self.threads()).field("spin", &self.shared.spin).finish()
    }
}

/// The spin budget from `EDGERT_POOL_SPIN_US`, else [`DEFAULT_SPIN`].
fn spin_from_env() -> Duration {
    std::env::var("EDGERT_POOL_SPIN_US")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map_or(DEFAULT_SPIN, Duration::from_micros)
}

/// Spins until `ready()` or until `budget` has passed; returns whether `ready()` held.
#[inline]
fn spin_until(budget: Duration, ready: impl Fn() -> bool) -> bool {
    if budget.is_zero() {
        return ready();
    }
    let start = Instant::now();
    loop {
        for _ in 0..64 {
            if ready() {
                return true;
            }
            std::hint::spin_loop();
        }
        if start.elapsed() >= budget {
            return ready();
        }
    }
}

impl ThreadPool {
    /// A pool running loops on `threads` threads in all: the caller plus `threads - 1`
    /// workers (`threads` 0 is taken as 1), spinning between jobs as `EDGERT_POOL_SPIN_US`
    /// says (default [`DEFAULT_SPIN`]). Fails if the OS refuses a thread.
    pub fn new(threads: usize) -> std::io::Result<ThreadPool> {
        ThreadPool::with_spin(threads, spin_from_env())
    }

    /// As [`ThreadPool::new`], spinning for `spin` before sleeping (zero: never spin).
    pub fn with_spin(threads: usize, spin: Duration) -> std::io::Result<ThreadPool> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State { job: None, shutdown: false, started: 0, sleeping: 0, caller_sleeping: false }),
            work: Condvar::new(),
            done: Condvar::new(),
            next: AtomicUsize::new(0),
            generation: AtomicU64::new(0),
            busy: AtomicUsize::new(0),
            spin,
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

    /// How long workers spin between jobs before they sleep.
    pub fn spin(&self) -> Duration {
        self.shared.spin
    }

    /// Workers asleep now (the rest are spinning or working).
    #[cfg(test)]
    fn sleeping_workers(&self) -> usize {
        self.shared.state.lock().unwrap_or_else(|e| e.into_inner()).sleeping
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
            sh.busy.store(self.workers.len(), Ordering::Relaxed);
            st.job = Some(Job { f: f_static, tasks });
            // Release: a worker that sees the new generation sees `next`, `busy` and `job`.
            sh.generation.fetch_add(1, Ordering::Release);
            if st.sleeping > 0 {
                sh.work.notify_all();
            }
        }
        drain(sh, f, tasks);
        // Acquire: the workers' writes made inside `f` are visible once `busy` reads 0.
        if !spin_until(sh.spin, || sh.busy.load(Ordering::Acquire) == 0) {
            let mut st = sh.state.lock().unwrap_or_else(|e| e.into_inner());
            st.caller_sleeping = true;
            while sh.busy.load(Ordering::Acquire) > 0 {
                st = sh.done.wait(st).unwrap_or_else(|e| e.into_inner());
            }
            st.caller_sleeping = false;
        }
        let mut st = sh.state.lock().unwrap_or_else(|e| e.into_inner());
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
        // Spin first: the next layer's job usually comes within microseconds.
        spin_until(sh.spin, || sh.generation.load(Ordering::Acquire) != seen);
        let job = {
            let mut st = sh.state.lock().unwrap_or_else(|e| e.into_inner());
            loop {
                if st.shutdown {
                    return;
                }
                let generation = sh.generation.load(Ordering::Acquire);
                if generation != seen
                    && let Some(job) = st.job
                {
                    seen = generation;
                    break job;
                }
                st.sleeping += 1;
                st = sh.work.wait(st).unwrap_or_else(|e| e.into_inner());
                st.sleeping -= 1;
            }
        };
        // SAFETY: `run` keeps the closure alive until `busy` reaches 0 (see `run`).
        let f = unsafe { &*job.f };
        drain(sh, f, job.tasks);
        // Release: what `f` wrote is visible to the caller once it reads `busy` as 0.
        if sh.busy.fetch_sub(1, Ordering::AcqRel) == 1 {
            // The last one out wakes the caller if it went to sleep; it checks `busy` under
            // the lock before sleeping, so taking the lock here loses no wake-up.
            let st = sh.state.lock().unwrap_or_else(|e| e.into_inner());
            if st.caller_sleeping {
                sh.done.notify_all();
            }
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
        let spins = [Duration::ZERO, Duration::from_micros(50), DEFAULT_SPIN];
        for (threads, spin) in [1, 2, 3, 5].into_iter().flat_map(|t| spins.map(|s| (t, s))) {
            let pool = ThreadPool::with_spin(threads, spin).unwrap();
            assert_eq!(pool.threads(), threads);
            for tasks in [0, 1, 2, 7, 64, 1000] {
                let counts: Vec<AtomicUsize> = (0..tasks).map(|_| AtomicUsize::new(0)).collect();
                pool.run(tasks, &|i| {
                    counts[i].fetch_add(1, Ordering::Relaxed);
                });
                assert!(
                    counts.iter().all(|c| c.load(Ordering::Relaxed) == 1),
                    "threads {threads} spin {spin:?} tasks {tasks}"
                );
            }
        }
    }

    /// Spinning ends: once the budget has passed with no job, every worker sleeps (an idle
    /// pool burns no CPU), and a job still wakes them all.
    #[test]
    fn idle_workers_stop_spinning_and_sleep() {
        let pool = ThreadPool::with_spin(3, Duration::from_millis(2)).unwrap();
        let total = AtomicUsize::new(0);
        for round in 0..3 {
            pool.run(8, &|i| {
                total.fetch_add(i, Ordering::Relaxed);
            });
            let deadline = Instant::now() + Duration::from_secs(5);
            while pool.sleeping_workers() < 2 && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
            }
            assert_eq!(pool.sleeping_workers(), 2, "round {round}: workers still spinning after 5 s");
        }
        assert_eq!(total.load(Ordering::Relaxed), 3 * 28);
    }

    /// Jobs whose tasks outlast the caller's spin budget: the caller sleeps and is woken
    /// by the last worker (no lost wake-up), on pools that spin and that do not.
    #[test]
    fn caller_sleeps_until_slow_workers_finish() {
        for spin in [Duration::ZERO, Duration::from_micros(20)] {
            let pool = ThreadPool::with_spin(3, spin).unwrap();
            for _ in 0..20 {
                let done = AtomicUsize::new(0);
                pool.run(3, &|i| {
                    if i > 0 {
                        std::thread::sleep(Duration::from_micros(300));
                    }
                    done.fetch_add(1, Ordering::Relaxed);
                });
                assert_eq!(done.load(Ordering::Relaxed), 3, "spin {spin:?}");
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
