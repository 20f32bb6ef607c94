//! V4L2 cameras through the `v4l` crate: device discovery (which `/dev/video*` nodes capture
//! video, their driver and their modes) and format negotiation (the one mode a `v4l2://`
//! source asks `v4l2src` for, so that the camera does not fall back to whatever GStreamer's
//! caps negotiation happens to pick first).
//!
//! The choice ([`choose_mode`]) is a pure function of the modes the driver lists and what
//! the URI asks for (`v4l2:///dev/video0?width=1280&height=720&fps=30&format=MJPG`), so it
//! is tested without a camera; [`probe`] only asks the driver.

use std::path::{Path, PathBuf};

use v4l::capability::Flags;
use v4l::frameinterval::FrameIntervalEnum;
use v4l::framesize::FrameSizeEnum;
use v4l::video::Capture;

/// What a `v4l2://` URI asks of the camera; unset fields are the chooser's to pick.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModeRequest {
    /// Frame width in pixels.
    pub width: Option<u32>,
    /// Frame height in pixels.
    pub height: Option<u32>,
    /// Frames per second.
    pub fps: Option<u32>,
    /// V4L2 pixel format, as its four characters (`YUYV`, `MJPG`, `H264`, ...).
    pub format: Option<String>,
}

/// Frame rates a mode offers at one size.
#[derive(Debug, Clone, PartialEq)]
pub enum Rates {
    /// Discrete frame rates as fractions (frames, seconds): 30/1, 30000/1001, ...
    Discrete(Vec<(u32, u32)>),
    /// Any rate in a range (frames per second, inclusive).
    Range {
        /// Slowest rate.
        min: f64,
        /// Fastest rate.
        max: f64,
    },
}

/// One pixel format at one size.
#[derive(Debug, Clone, PartialEq)]
pub struct Mode {
    /// V4L2 pixel format (four characters).
    pub fourcc: String,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Frame rates at this size.
    pub rates: Rates,
}

/// A V4L2 device node and what its driver says about it.
#[derive(Debug, Clone, PartialEq)]
pub struct CameraInfo {
    /// The device node.
    pub path: PathBuf,
    /// Driver (`uvcvideo`, `tegra-video`, ...).
    pub driver: String,
    /// Device name.
    pub card: String,
    /// Bus (`usb-0000:00:14.0-1`, `platform:...`).
    pub bus: String,
    /// Whether it captures video (metadata and output nodes do not).
    pub capture: bool,
    /// Its capture modes (empty for a node that does not capture).
    pub modes: Vec<Mode>,
}

/// The mode chosen for a source, and the caps that ask `v4l2src` for it.
#[derive(Debug, Clone, PartialEq)]
pub struct ChosenMode {
    /// V4L2 pixel format.
    pub fourcc: String,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Frame rate (frames, seconds).
    pub fps: (u32, u32),
    /// GStreamer caps for the mode (`video/x-raw,format=YUY2,width=...`).
    pub caps: String,
}

impl std::fmt::Display for ChosenMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}x{} at {:.4} fps", self.fourcc, self.width, self.height, rate(self.fps))
    }
}

/// GStreamer caps media type for a V4L2 pixel format `v4l2src` produces; `None` for formats
/// this pipeline does not take (Bayer, depth, vendor formats).
pub fn gst_media_type(fourcc: &str) -> Option<&'static str> {
    Some(match fourcc {
        "YUYV" => "video/x-raw,format=YUY2",
        "UYVY" => "video/x-raw,format=UYVY",
        "NV12" => "video/x-raw,format=NV12",
        "NV21" => "video/x-raw,format=NV21",
        "YU12" => "video/x-raw,format=I420",
        "YV12" => "video/x-raw,format=YV12",
        "GREY" => "video/x-raw,format=GRAY8",
        "RGB3" => "video/x-raw,format=RGB",
        "BGR3" => "video/x-raw,format=BGR",
        "MJPG" | "JPEG" => "image/jpeg",
        "H264" => "video/x-h264,stream-format=byte-stream",
        "HEVC" => "video/x-h265,stream-format=byte-stream",
        _ => return None,
    })
}

/// Compressed formats cost a decode per frame; raw ones cost bus bandwidth only.
fn is_raw(fourcc: &str) -> bool {
    gst_media_type(fourcc).is_some_and(|m| m.starts_with("video/x-raw"))
}

