//! Differential tests of kernels the executor does not reach yet, launched directly: the
//! fused preprocessing (against `preprocess::reference`), the tensor-core FP16 GEMM and the
//! INT8 dp4a GEMM (against host arithmetic). Without a CUDA driver each test prints
//! `skipped: no GPU` and passes.

use edgert_cuda::Device;
use edgert_cuda::launch::LaunchConfig;
use edgert_cuda::params::{Epilogue, GemmParams, KernelArgs, QGemmParams};
use edgert_cuda::preprocess::{Format, FrameDesc, HostFrame, PreprocessParams, reference};
use edgert_kernels::names;
use half::f16;

fn device() -> Option<Device> {
    if let Err(e) = edgert_cuda::driver::check_driver() {
        eprintln!("skipped: no GPU ({e})");
        return None;
    }
    Some(Device::open(0).expect("a driver is present but the device does not open"))
}

fn bytes<T: Copy>(v: &[T]) -> &[u8] {
    // SAFETY: plain data viewed as bytes.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) }
}

fn pattern(n: usize, seed: usize) -> Vec<u8> {
    (0..n).map(|i| ((i * 131 + seed * 17 + (i / 7) * 29) % 256) as u8).collect()
}

#[test]
fn preprocess_batch_of_mixed_frames_matches_reference() {
    let Some(dev) = device() else { return };
    let k = dev.load_kernel(names::preprocess).unwrap();
    // Three frames of different sizes and formats, odd sizes included.
    let sizes = [(13usize, 7usize, Format::Nv12), (64, 48, Format::I420), (321, 181, Format::Nv12)];
    let mut host = Vec::new();
    for (i, &(w, h, f)) in sizes.iter().enumerate() {
        let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
        let y = pattern(w * h, i);
        let (u, v) = match f {
            Format::Nv12 => (pattern(2 * cw * ch, i + 10).iter().map(|b| 64 + b / 2).collect(), vec![]),
            Format::I420 => (pattern(cw * ch, i + 20), pattern(cw * ch, i + 30)),
        };
        host.push((w, h, f, y, u, v));
    }
    for (layout, letterbox, bgr) in [(0, 1, 0), (1, 0, 1)] {
        let (ow, oh) = (128usize, 96usize);
        let mut p = PreprocessParams {
            out: 0,
            image_stride: (ow * oh * 3) as i64,
            out_w: ow as i32,
            out_h: oh as i32,
            layout,
            dtype: 0,
            bgr,
            letterbox,
            matrix: 0,
            pad_: 0,
            mean: [0.485, 0.456, 0.406],
            inv_std: [1.0 / 0.229, 1.0 / 0.224, 1.0 / 0.225],
            pad_value: [114.0; 3],
            out_scale: 1.0,
        };
        let mut keep = Vec::new();
        let mut descs = Vec::new();
        for (w, h, f, y, u, v) in &host {
            let (by, bu, bv) = (dev.upload(y).unwrap(), dev.upload(u).unwrap(), dev.upload(v).unwrap());
            let cw = w.div_ceil(2);
            descs.push(FrameDesc {
                y: by.ptr(),
                u: bu.ptr(),
                v: bv.ptr(),
                width: *w as i32,
                height: *h as i32,
                y_pitch: *w as i32,
                uv_pitch: if *f == Format::Nv12 { 2 * cw as i32 } else { cw as i32 },
                format: *f as i32,
                pad_: 0,
            });
            keep.extend([by, bu, bv]);
        }
        let d = dev.upload(bytes(&descs)).unwrap();
        let out = dev.alloc_zeroed(ow * oh * 3 * 4 * host.len()).unwrap();
        p.out = out.ptr();
        let mut a = KernelArgs::new();
        a.push(d.ptr()).unwrap().push(p).unwrap();
        dev.launch_sync(&k, LaunchConfig::per_image((ow * oh) as u64, host.len() as u64).unwrap(), &mut a).unwrap();
        let got: Vec<f32> =
            dev.download(&out).unwrap().chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        let frames: Vec<HostFrame> =
            host.iter().map(|(w, h, f, y, u, v)| HostFrame { format: *f, width: *w, height: *h, y, u, v }).collect();
        let want = reference(&frames, &p).unwrap();
        let worst = got.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
        // Normalized values span about [-2.1, 2.6]; 1e-3 is well under one 8-bit step (0.017).
        assert!(worst < 1e-3, "layout {layout}: max abs error {worst}");
        eprintln!("ok preprocess layout {layout} letterbox {letterbox}: max abs error {worst:.2e}");
    }
}

