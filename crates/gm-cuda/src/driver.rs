//! Finding and initializing the CUDA driver without ever letting cudarc panic.
//!
//! cudarc loads libcuda lazily and panics when it is missing, so every entry point of this
//! crate goes through [`init`] first: it checks that the library can be opened, runs `cuInit`
//! once, and turns both failures into errors that say what is missing.

use std::sync::OnceLock;

use cudarc::driver::{result, sys};

use crate::error::{CudaError, DriverResultExt, Result};

/// Outcome of the one-time initialization, kept as strings so it can be cloned into errors.
#[derive(Clone)]
enum InitState {
    Ready,
    NoDriver { searched: String },
    NoDevice { reason: String },
}

/// Hardware work queues per device that the driver gives this process, unless the user chose.
///
/// The driver's default is 8, and streams beyond that share queues: a kernel then waits for
/// unrelated work queued ahead of it on another stream. A GPU loader runs dozens of streams
/// (each CUDA-backend worker, each engine decoder, each stage). On two H200s (2026-11-21,
/// ImageNet-sized JPEGs) 32 queues took the image pipeline from 37,253 to 45,041 images/s
/// (4 workers x 3 stages) and from 34,911 to 40,463 (the defaults).
pub const MAX_CONNECTIONS: &str = "32";

/// The environment variable the driver reads for [`MAX_CONNECTIONS`] when it initializes.
pub const MAX_CONNECTIONS_VAR: &str = "CUDA_DEVICE_MAX_CONNECTIONS";

/// The driver's work-queue setting for this process, as set when CUDA was initialized: the
/// user's own `CUDA_DEVICE_MAX_CONNECTIONS`, or [`MAX_CONNECTIONS`].
pub fn max_connections() -> Option<String> {
    std::env::var(MAX_CONNECTIONS_VAR).ok()
}

fn state() -> &'static InitState {
    static STATE: OnceLock<InitState> = OnceLock::new();
    STATE.get_or_init(|| {
        if std::env::var_os(MAX_CONNECTIONS_VAR).is_none() {
            // SAFETY: runs once, before this crate initializes CUDA, and Rust's own readers of
            // the environment are serialized with it by std. A C library reading the
            // environment on another thread at this very moment is the residual risk; a
            // program that cannot take it sets the variable itself before starting threads,
            // and then this never writes.
            unsafe { std::env::set_var(MAX_CONNECTIONS_VAR, MAX_CONNECTIONS) };
        }
        if !libcuda_present() {
            return InitState::NoDriver {
                searched: LIBCUDA_NAMES.join(", "),
            };
        }
        match result::init() {
            Ok(()) => InitState::Ready,
            Err(e) => InitState::NoDevice {
                reason: format!("cuInit failed: {e}"),
            },
        }
    })
}

/// The names the CUDA driver library goes by: the driver's soname, the development link, the
/// sonames of older packagings, and Windows' DLL. cudarc's loader tries each of them too.
const LIBCUDA_NAMES: &[&str] = &[
    "libcuda.so.1",
    "libcuda.so",
    "libcuda.so.13",
    "libcuda.so.12",
    "nvcuda.dll",
];

/// Whether libcuda can be opened. gm probes it itself instead of asking cudarc, whose probe
/// exists only when cudarc loads libcuda at run time: a program that also uses candle turns
/// cudarc's `fallback-dynamic-loading` (ours) into `dynamic-linking` (candle's), and then the
/// library is already mapped, so this finds it.
fn libcuda_present() -> bool {
    LIBCUDA_NAMES.iter().any(|name| {
        // SAFETY: opening the NVIDIA driver library runs its initializers, which have no
        // preconditions; the handle is closed again at once.
        unsafe { libloading::Library::new(name) }.is_ok()
    })
}

/// Loads libcuda and runs `cuInit` (once per process); every other call of this crate runs it
/// first. Errors say whether the driver or a device is missing.
pub fn init() -> Result<()> {
    match state() {
        InitState::Ready => Ok(()),
        InitState::NoDriver { searched } => Err(CudaError::DriverNotFound {
            searched: searched.clone(),
        }),
        InitState::NoDevice { reason } => Err(CudaError::NoDevice {
            reason: reason.clone(),
        }),
    }
}

/// Number of CUDA devices, or an error when there is no driver or no device.
///
/// This is the check to call before anything else: it never panics, on any machine.
pub fn available() -> Result<usize> {
    init()?;
    let count = result::device::get_count().during(|| "cuDeviceGetCount".into())?;
    match usize::try_from(count) {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(CudaError::NoDevice {
            reason: "the driver reports 0 devices".into(),
        }),
    }
}

/// The CUDA version the installed driver supports, as (major, minor), e.g. (13, 0).
pub fn driver_cuda_version() -> Result<(u32, u32)> {
    init()?;
    let mut v: std::ffi::c_int = 0;
    // SAFETY: writes one int through a valid pointer.
    unsafe { sys::cuDriverGetVersion(&mut v) }
        .result()
        .during(|| "cuDriverGetVersion".into())?;
    let v = u32::try_from(v).unwrap_or(0);
    Ok((v / 1000, (v % 1000) / 10))
}

/// The CUDA version of the driver-API bindings this crate was built with (the `cuda-12080`
/// feature of cudarc): the oldest driver it needs is the one whose entry points it calls.
pub const BINDINGS_CUDA_VERSION: (u32, u32) = (12, 8);

/// The NVIDIA kernel driver's version string (for example `580.159.04`), read from
/// `/proc/driver/nvidia/version`; `None` where that file does not exist.
pub fn nvidia_driver_version() -> Option<String> {
    let text = std::fs::read_to_string("/proc/driver/nvidia/version").ok()?;
    parse_nvidia_driver_version(&text)
}

fn parse_nvidia_driver_version(text: &str) -> Option<String> {
    let line = text.lines().find(|l| l.starts_with("NVRM version"))?;
    line.split_whitespace()
        .find(|w| {
            w.split('.').count() >= 2 && w.split('.').all(|p| p.chars().all(|c| c.is_ascii_digit()))
        })
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_proc_driver_version_line() {
        let text = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Thu Oct  9 21:14:18 UTC 2025\n\
                    GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n";
        assert_eq!(
            parse_nvidia_driver_version(text).as_deref(),
            Some("580.159.04")
        );
        let open =
            "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.14  Release Build\n";
        assert_eq!(
            parse_nvidia_driver_version(open).as_deref(),
            Some("550.54.14")
        );
        assert_eq!(parse_nvidia_driver_version("garbage"), None);
    }

    #[test]
    fn available_never_panics_and_agrees_with_init() {
        // On a machine without a GPU this is an error that says so; with one, a count >= 1.
        match (available(), init()) {
            (Ok(n), Ok(())) => assert!(n >= 1),
            (Err(e), _) => {
                let msg = e.to_string();
                assert!(
                    msg.contains("CUDA") || msg.contains("cuInit"),
                    "unhelpful error: {msg}"
                );
            }
            (Ok(_), Err(e)) => panic!("devices counted but init failed: {e}"),
        }
    }

    #[test]
    fn the_driver_probe_agrees_with_init_and_names_what_it_searched() {
        // gm's own probe decides between "no driver" and cuInit's verdict: where it finds no
        // libcuda, init says so and lists the names tried; where it finds one, init got past
        // the probe (a device may still be missing).
        match init() {
            Err(CudaError::DriverNotFound { searched }) => {
                assert!(!libcuda_present());
                assert!(searched.contains("libcuda.so.1"), "{searched}");
            }
            _ => assert!(libcuda_present()),
        }
    }
}
