//! Decoder selection: Jetson `nvv4l2decoder`, desktop NVDEC (`nvh264dec`), VA-API, then
//! software (`avdec_h264`). A hardware plugin may be installed yet register no element (no
//! driver or device): that is detected through the registry and reported, never silent.

use gstreamer as gst;

use crate::error::{Error, Result};

/// One decoder candidate: the element that must exist, the plugin that provides it, and the
/// bin description used when it is chosen.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// Element factory name.
    pub element: &'static str,
    /// Plugin providing it.
    pub plugin: &'static str,
    /// `gst-launch` style description of the decoding bin.
    pub description: String,
}

/// The decoder chosen for a codec, and why better candidates were passed over.
#[derive(Debug, Clone, PartialEq)]
pub struct DecoderChoice {
    /// Caps name of the encoded stream.
    pub codec: String,
    /// The element chosen.
    pub element: String,
    /// The bin description to instantiate.
    pub description: String,
    /// `element: reason` for each candidate skipped.
    pub skipped: Vec<String>,
}

/// Candidates in preference order for a caps name (`video/x-h264`, `video/x-h265`,
/// `image/jpeg`). `threads` limits software decoder threads (0: the decoder decides; 1 is
/// cheapest per frame when many streams run).
pub fn candidates(codec: &str, threads: u32) -> Vec<Candidate> {
    let c = |element, plugin, description: String| Candidate { element, plugin, description };
    // nvv4l2decoder outputs NVMM memory: nvvidconv brings frames to system memory.
    let jetson = "nvv4l2decoder ! nvvidconv ! video/x-raw".to_string();
    match codec {
        "video/x-h264" => vec![
            c("nvv4l2decoder", "nvvideo4linux2", jetson),
            c("nvh264dec", "nvcodec", "nvh264dec".into()),
            c("vah264dec", "va", "vah264dec".into()),
            c("vaapih264dec", "vaapi", "vaapih264dec".into()),
            c("avdec_h264", "libav", format!("avdec_h264 max-threads={threads}")),
        ],
        "video/x-h265" => vec![
            c("nvv4l2decoder", "nvvideo4linux2", jetson),
            c("nvh265dec", "nvcodec", "nvh265dec".into()),
            c("vah265dec", "va", "vah265dec".into()),
            c("vaapih265dec", "vaapi", "vaapih265dec".into()),
            c("avdec_h265", "libav", format!("avdec_h265 max-threads={threads}")),
        ],
        "image/jpeg" => vec![c("nvjpegdec", "nvjpeg", "nvjpegdec".into()), c("jpegdec", "jpeg", "jpegdec".into())],
        _ => vec![],
    }
}

/// Why `element` cannot be used, or `None` when it is registered.
pub fn unavailable_reason(element: &str, plugin: &str) -> Option<String> {
    let registry = gst::Registry::get();
    if gst::ElementFactory::find(element).is_some() {
        return None;
    }
    Some(if registry.find_plugin(plugin).is_some() {
        format!("{element}: plugin `{plugin}` is installed but registered no `{element}` element (no driver or device)")
    } else {
        format!("{element}: plugin `{plugin}` is not installed")
    })
}

/// Picks the first available decoder for `codec`. GStreamer must be initialized
/// ([`crate::init`]).
pub fn select_decoder(codec: &str, threads: u32) -> Result<DecoderChoice> {
    let cands = candidates(codec, threads);
    if cands.is_empty() {
        return Err(Error::NoDecoder {
            codec: codec.to_string(),
            tried: "nothing: unsupported codec (H.264, H.265 and MJPEG are supported)".into(),
        });
    }
    let mut skipped = Vec::new();
    for c in cands {
        match unavailable_reason(c.element, c.plugin) {
            None => {
                return Ok(DecoderChoice {
                    codec: codec.to_string(),
                    element: c.element.to_string(),
                    description: c.description,
                    skipped,
                });
            }
            Some(why) => skipped.push(why),
        }
    }
    Err(Error::NoDecoder { codec: codec.to_string(), tried: skipped.join("; ") })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn software_fallback_is_reported() {
        crate::init().unwrap();
        let c = match select_decoder("video/x-h264", 1) {
            Ok(c) => c,
            Err(e) => panic!("no H.264 decoder at all (install gstreamer1.0-libav): {e}"),
        };
        eprintln!("H.264 decoder: {} (skipped: {:?})", c.element, c.skipped);
        // Every better candidate passed over carries a reason.
        let idx = candidates("video/x-h264", 1).iter().position(|x| x.element == c.element).unwrap();
        assert_eq!(c.skipped.len(), idx);
        for s in &c.skipped {
            assert!(s.contains("not installed") || s.contains("registered no"), "{s}");
        }
        if c.element == "avdec_h264" {
            assert_eq!(c.description, "avdec_h264 max-threads=1");
        }
        assert!(matches!(select_decoder("video/x-vp9", 0), Err(Error::NoDecoder { .. })));
    }
}
