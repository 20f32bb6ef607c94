//! edgert-media end to end: synthetic H.264 streams with known frame counts through the
//! sources, the mux and BlazeFace; the bundled face clip against its ground truth; faults
//! (truncated file, corrupt bitstream, unreachable RTSP, missing camera) among healthy
//! streams; and hardware-dependent checks that skip here.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use edgert_core::tensor::DataMut;
use edgert_core::{Context, Engine, npy, onnx};
use edgert_media::postprocess::blazeface::{FaceModelSpec, decode};
use edgert_media::postprocess::nms::{iou, weighted_nms};
use edgert_media::testclip::{ClipSpec, encode_clip};
use edgert_media::{Detection, Frame, InputFormat, Mux, MuxConfig, SourceConfig, StreamEvent, rgb_to_input, uri};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("edgert-media-tests-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// Runs the sources to the end (or `limit`), returning every frame by stream, and the mux.
fn run_sources(uris: &[String], cfg: SourceConfig, mux_cfg: MuxConfig, limit: Duration) -> (Vec<Vec<Frame>>, Arc<Mux>) {
    edgert_media::init().unwrap();
    let mux = Arc::new(Mux::new(mux_cfg));
    let stop = Arc::new(AtomicBool::new(false));
    let streams: Vec<_> = uris
        .iter()
        .map(|u| edgert_media::spawn(uri::parse(u).unwrap(), mux.clone(), cfg.clone(), stop.clone()))
        .collect();
    let mut out: Vec<Vec<Frame>> = vec![Vec::new(); uris.len()];
    let t0 = Instant::now();
    let watchdog = {
        let mux = mux.clone();
        std::thread::spawn(move || {
            let until = Instant::now() + limit;
            while Instant::now() < until && !mux.is_closed() {
                std::thread::sleep(Duration::from_millis(50));
            }
            mux.close();
        })
    };
    while let Some(batch) = mux.next_batch() {
        assert!(batch.len() <= mux_cfg.batch_size);
        for f in batch {
            mux.mark_inferred(f.stream, 1);
            out[f.stream].push(f);
        }
    }
    assert!(t0.elapsed() < limit, "sources did not finish within {limit:?}");
    mux.close();
    watchdog.join().unwrap();
    for s in streams {
        s.join();
    }
    (out, mux)
}

struct Blazeface {
    ctx: Context,
    spec: FaceModelSpec,
}

impl Blazeface {
    fn new(file: &str, spec: FaceModelSpec) -> Blazeface {
        let g = onnx::load_model(&root().join(file)).unwrap();
        let engine = Arc::new(Engine::from_graph(g).unwrap());
        let (w, h) = spec.input_size;
        let ctx = Context::new(engine, &HashMap::from([("input".to_string(), vec![1, 3, h, w])])).unwrap();
        Blazeface { ctx, spec }
    }

    /// Detections in source pixels.
    fn detect(&mut self, f: &Frame) -> Vec<Detection> {
        {
            let mut t = self.ctx.input_mut("input").unwrap();
            let DataMut::F32(buf) = &mut t.data else { panic!("float input") };
            rgb_to_input(&f.rgb, f.width as usize, f.height as usize, &InputFormat::mediapipe_nchw(), buf).unwrap();
        }
        self.ctx.run().unwrap();
        let reg = self.ctx.output(0).unwrap();
        let sc = self.ctx.output(1).unwrap();
        let mut dets = Vec::new();
        decode(reg.as_f32().unwrap(), sc.as_f32().unwrap(), &self.spec.anchors, &self.spec.decode, &mut dets).unwrap();
        weighted_nms(dets, self.spec.nms_iou, 100).iter().map(|d| f.letterbox.to_source(d)).collect()
    }
}

fn boxed(b: [f32; 4]) -> Detection {
    Detection { xmin: b[0], ymin: b[1], xmax: b[2], ymax: b[3], score: 1.0, keypoints: vec![] }
}

/// Hand-annotated face of astronaut.png (models/video/make_faces_clip.py: FACE_BOX).
const ASTRONAUT_FACE: [f32; 4] = [178.0, 70.0, 272.0, 180.0];

#[test]
fn goldens_decode_to_the_annotated_face() {
    // onnxruntime's outputs on astronaut.png (tests/goldens): one face where annotated.
    for (case, spec) in
        [("blazeface_short", FaceModelSpec::blazeface_short()), ("blazeface_full", FaceModelSpec::blazeface_full())]
    {
        let d = root().join("tests/goldens").join(case);
        let reg = npy::read(&d.join("output_0.npy")).unwrap();
        let sc = npy::read(&d.join("output_1.npy")).unwrap();
        let mut dets = Vec::new();
        decode(reg.as_f32().unwrap(), sc.as_f32().unwrap(), &spec.anchors, &spec.decode, &mut dets).unwrap();
        let faces = weighted_nms(dets, spec.nms_iou, 100);
        assert_eq!(faces.len(), 1, "{case}: {faces:?}");
        let f = &faces[0];
        let px = boxed([f.xmin * 512.0, f.ymin * 512.0, f.xmax * 512.0, f.ymax * 512.0]);
        let i = iou(&px, &boxed(ASTRONAUT_FACE));
        eprintln!(
            "{case}: face {:?} score {:.3}, IoU with the annotation {i:.2}",
            [px.xmin, px.ymin, px.xmax, px.ymax],
            f.score
        );
        assert!(i >= 0.5, "{case}: IoU {i}");
        // Keypoint order: right eye (image left) then left eye, both above the nose.
        assert!(f.keypoints[0].x < f.keypoints[1].x && f.keypoints[0].y < f.keypoints[2].y);
    }
    // A face-free photo: nothing.
    let d = root().join("tests/goldens/blazeface_full_coffee");
    let spec = FaceModelSpec::blazeface_full();
    let mut dets = Vec::new();
    let (reg, sc) = (npy::read(&d.join("output_0.npy")).unwrap(), npy::read(&d.join("output_1.npy")).unwrap());
    decode(reg.as_f32().unwrap(), sc.as_f32().unwrap(), &spec.anchors, &spec.decode, &mut dets).unwrap();
    assert!(dets.is_empty(), "{dets:?}");
}

#[test]
fn synthetic_streams_every_frame_exactly_once() {
    // Three containers, three lengths; batches of 4 over 3 streams.
    let clips = [("a.mp4", 30u32), ("b.mkv", 45), ("c.h264", 21)];
    let mut uris = Vec::new();
    for (name, n) in clips {
        let p = tmp(name);
        encode_clip(&ClipSpec::small(320, 240, n), &p).unwrap();
        uris.push(format!("file://{}", p.display()));
    }
    let mux_cfg = MuxConfig::new(4, 30.0);
    let (frames, mux) = run_sources(&uris, SourceConfig::new(128, 128), mux_cfg, Duration::from_secs(60));
    let mut model = Blazeface::new("models/blazeface_short.onnx", FaceModelSpec::blazeface_short());
    let stats = mux.stats();
    for (i, (_, n)) in clips.iter().enumerate() {
        let idx: Vec<u64> = frames[i].iter().map(|f| f.index).collect();
        assert_eq!(idx, (0..*n as u64).collect::<Vec<_>>(), "stream {i}: every frame once, in order");
        let s = &stats[i];
        assert_eq!(
            (s.decoded, s.batched, s.inferred, s.dropped, s.queued),
            (*n as u64, *n as u64, *n as u64, 0, 0),
            "{s:?}"
        );
        assert!(s.errors.is_empty(), "{:?}", s.errors);
        assert!(s.decoder.as_deref().is_some_and(|d| d.contains("dec")), "decoder reported: {:?}", s.decoder);
        // 320x240 in 128x128: 128x96 picture, 16-pixel borders (black).
        let f = &frames[i][0];
        assert_eq!((f.letterbox.x, f.letterbox.y, f.letterbox.w, f.letterbox.h), (0, 16, 128, 96));
        assert!(f.rgb[..128 * 3 * 15].iter().all(|&v| v < 20), "top border not black");
        // Containers carry time stamps: they advance by one frame period (1/30 s).
        if i < 2 {
            let d = frames[i][1].pts.unwrap().as_secs_f64() - f.pts.unwrap().as_secs_f64();
            assert!((d - 1.0 / 30.0).abs() < 1e-3, "stream {i}: pts step {d}");
        }
    }
    // Inference on each frame of one stream: a moving ball is no face.
    for f in &frames[2] {
        assert!(model.detect(f).is_empty(), "face found in videotestsrc frame {}", f.index);
    }
    let events = mux.take_events();
    assert_eq!(events.iter().filter(|e| matches!(e, StreamEvent::Eos { .. })).count(), 3);
}

#[test]
fn batch_timeout_keeps_a_slow_stream_from_stalling_others() {
    // A 30 fps live stream and a 2 fps one; batches of 2 with a 40 ms timeout. Without the
    // timeout the fast stream would wait for the slow one (500 ms per frame).
    let timeout = Duration::from_millis(40);
    let mux_cfg = MuxConfig { batch_size: 2, batch_timeout: timeout, queue_capacity: 8 };
    edgert_media::init().unwrap();
    let mux = Arc::new(Mux::new(mux_cfg));
    let stop = Arc::new(AtomicBool::new(false));
    let cfg = SourceConfig::new(64, 64);
    let uris = ["test://160x120@30?frames=30", "test://160x120@2?frames=3"];
    let streams: Vec<_> = uris
        .iter()
        .map(|u| edgert_media::spawn(uri::parse(u).unwrap(), mux.clone(), cfg.clone(), stop.clone()))
        .collect();
    let mut waits = Vec::new();
    let mut counts = [0u64; 2];
    while let Some(batch) = mux.next_batch() {
        for f in batch {
            counts[f.stream] += 1;
            if f.stream == 0 {
                waits.push(f.decoded_at.elapsed());
            }
        }
    }
    for s in streams {
        s.join();
    }
    assert_eq!(counts, [30, 3]);
    waits.sort();
    let worst = *waits.last().unwrap();
    eprintln!("fast stream: median wait {:?}, worst {worst:?} (timeout {timeout:?})", waits[waits.len() / 2]);
    assert!(worst < timeout + Duration::from_millis(150), "a frame waited {worst:?}");
    let st = mux.stats();
    assert_eq!((st[0].dropped, st[1].dropped), (0, 0));
}

/// Letterboxing keeps the aspect ratio between black borders; stretching fills the input.
#[test]
fn letterbox_or_stretch() {
    // A white 2:1 clip: letterboxed into 64x64 it has black bands above and below.
    let clip = tmp("white.mp4");
    encode_clip(&ClipSpec { pattern: "white".into(), ..ClipSpec::small(320, 160, 3) }, &clip).unwrap();
    let uri = vec![format!("file://{}", clip.display())];
    let (lb, _) = run_sources(&uri, SourceConfig::new(64, 64), MuxConfig::new(1, 30.0), Duration::from_secs(30));
    let stretch_cfg = SourceConfig { stretch: true, ..SourceConfig::new(64, 64) };
    let (st, _) = run_sources(&uri, stretch_cfg, MuxConfig::new(1, 30.0), Duration::from_secs(30));
    assert_eq!((lb[0].len(), st[0].len()), (3, 3));
    let (a, b) = (&lb[0][0], &st[0][0]);
    assert_eq!((a.width, a.height, b.width, b.height), (64, 64, 64, 64));
    assert_eq!((a.letterbox.x, a.letterbox.y, a.letterbox.w, a.letterbox.h), (0, 16, 64, 32));
    assert_eq!((b.letterbox.x, b.letterbox.y, b.letterbox.w, b.letterbox.h), (0, 0, 64, 64));
    let mean =
        |f: &Frame, y: usize| f.rgb[y * 64 * 3..(y + 1) * 64 * 3].iter().map(|&v| v as f64).sum::<f64>() / (64.0 * 3.0);
    for y in [0, 8, 14, 49, 63] {
        assert!(mean(a, y) < 20.0, "letterboxed row {y} is not border: {}", mean(a, y));
    }
    for y in [0, 8, 14, 32, 49, 63] {
        assert!(mean(b, y) > 200.0, "stretched row {y} is not picture: {}", mean(b, y));
    }
    assert!(mean(a, 32) > 200.0, "letterboxed picture in the middle");
    // The model-input centre maps back to the source centre either way; a stretched
    // input's corner is the source's corner.
    for f in [a, b] {
        let (x, y) = f.letterbox.point_to_source(0.5, 0.5);
        assert!((x - 160.0).abs() < 1.0 && (y - 80.0).abs() < 1.0, "{x} {y}");
    }
    assert_eq!(b.letterbox.point_to_source(1.0, 1.0), (320.0, 160.0));
}

/// The nice value of each thread of this process, by thread id (Linux `/proc`).
#[cfg(target_os = "linux")]
fn thread_nices() -> Vec<(u64, String, i64)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else { continue };
        // `tid (comm) state ...`: nice is the 19th field, the 17th after the comm.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else { continue };
        let comm = stat[open + 1..close].to_string();
        let nice = stat[close + 2..].split(' ').nth(16).and_then(|v| v.parse().ok());
        if let (Ok(tid), Some(nice)) = (e.file_name().to_string_lossy().parse(), nice) {
            out.push((tid, comm, nice));
        }
    }
    out
}

