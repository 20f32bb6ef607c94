//! edgert-media: the video pipeline. Sources by URI (`file://`, `rtsp://`, `v4l2://`,
//! `csi://`, `test://`) decoded by GStreamer with an explicit, reported decoder choice;
//! frames scaled and letterboxed to the model input in GStreamer; a stream mux that batches
//! frames of many streams with a timeout, bounded queues and a drop policy; and the
//! pre/post-processing of detection models (input layout, SSD anchors, box decoding,
//! weighted NMS); annotated frames written back to `.mp4`/`.mkv` ([`VideoWriter`]).
//!
//! ```no_run
//! use std::sync::{Arc, atomic::AtomicBool};
//! use edgert_media::{Mux, MuxConfig, SourceConfig};
//! edgert_media::init()?;
//! let mux = Arc::new(Mux::new(MuxConfig::new(4, 30.0)));
//! let stop = Arc::new(AtomicBool::new(false));
//! let src = edgert_media::uri::parse("test://320x240@30?frames=30")?;
//! let s = edgert_media::spawn(src, mux.clone(), SourceConfig::new(128, 128), stop);
//! while let Some(batch) = mux.next_batch() {
//!     for f in &batch { /* f.rgb is 128x128 RGB, letterboxed */ let _ = f; }
//! }
//! s.join();
//! # Ok::<(), edgert_media::Error>(())
//! ```

mod bus;
pub mod camera;
pub mod decoder;
pub mod error;
pub mod frame;
pub mod letterbox;
pub mod mux;
pub mod postprocess;
pub mod source;
pub mod testclip;
pub mod uri;
pub mod writer;

pub use error::{Error, Result};
pub use frame::{Frame, FullFrame};
pub use letterbox::{ChannelOrder, InputFormat, Layout, Letterbox, rgb_to_input};
pub use mux::{DropPolicy, Mux, MuxConfig, StreamEvent, StreamStats};
pub use postprocess::{Detection, Keypoint};
pub use source::{SourceConfig, Stream, init, pipeline_description, spawn};
pub use writer::VideoWriter;
