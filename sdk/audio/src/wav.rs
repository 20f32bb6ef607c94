//! WAV (RIFF WAVE) decoding: PCM 8/16/24/32-bit integer and IEEE float 32/64-bit, including
//! WAVE_FORMAT_EXTENSIBLE. Malformed files are errors, never panics.

/// The sample encoding of a WAV file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Integer PCM with this many bits per sample.
    Pcm(u16),
    /// IEEE float with this many bits per sample.
    Float(u16),
}

/// A decoded WAV file: interleaved samples as f32 in [-1, 1].
#[derive(Debug, Clone)]
pub struct Wav {
    /// Samples per second.
    pub rate: u32,
    /// Channels (interleaved).
    pub channels: u16,
    /// Encoding in the file.
    pub format: Format,
    /// Interleaved samples.
    pub samples: Vec<f32>,
}

impl Wav {
    /// The channels averaged into one.
    pub fn mono(&self) -> Vec<f32> {
        let c = self.channels.max(1) as usize;
        if c == 1 {
            return self.samples.clone();
        }
        self.samples.chunks_exact(c).map(|f| f.iter().sum::<f32>() / c as f32).collect()
    }
}

fn u16_at(b: &[u8], o: usize) -> Option<u16> {
    Some(u16::from_le_bytes([*b.get(o)?, *b.get(o + 1)?]))
}
fn u32_at(b: &[u8], o: usize) -> Option<u32> {
    Some(u32::from_le_bytes([*b.get(o)?, *b.get(o + 1)?, *b.get(o + 2)?, *b.get(o + 3)?]))
}

/// Decodes a WAV file from its bytes. The error says what is wrong.
pub fn decode(b: &[u8]) -> Result<Wav, String> {
    if b.len() < 12 || &b[0..4] != b"RIFF" || &b[8..12] != b"WAVE" {
        return Err("not a RIFF/WAVE file".into());
    }
    let mut pos = 12;
    let mut fmt: Option<(u16, u16, u32, u16)> = None;
    let mut data: Option<&[u8]> = None;
    while pos + 8 <= b.len() {
        let id = &b[pos..pos + 4];
        let size = u32_at(b, pos + 4).ok_or("truncated chunk header")? as usize;
        let start = pos + 8;
        // A data chunk whose size overruns the file (streamed recordings) ends at the file end.
        let end = start.saturating_add(size).min(b.len());
        let body = &b[start..end];
        match id {
            b"fmt " => {
                let mut tag = u16_at(body, 0).ok_or("short fmt chunk")?;
                let channels = u16_at(body, 2).ok_or("short fmt chunk")?;
                let rate = u32_at(body, 4).ok_or("short fmt chunk")?;
                let bits = u16_at(body, 14).ok_or("short fmt chunk")?;
                if tag == 0xFFFE {
                    // WAVE_FORMAT_EXTENSIBLE: the real tag starts the SubFormat GUID.
                    tag = u16_at(body, 24).ok_or("short extensible fmt chunk")?;
                }
                fmt = Some((tag, channels, rate, bits));
            }
            b"data" => data = Some(body),
            _ => {}
        }
        pos = start.saturating_add(size).saturating_add(size & 1);
    }
    let (tag, channels, rate, bits) = fmt.ok_or("no fmt chunk")?;
    let data = data.ok_or("no data chunk")?;
    if channels == 0 || rate == 0 {
        return Err(format!("{channels} channels at {rate} Hz"));
    }
    let format = match (tag, bits) {
        (1, 8 | 16 | 24 | 32) => Format::Pcm(bits),
        (3, 32 | 64) => Format::Float(bits),
        _ => {
            return Err(format!(
                "unsupported encoding (format tag {tag}, {bits} bits): use PCM 8/16/24/32-bit or float 32/64-bit"
            ));
        }
    };
    let samples: Vec<f32> = match format {
        Format::Pcm(8) => data.iter().map(|&v| (v as f32 - 128.0) / 128.0).collect(),
        Format::Pcm(16) => data.chunks_exact(2).map(|c| i16::from_le_bytes([c[0], c[1]]) as f32 / 32768.0).collect(),
        Format::Pcm(24) => data
            .chunks_exact(3)
            .map(|c| (i32::from_le_bytes([0, c[0], c[1], c[2]]) >> 8) as f32 / 8_388_608.0)
            .collect(),
        Format::Pcm(_) => data
            .chunks_exact(4)
            .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f32 / 2_147_483_648.0)
            .collect(),
        Format::Float(32) => data.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect(),
        Format::Float(_) => data
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]) as f32)
            .collect(),
    };
    let whole = samples.len() - samples.len() % channels as usize;
    let mut samples = samples;
    samples.truncate(whole);
    Ok(Wav { rate, channels, format, samples })
}

