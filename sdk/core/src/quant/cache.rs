//! The calibration cache: per-tensor int8 scales in a small text file that later builds
//! reuse and people may edit.
//!
//! ```text
//! # comments and blank lines are ignored
//! edgert-calibration v1 method=entropy
//! conv1_out 0.0123456
//! layer%201/relu 0.5
//! ```
//!
//! The first non-comment line is the header (format version and the method that made the
//! scales); then one `name scale` line per tensor. Names are written with whitespace, `%`
//! and `#` percent-encoded (`%20`, `%25`, `%23`); scales in Rust's shortest round-trip form,
//! so writing and reading back gives the same bits.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use super::calibrate::Method;
use crate::error::{Error, Result};

/// The header's first word.
pub const MAGIC: &str = "edgert-calibration";
/// The format version this code writes and reads.
pub const VERSION: &str = "v1";

/// Scales by tensor name, with the method that produced them.
#[derive(Clone, Debug, PartialEq)]
pub struct CalibrationCache {
    /// The calibration method.
    pub method: Method,
    /// Symmetric int8 scale of each tensor.
    pub scales: BTreeMap<String, f32>,
}

fn encode(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for ch in name.chars() {
        if ch.is_whitespace() || ch == '%' || ch == '#' {
            let mut buf = [0u8; 4];
            for b in ch.encode_utf8(&mut buf).bytes() {
                let _ = write!(out, "%{b:02X}");
            }
        } else {
            out.push(ch);
        }
    }
    out
}

fn decode(s: &str) -> std::result::Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3).ok_or_else(|| format!("`%` at byte {i} of `{s}` needs two hex digits"))?;
            let b = u8::from_str_radix(hex, 16).map_err(|_| format!("`%{hex}` in `{s}` is not a hex escape"))?;
            out.push(b);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("`{s}` decodes to invalid UTF-8"))
}

