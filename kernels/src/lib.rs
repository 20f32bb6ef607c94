//! edgert-kernels: the CUDA C sources of edgert's GPU kernels, embedded in the binary and
//! compiled at run time by NVRTC for the device's own architecture (see `edgert-cuda`).
//!
//! Every kernel entry point is `extern "C"` and named in [`names`]; [`MODULES`] lists the
//! `.cu` files with the kernels each defines. Local `#include "x.cuh"` lines are inlined by
//! [`Module::source`] (NVRTC gets one self-contained string; `<cuda_fp16.h>` and `<mma.h>`
//! come from the CUDA include folder passed to NVRTC), and [`Module::hash`] keys compiled
//! modules in a cache.

/// Kernel entry point names, in one place: `edgert-cuda` launches them by these constants.
pub mod names {
    macro_rules! names {
        ($($(#[$doc:meta])* $id:ident),* $(,)?) => {
            $( $(#[$doc])* pub const $id: &str = concat!("edgert_", stringify!($id)); )*
        };
    }
    // Lower-case constant names so that each constant reads as the kernel's own name.
    #[allow(non_upper_case_globals)]
    mod inner {
        names!(
            /// Tiled FP32 GEMM with epilogue.
            gemm_f32,
            /// Tiled FP16 GEMM (f32 accumulation) with epilogue.
            gemm_f16,
            /// Tensor-core (WMMA) FP16 GEMM, dims multiples of 16.
            gemm_f16_wmma,
            /// INT8 GEMM (dp4a) with requantizing epilogue.
            gemm_s8,
            /// f32 -> int8 per-tensor quantization.
            quantize_s8,
            /// int8 -> f32 dequantization.
            dequantize_s8,
            /// Direct convolution FP32.
            conv_direct_f32,
            /// Direct convolution FP16.
            conv_direct_f16,
            /// Depthwise convolution FP32.
            conv_depthwise_f32,
            /// Depthwise convolution FP16.
            conv_depthwise_f16,
            /// Implicit-GEMM convolution FP32.
            conv_igemm_f32,
            /// Implicit-GEMM convolution FP16.
            conv_igemm_f16,
            /// Tensor-core (WMMA) implicit-GEMM convolution, 128x128 tiles: f32 activations,
            /// f16 weights.
            conv_tc128_f16w,
            /// The same with 64x64 tiles (small layers).
            conv_tc64_f16w,
            /// im2col into int8 rows for the INT8 GEMM.
            im2col_s8,
            /// Unary elementwise FP32.
            unary_f32,
            /// Unary elementwise FP16 (half2).
            unary_f16,
            /// Broadcasting binary FP32.
            binary_f32,
            /// Broadcasting binary FP16.
            binary_f16,
            /// Same-shape binary FP16 (half2).
            binary_same_f16,
            /// Max/average pooling FP32.
            pool_f32,
            /// Max/average pooling FP16.
            pool_f16,
            /// Global average pooling FP32.
            global_avg_pool_f32,
            /// Global average pooling FP16.
            global_avg_pool_f16,
            /// Row softmax FP32.
            softmax_rows_f32,
            /// Row softmax FP16.
            softmax_rows_f16,
            /// Strided-axis softmax FP32.
            softmax_strided_f32,
            /// Strided-axis softmax FP16.
            softmax_strided_f16,
            /// Strided gather, 1-byte elements.
            gather_b1,
            /// Strided gather, 2-byte elements.
            gather_b2,
            /// Strided gather, 4-byte elements.
            gather_b4,
            /// Strided gather, 8-byte elements.
            gather_b8,
            /// 2-D block copy, 1-byte elements.
            copy2d_b1,
            /// 2-D block copy, 2-byte elements.
            copy2d_b2,
            /// 2-D block copy, 4-byte elements.
            copy2d_b4,
            /// 2-D block copy, 8-byte elements.
            copy2d_b8,
            /// f32 -> f16.
            cast_f32_f16,
            /// f16 -> f32.
            cast_f16_f32,
            /// Resize FP32.
            resize_f32,
            /// Resize FP16.
            resize_f16,
            /// Fused NV12/I420 preprocessing.
            preprocess,
        );
    }
    pub use inner::*;
}

/// Shared headers, by the name `.cu` files include them with.
pub const HEADERS: &[(&str, &str)] = &[
    ("common.cuh", include_str!("../cuda/common.cuh")),
    ("gemm_tile.cuh", include_str!("../cuda/gemm_tile.cuh")),
    ("gemm_params.cuh", include_str!("../cuda/gemm_params.cuh")),
    ("conv_params.cuh", include_str!("../cuda/conv_params.cuh")),
];

/// One `.cu` file: a unit NVRTC compiles into one module.
#[derive(Clone, Copy, Debug)]
pub struct Module {
    /// File name, e.g. `conv.cu`.
    pub file: &'static str,
    /// The file's text as written (local includes not yet inlined).
    pub raw: &'static str,
    /// Kernel entry points it defines.
    pub kernels: &'static [&'static str],
}

use names::*;

/// Every module and its kernels.
pub const MODULES: &[Module] = &[
    Module {
        file: "gemm.cu",
        raw: include_str!("../cuda/gemm.cu"),
        kernels: &[gemm_f32, gemm_f16, gemm_s8, quantize_s8, dequantize_s8],
    },
    Module { file: "gemm_tc.cu", raw: include_str!("../cuda/gemm_tc.cu"), kernels: &[gemm_f16_wmma] },
    Module {
        file: "conv.cu",
        raw: include_str!("../cuda/conv.cu"),
        kernels: &[
            conv_direct_f32,
            conv_direct_f16,
            conv_depthwise_f32,
            conv_depthwise_f16,
            conv_igemm_f32,
            conv_igemm_f16,
            im2col_s8,
        ],
    },
    Module { file: "conv_tc.cu", raw: include_str!("../cuda/conv_tc.cu"), kernels: &[conv_tc128_f16w, conv_tc64_f16w] },
    Module {
        file: "elementwise.cu",
        raw: include_str!("../cuda/elementwise.cu"),
        kernels: &[unary_f32, unary_f16, binary_f32, binary_f16, binary_same_f16],
    },
    Module {
        file: "pool.cu",
        raw: include_str!("../cuda/pool.cu"),
        kernels: &[pool_f32, pool_f16, global_avg_pool_f32, global_avg_pool_f16],
    },
    Module {
        file: "softmax.cu",
        raw: include_str!("../cuda/softmax.cu"),
        kernels: &[softmax_rows_f32, softmax_rows_f16, softmax_strided_f32, softmax_strided_f16],
    },
    Module {
        file: "layout.cu",
        raw: include_str!("../cuda/layout.cu"),
        kernels: &[
            gather_b1,
            gather_b2,
            gather_b4,
            gather_b8,
            copy2d_b1,
            copy2d_b2,
            copy2d_b4,
            copy2d_b8,
            cast_f32_f16,
            cast_f16_f32,
        ],
    },
    Module { file: "resize.cu", raw: include_str!("../cuda/resize.cu"), kernels: &[resize_f32, resize_f16] },
    Module { file: "preprocess.cu", raw: include_str!("../cuda/preprocess.cu"), kernels: &[preprocess] },
];

impl Module {
    /// The self-contained source: each `#include "name.cuh"` line replaced by that header's
    /// text (once per module; the headers' `#pragma once` lines are dropped). An include of
    /// an unknown local header is left as is, so NVRTC reports it.
    pub fn source(&self) -> String {
        let mut out = String::with_capacity(self.raw.len() * 2);
        let mut seen: Vec<&str> = Vec::new();
        inline(self.raw, &mut seen, &mut out);
        out
    }

    /// 64-bit FNV-1a hash of [`Module::source`]: part of the compiled-module cache key.
    pub fn hash(&self) -> u64 {
        fnv1a(self.source().as_bytes())
    }

    /// The module defining `kernel`, if any.
    pub fn of_kernel(kernel: &str) -> Option<&'static Module> {
        MODULES.iter().find(|m| m.kernels.contains(&kernel))
    }
}

fn inline<'a>(text: &'a str, seen: &mut Vec<&'a str>, out: &mut String) {
    for line in text.lines() {
        let t = line.trim();
        if t == "#pragma once" {
            continue;
        }
        if let Some(name) = t.strip_prefix("#include \"").and_then(|r| r.strip_suffix('"'))
            && let Some((hname, htext)) = HEADERS.iter().find(|(h, _)| *h == name)
        {
            if !seen.contains(hname) {
                seen.push(hname);
                out.push_str(&format!("// ---- begin {hname}\n"));
                inline(htext, seen, out);
                out.push_str(&format!("// ---- end {hname}\n"));
            }
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
}

/// 64-bit FNV-1a: a small, stable, dependency-free hash (cache keys, not security).
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Every kernel name, in module order.
pub fn all_kernels() -> impl Iterator<Item = &'static str> {
    MODULES.iter().flat_map(|m| m.kernels.iter().copied())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kernel_is_defined_extern_c_in_its_module() {
        for m in MODULES {
            let src = m.source();
            for k in m.kernels {
                let needle = format!("{k}(");
                let pos = src.find(&needle).unwrap_or_else(|| panic!("{k} not found in {}", m.file));
                // The definition is an extern "C" __global__ function.
                let before = &src[..pos];
                let decl_start = before.rfind("extern \"C\"").unwrap_or_else(|| panic!("{k}: no extern \"C\""));
                assert!(src[decl_start..pos].contains("__global__"), "{k} is not __global__");
            }
        }
    }

    #[test]
    fn kernel_names_are_unique_and_prefixed() {
        let all: Vec<&str> = all_kernels().collect();
        for (i, k) in all.iter().enumerate() {
            assert!(k.starts_with("edgert_"));
            assert!(!all[..i].contains(k), "{k} listed twice");
        }
        assert_eq!(Module::of_kernel(names::preprocess).map(|m| m.file), Some("preprocess.cu"));
        assert!(Module::of_kernel("edgert_nope").is_none());
    }

    #[test]
    fn every_global_in_the_sources_is_registered() {
        // A kernel written but not listed would never be compile-checked by name.
        for m in MODULES {
            for (i, _) in m.raw.match_indices("__global__") {
                // `__global__ void [__launch_bounds__(..)] NAME(`
                let rest = &m.raw[i..];
                let mut after_void = rest[rest.find("void").unwrap() + 4..].trim_start();
                if let Some(r) = after_void.strip_prefix("__launch_bounds__(") {
                    after_void = &r[r.find(')').unwrap() + 1..];
                }
                let name = after_void[..after_void.find('(').unwrap()].trim();
                assert!(m.kernels.contains(&name), "{name} in {} is not in MODULES", m.file);
            }
        }
    }

    #[test]
    fn includes_are_inlined_once_and_hash_is_stable() {
        let m = Module::of_kernel(names::conv_igemm_f32).unwrap();
        let src = m.source();
        assert!(!src.contains("#include \"common.cuh\""));
        assert_eq!(src.matches("// ---- begin common.cuh").count(), 1);
        assert!(src.contains("#include <cuda_fp16.h>"));
        assert_eq!(m.hash(), m.hash());
        let hashes: Vec<u64> = MODULES.iter().map(|m| m.hash()).collect();
        for (i, h) in hashes.iter().enumerate() {
            assert!(!hashes[..i].contains(h));
        }
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