#[cfg(target_os = "linux")]
#[test]
fn streaming_threads_take_the_configured_niceness() {
    edgert_media::init().unwrap();
    // Queues of one frame that block: the pipeline's threads stay alive while we look.
    let mux =
        Arc::new(Mux::new(MuxConfig { batch_size: 1, batch_timeout: Duration::from_millis(5), queue_capacity: 1 }));
    let stop = Arc::new(AtomicBool::new(false));
    // 13 is used by no other test: pooled streaming threads other tests' pipelines left
    // behind cannot be mistaken for ours.
    let cfg = SourceConfig { streaming_nice: 13, ..SourceConfig::new(32, 32) };
    let base = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
    let base: i64 = base[base.rfind(')').unwrap() + 2..].split(' ').nth(16).unwrap().parse().unwrap();
    let want = (base + 13).min(19);
    let s =
        edgert_media::spawn(uri::parse("test://64x48@30?frames=20&live=0").unwrap(), mux.clone(), cfg, stop.clone());
    let first = mux.next_batch().expect("a first frame");
    assert_eq!(first.len(), 1);
    let during = thread_nices();
    let mut n = 1;
    while let Some(b) = mux.next_batch() {
        n += b.len();
    }
    s.join();
    assert_eq!(n, 20);
    let lowered: Vec<_> = during.iter().filter(|t| t.2 == want).collect();
    // Two streaming threads: videotestsrc's and the queue's (scale, convert, appsink).
    assert!(lowered.len() >= 2, "threads while the source runs (base nice {base}): {during:?}");
    // The source's own thread (it pulls frames into the mux) keeps the caller's niceness.
    assert!(during.iter().any(|t| t.1.starts_with("source-") && t.2 == base), "{during:?}");
    // Back in the pool, the threads have their niceness back (where that is allowed).
    if unsafe { libc::geteuid() } == 0 {
        let after: Vec<_> = thread_nices().into_iter().filter(|t| t.2 == want).collect();
        assert!(after.is_empty(), "still niced after the stream ended: {after:?}");
    }
}

