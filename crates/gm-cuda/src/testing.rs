//! Support for tests that need a GPU.
//!
//! Without a GPU such a test prints `SKIP (no CUDA device): <name>` and passes, so that
//! `cargo test` works everywhere; with `GM_REQUIRE_GPU=1` (set by the GPU bundle's `run.sh`)
//! the same situation fails the test, so a GPU run can never pass by skipping.

use std::io::Write;

use crate::device::Device;
use crate::error::Result;
use crate::memory::DeviceBuffer;

/// The variable that turns skips into failures.
pub const REQUIRE_GPU_VAR: &str = "GM_REQUIRE_GPU";

/// Whether `GM_REQUIRE_GPU=1` is set.
pub fn gpu_required() -> bool {
    std::env::var(REQUIRE_GPU_VAR).is_ok_and(|v| v == "1")
}

/// Device 0 for the test `name`, or `None` after printing the SKIP line when there is no GPU.
///
/// # Panics
/// When there is no usable GPU and `GM_REQUIRE_GPU=1`, or when a GPU is present but fails to
/// open (that is a real failure, never a skip).
pub fn device_or_skip(name: &str) -> Option<Device> {
    match Device::new(0) {
        Ok(device) => Some(device),
        Err(e) if e.is_unavailable() && !gpu_required() => {
            // Straight to the stderr handle: the test harness captures print!/eprint!, and a
            // skip must be visible in a passing run.
            let _ = writeln!(std::io::stderr(), "SKIP (no CUDA device): {name} ({e})");
            None
        }
        Err(e) => {
            panic!("{name}: no usable CUDA device ({REQUIRE_GPU_VAR}=1 or device error): {e}")
        }
    }
}

/// Opens device 0 for the enclosing test, or prints the SKIP line and returns from it.
#[macro_export]
macro_rules! gpu_test_device {
    ($name:expr) => {
        match $crate::testing::device_or_skip($name) {
            Some(device) => device,
            None => return,
        }
    };
}

/// Allocates device memory until at most `leave` bytes (plus one 16 MiB step) of `device` stay
/// free, for tests of what happens when another process holds the GPU: run it in a child
/// process and keep the buffers alive.
pub fn hold_all_but(device: &Device, leave: usize) -> Result<Vec<DeviceBuffer>> {
    let mut held = Vec::new();
    let mut chunk = 1usize << 30;
    while chunk >= 16 << 20 {
        if device.info()?.free_memory <= leave + chunk {
            chunk /= 2;
            continue;
        }
        match DeviceBuffer::alloc(device, chunk) {
            Ok(b) => held.push(b),
            Err(_) => chunk /= 2,
        }
    }
    Ok(held)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// Run in a child process by the test below, never on its own.
    #[test]
    fn probe_for_the_helper_test() {
        if std::env::var_os("GM_TESTING_PROBE").is_some() {
            let _device = crate::gpu_test_device!("probe");
        }
    }

    fn run_probe(require: bool) -> (bool, String) {
        let mut cmd = Command::new(std::env::current_exe().expect("test binary path"));
        cmd.args([
            "--exact",
            "testing::tests::probe_for_the_helper_test",
            "--nocapture",
        ])
        .env("GM_TESTING_PROBE", "1")
        .env_remove(REQUIRE_GPU_VAR);
        if require {
            cmd.env(REQUIRE_GPU_VAR, "1");
        }
        let out = cmd.output().expect("the test binary runs");
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        (out.status.success(), text)
    }

    #[test]
    fn without_a_gpu_tests_skip_visibly_unless_a_gpu_is_required() {
        if Device::new(0).is_ok() {
            // With a GPU the probe gets a device whether or not one is required.
            assert!(run_probe(true).0 && run_probe(false).0);
            return;
        }
        let (ok, text) = run_probe(false);
        assert!(ok, "a skip passes: {text}");
        assert!(text.contains("SKIP (no CUDA device): probe"), "{text}");
        let (ok, text) = run_probe(true);
        assert!(
            !ok,
            "GM_REQUIRE_GPU=1 turns the skip into a failure: {text}"
        );
        assert!(text.contains("no usable CUDA device"), "{text}");
    }
}
