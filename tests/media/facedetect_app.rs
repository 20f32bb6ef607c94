//! `facedetect` end to end: the bundled clip (JSON lines, snapshots, summary), several
//! streams with a broken one (exit code 2, the others complete), and a one-trial bench.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("facedetect-tests-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

fn facedetect() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_facedetect"));
    c.current_dir(root());
    c
}

#[test]
fn bundled_clip_json_lines_and_snapshots() {
    let out = tmp("faces.jsonl");
    let snaps = tmp("snaps");
    let summary = tmp("summary.json");
    let st = facedetect()
        .args(["file://models/video/faces.mp4", "--snapshot-every", "20", "--output"])
        .arg(format!("file://{}", out.display()))
        .arg("--snapshots")
        .arg(&snaps)
        .arg("--summary-json")
        .arg(&summary)
        .status()
        .unwrap();
    assert!(st.success());
    let text = std::fs::read_to_string(&out).unwrap();
    let lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 60, "one line per frame, faces or not");
    for (i, l) in lines.iter().enumerate() {
        assert_eq!(l["stream"], 0);
        assert_eq!(l["frame"], i as u64);
        // pts advance by one frame period (15 fps); the first one is the container's offset.
        let pts = l["pts_ms"].as_f64().unwrap();
        let first = lines[0]["pts_ms"].as_f64().unwrap();
        assert!((pts - first - i as f64 * 1000.0 / 15.0).abs() < 1.0, "frame {i} pts {pts}");
        let d = l["detections"].as_array().unwrap();
        assert_eq!(d.len(), if i < 45 { 1 } else { 0 }, "frame {i}: {d:?}");
        for det in d {
            let b: Vec<f64> = det["box"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
            assert!(b[0] < b[2] && b[1] < b[3] && b[2] <= 640.0 && b[3] <= 360.0, "{b:?}");
            assert_eq!(det["keypoints"].as_array().unwrap().len(), 6);
            assert!(det["score"].as_f64().unwrap() >= 0.5);
        }
    }
    let mut files: Vec<_> = std::fs::read_dir(&snaps).unwrap().map(|e| e.unwrap().file_name()).collect();
    files.sort();
    assert_eq!(files, ["stream0_frame00000.png", "stream0_frame00020.png", "stream0_frame00040.png"]);
    let s: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    let s0 = &s["streams"][0];
    assert_eq!(
        (s0["decoded"].as_u64(), s0["inferred"].as_u64(), s0["dropped"].as_u64()),
        (Some(60), Some(60), Some(0))
    );
    assert!(s["latency_ms"]["p99"].as_f64().is_some());
}

#[test]
fn broken_stream_is_reported_and_others_complete() {
    let missing = tmp("missing.mp4");
    let out = tmp("multi.jsonl");
    let summary = tmp("multi.json");
    let o = facedetect()
        .args(["test://160x120@30?frames=12&live=0", "test://160x120@30?frames=20&live=0"])
        .arg(format!("file://{}", missing.display()))
        .args(["rtsp://127.0.0.1:9/none", "--retries", "1", "--backoff-ms", "100", "--batch-size", "3", "--output"])
        .arg(&out)
        .arg("--summary-json")
        .arg(&summary)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    eprintln!("{err}");
    assert_eq!(o.status.code(), Some(2), "errors give exit code 2");
    assert!(err.contains("ERROR") && err.contains("missing.mp4") && err.contains("rtsp://127.0.0.1:9/none"));
    assert!(err.contains("reconnecting"), "the RTSP source retries with back-off");
    assert!(err.contains("skipped nvh264dec") || err.contains("nvh264dec") || !err.contains("avdec_h264"));
    let s: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    assert_eq!(s["streams"][0]["inferred"], 12);
    assert_eq!(s["streams"][1]["inferred"], 20);
    assert_eq!(s["streams"][2]["inferred"], 0);
    let lines = std::fs::read_to_string(&out).unwrap().lines().count();
    assert_eq!(lines, 32);
}

