//! Finding the CUDA driver and NVRTC without panicking.
//!
//! cudarc with `dynamic-loading` panics when a library is missing (and when a symbol of the
//! API version it was built for is missing from an older driver), so every entry point of
//! this crate checks here first. The crate is built for the CUDA 12.2 driver API
//! (`cuda-12020`), JetPack 6's; newer drivers are supersets.

use crate::error::{Error, Result};

/// The CUDA API version this crate's driver calls are built against (JetPack 6).
pub const BUILT_FOR_CUDA: (u32, u32) = (12, 2);

/// Library names the loader tries for the driver (what cudarc tries first).
const DRIVER_LIBS: &[&str] = &["libcuda.so", "libcuda.so.1"];

/// Checks that a CUDA driver library can be loaded. Never panics.
pub fn check_driver() -> Result<()> {
    // SAFETY: only tries to dlopen candidate names; loads no symbols.
    if unsafe { cudarc::driver::sys::is_culib_present() } {
        Ok(())
    } else {
        Err(Error::NoDriver(format!(
            "could not load {} (is the NVIDIA driver installed and is there a GPU? on Jetson, \
             check that L4T's /usr/lib/aarch64-linux-gnu/tegra is on the loader path)",
            DRIVER_LIBS.join(" or ")
        )))
    }
}

/// Checks that NVRTC can be loaded. Never panics.
pub fn check_nvrtc() -> Result<()> {
    // SAFETY: only tries to dlopen candidate names.
    if unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        Ok(())
    } else {
        Err(Error::NoNvrtc(
            "could not load libnvrtc.so.12 (install the CUDA toolkit's NVRTC, or the PyPI wheel \
             nvidia-cuda-nvrtc-cu12 and put its nvidia/cuda_nvrtc/lib on LD_LIBRARY_PATH)"
                .into(),
        ))
    }
}

/// The NVRTC version as (major, minor). Checks for the library first.
pub fn nvrtc_version() -> Result<(i32, i32)> {
    check_nvrtc()?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: the library is present; the call writes two ints.
    let r = unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) };
    if r != cudarc::nvrtc::sys::nvrtcResult::NVRTC_SUCCESS {
        return Err(Error::NoNvrtc(format!("nvrtcVersion failed: {r:?}")));
    }
    Ok((major, minor))
}

/// The driver's CUDA version as (major, minor), e.g. (12, 2). Checks for the driver first.
pub fn driver_version() -> Result<(u32, u32)> {
    check_driver()?;
    let mut v: std::ffi::c_int = 0;
    // SAFETY: the library is present; the call writes one int. cuDriverGetVersion needs no
    // cuInit and no device.
    unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut v) }.result()?;
    let v = v.max(0) as u32;
    Ok((v / 1000, (v % 1000) / 10))
}

/// A one-line description of what is available, for logs and `edgert inspect`.
pub fn describe() -> String {
    let drv = match driver_version() {
        Ok((a, b)) => format!("CUDA driver {a}.{b}"),
        Err(e) => e.to_string(),
    };
    let rtc = match nvrtc_version() {
        Ok((a, b)) => format!("NVRTC {a}.{b}"),
        Err(e) => e.to_string(),
    };
    format!("{drv}; {rtc}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detection_never_panics_and_errors_say_what_is_missing() {
        // On a machine without a GPU this is the error path; with one, it is Ok. Either way
        // no panic (cudarc's own loaders panic).
        match check_driver() {
            Ok(()) => {
                let (major, _) = driver_version().expect("driver present but version unreadable");
                assert!(major >= 11);
            }
            Err(e) => {
                let msg = e.to_string();
                assert!(msg.starts_with("no CUDA driver found: "), "{msg}");
                assert!(matches!(driver_version(), Err(Error::NoDriver(_))));
                eprintln!("skipped: no GPU ({msg})");
            }
        }
        let _ = describe();
    }
}
