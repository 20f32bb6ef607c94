//! Stream mux and batcher (the role of DeepStream's nvstreammux): frames from N streams wait
//! in bounded per-stream queues and leave in batches of up to `batch_size`, when a batch is
//! full or when the oldest waiting frame has waited `batch_timeout`. Late frames of live
//! streams are dropped by policy; file streams block their decoder instead (nothing lost).
//! Per-stream counters say what happened to every frame.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::frame::Frame;

/// What to do with a frame that arrives when its stream's queue is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropPolicy {
    /// Wait for room (back-pressure on the decoder): for files, where nothing may be lost.
    Block,
    /// Drop the oldest waiting frame: for live sources, where fresh frames matter.
    DropOldest,
}

/// Batching settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MuxConfig {
    /// Most frames per batch.
    pub batch_size: usize,
    /// Longest time the oldest frame waits for a batch to fill.
    pub batch_timeout: Duration,
    /// Capacity of each stream's queue.
    pub queue_capacity: usize,
}

impl MuxConfig {
    /// `batch_size` frames, timeout `1e6/max_fps` µs, queues of twice the batch size.
    pub fn new(batch_size: usize, max_fps: f64) -> MuxConfig {
        let fps = if max_fps.is_finite() && max_fps > 0.0 { max_fps } else { 30.0 };
        MuxConfig {
            batch_size: batch_size.max(1),
            batch_timeout: Duration::from_micros((1e6 / fps) as u64),
            queue_capacity: (2 * batch_size).max(2),
        }
    }
}

/// Counters and state of one stream.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StreamStats {
    /// The stream's URI.
    pub uri: String,
    /// Frames handed to the mux by the decoder branch.
    pub decoded: u64,
    /// Frames dropped by the drop policy.
    pub dropped: u64,
    /// Frames that left in a batch.
    pub batched: u64,
    /// Frames the consumer reported as inferred ([`Mux::mark_inferred`]).
    pub inferred: u64,
    /// Frames waiting in the queue now.
    pub queued: u64,
    /// The decoder chosen (or `raw` for uncompressed sources).
    pub decoder: Option<String>,
    /// Errors reported by the source, oldest first.
    pub errors: Vec<String>,
    /// Warnings (the stream went on), oldest first.
    pub warnings: Vec<String>,
    /// Reconnection attempts of a live source.
    pub reconnects: u32,
    /// The source has finished (end of stream or given up after an error).
    pub ended: bool,
}

/// Something a source reports besides frames.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// The decoder of a stream was chosen; `skipped` lists better candidates and why not.
    Decoder {
        /// Stream index.
        stream: usize,
        /// Codec caps name.
        codec: String,
        /// The element (or bin description) used.
        decoder: String,
        /// Candidates passed over, with the reason.
        skipped: Vec<String>,
    },
    /// An error; the stream ends unless it is live and is reconnecting.
    Error {
        /// Stream index.
        stream: usize,
        /// The message.
        message: String,
    },
    /// A live stream will reconnect after a back-off.
    Reconnecting {
        /// Stream index.
        stream: usize,
        /// Attempt number, from 1.
        attempt: u32,
        /// Back-off before the attempt.
        delay: Duration,
    },
    /// Something is wrong but the stream goes on (e.g. frames lost to a corrupt bitstream:
    /// decoders skip damaged data silently, so a time-stamp gap is what gives it away).
    Warning {
        /// Stream index.
        stream: usize,
        /// The message.
        message: String,
    },
    /// The stream reached its end.
    Eos {
        /// Stream index.
        stream: usize,
    },
}

struct Queue {
    frames: VecDeque<(Frame, Instant)>,
    policy: DropPolicy,
    stats: StreamStats,
}

struct State {
    queues: Vec<Queue>,
    events: Vec<StreamEvent>,
    closed: bool,
    next_start: usize,
}

/// The mux: producers [`push`](Mux::push), one or more consumers take
/// [`next_batch`](Mux::next_batch). Share it behind an `Arc`.
pub struct Mux {
    config: MuxConfig,
    state: Mutex<State>,
    frames_cv: Condvar,
    space_cv: Condvar,
}

impl Mux {
    /// A mux with no streams yet.
    pub fn new(config: MuxConfig) -> Mux {
        let config =
            MuxConfig { batch_size: config.batch_size.max(1), queue_capacity: config.queue_capacity.max(1), ..config };
        Mux {
            config,
            state: Mutex::new(State { queues: Vec::new(), events: Vec::new(), closed: false, next_start: 0 }),
            frames_cv: Condvar::new(),
            space_cv: Condvar::new(),
        }
    }