#[test]
fn faces_at_known_places_and_none_elsewhere() {
    let clip = root().join("models/video/faces.mp4");
    let truth: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root().join("models/video/faces.json")).unwrap()).unwrap();
    let mut cfg = SourceConfig::new(128, 128);
    cfg.keep_full = true;
    let (frames, mux) =
        run_sources(&[format!("file://{}", clip.display())], cfg, MuxConfig::new(1, 30.0), Duration::from_secs(60));
    let frames = &frames[0];
    let want = truth["frames_truth"].as_array().unwrap();
    assert_eq!(frames.len(), want.len());
    assert_eq!(mux.stats()[0].decoded, want.len() as u64);
    let full = frames[0].full.as_ref().unwrap();
    assert_eq!((full.width, full.height), (640, 360));
    let mut model = Blazeface::new("models/blazeface_short.onnx", FaceModelSpec::blazeface_short());
    let (mut found, mut faces, mut ious) = (0, 0, Vec::new());
    for (f, t) in frames.iter().zip(want) {
        let dets = model.detect(f);
        match t["face"].as_array() {
            None => assert!(dets.is_empty(), "frame {}: {dets:?} on a face-free frame", f.index),
            Some(b) => {
                faces += 1;
                let b: Vec<f32> = b.iter().map(|v| v.as_f64().unwrap() as f32).collect();
                let truth_box = boxed([b[0], b[1], b[2], b[3]]);
                assert!(dets.len() <= 1, "frame {}: {} faces for one", f.index, dets.len());
                if let Some(d) = dets.first() {
                    let i = iou(d, &truth_box);
                    ious.push(i);
                    assert!(i >= 0.5, "frame {}: IoU {i:.2} ({d:?} vs {b:?})", f.index);
                    found += 1;
                }
            }
        }
    }
    ious.sort_by(f32::total_cmp);
    eprintln!("faces found in {found}/{faces} frames; IoU min {:.2} median {:.2}", ious[0], ious[ious.len() / 2]);
    assert_eq!(found, faces, "every face frame has its face");
}

