//! voice-actions: streaming keyword spotting on edgert (openWakeWord's architecture).
//!
//! 16 kHz audio → Google's speech embedding (`models/speech_embedding.onnx`: log-mel front
//! end inside a `Loop`, then a conv net; one 96-d embedding per 80 ms over a 775 ms window)
//! → one small classifier head per keyword over the last `W` embeddings
//! (`models/kws/*.onnx`, trained by `models/kws/train.py`).
//!
//! Streaming: every new 80 ms chunk costs one step: the 8 new log-mel frames (the front end
//! split from the embedding by `models/kws/split_embedding.py`), the conv body over the last
//! 76 frames, and one run per head; neither the frames nor the window of embeddings is
//! recomputed. (The whole-window model, `Embedding::Whole`, recomputes 76 frames a step.)
//! Every engine runs in a context planned once, so a step allocates nothing.

pub mod actions;
pub mod eval;
pub mod kws;
pub mod vad;

pub use kws::{Detection, Detector, Embedding, HeadSpec, Heads};
