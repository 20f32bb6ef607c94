//! The on-disk cache of compiled modules. A key names everything the PTX depends on: the
//! module's source hash, the architecture, the NVRTC version that compiled it and the driver
//! version that will JIT it (a driver can't JIT PTX newer than itself).

use std::path::{Path, PathBuf};

use edgert_kernels::Module;

use crate::error::{Error, Result};
use crate::nvrtc::Arch;

/// What a compiled module depends on.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct ModuleKey {
    /// `.cu` file name.
    pub module: String,
    /// FNV-1a of the self-contained source.
    pub source_hash: u64,
    /// Target architecture.
    pub arch: Arch,
    /// NVRTC (major, minor).
    pub nvrtc: (i32, i32),
    /// Driver CUDA version (major, minor); (0, 0) for the no-GPU compile check.
    pub driver: (u32, u32),
}

impl ModuleKey {
    /// The key for `module`.
    pub fn new(module: &Module, arch: Arch, nvrtc: (i32, i32), driver: (u32, u32)) -> ModuleKey {
        ModuleKey { module: module.file.to_string(), source_hash: module.hash(), arch, nvrtc, driver }
    }

    /// The cache file name: `conv-sm_87-nvrtc12.6-drv12.2-<hash>.ptx`.
    pub fn file_name(&self) -> String {
        let stem = self.module.trim_end_matches(".cu");
        format!(
            "{stem}-{}-nvrtc{}.{}-drv{}.{}-{:016x}.ptx",
            self.arch.sm(),
            self.nvrtc.0,
            self.nvrtc.1,
            self.driver.0,
            self.driver.1,
            self.source_hash
        )
    }
}

/// A folder of compiled modules.
#[derive(Clone, Debug)]
pub struct ModuleCache {
    dir: PathBuf,
}

impl ModuleCache {
    /// The cache in `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> ModuleCache {
        ModuleCache { dir: dir.into() }
    }

    /// The default folder: `$EDGERT_KERNEL_CACHE`, else `$XDG_CACHE_HOME/edgert/kernels`,
    /// else `~/.cache/edgert/kernels`, else a folder under the system temp dir.
    pub fn default_dir() -> PathBuf {
        if let Some(d) = std::env::var_os("EDGERT_KERNEL_CACHE") {
            return d.into();
        }
        if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
            return Path::new(&d).join("edgert/kernels");
        }
        if let Some(h) = std::env::var_os("HOME") {
            return Path::new(&h).join(".cache/edgert/kernels");
        }
        std::env::temp_dir().join("edgert-kernels")
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The cached PTX for `key`, if present and well-formed (a truncated or foreign file is
    /// treated as absent, so it gets recompiled).
    pub fn get(&self, key: &ModuleKey) -> Option<String> {
        let text = std::fs::read_to_string(self.dir.join(key.file_name())).ok()?;
        (text.contains(".version") && text.contains(".target") && text.trim_end().ends_with('}')).then_some(text)
    }

    /// Stores PTX for `key` (write to a temp file, then rename: readers never see half a file).
    pub fn put(&self, key: &ModuleKey, ptx: &str) -> Result<()> {
        let io = |path: &Path, source| Error::Cache { path: path.display().to_string(), source };
        std::fs::create_dir_all(&self.dir).map_err(|e| io(&self.dir, e))?;
        let path = self.dir.join(key.file_name());
        let tmp = self.dir.join(format!("{}.tmp{}", key.file_name(), std::process::id()));
        std::fs::write(&tmp, ptx).map_err(|e| io(&tmp, e))?;
        std::fs::rename(&tmp, &path).map_err(|e| io(&path, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module(file: &str) -> &'static Module {
        edgert_kernels::MODULES.iter().find(|m| m.file == file).unwrap()
    }

    #[test]
    fn keys_change_with_each_input() {
        let m = module("conv.cu");
        let k = ModuleKey::new(m, Arch::ORIN, (12, 6), (12, 2));
        assert!(k.file_name().starts_with("conv-sm_87-nvrtc12.6-drv12.2-"));
        assert!(k.file_name().ends_with(".ptx"));
        let others = [
            ModuleKey::new(module("gemm.cu"), Arch::ORIN, (12, 6), (12, 2)),
            ModuleKey::new(m, Arch::XAVIER, (12, 6), (12, 2)),
            ModuleKey::new(m, Arch::ORIN, (12, 9), (12, 2)),
            ModuleKey::new(m, Arch::ORIN, (12, 6), (12, 6)),
            ModuleKey { source_hash: k.source_hash ^ 1, ..k.clone() },
        ];
        for o in &others {
            assert_ne!(o.file_name(), k.file_name());
        }
    }

    #[test]
    fn put_get_roundtrip_and_corrupt_files_miss() {
        let dir = std::env::temp_dir().join(format!("edgert-cache-test-{}", std::process::id()));
        let cache = ModuleCache::new(&dir);
        let k = ModuleKey::new(module("pool.cu"), Arch::HOPPER, (12, 6), (0, 0));
        assert!(cache.get(&k).is_none());
        let ptx = "//\n.version 8.5\n.target sm_90\n.visible .entry edgert_x()\n{\n}\n";
        cache.put(&k, ptx).unwrap();
        assert_eq!(cache.get(&k).as_deref(), Some(ptx));
        // A truncated file is not returned.
        std::fs::write(dir.join(k.file_name()), &ptx[..20]).unwrap();
        assert!(cache.get(&k).is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