#[test]
fn faults_are_reported_while_others_keep_running() {
    let good = tmp("good.mp4");
    encode_clip(&ClipSpec::small(320, 240, 30), &good).unwrap();
    // Truncated: the first half of an MP4 whose index (moov) is written at the end.
    let bytes = std::fs::read(&good).unwrap();
    let truncated = tmp("truncated.mp4");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    // Corrupt bitstream: a raw H.264 stream with its middle overwritten by noise.
    let raw = tmp("corrupt.h264");
    encode_clip(&ClipSpec::small(320, 240, 60), &raw).unwrap();
    let mut b = std::fs::read(&raw).unwrap();
    let (a, z) = (b.len() / 3, 2 * b.len() / 3);
    let mut x = 0x2545F491u32;
    for v in &mut b[a..z] {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        *v = x as u8;
    }
    std::fs::write(&raw, &b).unwrap();
    let garbage = tmp("garbage.mp4");
    std::fs::write(&garbage, &b[a..z]).unwrap();
    // Corrupt samples in an MP4 (the index, written at the end, stays intact).
    let damaged = tmp("damaged.mp4");
    encode_clip(&ClipSpec::small(320, 240, 60), &damaged).unwrap();
    let mut m = std::fs::read(&damaged).unwrap();
    let (a, z) = (m.len() / 3, m.len() / 2);
    for v in &mut m[a..z] {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        *v = x as u8;
    }
    std::fs::write(&damaged, &m).unwrap();
    let uris = vec![
        format!("file://{}", good.display()),
        format!("file://{}", truncated.display()),
        format!("file://{}", raw.display()),
        format!("file://{}", garbage.display()),
        "rtsp://127.0.0.1:9/none".to_string(),
        "v4l2:///dev/video97".to_string(),
        "csi://0".to_string(),
        format!("file://{}", good.display()),
        format!("file://{}", damaged.display()),
        // A node that exists but is no camera: the driver query (v4l crate) says so.
        "v4l2:///dev/null?width=640&height=480".to_string(),
    ];
    let mut cfg = SourceConfig::new(128, 128);
    cfg.max_retries = 2;
    cfg.backoff = Duration::from_millis(50);
    let (frames, mux) = run_sources(&uris, cfg, MuxConfig::new(4, 30.0), Duration::from_secs(90));
    let st = mux.stats();
    for (i, s) in st.iter().enumerate() {
        eprintln!(
            "{i} {}: decoded {} errors {:?} warnings {:?} reconnects {}",
            s.uri, s.decoded, s.errors, s.warnings, s.reconnects
        );
        assert!(s.ended);
        assert_eq!(s.decoded, s.batched);
        assert_eq!(s.decoded as usize, frames[i].len());
    }
    // The healthy streams are complete.
    for i in [0, 7] {
        assert_eq!(frames[i].len(), 30);
        assert!(st[i].errors.is_empty());
    }
    // Each broken source reported an error that names it.
    for i in [1, 3, 4, 5, 6, 9] {
        assert!(!st[i].errors.is_empty(), "stream {i} reported no error");
        assert!(st[i].errors[0].contains(&uris[i]), "{}", st[i].errors[0]);
    }
    assert!(st[4].reconnects == 2, "rtsp reconnected {} times", st[4].reconnects);
    assert!(st[5].errors[0].contains("no device"));
    assert!(st[6].errors[0].contains("nvarguscamerasrc"));
    assert!(st[9].errors[0].contains("/dev/null is not a V4L2 device"), "{}", st[9].errors[0]);
    assert_eq!(frames[9].len(), 0);
    // Corrupt samples in a container: the decoder skips damaged data without a message; the
    // frames lost show as a time-stamp gap, reported as a warning (or the stream stops with
    // an error).
    assert!(frames[8].len() <= 60);
    if frames[8].len() < 60 {
        assert!(!st[8].warnings.is_empty() || !st[8].errors.is_empty(), "frames lost silently: {:?}", st[8]);
    }
    // A raw elementary stream has no time stamps of its own: frames lost there cannot be told
    // (known limit); the stream still ends, counted, without a panic.
    assert!(frames[2].len() <= 60);
    assert!(st[6].reconnects == 0, "a missing CSI element is not retried");
    for i in [0, 7] {
        assert!(st[i].warnings.is_empty(), "{:?}", st[i].warnings);
    }
}