/// Frame rates offered as candidates from a range: the asked one (or 30) and the ends.
fn range_candidates(min: f64, max: f64, want: f64) -> Vec<(u32, u32)> {
    let mut v: Vec<(u32, u32)> = Vec::new();
    for r in [want, max, min] {
        if r >= min - 1e-6 && r <= max + 1e-6 && r >= 1.0 {
            // Whole rates stay whole; others keep three decimals (29.97 -> 29970/1000).
            let f =
                if (r - r.round()).abs() < 1e-6 { (r.round() as u32, 1) } else { ((r * 1000.0).round() as u32, 1000) };
            if !v.contains(&f) {
                v.push(f);
            }
        }
    }
    v
}

fn rate(f: (u32, u32)) -> f64 {
    f.0 as f64 / f.1.max(1) as f64
}

/// Picks the mode for `req` among `modes`:
///
/// * only formats the pipeline takes ([`gst_media_type`]), and the asked format, size and
///   rate when given (a rate matches within 0.5%, so `fps=30` takes 30000/1001);
/// * then sizes that reach 25 fps (real time), the largest up to 1920x1080 (the model input
///   is far smaller: more only costs decoding and bandwidth), then above it the smallest;
/// * at one size, raw formats before compressed ones (no decode), then the rate nearest the
///   asked one, or 30.
///
/// The error lists what the camera offers.
pub fn choose_mode(modes: &[Mode], req: &ModeRequest) -> Result<ChosenMode, String> {
    let want_fps = req.fps.map(f64::from);
    let target = want_fps.unwrap_or(30.0);
    let mut best: Option<((bool, i64, bool, i64), ChosenMode)> = None;
    for m in modes {
        let Some(media) = gst_media_type(&m.fourcc) else { continue };
        if req.format.as_deref().is_some_and(|f| !f.eq_ignore_ascii_case(&m.fourcc)) {
            continue;
        }
        if req.width.is_some_and(|w| w != m.width) || req.height.is_some_and(|h| h != m.height) {
            continue;
        }
        let candidates = match &m.rates {
            Rates::Discrete(v) => v.clone(),
            Rates::Range { min, max } => range_candidates(*min, *max, target),
        };
        let rates = candidates.into_iter().filter(|&f| f.0 > 0 && f.1 > 0);
        let rates: Vec<_> = match want_fps {
            Some(w) => rates.filter(|&f| (rate(f) - w).abs() <= w * 0.005).collect(),
            None => rates.collect(),
        };
        // Nearest the target; a tie goes to the faster rate.
        let Some(fps) = rates.into_iter().min_by(|&a, &b| {
            let (da, db) = ((rate(a) - target).abs(), (rate(b) - target).abs());
            da.total_cmp(&db).then(rate(b).total_cmp(&rate(a)))
        }) else {
            continue;
        };
        let area = m.width as i64 * m.height as i64;
        let hd = 1920 * 1080;
        // Larger is better up to HD; past HD, smaller is better (and worse than any HD mode).
        let size_score = if area <= hd { area } else { -area };
        let score =
            (rate(fps) >= 25.0 - 1e-6, size_score, is_raw(&m.fourcc), -((rate(fps) - target).abs() * 1000.0) as i64);
        let caps = format!("{media},width={},height={},framerate={}/{}", m.width, m.height, fps.0, fps.1);
        let chosen = ChosenMode { fourcc: m.fourcc.clone(), width: m.width, height: m.height, fps, caps };
        if best.as_ref().is_none_or(|(s, _)| score > *s) {
            best = Some((score, chosen));
        }
    }
    best.map(|(_, c)| c).ok_or_else(|| {
        let offered: Vec<String> = modes.iter().map(describe_mode).collect();
        format!(
            "no mode matches {} among: {}",
            describe_request(req),
            if offered.is_empty() { "(the driver lists none)".to_string() } else { offered.join(", ") }
        )
    })
}

