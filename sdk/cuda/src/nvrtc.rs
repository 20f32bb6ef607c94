//! Compiling the kernel sources with NVRTC (cudarc, dynamic loading) into PTX for one
//! architecture. On a device the architecture is its own (`compute_XY` from its compute
//! capability); the CI compile check does sm_72, sm_87 and sm_90 with no GPU at all.

use std::path::{Path, PathBuf};

use cudarc::nvrtc::{CompileError, CompileOptions};
use edgert_kernels::Module;

use crate::driver;
use crate::error::{Error, Result};

/// A GPU architecture as a compute capability, e.g. 8.7 for Orin.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Arch {
    /// Major version.
    pub major: u32,
    /// Minor version.
    pub minor: u32,
}

impl Arch {
    /// Xavier (sm_72).
    pub const XAVIER: Arch = Arch { major: 7, minor: 2 };
    /// Orin (sm_87).
    pub const ORIN: Arch = Arch { major: 8, minor: 7 };
    /// Hopper H100/H200 (sm_90).
    pub const HOPPER: Arch = Arch { major: 9, minor: 0 };

    /// Parses `sm_87`, `compute_87`, `87` or `8.7`.
    pub fn parse(s: &str) -> Result<Arch> {
        let t = s.trim();
        let digits = t.strip_prefix("sm_").or_else(|| t.strip_prefix("compute_")).unwrap_or(t);
        let bad = || Error::Invalid(format!("`{s}` is not a GPU architecture (expected e.g. sm_87 or 8.7)"));
        let (major, minor) = match digits.split_once('.') {
            Some((a, b)) => (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?),
            None if digits.len() >= 2 && digits.bytes().all(|b| b.is_ascii_digit()) => {
                let (a, b) = digits.split_at(digits.len() - 1);
                (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?)
            }
            None => return Err(bad()),
        };
        if !(5..=12).contains(&major) || minor > 9 {
            return Err(bad());
        }
        Ok(Arch { major, minor })
    }

    /// `sm_87`.
    pub fn sm(&self) -> String {
        format!("sm_{}{}", self.major, self.minor)
    }

    /// `compute_87`: the virtual architecture NVRTC emits PTX for.
    pub fn compute(&self) -> String {
        format!("compute_{}{}", self.major, self.minor)
    }

    /// Whether the architecture has the dp4a instruction (sm_61 and later).
    pub fn has_dp4a(&self) -> bool {
        (self.major, self.minor) >= (6, 1)
    }

    /// Whether the architecture has FP16 tensor cores usable through WMMA (sm_70 and later).
    pub fn has_wmma_f16(&self) -> bool {
        self.major >= 7
    }
}

/// The folders holding `cuda_fp16.h` and `crt/mma.h` (NVRTC builds in neither):
/// `EDGERT_CUDA_INCLUDE` (colon-separated) if set, else `$CUDA_HOME/include`,
/// `/usr/local/cuda/include`, and, next to an NVRTC wheel on `LD_LIBRARY_PATH`, the include
/// folders of the `nvidia-cuda-runtime-cu12` wheel (`cuda_fp16.h`, `mma.h`) and of the
/// `nvidia-cuda-nvcc-cu12` wheel (`crt/mma.h`). Only folders holding one of them are returned.
pub fn include_dirs() -> Vec<PathBuf> {
    let mut cands: Vec<PathBuf> = Vec::new();
    if let Ok(v) = std::env::var("EDGERT_CUDA_INCLUDE") {
        cands.extend(std::env::split_paths(&v));
    } else {
        if let Ok(h) = std::env::var("CUDA_HOME") {
            cands.push(Path::new(&h).join("include"));
        }
        cands.push("/usr/local/cuda/include".into());
        if let Ok(v) = std::env::var("LD_LIBRARY_PATH") {
            for p in std::env::split_paths(&v) {
                // <site-packages>/nvidia/cuda_nvrtc/lib -> <site-packages>/nvidia/cuda_runtime/include
                if p.ends_with("cuda_nvrtc/lib")
                    && let Some(nvidia) = p.parent().and_then(Path::parent)
                {
                    cands.push(nvidia.join("cuda_runtime/include"));
                    cands.push(nvidia.join("cuda_nvcc/include"));
                }
            }
        }
    }
    cands.into_iter().filter(|d| d.join("cuda_fp16.h").is_file() || d.join("crt/mma.h").is_file()).collect()
}

