//! Source URIs, in jetson-inference's convention: `file://path`, `rtsp://host/path`,
//! `v4l2:///dev/video0`, `csi://0`, and the synthetic `test://1080p30`.

use std::path::PathBuf;

use crate::camera::ModeRequest;
use crate::error::{Error, Result};

/// What a URI names.
#[derive(Debug, Clone, PartialEq)]
pub enum SourceKind {
    /// A video file (mp4, mkv, mov, raw .h264/.h265), read as fast as it decodes unless
    /// `?realtime=1` paces it at its frame rate.
    File {
        /// The path.
        path: PathBuf,
        /// Pace at the stream's own frame rate (like a camera).
        realtime: bool,
    },
    /// An RTSP stream (live).
    Rtsp {
        /// The full `rtsp://` URL.
        url: String,
    },
    /// A V4L2 camera (live); `?width=&height=&fps=&format=` ask for a mode, the rest is
    /// chosen from what the driver lists ([`crate::camera::choose_mode`]).
    V4l2 {
        /// The device node.
        device: PathBuf,
        /// What the URI asks of the camera.
        mode: ModeRequest,
    },
    /// A Jetson CSI camera through `nvarguscamerasrc` (live).
    Csi {
        /// The sensor id.
        sensor: u32,
    },
    /// GStreamer's `videotestsrc` (a moving ball), live by default.
    Test {
        /// Width in pixels.
        width: u32,
        /// Height in pixels.
        height: u32,
        /// Frames per second.
        fps: u32,
        /// Stop after this many frames (`?frames=N`); endless otherwise.
        frames: Option<u64>,
        /// Paced like a camera (default); `?live=0` runs as fast as possible.
        live: bool,
    },
}

/// A parsed source URI.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceUri {
    /// The URI as given.
    pub uri: String,
    /// What it names.
    pub kind: SourceKind,
}

impl SourceUri {
    /// Live sources drop late frames and reconnect after errors; files do neither.
    pub fn is_live(&self) -> bool {
        match &self.kind {
            SourceKind::File { realtime, .. } => *realtime,
            SourceKind::Test { live, .. } => *live,
            _ => true,
        }
    }

    /// Only network and camera sources reconnect (a file or test source that fails would
    /// fail again).
    pub fn reconnects(&self) -> bool {
        matches!(self.kind, SourceKind::Rtsp { .. } | SourceKind::V4l2 { .. } | SourceKind::Csi { .. })
    }
}

const FORMS: &str = "use file://PATH, rtsp://HOST/PATH, v4l2:///dev/videoN, csi://N or test://1080p30 \
                     (also test://WxH@FPS, ?frames=N, ?live=0; v4l2://...?width=W&height=H&fps=F&format=YUYV)";

fn bad(uri: &str, message: impl Into<String>) -> Error {
    Error::Uri { uri: uri.to_string(), message: message.into() }
}

/// Splits `a=b&c=d` into pairs.
fn query_pairs(q: &str) -> Vec<(&str, &str)> {
    q.split('&').filter(|s| !s.is_empty()).map(|kv| kv.split_once('=').unwrap_or((kv, ""))).collect()
}

fn flag(uri: &str, v: &str) -> Result<bool> {
    match v {
        "1" | "true" | "yes" | "" => Ok(true),
        "0" | "false" | "no" => Ok(false),
        _ => Err(bad(uri, format!("`{v}` is not a yes/no value"))),
    }
}

fn parse_test(uri: &str, spec: &str) -> Result<(u32, u32, u32)> {
    let named = |h: u32| -> Option<(u32, u32)> {
        Some(match h {
            2160 => (3840, 2160),
            1080 => (1920, 1080),
            720 => (1280, 720),
            480 => (640, 480),
            360 => (640, 360),
            240 => (320, 240),
            _ => return None,
        })
    };
    let num = |s: &str| s.parse::<u32>().map_err(|_| bad(uri, format!("`{s}` is not a number; {FORMS}")));
    let (size, fps) = if let Some((s, f)) = spec.split_once('@') {
        (s, num(f)?)
    } else if let Some((s, f)) = spec.split_once('p') {
        (s, if f.is_empty() { 30 } else { num(f)? })
    } else {
        (spec, 30)
    };
    let (w, h) = if let Some((w, h)) = size.split_once('x') {
        (num(w)?, num(h)?)
    } else {
        named(num(size)?).ok_or_else(|| bad(uri, format!("unknown size `{size}p`: 240/360/480/720/1080/2160")))?
    };
    if w == 0 || h == 0 || fps == 0 || w > 8192 || h > 8192 || fps > 1000 {
        return Err(bad(uri, format!("size {w}x{h} at {fps} fps is out of range")));
    }
    Ok((w, h, fps))
}

