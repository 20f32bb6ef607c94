//! Instruction-set choice for the CPU kernels: detected at run time, and overridable with the
//! `EDGERT_ISA` environment variable (`avx512`, `avx2`, `neon`, `portable`) so tests can run
//! every path the machine supports. Forcing a path the CPU lacks falls back to the best one
//! it has, with a warning: a kernel is never run on an unsupported instruction set.

use std::sync::OnceLock;

/// A family of CPU kernels.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
pub enum Isa {
    /// x86-64 AVX-512F (with FMA).
    Avx512,
    /// x86-64 AVX2 with FMA.
    Avx2,
    /// aarch64 Advanced SIMD (NEON), always present on aarch64.
    Neon,
    /// Plain Rust, any CPU.
    Portable,
}

impl Isa {
    /// Lower-case name (`avx512`, ...), as `EDGERT_ISA` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Isa::Avx512 => "avx512",
            Isa::Avx2 => "avx2",
            Isa::Neon => "neon",
            Isa::Portable => "portable",
        }
    }

    /// Parses a name as `EDGERT_ISA` takes it.
    pub fn parse(s: &str) -> Option<Isa> {
        match s.trim().to_ascii_lowercase().as_str() {
            "avx512" | "avx-512" => Some(Isa::Avx512),
            "avx2" => Some(Isa::Avx2),
            "neon" => Some(Isa::Neon),
            "portable" | "scalar" => Some(Isa::Portable),
            _ => None,
        }
    }

    /// Whether this CPU can run this path.
    pub fn supported(self) -> bool {
        match self {
            Isa::Portable => true,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("fma"),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma"),
            #[cfg(target_arch = "aarch64")]
            Isa::Neon => std::arch::is_aarch64_feature_detected!("neon"),
            #[allow(unreachable_patterns)]
            _ => false,
        }
    }

    /// Every path this CPU supports, best first (what the differential tests iterate over).
    pub fn all_supported() -> Vec<Isa> {
        [Isa::Avx512, Isa::Avx2, Isa::Neon, Isa::Portable].into_iter().filter(|i| i.supported()).collect()
    }

    /// The best path this CPU supports.
    pub fn best() -> Isa {
        Isa::all_supported().first().copied().unwrap_or(Isa::Portable)
    }
}

impl std::fmt::Display for Isa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The path the kernels use: `EDGERT_ISA` if set and supported, else the best one. Read once.
pub fn active() -> Isa {
    static ACTIVE: OnceLock<Isa> = OnceLock::new();
    *ACTIVE.get_or_init(|| match std::env::var("EDGERT_ISA") {
        Ok(v) if !v.is_empty() => match Isa::parse(&v) {
            Some(isa) if isa.supported() => isa,
            Some(isa) => {
                let best = Isa::best();
                log::warn!("EDGERT_ISA={v}: this CPU does not support {isa}; using {best}");
                best
            }
            None => {
                let best = Isa::best();
                log::warn!("EDGERT_ISA={v} is not one of avx512, avx2, neon, portable; using {best}");
                best
            }
        },
        _ => Isa::best(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn portable_is_always_supported_and_names_round_trip() {
        assert!(Isa::Portable.supported());
        assert!(Isa::all_supported().contains(&Isa::Portable));
        for isa in [Isa::Avx512, Isa::Avx2, Isa::Neon, Isa::Portable] {
            assert_eq!(Isa::parse(isa.name()), Some(isa));
        }
        assert_eq!(Isa::parse("sse9"), None);
        assert!(active().supported());
    }
}
