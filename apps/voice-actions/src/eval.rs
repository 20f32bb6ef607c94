//! `voice-actions eval DIR`: false rejects, false accepts per hour and trigger latency over a
//! labelled folder (made by `models/kws/make_eval_set.py`).
//!
//! `DIR/labels.json` lists WAV files (paths relative to `DIR`), each `"kind": "positive"` with
//! its keyword utterances (`keyword`, `start_ms`, `end_ms`: where the voice starts and stops)
//! or `"kind": "negative"` (no keyword anywhere). Each file is streamed through the detector
//! from a reset state. An utterance counts as detected when its keyword fires between its
//! start and `late_ms` after its end; the trigger latency is the firing time (the end of the
//! 80 ms chunk that decided) minus `end_ms`. Every detection in a negative file is a false
//! accept; detections in positive files that match no utterance are counted apart.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use serde::{Deserialize, Serialize};

use crate::{Detection, Detector};

/// One keyword utterance in a positive file.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct Utterance {
    /// The keyword said.
    pub keyword: String,
    /// Where the voice starts, ms from the file start.
    pub start_ms: u64,
    /// Where the voice stops.
    pub end_ms: u64,
}

/// One file of the set.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct LabelledFile {
    /// WAV path relative to the set's folder.
    pub file: String,
    /// "positive" or "negative".
    pub kind: String,
    /// Keyword utterances (empty in negative files).
    #[serde(default)]
    pub events: Vec<Utterance>,
}

/// `labels.json`.
#[derive(Clone, Debug, Deserialize)]
pub struct Labels {
    /// The files.
    pub files: Vec<LabelledFile>,
}

/// Per-keyword results.
#[derive(Clone, Debug, Default, Serialize)]
pub struct KeywordResult {
    /// The keyword.
    pub keyword: String,
    /// Its threshold during the run.
    pub threshold: f32,
    /// Utterances of it.
    pub utterances: usize,
    /// Utterances it fired on in time.
    pub detected: usize,
    /// Utterances on which another keyword fired instead of (or as well as) it.
    pub confused: usize,
    /// Trigger latencies of the detected ones (ms after the end of the voice).
    pub latencies_ms: Vec<i64>,
    /// Peak scores of the detected ones (same order): the detections a higher threshold
    /// would keep, approximately (a decision's timing depends on the threshold too).
    pub scores: Vec<f32>,
}

impl KeywordResult {
    /// Fraction of utterances missed.
    pub fn false_reject_rate(&self) -> f64 {
        if self.utterances == 0 { 0.0 } else { 1.0 - self.detected as f64 / self.utterances as f64 }
    }
}

/// A detection that matched nothing.
#[derive(Clone, Debug, Serialize)]
pub struct FalseAccept {
    /// File (relative to the set's folder).
    pub file: String,
    /// The detection.
    pub detection: Detection,
}

/// What `evaluate` measured.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    /// Per keyword, in the detector's head order.
    pub keywords: Vec<KeywordResult>,
    /// Seconds of negative audio.
    pub negative_s: f64,
    /// Detections in negative files.
    pub false_accepts: Vec<FalseAccept>,
    /// Detections in positive files that matched no utterance (also outside any utterance's
    /// window: background between the keywords).
    pub unmatched_in_positive: Vec<FalseAccept>,
    /// Seconds of audio in all.
    pub audio_s: f64,
    /// Seconds spent in the detector.
    pub compute_s: f64,
}

impl Report {
    /// False accepts per hour of negative audio.
    pub fn false_accepts_per_hour(&self) -> f64 {
        if self.negative_s > 0.0 { self.false_accepts.len() as f64 * 3600.0 / self.negative_s } else { 0.0 }
    }