#[test]
fn wmma_f16_gemm_matches_host() {
    let Some(dev) = device() else { return };
    let k = dev.load_kernel(names::gemm_f16_wmma).unwrap();
    let (m, n, kk, batch) = (48usize, 80usize, 64usize, 2usize);
    let a: Vec<f16> = (0..batch * m * kk).map(|i| f16::from_f32(((i * 37 % 101) as f32 - 50.0) / 64.0)).collect();
    let b: Vec<f16> = (0..batch * kk * n).map(|i| f16::from_f32(((i * 53 % 97) as f32 - 48.0) / 64.0)).collect();
    let (da, db) = (dev.upload(bytes(&a)).unwrap(), dev.upload(bytes(&b)).unwrap());
    let dc = dev.alloc_zeroed(batch * m * n * 2).unwrap();
    let mut p = GemmParams::gemm(m, n, kk, false, false);
    p.a_sb = (m * kk) as i64;
    p.b_sb = (kk * n) as i64;
    let mut args = KernelArgs::new();
    args.push(da.ptr()).unwrap().push(db.ptr()).unwrap().push(dc.ptr()).unwrap().push(p).unwrap();
    args.push(Epilogue::default()).unwrap();
    dev.launch_sync(&k, LaunchConfig::gemm_wmma(m as u64, n as u64, kk as u64, batch as u64).unwrap(), &mut args)
        .unwrap();
    let got = dev.download(&dc).unwrap();
    for bi in 0..batch {
        for i in 0..m {
            for j in 0..n {
                let mut s = 0f32;
                for t in 0..kk {
                    s += a[bi * m * kk + i * kk + t].to_f32() * b[bi * kk * n + t * n + j].to_f32();
                }
                let o = (bi * m * n + i * n + j) * 2;
                let g = f16::from_le_bytes([got[o], got[o + 1]]).to_f32();
                assert!((g - s).abs() <= 1e-2 * s.abs().max(1.0), "({bi},{i},{j}): {g} vs {s}");
            }
        }
    }
    eprintln!("ok gemm_f16_wmma {m}x{n}x{kk} batch {batch}");
}

#[test]
fn int8_dp4a_gemm_matches_host() {
    let Some(dev) = device() else { return };
    let k = dev.load_kernel(names::gemm_s8).unwrap();
    let (m, n, kk) = (13usize, 37usize, 1028usize); // K a multiple of 4, M/N remainders
    let a: Vec<i8> = (0..m * kk).map(|i| ((i * 29 % 255) as i32 - 127) as i8).collect();
    let b: Vec<i8> = (0..n * kk).map(|i| ((i * 31 % 251) as i32 - 125) as i8).collect();
    let scale_b: Vec<f32> = (0..n).map(|j| 0.01 + j as f32 * 1e-3).collect();
    let bias: Vec<f32> = (0..n).map(|j| j as f32 * 0.5 - 3.0).collect();
    let (da, db) = (dev.upload(bytes(&a)).unwrap(), dev.upload(bytes(&b)).unwrap());
    let (ds, dbias) = (dev.upload(bytes(&scale_b)).unwrap(), dev.upload(bytes(&bias)).unwrap());
    let dc = dev.alloc_zeroed(m * n * 4).unwrap();
    let p = QGemmParams {
        m: m as i64,
        n: n as i64,
        k: kk as i64,
        lda: kk as i64,
        ldb: kk as i64,
        ldc: n as i64,
        scale_b: ds.ptr(),
        scale_a: 0.02,
        scale_out: 1.0,
        out_int8: 0,
        pad_: 0,
    };
    let ep = Epilogue { bias: dbias.ptr(), bias_mode: 1, ..Default::default() };
    let mut args = KernelArgs::new();
    args.push(da.ptr()).unwrap().push(db.ptr()).unwrap().push(dc.ptr()).unwrap().push(p).unwrap().push(ep).unwrap();
    dev.launch_sync(&k, LaunchConfig::gemm_s8(m as u64, n as u64).unwrap(), &mut args).unwrap();
    let got = dev.download(&dc).unwrap();
    for i in 0..m {
        for j in 0..n {
            let acc: i32 = (0..kk).map(|t| a[i * kk + t] as i32 * b[j * kk + t] as i32).sum();
            let want = acc as f32 * 0.02 * scale_b[j] + bias[j];
            let o = (i * n + j) * 4;
            let g = f32::from_le_bytes([got[o], got[o + 1], got[o + 2], got[o + 3]]);
            assert!((g - want).abs() <= 1e-4 * want.abs().max(1.0), "({i},{j}): {g} vs {want}");
        }
    }
    eprintln!("ok gemm_s8 {m}x{n}x{kk}");
}