/// BlazeFace declares batch 1: by default frames are handed to inference as they come
/// (no waiting for a batch that would run frame by frame anyway); `--batch-size` still
/// groups them when asked.
#[test]
fn mux_batch_follows_what_inference_can_batch() {
    let run = |extra: &[&str], name: &str| {
        let summary = tmp(name);
        let o = facedetect()
            .args(["test://160x120@30?frames=30&live=0", "test://160x120@30?frames=30&live=0", "--output", "none"])
            .args(extra)
            .arg("--summary-json")
            .arg(&summary)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert!(o.status.success(), "{err}");
        let s: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
        assert_eq!((s["streams"][0]["inferred"].as_u64(), s["streams"][1]["inferred"].as_u64()), (Some(30), Some(30)));
        (s, err)
    };
    let (s, err) = run(&[], "default-batch.json");
    assert_eq!((s["mux_batch"].as_u64(), s["inference_batch"].as_u64()), (Some(1), Some(1)), "{s}");
    assert_eq!(s["batch_fill"].as_f64(), Some(1.0));
    assert!(err.contains("batch 2 refused") && err.contains("mux batch 1"), "the refusal is said: {err}");
    let (s, _) = run(&["--batch-size", "2"], "asked-batch.json");
    assert_eq!(s["mux_batch"].as_u64(), Some(2));
    assert!(s["batch_fill"].as_f64().unwrap() > 1.2, "asked for pairs: {s}");
}

#[test]
fn bench_runs_one_trial() {
    let clip = tmp("bench.mp4");
    // A 1 s 320x240 clip stands in for the 1080p one: this checks the search, not capacity.
    edgert_media::testclip::encode_clip(&edgert_media::testclip::ClipSpec::small(320, 240, 30), &clip).unwrap();
    let o = facedetect().args(["--bench", "1", "--bench-seconds", "1", "--bench-clip"]).arg(&clip).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    eprintln!("{text}{}", String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success());
    assert!(text.contains("  1 streams:") && text.contains("bench result:"), "{text}");
}

#[test]
fn annotated_video_output_decodes_with_the_boxes_drawn() {
    let video = tmp("annotated.mp4");
    let o = facedetect()
        .args(["file://models/video/faces.mp4", "--output"])
        .arg(format!("file://{}", video.display()))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("60 annotated frames"), "{err}");
    // The JSON lines still go to stdout.
    let first: Vec<serde_json::Value> =
        String::from_utf8_lossy(&o.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(first.len(), 60);
    let b0: Vec<f64> =
        first[0]["detections"][0]["box"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();

    // Read the video back through the same pipeline: every frame is there, at the source's
    // size and frame rate, with the first frame's box drawn in green.
    let snaps = tmp("annotated_snaps");
    let o = facedetect()
        .arg(format!("file://{}", video.display()))
        .args(["--snapshot-every", "1000", "--snapshots"])
        .arg(&snaps)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let again: Vec<serde_json::Value> =
        String::from_utf8_lossy(&o.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(again.len(), 60, "every annotated frame was encoded");
    let dt = again[1]["pts_ms"].as_f64().unwrap() - again[0]["pts_ms"].as_f64().unwrap();
    assert!((dt - 1000.0 / 15.0).abs() < 1.0, "frame period {dt} ms");
    let img = image::open(snaps.join("stream0_frame00000.png")).unwrap().to_rgb8();
    assert_eq!((img.width(), img.height()), (640, 360));
    let (x0, y0, x1, y1) = (b0[0].round() as u32, b0[1].round() as u32, b0[2].round() as u32, b0[3].round() as u32);
    let mid = (y0 + y1) / 2;
    let green = |x: u32, y: u32| {
        let p = img.get_pixel(x, y);
        p[1] > 180 && p[0] < 100 && p[2] < 100
    };
    assert!(green(x0, mid) && green(x1, mid) && green((x0 + x1) / 2, y0), "box edges are green");
    assert!(!green((x0 + x1) / 2, mid), "the box's inside is the picture");

    // Several streams: one file each.
    let multi = tmp("multi.mkv");
    let o = facedetect()
        .args(["test://160x120@30?frames=10&live=0", "test://160x120@30?frames=7&live=0", "--output"])
        .arg(&multi)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("10 annotated frames") && err.contains("7 annotated frames"), "{err}");
    for k in 0..2 {
        let p = multi.with_file_name(format!("multi_stream{k}.mkv"));
        assert!(std::fs::metadata(&p).map(|m| m.len() > 0).unwrap_or(false), "{}", p.display());
    }
}