fn describe_request(req: &ModeRequest) -> String {
    let mut parts = Vec::new();
    if let Some(f) = &req.format {
        parts.push(format!("format {f}"));
    }
    match (req.width, req.height) {
        (Some(w), Some(h)) => parts.push(format!("{w}x{h}")),
        (Some(w), None) => parts.push(format!("width {w}")),
        (None, Some(h)) => parts.push(format!("height {h}")),
        (None, None) => {}
    }
    if let Some(f) = req.fps {
        parts.push(format!("{f} fps"));
    }
    if parts.is_empty() { "a format this pipeline takes".to_string() } else { parts.join(", ") }
}

/// `YUYV 1280x720 [30, 15 fps]`, with `(unsupported)` for formats the pipeline does not take.
pub fn describe_mode(m: &Mode) -> String {
    let rates = match &m.rates {
        Rates::Discrete(v) => {
            v.iter().map(|&f| format!("{}", (rate(f) * 100.0).round() / 100.0)).collect::<Vec<_>>().join(", ")
        }
        Rates::Range { min, max } => format!("{min:.2}-{max:.2}"),
    };
    let note = if gst_media_type(&m.fourcc).is_none() { " (unsupported)" } else { "" };
    format!("{} {}x{} [{rates} fps]{note}", m.fourcc, m.width, m.height)
}

/// Asks the driver of `path` what it is and, for a capture device, every mode it lists.
/// A node that is not a V4L2 device (e.g. `/dev/null`) is an error naming the ioctl.
pub fn probe(path: &Path) -> Result<CameraInfo, String> {
    let dev = v4l::Device::with_path(path).map_err(|e| format!("opening {}: {e}", path.display()))?;
    let caps =
        dev.query_caps().map_err(|e| format!("{} is not a V4L2 device (VIDIOC_QUERYCAP: {e})", path.display()))?;
    let capture = caps.capabilities.contains(Flags::VIDEO_CAPTURE) && caps.capabilities.contains(Flags::STREAMING);
    let mut modes = Vec::new();
    if capture {
        let formats = dev.enum_formats().map_err(|e| format!("{}: VIDIOC_ENUM_FMT: {e}", path.display()))?;
        for f in formats {
            let fourcc = f.fourcc.str().map(str::to_string).unwrap_or_else(|_| format!("{:?}", f.fourcc.repr));
            let sizes = dev.enum_framesizes(f.fourcc).unwrap_or_default();
            for s in sizes {
                for (width, height) in sizes_of(&s.size) {
                    let rates = match dev.enum_frameintervals(f.fourcc, width, height) {
                        Ok(iv) => rates_of(iv.into_iter().map(|i| i.interval)),
                        Err(_) => Rates::Discrete(Vec::new()),
                    };
                    modes.push(Mode { fourcc: fourcc.clone(), width, height, rates });
                }
            }
        }
    }
    Ok(CameraInfo { path: path.to_path_buf(), driver: caps.driver, card: caps.card, bus: caps.bus, capture, modes })
}

/// Discrete sizes as they are; a stepwise range as its common sizes (1080p, 720p, VGA) that
/// lie on its steps, plus its largest size. (The crate's own `to_discrete` lists every
/// step, millions for a continuous range, and panics on a zero step.)
fn sizes_of(s: &FrameSizeEnum) -> Vec<(u32, u32)> {
    match s {
        FrameSizeEnum::Discrete(d) => vec![(d.width, d.height)],
        FrameSizeEnum::Stepwise(r) => {
            let on =
                |v: u32, min: u32, max: u32, step: u32| v >= min && v <= max && (v - min).is_multiple_of(step.max(1));
            let mut v: Vec<(u32, u32)> = [(1920, 1080), (1280, 720), (640, 480)]
                .into_iter()
                .filter(|&(w, h)| {
                    on(w, r.min_width, r.max_width, r.step_width) && on(h, r.min_height, r.max_height, r.step_height)
                })
                .collect();
            if !v.contains(&(r.max_width, r.max_height)) {
                v.push((r.max_width, r.max_height));
            }
            v
        }
    }
}

/// Frame intervals (seconds per frame) as frame rates.
fn rates_of(intervals: impl Iterator<Item = FrameIntervalEnum>) -> Rates {
    let mut discrete = Vec::new();
    for iv in intervals {
        match iv {
            FrameIntervalEnum::Discrete(f) if f.numerator > 0 => discrete.push((f.denominator, f.numerator)),
            FrameIntervalEnum::Discrete(_) => {}
            FrameIntervalEnum::Stepwise(s) => {
                // The shortest interval is the fastest rate.
                let fps =
                    |f: v4l::Fraction| if f.numerator > 0 { f.denominator as f64 / f.numerator as f64 } else { 0.0 };
                return Rates::Range { min: fps(s.max), max: fps(s.min) };
            }
        }
    }
    Rates::Discrete(discrete)
}