    /// A Markdown summary.
    pub fn markdown(&self) -> String {
        let mut s = String::from(
            "| keyword | threshold | utterances | detected | false-reject rate | confused | latency p50 / p90 / max (ms) |\n\
             |---|---|---|---|---|---|---|\n",
        );
        let mut all_lat = Vec::new();
        let (mut utt, mut det) = (0, 0);
        for k in &self.keywords {
            let mut l = k.latencies_ms.clone();
            all_lat.extend_from_slice(&l);
            utt += k.utterances;
            det += k.detected;
            s += &format!(
                // Shortest exact form: a threshold of 0.9995 must not print as 1.00.
                "| {} | {} | {} | {} | {:.1}% | {} | {} |\n",
                k.keyword,
                k.threshold,
                k.utterances,
                k.detected,
                100.0 * k.false_reject_rate(),
                k.confused,
                percentiles(&mut l)
            );
        }
        let frr = if utt > 0 { 100.0 * (1.0 - det as f64 / utt as f64) } else { 0.0 };
        s += &format!("| all | | {utt} | {det} | {frr:.1}% | | {} |\n\n", percentiles(&mut all_lat));
        s += &format!(
            "False accepts on negative audio: {} in {:.2} h = {:.1} per hour. Unmatched detections in \
             positive files: {}. Audio {:.0} s, detector time {:.1} s (real-time factor {:.4}).\n",
            self.false_accepts.len(),
            self.negative_s / 3600.0,
            self.false_accepts_per_hour(),
            self.unmatched_in_positive.len(),
            self.audio_s,
            self.compute_s,
            if self.audio_s > 0.0 { self.compute_s / self.audio_s } else { 0.0 }
        );
        let mut by_kw: Vec<(String, usize)> = Vec::new();
        for fa in &self.false_accepts {
            match by_kw.iter_mut().find(|(k, _)| *k == fa.detection.keyword) {
                Some((_, n)) => *n += 1,
                None => by_kw.push((fa.detection.keyword.clone(), 1)),
            }
        }
        if !by_kw.is_empty() {
            let parts: Vec<String> = by_kw.iter().map(|(k, n)| format!("{k} {n}")).collect();
            s += &format!("False accepts by keyword: {}.\n", parts.join(", "));
        }
        s
    }
}

fn percentiles(v: &mut [i64]) -> String {
    if v.is_empty() {
        return "-".into();
    }
    v.sort_unstable();
    let p = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    format!("{} / {} / {}", p(0.5), p(0.9), v[v.len() - 1])
}

/// Matches one positive file's detections to its utterances; updates `report`.
pub fn score_positive(
    report: &mut Report,
    file: &str,
    events: &[Utterance],
    detections: &[Detection],
    late_ms: u64,
) -> Result<()> {
    let mut used = vec![false; detections.len()];
    for ev in events {
        let Some(k) = report.keywords.iter().position(|k| k.keyword == ev.keyword) else {
            bail!("{file}: keyword `{}` has no head (the set was made for other keywords?)", ev.keyword);
        };
        report.keywords[k].utterances += 1;
        let in_window = |d: &Detection| d.t_ms >= ev.start_ms && d.t_ms <= ev.end_ms + late_ms;
        let mut hit = false;
        let mut confused = false;
        for (i, d) in detections.iter().enumerate() {
            if used[i] || !in_window(d) {
                continue;
            }
            if d.keyword == ev.keyword && !hit {
                hit = true;
                used[i] = true;
                report.keywords[k].latencies_ms.push(d.t_ms as i64 - ev.end_ms as i64);
                report.keywords[k].scores.push(d.score);
            } else if d.keyword != ev.keyword {
                confused = true;
                used[i] = true;
            }
        }
        report.keywords[k].detected += hit as usize;
        report.keywords[k].confused += confused as usize;
    }
    for (i, d) in detections.iter().enumerate() {
        if !used[i] {
            report.unmatched_in_positive.push(FalseAccept { file: file.to_string(), detection: d.clone() });
        }
    }
    Ok(())
}