/// Encodes mono f32 samples as 16-bit PCM WAV.
pub fn encode_pcm16(samples: &[f32], rate: u32) -> Vec<u8> {
    let data_len = samples.len() * 2;
    let mut out = Vec::with_capacity(44 + data_len);
    out.extend_from_slice(b"RIFF");
    out.extend_from_slice(&(36 + data_len as u32).to_le_bytes());
    out.extend_from_slice(b"WAVEfmt ");
    out.extend_from_slice(&16u32.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&rate.to_le_bytes());
    out.extend_from_slice(&(rate * 2).to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&16u16.to_le_bytes());
    out.extend_from_slice(b"data");
    out.extend_from_slice(&(data_len as u32).to_le_bytes());
    for &s in samples {
        out.extend_from_slice(&((s.clamp(-1.0, 1.0) * 32767.0).round() as i16).to_le_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pcm16_round_trips() {
        let x: Vec<f32> = (0..100).map(|i| ((i as f32) * 0.1).sin() * 0.5).collect();
        let w = decode(&encode_pcm16(&x, 16000)).unwrap();
        assert_eq!((w.rate, w.channels, w.format), (16000, 1, Format::Pcm(16)));
        assert_eq!(w.samples.len(), 100);
        assert!(w.samples.iter().zip(&x).all(|(a, b)| (a - b).abs() < 1.0 / 16000.0));
    }

    #[test]
    fn stereo_24bit_and_float_decode() {
        // Hand-built 24-bit stereo: one frame (L = 0.5, R = -0.5).
        let mut b = encode_pcm16(&[], 8000);
        b[22] = 2; // channels
        b[34] = 24; // bits
        let l = (0.5f32 * 8_388_608.0) as i32;
        let r = -l;
        let mut data = Vec::new();
        data.extend_from_slice(&l.to_le_bytes()[..3]);
        data.extend_from_slice(&r.to_le_bytes()[..3]);
        b[40..44].copy_from_slice(&(data.len() as u32).to_le_bytes());
        b.extend_from_slice(&data);
        let w = decode(&b).unwrap();
        assert_eq!(w.samples, vec![0.5, -0.5]);
        assert_eq!(w.mono(), vec![0.0]);
        // Float 32.
        let mut f = encode_pcm16(&[], 16000);
        f[20] = 3;
        f[34] = 32;
        f[40..44].copy_from_slice(&8u32.to_le_bytes());
        f.extend_from_slice(&0.25f32.to_le_bytes());
        f.extend_from_slice(&(-1.0f32).to_le_bytes());
        assert_eq!(decode(&f).unwrap().samples, vec![0.25, -1.0]);
    }

    #[test]
    fn malformed_files_are_errors() {
        assert!(decode(b"").is_err());
        assert!(decode(b"RIFF\0\0\0\0WAVE").is_err());
        let good = encode_pcm16(&[0.1, 0.2], 16000);
        for n in 0..good.len() {
            // Truncations either decode fewer samples or fail: never panic.
            let _ = decode(&good[..n]);
        }
        let mut bad = good.clone();
        bad[34] = 12;
        assert!(decode(&bad).unwrap_err().contains("unsupported"));
    }
}