impl CalibrationCache {
    /// The file's text.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let _ =
            writeln!(s, "# edgert INT8 calibration cache: one `tensor-name scale` per line (scale = threshold / 127).");
        let _ = writeln!(s, "# Edit scales by hand if needed; names are percent-encoded (%20 = space).");
        let _ = writeln!(s, "{MAGIC} {VERSION} method={}", self.method.name());
        for (name, scale) in &self.scales {
            let _ = writeln!(s, "{} {scale}", encode(name));
        }
        s
    }

    /// Parses a cache's text. Errors name the line (1-based) and what was expected there.
    pub fn parse(text: &str) -> Result<CalibrationCache> {
        let err = |line: usize, msg: String| Error::Invalid(format!("calibration cache line {line}: {msg}"));
        let mut method = None;
        let mut scales = BTreeMap::new();
        for (idx, raw) in text.lines().enumerate() {
            let line_no = idx + 1;
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let words: Vec<&str> = line.split_whitespace().collect();
            if method.is_none() {
                let want = format!("expected the header `{MAGIC} {VERSION} method=<minmax|entropy|percentile:P>`");
                match words.as_slice() {
                    [magic, version, m] if *magic == MAGIC => {
                        if *version != VERSION {
                            return Err(err(
                                line_no,
                                format!("format {version} is not supported (this edgert reads {VERSION})"),
                            ));
                        }
                        let name = m.strip_prefix("method=").ok_or_else(|| err(line_no, want.clone()))?;
                        method = Some(Method::parse(name).map_err(|e| err(line_no, e.to_string()))?);
                        continue;
                    }
                    _ => return Err(err(line_no, format!("{want}, got `{line}`"))),
                }
            }
            let [name, value] = words.as_slice() else {
                return Err(err(line_no, format!("expected `<tensor name> <scale>`, got `{line}`")));
            };
            let name = decode(name).map_err(|e| err(line_no, e))?;
            let scale: f32 =
                value.parse().map_err(|_| err(line_no, format!("scale `{value}` of `{name}` is not a number")))?;
            if !(scale.is_finite() && scale > 0.0) {
                return Err(err(line_no, format!("scale of `{name}` must be a positive finite number, got {value}")));
            }
            if scales.insert(name.clone(), scale).is_some() {
                return Err(err(line_no, format!("tensor `{name}` appears twice")));
            }
        }
        let method =
            method.ok_or_else(|| err(text.lines().count().max(1), "no header line: empty cache file".into()))?;
        Ok(CalibrationCache { method, scales })
    }

    /// Writes the cache to `path`.
    pub fn write(&self, path: &Path) -> Result<()> {
        std::fs::write(path, self.to_text()).map_err(|e| Error::Io { path: path.display().to_string(), source: e })
    }

    /// Reads a cache from `path`; parse errors name the file and line.
    pub fn read(path: &Path) -> Result<CalibrationCache> {
        let text =
            std::fs::read_to_string(path).map_err(|e| Error::Io { path: path.display().to_string(), source: e })?;
        CalibrationCache::parse(&text).map_err(|e| Error::Invalid(format!("{}: {e}", path.display())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> CalibrationCache {
        let mut scales = BTreeMap::new();
        scales.insert("conv1_out".to_string(), 0.012_345_679f32);
        scales.insert("layer 1/relu#2 %".to_string(), 1.0 / 127.0);
        scales.insert("tiny".to_string(), 1e-30);
        CalibrationCache { method: Method::Percentile(99.99), scales }
    }

    #[test]
    fn round_trips_through_a_file_bit_exactly() {
        let c = sample();
        let dir = std::env::temp_dir().join(format!("edgert-calib-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("model.calib");
        c.write(&path).unwrap();
        let back = CalibrationCache::read(&path).unwrap();
        assert_eq!(back, c);
        for (k, v) in &c.scales {
            assert_eq!(back.scales[k].to_bits(), v.to_bits(), "{k}");
        }
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("edgert-calibration v1 method=percentile:99.99\n"), "{text}");
        assert!(text.contains("layer%201/relu%232%20%25 "), "{text}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn hand_edited_files_parse() {
        let text = "# my scales\n\n  edgert-calibration v1 method=minmax\nx 0.5   # not a comment: error\n";
        assert!(CalibrationCache::parse(text).is_err());
        let text = "# my scales\n\nedgert-calibration v1 method=entropy\n\n  x   0.5\n# y 2\ny 2e-3\n";
        let c = CalibrationCache::parse(text).unwrap();
        assert_eq!(c.method, Method::Entropy);
        assert_eq!(c.scales.len(), 2);
        assert_eq!((c.scales["x"], c.scales["y"]), (0.5, 2e-3));
    }

    #[test]
    fn parse_errors_name_the_line() {
        let cases = [
            ("x 0.5\n", "line 1: expected the header"),
            ("edgert-calibration v2 method=minmax\n", "line 1: format v2 is not supported"),
            ("edgert-calibration v1 method=mse\n", "line 1: unknown calibration method `mse`"),
            ("edgert-calibration v1 method=minmax\na 1\nb\n", "line 3: expected `<tensor name> <scale>`, got `b`"),
            ("edgert-calibration v1 method=minmax\n\na one\n", "line 3: scale `one` of `a` is not a number"),
            ("edgert-calibration v1 method=minmax\na -1\n", "line 2: scale of `a` must be a positive finite number"),
            ("edgert-calibration v1 method=minmax\na NaN\n", "line 2: scale of `a` must be a positive"),
            ("edgert-calibration v1 method=minmax\na 1\na 2\n", "line 3: tensor `a` appears twice"),
            ("edgert-calibration v1 method=minmax\na%2 1\n", "line 2: `%` at byte 1 of `a%2` needs two hex digits"),
            ("# only a comment\n", "line 1: no header line"),
            ("", "line 1: no header line"),
        ];
        for (text, want) in cases {
            let e = CalibrationCache::parse(text).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
        }
        let e = CalibrationCache::read(Path::new("/nonexistent/x.calib")).unwrap_err().to_string();
        assert!(e.contains("/nonexistent/x.calib"), "{e}");
    }
}
