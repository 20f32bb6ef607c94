//! Run statistics: latency percentiles, batch fill, the live status line and the summary.

use std::time::Instant;

use edgert_media::StreamStats;
use serde_json::json;

/// Latency samples and batch counts gathered by the workers.
#[derive(Default)]
pub struct Gathered {
    /// Decoded-frame to detections latency, ms, every frame.
    pub latencies_ms: Vec<f32>,
    /// Batches taken from the mux.
    pub batches: u64,
    /// Frames in those batches.
    pub batched_frames: u64,
    /// Frames whose inference failed.
    pub failed: u64,
}

/// The `q` quantile (0..=1) of `v` by nearest rank; `None` when empty.
pub fn percentile(v: &[f32], q: f64) -> Option<f32> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f32::total_cmp);
    let rank = ((q * s.len() as f64).ceil() as usize).clamp(1, s.len());
    Some(s[rank - 1])
}

/// One status line: streams live, fps per stream since the last line, batch fill,
/// latency p50/p99 over the last interval, drops.
pub fn status_line(
    t0: Instant,
    stats: &[StreamStats],
    prev: &[StreamStats],
    dt: f64,
    recent_lat: &[f32],
    fill: f64,
    batch: usize,
) -> String {
    let live = stats.iter().filter(|s| !s.ended).count();
    let fps: Vec<String> = stats
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let before = prev.get(i).map(|p| p.inferred).unwrap_or(0);
            format!("{:.1}", (s.inferred - before) as f64 / dt.max(1e-3))
        })
        .collect();
    let drops: u64 = stats.iter().map(|s| s.dropped).sum();
    let p = |q| percentile(recent_lat, q).map(|v| format!("{v:.1}")).unwrap_or_else(|| "-".into());
    format!(
        "[{:6.1}s] streams {live}/{} | fps {} | batch {fill:.1}/{batch} | latency p50 {} p99 {} ms | drops {drops}",
        t0.elapsed().as_secs_f64(),
        stats.len(),
        fps.join(" "),
        p(0.5),
        p(0.99),
    )
}

/// The final summary as JSON (also printed in words by the caller).
pub fn summary_json(stats: &[StreamStats], g: &Gathered, secs: f64) -> serde_json::Value {
    let streams: Vec<_> = stats
        .iter()
        .enumerate()
        .map(|(i, s)| {
            json!({
                "stream": i,
                "uri": s.uri,
                "decoder": s.decoder,
                "decoded": s.decoded,
                "batched": s.batched,
                "inferred": s.inferred,
                "dropped": s.dropped,
                "fps": s.inferred as f64 / secs.max(1e-9),
                "reconnects": s.reconnects,
                "errors": s.errors,
                "warnings": s.warnings,
            })
        })
        .collect();
    json!({
        "seconds": secs,
        "streams": streams,
        "batches": g.batches,
        "batch_fill": if g.batches > 0 { g.batched_frames as f64 / g.batches as f64 } else { 0.0 },
        "failed_frames": g.failed,
        "latency_ms": {
            "p50": percentile(&g.latencies_ms, 0.5),
            "p99": percentile(&g.latencies_ms, 0.99),
            "max": percentile(&g.latencies_ms, 1.0),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<f32> = (1..=100).map(|x| x as f32).collect();
        assert_eq!(percentile(&v, 0.5), Some(50.0));
        assert_eq!(percentile(&v, 0.99), Some(99.0));
        assert_eq!(percentile(&v, 1.0), Some(100.0));
        assert_eq!(percentile(&[3.0], 0.99), Some(3.0));
        assert_eq!(percentile(&[], 0.5), None);
    }
}