/// Parses a source URI. A bare path is taken as `file://`.
pub fn parse(uri: &str) -> Result<SourceUri> {
    let (scheme, rest) = uri.split_once("://").unwrap_or(("file", uri));
    let (body, query) = match scheme {
        "rtsp" | "rtsps" => (rest, ""),
        _ => rest.split_once('?').unwrap_or((rest, "")),
    };
    let q = query_pairs(query);
    let kind = match scheme {
        "file" => {
            if body.is_empty() {
                return Err(bad(uri, format!("no path; {FORMS}")));
            }
            let mut realtime = false;
            for (k, v) in q {
                match k {
                    "realtime" => realtime = flag(uri, v)?,
                    _ => return Err(bad(uri, format!("unknown option `{k}` (file:// takes ?realtime=1)"))),
                }
            }
            SourceKind::File { path: PathBuf::from(body), realtime }
        }
        "rtsp" | "rtsps" => {
            if body.is_empty() {
                return Err(bad(uri, "no host"));
            }
            SourceKind::Rtsp { url: uri.to_string() }
        }
        "v4l2" => {
            let dev = if body.is_empty() { "/dev/video0" } else { body };
            let mut mode = ModeRequest::default();
            let num = |k: &str, v: &str| match v.parse::<u32>() {
                Ok(n) if n > 0 && n <= 16384 => Ok(n),
                _ => Err(bad(uri, format!("{k}=`{v}` is not a positive number"))),
            };
            for (k, v) in q {
                match k {
                    "width" => mode.width = Some(num(k, v)?),
                    "height" => mode.height = Some(num(k, v)?),
                    "fps" => mode.fps = Some(num(k, v)?),
                    "format" if v.len() == 4 && v.is_ascii() => mode.format = Some(v.to_ascii_uppercase()),
                    "format" => return Err(bad(uri, format!("format=`{v}` is not a V4L2 four-character code"))),
                    _ => {
                        return Err(bad(
                            uri,
                            format!("unknown option `{k}` (v4l2:// takes ?width=W&height=H&fps=F&format=FOURCC)"),
                        ));
                    }
                }
            }
            SourceKind::V4l2 { device: PathBuf::from(dev), mode }
        }
        "csi" => {
            let sensor = if body.is_empty() {
                0
            } else {
                body.parse().map_err(|_| bad(uri, "csi://N takes a sensor number"))?
            };
            SourceKind::Csi { sensor }
        }
        "test" => {
            let (width, height, fps) = parse_test(uri, if body.is_empty() { "1080p30" } else { body })?;
            let (mut frames, mut live) = (None, true);
            for (k, v) in q {
                match k {
                    "frames" => {
                        frames = Some(v.parse().map_err(|_| bad(uri, format!("frames=`{v}` is not a number")))?)
                    }
                    "live" => live = flag(uri, v)?,
                    _ => return Err(bad(uri, format!("unknown option `{k}` (test:// takes ?frames=N&live=0)"))),
                }
            }
            SourceKind::Test { width, height, fps, frames, live }
        }
        other => return Err(bad(uri, format!("unknown scheme `{other}`; {FORMS}"))),
    };
    Ok(SourceUri { uri: uri.to_string(), kind })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_scheme() {
        let t = parse("test://1080p30").unwrap();
        assert_eq!(t.kind, SourceKind::Test { width: 1920, height: 1080, fps: 30, frames: None, live: true });
        assert!(t.is_live() && !t.reconnects());
        let t = parse("test://320x240@15?frames=20&live=0").unwrap();
        assert_eq!(t.kind, SourceKind::Test { width: 320, height: 240, fps: 15, frames: Some(20), live: false });
        assert!(!t.is_live());
        assert_eq!(
            parse("test://720p").unwrap().kind,
            SourceKind::Test { width: 1280, height: 720, fps: 30, frames: None, live: true }
        );
        let f = parse("file:///tmp/a.mp4").unwrap();
        assert_eq!(f.kind, SourceKind::File { path: "/tmp/a.mp4".into(), realtime: false });
        assert!(!f.is_live());
        assert_eq!(
            parse("clip.mkv?realtime=1").unwrap().kind,
            SourceKind::File { path: "clip.mkv".into(), realtime: true }
        );
        let r = parse("rtsp://cam.local:8554/live?x=1").unwrap();
        assert_eq!(r.kind, SourceKind::Rtsp { url: "rtsp://cam.local:8554/live?x=1".into() });
        assert!(r.is_live() && r.reconnects());
        assert_eq!(
            parse("v4l2:///dev/video2").unwrap().kind,
            SourceKind::V4l2 { device: "/dev/video2".into(), mode: ModeRequest::default() }
        );
        assert_eq!(
            parse("v4l2:///dev/video1?width=1280&height=720&fps=30&format=mjpg").unwrap().kind,
            SourceKind::V4l2 {
                device: "/dev/video1".into(),
                mode: ModeRequest { width: Some(1280), height: Some(720), fps: Some(30), format: Some("MJPG".into()) }
            }
        );
        assert_eq!(parse("csi://1").unwrap().kind, SourceKind::Csi { sensor: 1 });
    }

    #[test]
    fn rejects_bad_uris() {
        for u in [
            "http://x",
            "test://999p",
            "test://0x0",
            "test://1080p30?frames=x",
            "file://",
            "csi://a",
            "rtsp://",
            "file://a?b=1",
            "v4l2:///dev/video0?width=0",
            "v4l2:///dev/video0?fps=x",
            "v4l2:///dev/video0?format=YUYV2",
            "v4l2:///dev/video0?gain=3",
        ] {
            let e = parse(u).unwrap_err().to_string();
            assert!(e.contains(u), "{e}");
        }
    }
}