#[test]
fn hardware_decoder_when_present() {
    edgert_media::init().unwrap();
    let c = edgert_media::decoder::select_decoder("video/x-h264", 1).unwrap();
    if c.element.starts_with("avdec") {
        eprintln!("skipped: no hardware decoder ({})", c.skipped.join("; "));
        return;
    }
    let p = tmp("hw.mp4");
    encode_clip(&ClipSpec::small(320, 240, 10), &p).unwrap();
    let (frames, mux) = run_sources(
        &[format!("file://{}", p.display())],
        SourceConfig::new(128, 128),
        MuxConfig::new(1, 30.0),
        Duration::from_secs(30),
    );
    assert_eq!(frames[0].len(), 10);
    assert!(mux.stats()[0].decoder.as_deref().unwrap_or("").contains(&c.element));
}

#[test]
fn camera_when_present() {
    let dev = Path::new("/dev/video0");
    if !dev.exists() {
        eprintln!("skipped: no camera (/dev/video0)");
        return;
    }
    edgert_media::init().unwrap();
    let mux = Arc::new(Mux::new(MuxConfig::new(1, 30.0)));
    let stop = Arc::new(AtomicBool::new(false));
    let cfg = SourceConfig { max_retries: 0, ..SourceConfig::new(128, 128) };
    let s = edgert_media::spawn(uri::parse("v4l2:///dev/video0").unwrap(), mux.clone(), cfg, stop.clone());
    let t0 = Instant::now();
    let mut n = 0;
    while t0.elapsed() < Duration::from_secs(3) && !mux.stats()[0].ended {
        if let Some(b) = mux.next_batch() {
            n += b.len();
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    mux.close();
    s.join();
    let st = &mux.stats()[0];
    eprintln!("camera: {n} frames, errors {:?}", st.errors);
    assert!(n > 0 || !st.errors.is_empty(), "a camera that neither delivers nor reports");
}

#[test]
fn video_writer_refuses_bad_frames_and_finishes_a_file() {
    use edgert_media::VideoWriter;
    let bad = VideoWriter::create(&tmp("x.avi"), 64, 48, 30).err().expect("an .avi is refused");
    assert!(bad.to_string().contains(".mp4 or .mkv"), "{bad}");
    assert!(VideoWriter::create(&tmp("odd.mp4"), 63, 48, 30).is_err(), "odd sizes are refused");
    let path = tmp("writer.mp4");
    let mut w = VideoWriter::create(&path, 64, 48, 30).unwrap();
    let frame = vec![128u8; 64 * 48 * 3];
    for i in 0..5u64 {
        w.write(&frame, 64, 48, Duration::from_millis(i * 33)).unwrap();
    }
    let e = w.write(&frame, 32, 48, Duration::from_millis(500)).unwrap_err();
    assert!(e.to_string().contains("does not fit"), "{e}");
    let e = w.write(&frame, 64, 48, Duration::from_millis(10)).unwrap_err();
    assert!(e.to_string().contains("not after"), "{e}");
    assert_eq!(w.finish().unwrap(), 5);
    // The file decodes back to the 5 frames.
    let (frames, _) = run_sources(
        &[format!("file://{}", path.display())],
        SourceConfig::new(32, 32),
        MuxConfig::new(1, 30.0),
        Duration::from_secs(20),
    );
    assert_eq!(frames[0].len(), 5);
}
