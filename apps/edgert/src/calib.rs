//! Calibration data for `edgert build --precision int8 --calib DIR`: a folder of images
//! (PNG/JPEG, decoded with `image`, resized and normalized as the model's input needs) or of
//! `.npy` tensors for a single-input model, or of sub-folders holding one `<input>.npy` per
//! model input (multi-input models). Files are taken in name order.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, anyhow, bail};
use clap::Args;
use edgert_core::quant::collect::Sample;
use edgert_core::{Tensor, npy};

/// How images become the model's input.
#[derive(Args, Clone, Debug)]
pub struct ImageArgs {
    /// Subtracted from each 0..255 pixel value, one value or one per channel (R,G,B order):
    /// e.g. `127.5` (BlazeFace), `123.675,116.28,103.53` (ImageNet).
    #[arg(long, value_name = "M[,M,M]", default_value = "0")]
    pub calib_mean: String,
    /// Divides after the mean: e.g. `127.5` (BlazeFace, [-1, 1]), `58.395,57.12,57.375`
    /// (ImageNet), `255` ([0, 1]).
    #[arg(long, value_name = "S[,S,S]", default_value = "1")]
    pub calib_std: String,
    /// Feed channels in BGR order (models converted from Caffe/OpenCV).
    #[arg(long)]
    pub calib_bgr: bool,
    /// Use at most this many files.
    #[arg(long, value_name = "N")]
    pub calib_limit: Option<usize>,
}

/// The normalization of an image channel.
struct Norm {
    mean: [f32; 3],
    std: [f32; 3],
    bgr: bool,
}

fn per_channel(s: &str, what: &str) -> Result<[f32; 3]> {
    let v: Vec<f32> = s
        .split(',')
        .map(|x| x.trim().parse::<f32>().map_err(|_| anyhow!("--calib-{what} `{s}`: `{x}` is not a number")))
        .collect::<Result<_>>()?;
    match v.as_slice() {
        [a] => Ok([*a; 3]),
        [a, b, c] => Ok([*a, *b, *c]),
        _ => bail!("--calib-{what} `{s}`: give one value or three"),
    }
}

/// Calibration samples, decoded as they are taken.
pub type Samples = Box<dyn Iterator<Item = edgert_core::Result<Sample>>>;

/// The calibration samples in `dir` for a model with these inputs (name and concrete shape),
/// as a lazy iterator (each image is decoded when its sample is taken), and how many
/// samples there are.
pub fn samples(dir: &Path, inputs: &[(String, Vec<usize>)], args: &ImageArgs) -> Result<(usize, Samples)> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading calibration folder {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir() || kind(p).is_some())
        .collect();
    entries.sort();
    if let Some(n) = args.calib_limit {
        entries.truncate(n);
    }
    if entries.is_empty() {
        bail!("no calibration data in {} (expected .png/.jpg/.npy files or one folder per sample)", dir.display());
    }
    let norm = Norm {
        mean: per_channel(&args.calib_mean, "mean")?,
        std: per_channel(&args.calib_std, "std")?,
        bgr: args.calib_bgr,
    };
    if norm.std.contains(&0.0) {
        bail!("--calib-std must not be zero");
    }
    if entries.iter().any(|p| p.is_dir()) {
        // One folder per sample, one `<input>.npy` per input.
        let inputs = inputs.to_vec();
        let n = entries.len();
        let it = entries.into_iter().map(move |d| folder_sample(&d, &inputs).map_err(invalid));
        return Ok((n, Box::new(it)));
    }
    let [(name, shape)] = inputs else {
        bail!("the model has {} inputs: give one folder per sample with one <input>.npy each", inputs.len());
    };
    // Files fill the batch dimension: `batch` consecutive files make one sample.
    let batch = shape.first().copied().unwrap_or(1).max(1);
    let n = entries.len() / batch;
    if n == 0 {
        bail!("{} calibration files for a batch of {batch}: give at least {batch}", entries.len());
    }
    if !entries.len().is_multiple_of(batch) {
        eprintln!("note: the last {} calibration files do not fill a batch of {batch}; skipped", entries.len() % batch);
    }
    let (name, shape) = (name.clone(), shape.clone());
    let it = (0..n).map(move |s| {
        let files = &entries[s * batch..(s + 1) * batch];
        batch_sample(files, &name, &shape, &norm).map_err(invalid)
    });
    Ok((n, Box::new(it)))
}

fn invalid(e: anyhow::Error) -> edgert_core::Error {
    edgert_core::Error::Invalid(format!("{e:#}"))
}

#[derive(PartialEq)]
enum Kind {
    Image,
    Npy,
}

fn kind(p: &Path) -> Option<Kind> {
    let ext = p.extension()?.to_str()?.to_ascii_lowercase();
    match ext.as_str() {
        "png" | "jpg" | "jpeg" => Some(Kind::Image),
        "npy" => Some(Kind::Npy),
        _ => None,
    }
}

fn folder_sample(dir: &Path, inputs: &[(String, Vec<usize>)]) -> Result<Sample> {
    let mut s = HashMap::new();
    for (name, shape) in inputs {
        let p = dir.join(format!("{name}.npy"));
        let t = npy::read(&p).with_context(|| format!("calibration input {}", p.display()))?;
        if t.shape() != shape.as_slice() {
            bail!("{}: shape {:?}, the model's input `{name}` is {:?}", p.display(), t.shape(), shape);
        }
        s.insert(name.clone(), t);
    }
    Ok(s)
}

