//! The media error type.

/// Errors of the video pipeline. Messages name the stream's URI and what to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The URI could not be parsed or names an unsupported scheme.
    #[error("source `{uri}`: {message}")]
    Uri {
        /// The URI as given.
        uri: String,
        /// What is wrong, and the accepted forms.
        message: String,
    },
    /// The source needs hardware or a device that is not present here.
    #[error("source `{uri}` unavailable: {reason}")]
    Unavailable {
        /// The URI as given.
        uri: String,
        /// Why (missing element or device), and the pipeline that would run.
        reason: String,
    },
    /// No decoder element exists for the stream's codec.
    #[error("no decoder for {codec}: tried {tried}")]
    NoDecoder {
        /// Caps name of the elementary stream (`video/x-h264`, ...).
        codec: String,
        /// Each candidate and why it was skipped.
        tried: String,
    },
    /// GStreamer failed to build or run the pipeline.
    #[error("pipeline for `{uri}`: {message}")]
    Pipeline {
        /// The URI as given.
        uri: String,
        /// GStreamer's message, with the element that raised it.
        message: String,
    },
    /// GStreamer could not be initialized.
    #[error("GStreamer init failed: {0} (install libgstreamer1.0-0 and the plugins: tests/setup.d/50-media.sh)")]
    Init(String),
    /// Model outputs did not match what the post-processing expects.
    #[error("post-processing: {0}")]
    Postprocess(String),
    /// A frame did not match the model input it is written into.
    #[error("pre-processing: {0}")]
    Preprocess(String),
}

/// Result with [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