    /// The configuration in force.
    pub fn config(&self) -> MuxConfig {
        self.config
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A consumer that panicked while holding the lock leaves consistent counters behind
        // (every update is a single step): keep going rather than propagate the poison.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers a stream; returns its index (frames must carry it in `Frame::stream`).
    pub fn add_stream(&self, uri: &str, policy: DropPolicy) -> usize {
        let mut s = self.lock();
        s.queues.push(Queue {
            frames: VecDeque::new(),
            policy,
            stats: StreamStats { uri: uri.to_string(), ..Default::default() },
        });
        s.queues.len() - 1
    }

    /// Hands over a frame. Blocks while the stream's queue is full under
    /// [`DropPolicy::Block`]. Returns `false` once the mux is closed (the producer should
    /// stop) or when the stream index is unknown.
    pub fn push(&self, frame: Frame) -> bool {
        let mut s = self.lock();
        let id = frame.stream;
        if id >= s.queues.len() {
            return false;
        }
        loop {
            if s.closed {
                return false;
            }
            let cap = self.config.queue_capacity;
            let q = &mut s.queues[id];
            if q.frames.len() < cap {
                break;
            }
            match q.policy {
                DropPolicy::DropOldest => {
                    q.frames.pop_front();
                    q.stats.dropped += 1;
                    break;
                }
                DropPolicy::Block => s = self.space_cv.wait(s).unwrap_or_else(|e| e.into_inner()),
            }
        }
        let q = &mut s.queues[id];
        q.stats.decoded += 1;
        q.frames.push_back((frame, Instant::now()));
        drop(s);
        self.frames_cv.notify_all();
        true
    }

    /// Marks a stream finished: once its queue drains it no longer holds batches back.
    pub fn end_stream(&self, stream: usize) {
        let mut s = self.lock();
        if let Some(q) = s.queues.get_mut(stream) {
            q.stats.ended = true;
        }
        drop(s);
        self.frames_cv.notify_all();
    }

    /// Records an event (also reflected in the stream's counters).
    pub fn report(&self, event: StreamEvent) {
        let mut s = self.lock();
        match &event {
            StreamEvent::Decoder { stream, decoder, .. } => {
                if let Some(q) = s.queues.get_mut(*stream) {
                    q.stats.decoder = Some(decoder.clone());
                }
            }
            StreamEvent::Error { stream, message } => {
                if let Some(q) = s.queues.get_mut(*stream) {
                    q.stats.errors.push(message.clone());
                }
            }
            StreamEvent::Warning { stream, message } => {
                if let Some(q) = s.queues.get_mut(*stream) {
                    q.stats.warnings.push(message.clone());
                }
            }
            StreamEvent::Reconnecting { stream, .. } => {
                if let Some(q) = s.queues.get_mut(*stream) {
                    q.stats.reconnects += 1;
                }
            }
            StreamEvent::Eos { .. } => {}
        }
        s.events.push(event);
    }

    /// Takes the events reported since the last call.
    pub fn take_events(&self) -> Vec<StreamEvent> {
        std::mem::take(&mut self.lock().events)
    }

    /// Counts frames of a stream as inferred.
    pub fn mark_inferred(&self, stream: usize, n: u64) {
        if let Some(q) = self.lock().queues.get_mut(stream) {
            q.stats.inferred += n;
        }
    }

    /// A snapshot of every stream's counters.
    pub fn stats(&self) -> Vec<StreamStats> {
        let s = self.lock();
        s.queues.iter().map(|q| StreamStats { queued: q.frames.len() as u64, ..q.stats.clone() }).collect()
    }

    /// Stops the mux: producers' `push` returns `false`, consumers get `None` once the
    /// queues are empty.
    pub fn close(&self) {
        self.lock().closed = true;
        self.frames_cv.notify_all();
        self.space_cv.notify_all();
    }

    /// Whether [`close`](Mux::close) was called.
    pub fn is_closed(&self) -> bool {
        self.lock().closed
    }

    /// The next batch: up to `batch_size` frames, taken round-robin over the streams (each
    /// stream's frames in order). Waits until the batch is full, or the oldest waiting frame
    /// has waited `batch_timeout`, or no stream can add more. `None` when every stream has
    /// ended (or the mux is closed) and nothing is left.
    pub fn next_batch(&self) -> Option<Vec<Frame>> {
        let mut s = self.lock();
        loop {
            let waiting: usize = s.queues.iter().map(|q| q.frames.len()).sum();
            let all_ended = s.queues.iter().all(|q| q.stats.ended);
            if waiting == 0 && (s.closed || (all_ended && !s.queues.is_empty())) {
                return None;
            }
            if waiting > 0 {
                let oldest = s.queues.iter().filter_map(|q| q.frames.front().map(|f| f.1)).min();
                let deadline = oldest.map(|t| t + self.config.batch_timeout);
                let now = Instant::now();
                // Streams still running with an empty queue could still fill the batch.
                let more_possible =
                    s.queues.iter().any(|q| !q.stats.ended && q.frames.len() < self.config.queue_capacity);
                if waiting >= self.config.batch_size || deadline.is_none_or(|d| now >= d) || !more_possible || s.closed
                {
                    return Some(self.take_batch(&mut s));
                }
                let wait = deadline.map(|d| d - now).unwrap_or(self.config.batch_timeout);
                s = self.frames_cv.wait_timeout(s, wait).unwrap_or_else(|e| e.into_inner()).0;
            } else {
                s = self.frames_cv.wait(s).unwrap_or_else(|e| e.into_inner());
            }
        }
    }

    fn take_batch(&self, s: &mut State) -> Vec<Frame> {
        let n = s.queues.len();
        let mut batch = Vec::with_capacity(self.config.batch_size);
        let start = s.next_start % n.max(1);
        'fill: loop {
            let mut took = false;
            for k in 0..n {
                let q = &mut s.queues[(start + k) % n];
                if let Some((f, _)) = q.frames.pop_front() {
                    q.stats.batched += 1;
                    batch.push(f);
                    took = true;
                    if batch.len() == self.config.batch_size {
                        break 'fill;
                    }
                }
            }
            if !took {
                break;
            }
        }
        s.next_start = start + 1;
        self.space_cv.notify_all();
        batch
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::letterbox::Letterbox;
    use std::sync::Arc;

    fn frame(stream: usize, index: u64) -> Frame {
        Frame {
            stream,
            index,
            pts: None,
            decoded_at: Instant::now(),
            width: 1,
            height: 1,
            rgb: vec![0; 3],
            letterbox: Letterbox::fit(1, 1, (1, 1), 1, 1),
            full: None,
        }
    }

    #[test]
    fn full_batches_round_robin_then_none() {
        let mux = Mux::new(MuxConfig { batch_size: 3, batch_timeout: Duration::from_secs(10), queue_capacity: 8 });
        let a = mux.add_stream("a", DropPolicy::Block);
        let b = mux.add_stream("b", DropPolicy::Block);
        for i in 0..3 {
            assert!(mux.push(frame(a, i)));
        }
        assert!(mux.push(frame(b, 0)));
        let batch = mux.next_batch().unwrap();
        let ids: Vec<(usize, u64)> = batch.iter().map(|f| (f.stream, f.index)).collect();
        assert_eq!(ids, vec![(0, 0), (1, 0), (0, 1)]);
        mux.end_stream(a);
        mux.end_stream(b);
        // Everything ended: the remainder leaves at once, then None.
        let batch = mux.next_batch().unwrap();
        assert_eq!(batch.len(), 1);
        assert_eq!((batch[0].stream, batch[0].index), (0, 2));
        assert!(mux.next_batch().is_none());
        let st = mux.stats();
        assert_eq!((st[0].decoded, st[0].batched, st[0].dropped), (3, 3, 0));
        assert_eq!((st[1].decoded, st[1].batched), (1, 1));
    }

    #[test]
    fn timeout_pushes_partial_batch() {
        let timeout = Duration::from_millis(50);
        let mux = Mux::new(MuxConfig { batch_size: 4, batch_timeout: timeout, queue_capacity: 8 });
        let a = mux.add_stream("a", DropPolicy::Block);
        let _slow = mux.add_stream("slow", DropPolicy::Block);
        let t0 = Instant::now();
        mux.push(frame(a, 0));
        let batch = mux.next_batch().unwrap();
        let waited = t0.elapsed();
        assert_eq!(batch.len(), 1);
        assert!(waited >= timeout, "left after {waited:?}, before the timeout");
        assert!(waited < timeout + Duration::from_millis(200), "left after {waited:?}");
    }

    #[test]
    fn drop_oldest_counts_and_block_waits() {
        let mux =
            Arc::new(Mux::new(MuxConfig { batch_size: 2, batch_timeout: Duration::from_millis(1), queue_capacity: 2 }));
        let live = mux.add_stream("live", DropPolicy::DropOldest);
        for i in 0..5 {
            assert!(mux.push(frame(live, i)));
        }
        let st = &mux.stats()[live];
        assert_eq!((st.decoded, st.dropped, st.queued), (5, 3, 2));
        let batch = mux.next_batch().unwrap();
        assert_eq!(batch.iter().map(|f| f.index).collect::<Vec<_>>(), vec![3, 4]);

        let file = mux.add_stream("file", DropPolicy::Block);
        let m2 = Arc::clone(&mux);
        let producer = std::thread::spawn(move || {
            for i in 0..10 {
                assert!(m2.push(frame(file, i)));
            }
            m2.end_stream(file);
        });
        mux.end_stream(live);
        let mut got = Vec::new();
        while let Some(b) = mux.next_batch() {
            got.extend(b.into_iter().map(|f| f.index));
        }
        producer.join().unwrap();
        assert_eq!(got, (0..10).collect::<Vec<_>>());
        let st = &mux.stats()[file];
        assert_eq!((st.decoded, st.dropped, st.batched), (10, 0, 10));
    }

    #[test]
    fn close_releases_blocked_producer() {
        let mux = Arc::new(Mux::new(MuxConfig { batch_size: 1, batch_timeout: Duration::ZERO, queue_capacity: 1 }));
        let a = mux.add_stream("a", DropPolicy::Block);
        assert!(mux.push(frame(a, 0)));
        let m2 = Arc::clone(&mux);
        let h = std::thread::spawn(move || m2.push(frame(a, 1)));
        std::thread::sleep(Duration::from_millis(20));
        mux.close();
        assert!(!h.join().unwrap());
        // Unknown stream index is refused, not a panic.
        assert!(!mux.push(frame(7, 0)));
    }
}
