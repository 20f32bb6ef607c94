//! voice-actions: streaming keyword spotting on edgert (openWakeWord's architecture).
//!
//! 16 kHz audio → Google's speech embedding (`models/speech_embedding.onnx`: log-mel front
//! end inside a `Loop`, then a conv net; one 96-d embedding per 80 ms over a 775 ms window)
//! → one small classifier head per keyword over the last `W` embeddings
//! (`models/kws/*.onnx`, trained by `models/kws/train.py`).
//!
//! Streaming: every new 80 ms chunk costs one embedding step (one 12,400-sample window) and
//! one run per head; the window of embeddings is never recomputed. Both engines run in
//! contexts planned once, so a step allocates nothing.

pub mod actions;
pub mod kws;

pub use kws::{Detection, Detector, HeadSpec, Heads};
