//! GStreamer sources: FLAC and MP3 files made here, and clear errors for missing devices.
#![cfg(feature = "gstreamer")]

use std::path::{Path, PathBuf};

use gstreamer as gst;
use gstreamer::prelude::*;

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("edgert-audio-gst-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Runs a gst-launch style pipeline to its end; false if an element is missing.
fn make(desc: &str) -> bool {
    gst::init().unwrap();
    let p = match gst::parse::launch(desc) {
        Ok(p) => p,
        Err(e) => {
            println!("skipped: cannot build `{desc}`: {e}");
            return false;
        }
    };
    p.set_state(gst::State::Playing).unwrap();
    let bus = p.bus().unwrap();
    for msg in bus.iter_timed(gst::ClockTime::from_seconds(30)) {
        match msg.view() {
            gst::MessageView::Eos(_) => break,
            gst::MessageView::Error(e) => panic!("{desc}: {}", e.error()),
            _ => {}
        }
    }
    p.set_state(gst::State::Null).unwrap();
    true
}

fn read_all(uri: &str) -> Vec<f32> {
    let mut src = edgert_audio::open(uri).unwrap();
    let mut out = Vec::new();
    let mut buf = vec![0.0f32; 1000];
    loop {
        let n = src.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
    }
    out
}

/// Frequency from the zero crossings (rising), Hz.
fn frequency(x: &[f32]) -> f32 {
    let rising = x.windows(2).filter(|w| w[0] < 0.0 && w[1] >= 0.0).count();
    rising as f32 * 16_000.0 / x.len() as f32
}

fn check_tone(path: &Path, what: &str) {
    let x = read_all(&format!("file://{}", path.display()));
    // 3 s at 44.1 kHz stereo in, 16 kHz mono out (MP3 adds encoder delay/padding).
    assert!((47_000..=49_500).contains(&x.len()), "{what}: {} samples", x.len());
    let mid = &x[8000..40_000];
    let f = frequency(mid);
    assert!((f - 440.0).abs() < 5.0, "{what}: {f} Hz, expected 440");
    let rms = (mid.iter().map(|v| v * v).sum::<f32>() / mid.len() as f32).sqrt();
    // audiotestsrc volume 0.5: a sine of peak 0.5 has RMS 0.354.
    assert!((rms - 0.354).abs() < 0.03, "{what}: RMS {rms}");
    println!("{what}: {} samples, {f:.1} Hz, RMS {rms:.3}", x.len());
}

const TONE: &str = "audiotestsrc num-buffers=30 samplesperbuffer=4410 freq=440 volume=0.5 ! \
                    audio/x-raw,rate=44100,channels=2 ! audioconvert";

#[test]
fn flac_file_is_decoded_to_16k_mono() {
    let path = tmp("tone.flac");
    if !make(&format!("{TONE} ! flacenc ! filesink location={}", path.display())) {
        return;
    }
    check_tone(&path, "flac");
}

#[test]
fn mp3_file_is_decoded_to_16k_mono() {
    let path = tmp("tone.mp3");
    if gst::init().is_ok() && gst::ElementFactory::find("lamemp3enc").is_none() {
        println!("skipped: no lamemp3enc (gstreamer1.0-plugins-good/ugly) to make the MP3");
        return;
    }
    if !make(&format!("{TONE} ! lamemp3enc bitrate=128 ! id3v2mux ! filesink location={}", path.display())) {
        return;
    }
    check_tone(&path, "mp3");
}

#[test]
fn a_missing_file_is_an_error_naming_it() {
    let e = edgert_audio::open("file:///nonexistent/dir/x.flac").err().unwrap().to_string();
    assert!(e.contains("/nonexistent/dir/x.flac"), "{e}");
}

#[test]
fn a_file_that_is_not_audio_is_an_error_not_a_hang() {
    let path = tmp("not_audio.mp3");
    std::fs::write(&path, b"this is not an mp3 file at all, just text").unwrap();
    let e = match edgert_audio::open(&format!("file://{}", path.display())) {
        Err(e) => e.to_string(),
        Ok(mut s) => s.read(&mut [0.0; 100]).err().map(|e| e.to_string()).unwrap_or_default(),
    };
    assert!(e.contains("not_audio.mp3"), "expected an error naming the file, got `{e}`");
}

#[test]
fn alsa_without_the_device_is_a_clear_error() {
    match edgert_audio::open("alsa://hw:97,0") {
        Ok(_) => println!("skipped: a capture device hw:97,0 exists here"),
        Err(e) => {
            let e = e.to_string();
            println!("{e}");
            assert!(e.contains("alsa://hw:97,0"), "{e}");
            assert!(e.contains("gstreamer1.0-alsa") || e.contains("arecord -L"), "no hint: {e}");
        }
    }
}

#[test]
fn pulse_without_a_server_is_a_clear_error() {
    match edgert_audio::open("pulse://no-such-source-edgert") {
        Ok(_) => println!("skipped: a PulseAudio source of that name exists here"),
        Err(e) => {
            let e = e.to_string();
            println!("{e}");
            assert!(e.contains("pulse://no-such-source-edgert"), "{e}");
            assert!(e.contains("gstreamer1.0-pulseaudio") || e.contains("pactl"), "no hint: {e}");
        }
    }
}

#[test]
fn rtsp_to_a_closed_port_is_a_clear_error() {
    // Port 9 on localhost: nothing listens (connection refused), no network needed.
    let t0 = std::time::Instant::now();
    let e = edgert_audio::open("rtsp://127.0.0.1:9/audio").err().expect("no RTSP server here").to_string();
    println!("{e} ({} ms)", t0.elapsed().as_millis());
    assert!(e.contains("rtsp://127.0.0.1:9/audio"), "{e}");
    assert!(e.contains("gst-discoverer") || e.contains("plugins-good"), "no hint: {e}");
}