/// One sample of `shape` (batch first) from `files`, one file per batch item.
fn batch_sample(files: &[PathBuf], name: &str, shape: &[usize], norm: &Norm) -> Result<Sample> {
    let item: usize = shape.iter().skip(1).product();
    let mut data = Vec::with_capacity(item * files.len());
    for f in files {
        match kind(f) {
            Some(Kind::Npy) => {
                let t = npy::read(f).with_context(|| format!("calibration tensor {}", f.display()))?;
                let v = t.to_f32_vec()?;
                if v.len() != item {
                    bail!(
                        "{}: shape {:?} has {} values, one item of input `{name}` {:?} has {item}",
                        f.display(),
                        t.shape(),
                        v.len(),
                        shape
                    );
                }
                data.extend(v);
            }
            _ => data.extend(image_item(f, shape, norm)?),
        }
    }
    Ok(HashMap::from([(name.to_string(), Tensor::from_f32(shape, data)?)]))
}

/// One image as one batch item of an NCHW (`[n, c, h, w]`) or NHWC (`[n, h, w, c]`) input
/// with 1 (grey) or 3 channels: stretched to h x w, then `(pixel - mean) / std` per channel.
fn image_item(path: &Path, shape: &[usize], norm: &Norm) -> Result<Vec<f32>> {
    // Three channels win over one when both axes could be channels ([1, 1, 2, 3]).
    let (nchw, c, h, w) = match shape {
        [_, 3, h, w] => (true, 3, *h, *w),
        [_, h, w, 3] => (false, 3, *h, *w),
        [_, 1, h, w] => (true, 1, *h, *w),
        [_, h, w, 1] => (false, 1, *h, *w),
        _ => bail!("input shape {shape:?} is not an NCHW or NHWC image with 1 or 3 channels: give .npy files"),
    };
    let img = image::open(path).with_context(|| format!("decoding calibration image {}", path.display()))?;
    let rgb = image::imageops::resize(&img.to_rgb8(), w as u32, h as u32, image::imageops::FilterType::Triangle);
    let mut out = vec![0f32; c * h * w];
    for (x, y, px) in rgb.enumerate_pixels() {
        let (x, y) = (x as usize, y as usize);
        for ch in 0..c {
            let v = if c == 1 {
                // ITU-R BT.601 luma.
                0.299 * px[0] as f32 + 0.587 * px[1] as f32 + 0.114 * px[2] as f32
            } else {
                px[if norm.bgr { 2 - ch } else { ch }] as f32
            };
            let v = (v - norm.mean[ch]) / norm.std[ch];
            let at = if nchw { (ch * h + y) * w + x } else { (y * w + x) * c + ch };
            out[at] = v;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(mean: &str, std: &str, bgr: bool) -> ImageArgs {
        ImageArgs { calib_mean: mean.into(), calib_std: std.into(), calib_bgr: bgr, calib_limit: None }
    }

    #[test]
    fn images_become_normalized_nchw_and_nhwc_batches() {
        let dir = std::env::temp_dir().join(format!("edgert-calib-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // 2x1 images: a red and a blue pixel; a second, all green.
        let mut a = image::RgbImage::new(2, 1);
        a.put_pixel(0, 0, image::Rgb([255, 0, 0]));
        a.put_pixel(1, 0, image::Rgb([0, 0, 255]));
        a.save(dir.join("a.png")).unwrap();
        image::RgbImage::from_pixel(2, 1, image::Rgb([0, 255, 0])).save(dir.join("b.png")).unwrap();
        std::fs::write(dir.join("notes.txt"), "ignored").unwrap();

        let inputs = vec![("x".to_string(), vec![2, 3, 1, 2])];
        let (n, mut it) = samples(&dir, &inputs, &args("127.5", "127.5", false)).unwrap();
        assert_eq!(n, 1);
        let s = it.next().unwrap().unwrap();
        let v = s["x"].as_f32().unwrap().to_vec();
        // Image a, NCHW: R plane [1, -1], G plane [-1, -1], B plane [-1, 1]; image b: G = 1.
        assert_eq!(v, [1.0, -1.0, -1.0, -1.0, -1.0, 1.0, -1.0, -1.0, 1.0, 1.0, -1.0, -1.0]);
        assert!(it.next().is_none());

        let inputs = vec![("x".to_string(), vec![1, 1, 2, 3])];
        let (n, mut it) = samples(&dir, &inputs, &args("0", "255", true)).unwrap();
        assert_eq!(n, 2, "batch 1: one sample per image");
        let v = it.next().unwrap().unwrap()["x"].as_f32().unwrap().to_vec();
        // NHWC, BGR: pixel 0 (red) = [0, 0, 1], pixel 1 (blue) = [1, 0, 0].
        assert_eq!(v, [0.0, 0.0, 1.0, 1.0, 0.0, 0.0]);

        // Errors name the problem.
        let bad = |shape: Vec<usize>, a: ImageArgs| {
            let inputs = vec![("x".to_string(), shape)];
            match samples(&dir, &inputs, &a) {
                Err(e) => e.to_string(),
                Ok((_, mut it)) => it.next().unwrap().unwrap_err().to_string(),
            }
        };
        assert!(bad(vec![1, 5, 2, 2], args("0", "1", false)).contains("not an NCHW or NHWC image"));
        assert!(bad(vec![3, 3, 2, 2], args("0", "1", false)).contains("at least 3"));
        assert!(bad(vec![1, 3, 2, 2], args("0,1", "1", false)).contains("one value or three"));
        assert!(bad(vec![1, 3, 2, 2], args("0", "0", false)).contains("must not be zero"));
        std::fs::write(dir.join("c.png"), b"not a png").unwrap();
        let inputs = vec![("x".to_string(), vec![1, 3, 1, 2])];
        let (_, it) = samples(&dir, &inputs, &args("0", "1", false)).unwrap();
        let errs: Vec<String> = it.filter_map(|s| s.err()).map(|e| e.to_string()).collect();
        assert!(errs.len() == 1 && errs[0].contains("c.png"), "{errs:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
