//! Reading and writing numpy `.npy` files (format versions 1–3 read, version 1 written).

use std::path::Path;

use crate::error::{Error, Result};
use crate::onnx::from_le_bytes;
use crate::tensor::{DType, Tensor};

fn descr(dtype: DType) -> &'static str {
    match dtype {
        DType::F32 => "<f4",
        DType::F16 => "<f2",
        DType::I8 => "|i1",
        DType::U8 => "|u1",
        DType::I32 => "<i4",
        DType::I64 => "<i8",
        DType::Bool => "|b1",
    }
}

fn dtype_of(descr: &str) -> Result<DType> {
    Ok(match descr {
        "<f4" => DType::F32,
        "<f2" => DType::F16,
        "|i1" | "<i1" => DType::I8,
        "|u1" | "<u1" => DType::U8,
        "<i4" => DType::I32,
        "<i8" => DType::I64,
        "|b1" => DType::Bool,
        d if d.starts_with('>') => {
            return Err(Error::Invalid(format!("big-endian .npy ({d}) is not supported: save little-endian")));
        }
        d => {
            return Err(Error::Invalid(format!(
                ".npy type `{d}` is not supported (float32/float16/int8/uint8/int32/int64/bool)"
            )));
        }
    })
}

/// Encodes a tensor as `.npy` version 1.
pub fn to_bytes(t: &Tensor) -> Vec<u8> {
    let shape = match t.shape().len() {
        0 => "()".to_string(),
        1 => format!("({},)", t.shape()[0]),
        _ => format!("({})", t.shape().iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")),
    };
    let mut header = format!("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", descr(t.dtype()), shape);
    // Magic (6) + version (2) + length (2) + header + '\n' is a multiple of 64.
    let total = (10 + header.len() + 1).next_multiple_of(64);
    header.push_str(&" ".repeat(total - 10 - header.len() - 1));
    header.push('\n');
    let mut out = Vec::with_capacity(total + t.len() * t.dtype().size());
    out.extend_from_slice(b"\x93NUMPY\x01\x00");
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    let raw = t.view().data.as_bytes();
    if cfg!(target_endian = "little") {
        out.extend_from_slice(raw);
    } else {
        let size = t.dtype().size();
        for c in raw.chunks_exact(size) {
            out.extend(c.iter().rev());
        }
    }
    out
}

/// Decodes `.npy` bytes.
pub fn from_bytes(bytes: &[u8]) -> Result<Tensor> {
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err(Error::Invalid("not a .npy file (bad magic)".into()));
    }
    let (hlen, hstart) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10usize),
        2 | 3 => {
            if bytes.len() < 12 {
                return Err(Error::Invalid(".npy header truncated".into()));
            }
            (u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize, 12)
        }
        v => return Err(Error::Invalid(format!(".npy format version {v} is not supported"))),
    };
    let header =
        bytes.get(hstart..hstart.saturating_add(hlen)).ok_or_else(|| Error::Invalid(".npy header truncated".into()))?;
    let header = std::str::from_utf8(header).map_err(|_| Error::Invalid(".npy header is not text".into()))?;
    let field = |key: &str| -> Result<&str> {
        let k = format!("'{key}':");
        let at = header.find(&k).ok_or_else(|| Error::Invalid(format!(".npy header lacks `{key}`")))?;
        Ok(header[at + k.len()..].trim_start())
    };
    let d = field("descr")?;
    let d = d
        .strip_prefix('\'')
        .and_then(|s| s.split('\'').next())
        .ok_or_else(|| Error::Invalid("bad .npy descr".into()))?;
    let dtype = dtype_of(d)?;
    if field("fortran_order")?.starts_with("True") {
        return Err(Error::Invalid("Fortran-order .npy is not supported: save with np.ascontiguousarray".into()));
    }
    let s = field("shape")?;
    let s =
        s.strip_prefix('(').and_then(|s| s.split(')').next()).ok_or_else(|| Error::Invalid("bad .npy shape".into()))?;
    let mut shape = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        shape.push(part.parse::<usize>().map_err(|_| Error::Invalid(format!("bad .npy dimension `{part}`")))?);
    }
    let n = shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .ok_or_else(|| Error::Invalid(".npy shape overflows".into()))?;
    let body = &bytes[hstart + hlen..];
    let want = n.checked_mul(dtype.size()).ok_or_else(|| Error::Invalid(".npy shape overflows".into()))?;
    if body.len() != want {
        return Err(Error::Invalid(format!(
            ".npy data has {} bytes, shape {shape:?} of {dtype} needs {want}",
            body.len()
        )));
    }
    Tensor::new(shape, from_le_bytes(dtype, body)?)
}

/// Reads a `.npy` file.
pub fn read(path: &Path) -> Result<Tensor> {
    let bytes = std::fs::read(path).map_err(|e| Error::Io { path: path.display().to_string(), source: e })?;
    from_bytes(&bytes).map_err(|e| Error::Invalid(format!("{}: {e}", path.display())))
}

/// Writes a `.npy` file (version 1, little-endian).
pub fn write(path: &Path, t: &Tensor) -> Result<()> {
    std::fs::write(path, to_bytes(t)).map_err(|e| Error::Io { path: path.display().to_string(), source: e })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TensorData;

    #[test]
    fn round_trip_every_type() {
        for t in [
            Tensor::from_f32(&[2, 3], vec![1.0, -2.5, 3.0, 0.0, 5.5, 6.0]).unwrap(),
            Tensor::from_i64(&[], vec![7]).unwrap(),
            Tensor::new(vec![3], TensorData::Bool(vec![true, false, true])).unwrap(),
            Tensor::new(vec![1, 2], TensorData::I8(vec![-1, 2])).unwrap(),
            Tensor::new(vec![0, 4], TensorData::U8(vec![])).unwrap(),
        ] {
            let b = to_bytes(&t);
            assert_eq!(b.len() % 64, (t.len() * t.dtype().size()) % 64);
            assert_eq!(from_bytes(&b).unwrap(), t);
        }
    }

    #[test]
    fn bad_files_are_errors() {
        let good = to_bytes(&Tensor::from_f32(&[4], vec![1.0; 4]).unwrap());
        for cut in [0, 5, 9, 20, good.len() - 1] {
            assert!(from_bytes(&good[..cut]).is_err(), "cut at {cut}");
        }
        let mut be = good.clone();
        let pos = be.windows(3).position(|w| w == b"<f4").unwrap();
        be[pos] = b'>';
        assert!(from_bytes(&be).unwrap_err().to_string().contains("big-endian"));
    }
}