/// Every V4L2 node on this machine (`/dev/video*`), probed; nodes that fail to answer are
/// listed with the reason.
pub fn list_cameras() -> Vec<Result<CameraInfo, (PathBuf, String)>> {
    let mut nodes: Vec<PathBuf> = v4l::context::enum_devices().into_iter().map(|n| n.path().to_path_buf()).collect();
    nodes.sort();
    nodes.into_iter().map(|p| probe(&p).map_err(|e| (p, e))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(fourcc: &str, width: u32, height: u32, rates: &[(u32, u32)]) -> Mode {
        Mode { fourcc: fourcc.into(), width, height, rates: Rates::Discrete(rates.to_vec()) }
    }

    /// What a typical USB webcam lists: YUYV reaches 30 fps only up to 640x480 (USB 2
    /// bandwidth), MJPG up to 1080p.
    fn webcam() -> Vec<Mode> {
        vec![
            mode("YUYV", 640, 480, &[(30, 1), (15, 1)]),
            mode("YUYV", 1280, 720, &[(10, 1)]),
            mode("YUYV", 1920, 1080, &[(5, 1)]),
            mode("MJPG", 640, 480, &[(30, 1)]),
            mode("MJPG", 1280, 720, &[(30, 1), (60, 1)]),
            mode("MJPG", 1920, 1080, &[(30, 1)]),
            mode("MJPG", 3840, 2160, &[(30, 1)]),
        ]
    }

    #[test]
    fn picks_the_largest_real_time_mode_up_to_hd() {
        let c = choose_mode(&webcam(), &ModeRequest::default()).unwrap();
        assert_eq!((c.fourcc.as_str(), c.width, c.height, c.fps), ("MJPG", 1920, 1080, (30, 1)));
        assert_eq!(c.caps, "image/jpeg,width=1920,height=1080,framerate=30/1");
    }

    #[test]
    fn raw_before_compressed_at_the_same_size() {
        let c =
            choose_mode(&webcam(), &ModeRequest { width: Some(640), height: Some(480), ..Default::default() }).unwrap();
        assert_eq!((c.fourcc.as_str(), c.fps), ("YUYV", (30, 1)));
        assert_eq!(c.caps, "video/x-raw,format=YUY2,width=640,height=480,framerate=30/1");
    }

    #[test]
    fn honours_the_asked_format_size_and_rate() {
        let req = ModeRequest { width: Some(1280), height: Some(720), fps: Some(60), format: None };
        let c = choose_mode(&webcam(), &req).unwrap();
        assert_eq!((c.fourcc.as_str(), c.fps), ("MJPG", (60, 1)));
        // At 720p without a rate: 30 fps, the default target, not the faster 60.
        let req = ModeRequest { width: Some(1280), height: Some(720), fps: None, format: Some("mjpg".into()) };
        assert_eq!(choose_mode(&webcam(), &req).unwrap().fps, (30, 1));
        // An asked YUYV at 720p runs at the 10 fps the camera has.
        let req = ModeRequest { format: Some("YUYV".into()), width: Some(1280), ..Default::default() };
        assert_eq!(choose_mode(&webcam(), &req).unwrap().fps, (10, 1));
        // Without a size, a slow-only format still gives its best real-time-less size.
        let req = ModeRequest { format: Some("YUYV".into()), ..Default::default() };
        let c = choose_mode(&webcam(), &req).unwrap();
        assert_eq!((c.width, c.height, c.fps), (640, 480, (30, 1)));
    }

    #[test]
    fn ntsc_rates_match_and_ranges_give_candidates() {
        let modes = vec![mode("NV12", 1280, 720, &[(30000, 1001), (60000, 1001)])];
        let c = choose_mode(&modes, &ModeRequest { fps: Some(30), ..Default::default() }).unwrap();
        assert_eq!(c.fps, (30000, 1001));
        assert!(c.caps.ends_with("framerate=30000/1001"), "{}", c.caps);
        let modes =
            vec![Mode { fourcc: "YU12".into(), width: 640, height: 480, rates: Rates::Range { min: 1.0, max: 90.0 } }];
        let c = choose_mode(&modes, &ModeRequest::default()).unwrap();
        assert_eq!((c.fps, c.caps.as_str()), ((30, 1), "video/x-raw,format=I420,width=640,height=480,framerate=30/1"));
        let c = choose_mode(&modes, &ModeRequest { fps: Some(90), ..Default::default() }).unwrap();
        assert_eq!(c.fps, (90, 1));
        assert!(choose_mode(&modes, &ModeRequest { fps: Some(120), ..Default::default() }).is_err());
    }

    #[test]
    fn above_hd_only_when_nothing_else_and_then_the_smallest() {
        let modes = vec![mode("MJPG", 3840, 2160, &[(30, 1)]), mode("MJPG", 2560, 1440, &[(30, 1)])];
        let c = choose_mode(&modes, &ModeRequest::default()).unwrap();
        assert_eq!((c.width, c.height), (2560, 1440));
        // A real-time mode beats a larger slow one.
        let modes = vec![mode("YUYV", 1920, 1080, &[(5, 1)]), mode("YUYV", 640, 480, &[(30, 1)])];
        assert_eq!(choose_mode(&modes, &ModeRequest::default()).unwrap().width, 640);
    }

    #[test]
    fn unsupported_formats_are_skipped_and_the_error_lists_the_offer() {
        let modes = vec![mode("BA81", 1920, 1080, &[(30, 1)]), mode("YUYV", 640, 480, &[(30, 1)])];
        assert_eq!(choose_mode(&modes, &ModeRequest::default()).unwrap().fourcc, "YUYV");
        let e = choose_mode(&modes, &ModeRequest { width: Some(1280), height: Some(720), ..Default::default() })
            .unwrap_err();
        assert!(e.contains("1280x720") && e.contains("BA81 1920x1080 [30 fps] (unsupported)"), "{e}");
        assert!(e.contains("YUYV 640x480 [30 fps]"), "{e}");
        assert!(choose_mode(&[], &ModeRequest::default()).unwrap_err().contains("lists none"));
    }

    #[test]
    fn stepwise_sizes_become_common_sizes_on_their_steps() {
        let r = v4l::framesize::Stepwise {
            min_width: 16,
            max_width: 1920,
            step_width: 16,
            min_height: 16,
            max_height: 1088,
            step_height: 8,
        };
        // 1080 = 16 + 133 * 8 lies on the height steps; 1920, 1280 and 640 on the widths.
        let v = sizes_of(&FrameSizeEnum::Stepwise(r));
        assert_eq!(v, vec![(1920, 1080), (1280, 720), (640, 480), (1920, 1088)]);
        let zero = v4l::framesize::Stepwise {
            min_width: 640,
            max_width: 640,
            step_width: 0,
            min_height: 480,
            max_height: 480,
            step_height: 0,
        };
        assert_eq!(sizes_of(&FrameSizeEnum::Stepwise(zero)), vec![(640, 480)]);
    }

    #[test]
    fn intervals_become_rates() {
        let d = |n, dd| FrameIntervalEnum::Discrete(v4l::Fraction::new(n, dd));
        assert_eq!(
            rates_of([d(1, 30), d(1001, 30000), d(0, 1)].into_iter()),
            Rates::Discrete(vec![(30, 1), (30000, 1001)])
        );
        let s = v4l::frameinterval::Stepwise {
            min: v4l::Fraction::new(1, 60),
            max: v4l::Fraction::new(1, 5),
            step: v4l::Fraction::new(1, 1),
        };
        assert_eq!(rates_of([FrameIntervalEnum::Stepwise(s)].into_iter()), Rates::Range { min: 5.0, max: 60.0 });
    }

    #[test]
    fn a_node_that_is_not_v4l2_is_a_clear_error() {
        let e = probe(Path::new("/dev/null")).unwrap_err();
        assert!(e.contains("/dev/null is not a V4L2 device") && e.contains("VIDIOC_QUERYCAP"), "{e}");
        let e = probe(Path::new("/dev/video-none-here")).unwrap_err();
        assert!(e.contains("opening /dev/video-none-here"), "{e}");
    }
}