/// Runs the detector over every file of the set in `dir`; `progress` is told each file's
/// name and detections.
pub fn evaluate(
    det: &mut Detector,
    dir: &Path,
    late_ms: u64,
    mut progress: impl FnMut(&str, &[Detection]),
) -> Result<Report> {
    let labels_path = dir.join("labels.json");
    let text = std::fs::read_to_string(&labels_path).with_context(|| {
        format!(
            "reading {}: make the set with `.venv/bin/python models/kws/make_eval_set.py --out {}`",
            labels_path.display(),
            dir.display()
        )
    })?;
    let labels: Labels = serde_json::from_str(&text).with_context(|| format!("parsing {}", labels_path.display()))?;
    let mut report = Report {
        keywords: det
            .keywords()
            .iter()
            .enumerate()
            .map(|(i, k)| KeywordResult {
                keyword: k.to_string(),
                threshold: det.thresholds()[i],
                ..KeywordResult::default()
            })
            .collect(),
        ..Report::default()
    };
    let mut compute = Duration::ZERO;
    let mut buf = vec![0.0f32; 16_000];
    for f in &labels.files {
        let path: PathBuf = dir.join(&f.file);
        let mut src = edgert_audio::open(&path.to_string_lossy())
            .with_context(|| format!("{} (listed in {})", path.display(), labels_path.display()))?;
        det.reset();
        let mut found = Vec::new();
        loop {
            let n = src.read(&mut buf)?;
            if n == 0 {
                break;
            }
            let t0 = Instant::now();
            det.push(&buf[..n], |_, d| found.extend(d))?;
            compute += t0.elapsed();
        }
        let secs = det.t_ms() as f64 / 1000.0;
        report.audio_s += secs;
        match f.kind.as_str() {
            "negative" => {
                report.negative_s += secs;
                for d in &found {
                    report.false_accepts.push(FalseAccept { file: f.file.clone(), detection: d.clone() });
                }
            }
            "positive" => score_positive(&mut report, &f.file, &f.events, &found, late_ms)?,
            other => bail!("{}: kind `{other}` (expected positive or negative)", f.file),
        }
        progress(&f.file, &found);
    }
    report.compute_s = compute.as_secs_f64();
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(keywords: &[&str]) -> Report {
        Report {
            keywords: keywords
                .iter()
                .map(|k| KeywordResult { keyword: k.to_string(), threshold: 0.5, ..KeywordResult::default() })
                .collect(),
            ..Report::default()
        }
    }

    fn det(k: &str, t_ms: u64) -> Detection {
        Detection { keyword: k.into(), score: 0.9, t_ms }
    }

    fn utt(k: &str, start_ms: u64, end_ms: u64) -> Utterance {
        Utterance { keyword: k.into(), start_ms, end_ms }
    }

    #[test]
    fn detections_match_utterances_by_keyword_and_time() {
        let mut r = report(&["lights on", "lights off"]);
        let events = [utt("lights on", 1000, 1600), utt("lights off", 5000, 5700), utt("lights on", 9000, 9500)];
        let found = [
            det("lights on", 1760),   // hit, 160 ms late
            det("lights on", 5800),   // wrong keyword inside the second utterance: confusion
            det("lights off", 5840),  // hit, 140 ms late
            det("lights on", 10_600), // 1100 ms after the end: too late, a miss and unmatched
            det("hey edge", 20_000),  // outside every utterance: unmatched
        ];
        score_positive(&mut r, "f.wav", &events, &found, 1000).unwrap();
        let on = &r.keywords[0];
        assert_eq!((on.utterances, on.detected, on.confused), (2, 1, 0));
        assert_eq!(on.latencies_ms, vec![160]);
        assert!((on.false_reject_rate() - 0.5).abs() < 1e-12);
        let off = &r.keywords[1];
        assert_eq!((off.utterances, off.detected, off.confused), (1, 1, 1));
        assert_eq!(off.latencies_ms, vec![140]);
        let unmatched: Vec<u64> = r.unmatched_in_positive.iter().map(|f| f.detection.t_ms).collect();
        assert_eq!(unmatched, vec![10_600, 20_000]);
    }

    #[test]
    fn an_unknown_keyword_in_the_labels_is_an_error_naming_it() {
        let mut r = report(&["lights on"]);
        let e = score_positive(&mut r, "f.wav", &[utt("open the gate", 0, 500)], &[], 1000).unwrap_err();
        assert!(e.to_string().contains("open the gate"), "{e}");
    }

    #[test]
    fn false_accepts_per_hour_and_the_table() {
        let mut r = report(&["hey edge"]);
        r.negative_s = 1800.0;
        r.false_accepts.push(FalseAccept { file: "n.wav".into(), detection: det("hey edge", 100) });
        assert!((r.false_accepts_per_hour() - 2.0).abs() < 1e-12);
        let md = r.markdown();
        assert!(md.contains("1 in 0.50 h = 2.0 per hour"), "{md}");
        assert!(md.contains("hey edge 1"), "{md}");
        // Thresholds near 1 keep their digits.
        r.keywords[0].threshold = 0.9995;
        assert!(r.markdown().contains("| hey edge | 0.9995 |"), "{}", r.markdown());
    }
}
