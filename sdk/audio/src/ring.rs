//! A single-producer single-consumer lock-free ring of f32 samples: a capture thread pushes,
//! the inference thread pops, neither blocks nor allocates after creation.

use std::cell::UnsafeCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

struct Shared {
    buf: Box<[UnsafeCell<f32>]>,
    /// Total samples ever written (producer-owned).
    head: AtomicUsize,
    /// Total samples ever read (consumer-owned).
    tail: AtomicUsize,
    /// Samples the producer dropped because the ring was full.
    dropped: AtomicUsize,
}

// SAFETY: the producer writes only slots in [tail + cap .. head) ranges it owns and the
// consumer reads only [tail, head); the release/acquire pairs on head and tail order them.
unsafe impl Sync for Shared {}
unsafe impl Send for Shared {}

/// The writing end.
pub struct Producer {
    s: Arc<Shared>,
}

/// The reading end.
pub struct Consumer {
    s: Arc<Shared>,
}

/// A ring holding up to `capacity` samples.
pub struct Ring;

impl Ring {
    /// Creates both ends.
    #[allow(clippy::new_ret_no_self)]
    pub fn new(capacity: usize) -> (Producer, Consumer) {
        let buf: Box<[UnsafeCell<f32>]> = (0..capacity.max(1)).map(|_| UnsafeCell::new(0.0)).collect();
        let s = Arc::new(Shared {
            buf,
            head: AtomicUsize::new(0),
            tail: AtomicUsize::new(0),
            dropped: AtomicUsize::new(0),
        });
        (Producer { s: s.clone() }, Consumer { s })
    }
}

impl Producer {
    /// Writes as many samples as fit; returns how many (the caller may retry the rest).
    pub fn push(&mut self, x: &[f32]) -> usize {
        let cap = self.s.buf.len();
        let head = self.s.head.load(Ordering::Relaxed);
        let tail = self.s.tail.load(Ordering::Acquire);
        let n = x.len().min(cap - (head - tail));
        for (i, &v) in x[..n].iter().enumerate() {
            // SAFETY: slot (head + i) % cap is free: the consumer has read past it.
            unsafe { *self.s.buf[(head + i) % cap].get() = v };
        }
        self.s.head.store(head + n, Ordering::Release);
        n
    }

    /// Writes what fits and counts the rest as dropped: for a capture thread that must not
    /// wait (a consumer that falls behind loses the newest audio; [`Consumer::dropped`] says so).
    pub fn push_lossy(&mut self, x: &[f32]) -> usize {
        let n = self.push(x);
        self.s.dropped.fetch_add(x.len() - n, Ordering::Relaxed);
        n
    }
}

impl Consumer {
    /// Samples ready to read.
    pub fn available(&self) -> usize {
        self.s.head.load(Ordering::Acquire) - self.s.tail.load(Ordering::Relaxed)
    }
    /// Reads up to `out.len()` samples; returns how many.
    pub fn pop(&mut self, out: &mut [f32]) -> usize {
        let cap = self.s.buf.len();
        let tail = self.s.tail.load(Ordering::Relaxed);
        let head = self.s.head.load(Ordering::Acquire);
        let n = out.len().min(head - tail);
        for (i, o) in out[..n].iter_mut().enumerate() {
            // SAFETY: slot (tail + i) % cap was published by the producer's release store.
            *o = unsafe { *self.s.buf[(tail + i) % cap].get() };
        }
        self.s.tail.store(tail + n, Ordering::Release);
        n
    }
    /// Samples the producer had to drop so far.
    pub fn dropped(&self) -> usize {
        self.s.dropped.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_and_reports_drops() {
        let (mut p, mut c) = Ring::new(5);
        assert_eq!(p.push(&[1.0, 2.0, 3.0]), 3);
        let mut out = [0.0; 2];
        assert_eq!(c.pop(&mut out), 2);
        assert_eq!(out, [1.0, 2.0]);
        assert_eq!(p.push_lossy(&[4.0, 5.0, 6.0, 7.0, 8.0]), 4);
        assert_eq!(c.dropped(), 1);
        let mut all = [0.0; 8];
        assert_eq!(c.pop(&mut all), 5);
        assert_eq!(&all[..5], &[3.0, 4.0, 5.0, 6.0, 7.0]);
    }

    #[test]
    fn threads_see_every_sample_in_order() {
        let (mut p, mut c) = Ring::new(64);
        let n = 200_000usize;
        let t = std::thread::spawn(move || {
            let mut i = 0;
            while i < n {
                let chunk: Vec<f32> = (i..(i + 7).min(n)).map(|v| v as f32).collect();
                let w = p.push(&chunk);
                i += w;
                if w == 0 {
                    std::thread::yield_now();
                }
            }
        });
        let mut next = 0usize;
        let mut buf = [0.0f32; 13];
        while next < n {
            let k = c.pop(&mut buf);
            for &v in &buf[..k] {
                assert_eq!(v as usize, next);
                next += 1;
            }
        }
        t.join().unwrap();
        assert_eq!(c.dropped(), 0);
    }
}