/// NVRTC options for `arch`: C++17, the virtual architecture, and the include folders.
/// No fast-math: kernels must match the CPU reference within the f32 tolerance.
pub fn options(arch: Arch, include: &[PathBuf]) -> Vec<String> {
    let mut o = vec![
        format!("--gpu-architecture={}", arch.compute()),
        "--std=c++17".to_string(),
        "--fmad=true".to_string(),
        format!("-DEDGERT_SM={}{}", arch.major, arch.minor),
    ];
    for d in include {
        o.push(format!("--include-path={}", d.display()));
    }
    o
}

/// Compiles one module for `arch` and returns its PTX text. Checks for NVRTC first (no
/// panic when it is missing) and for `cuda_fp16.h`.
pub fn compile(module: &Module, arch: Arch) -> Result<String> {
    driver::check_nvrtc()?;
    let include = include_dirs();
    if !include.iter().any(|d| d.join("cuda_fp16.h").is_file()) {
        return Err(Error::Compile {
            module: module.file.into(),
            arch: arch.compute(),
            message: "cuda_fp16.h not found: set EDGERT_CUDA_INCLUDE to the CUDA include folder \
                      (toolkit's include/, or the nvidia-cuda-runtime-cu12 wheel's nvidia/cuda_runtime/include)"
                .into(),
        });
    }
    let opts =
        CompileOptions { options: options(arch, &include), name: Some(module.file.into()), ..Default::default() };
    let src = module.source();
    if src.contains('\0') {
        return Err(Error::Invalid(format!("{}: source contains a NUL byte", module.file)));
    }
    match cudarc::nvrtc::compile_ptx_with_opts(src, opts) {
        Ok(ptx) => Ok(ptx.to_src()),
        Err(e) => Err(Error::Compile { module: module.file.into(), arch: arch.compute(), message: describe(e) }),
    }
}

fn describe(e: CompileError) -> String {
    match e {
        CompileError::CompileError { nvrtc, log, .. } => {
            format!("{nvrtc:?}\n{}", log.to_string_lossy())
        }
        other => format!("{other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arch_parsing_and_names() {
        for s in ["sm_87", "compute_87", "87", "8.7"] {
            assert_eq!(Arch::parse(s).unwrap(), Arch::ORIN, "{s}");
        }
        assert_eq!(Arch::parse("sm_100").unwrap(), Arch { major: 10, minor: 0 });
        assert_eq!(Arch::XAVIER.sm(), "sm_72");
        assert_eq!(Arch::HOPPER.compute(), "compute_90");
        for bad in ["", "sm_", "sm_x7", "4.0", "8.77", "sm_8"] {
            assert!(Arch::parse(bad).is_err(), "{bad}");
        }
        assert!(Arch::XAVIER.has_dp4a() && Arch::XAVIER.has_wmma_f16());
        assert!(!Arch { major: 6, minor: 0 }.has_dp4a());
    }

    #[test]
    fn options_name_the_virtual_arch_and_includes() {
        let o = options(Arch::ORIN, &[PathBuf::from("/x/include")]);
        assert!(o.contains(&"--gpu-architecture=compute_87".to_string()));
        assert!(o.contains(&"--include-path=/x/include".to_string()));
        assert!(!o.iter().any(|s| s.contains("fast-math") || s.contains("fast_math")));
    }

    #[test]
    fn compile_every_module_when_nvrtc_is_present() {
        // The CI stage runs the full check (three arches + ptxas); here one arch, if NVRTC
        // and the headers are on this machine, else skip with the reason.
        if let Err(e) = driver::check_nvrtc() {
            eprintln!("skipped: no NVRTC ({e})");
            return;
        }
        if !include_dirs().iter().any(|d| d.join("cuda_fp16.h").is_file()) {
            eprintln!("skipped: no cuda_fp16.h (set EDGERT_CUDA_INCLUDE)");
            return;
        }
        for m in edgert_kernels::MODULES {
            let ptx = compile(m, Arch::ORIN).unwrap_or_else(|e| panic!("{e}"));
            for k in m.kernels {
                assert!(ptx.contains(&format!(".entry {k}(")), "{k} missing from the PTX of {}", m.file);
            }
        }
    }
}
