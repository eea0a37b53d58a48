//! `gm info` as a user runs it.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod common;

use common::gm;

#[test]
fn info_reports_the_gpu_or_says_clearly_there_is_none() {
    let out = gm().arg("info").output().expect("gm runs");
    assert!(
        out.status.success(),
        "gm info failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("utf-8 report");
    assert!(text.contains("libraries:"), "{text}");
    let nvtx = if cfg!(feature = "nvtx") { "on" } else { "off" };
    assert!(text.contains(&format!("NVTX ranges: {nvtx} (")), "{text}");
    assert!(text.contains("nvJPEG"), "{text}");
    assert!(text.contains("nvcuvid (NVDEC)"), "{text}");
    match gm_cuda::Device::new(0) {
        Ok(device) => {
            assert!(
                text.contains(&format!("GPU 0: {}", device.name())),
                "{text}"
            );
            assert!(text.contains("driver: NVIDIA"), "{text}");
            // A fresh process without the variable: gm gives the driver 32 work queues.
            let fresh = gm()
                .arg("info")
                .env_remove(gm_cuda::MAX_CONNECTIONS_VAR)
                .output()
                .expect("gm runs");
            let fresh = String::from_utf8_lossy(&fresh.stdout);
            assert!(
                fresh.contains("work queues per GPU: 32 (CUDA_DEVICE_MAX_CONNECTIONS)"),
                "{fresh}"
            );
            // The user's own setting is kept.
            let mine = gm()
                .arg("info")
                .env(gm_cuda::MAX_CONNECTIONS_VAR, "12")
                .output()
                .expect("gm runs");
            assert!(
                String::from_utf8_lossy(&mine.stdout).contains("work queues per GPU: 12 "),
                "{}",
                String::from_utf8_lossy(&mine.stdout)
            );
            let (maj, min) = device.compute_capability();
            assert!(
                text.contains(&format!("compute capability {maj}.{min}")),
                "{text}"
            );
        }
        Err(e) => {
            assert!(
                !gm_cuda::testing::gpu_required(),
                "GM_REQUIRE_GPU=1 but no GPU: {e}"
            );
            assert!(text.contains("no CUDA GPU: "), "{text}");
            assert!(!text.contains("GPU 0:"), "{text}");
        }
    }
}

#[test]
fn info_is_the_default_command() {
    let a = gm().output().expect("gm runs");
    assert!(a.status.success());
    let text = String::from_utf8_lossy(&a.stdout);
    assert!(text.starts_with("gm "), "{text}");
    assert!(text.contains("libraries:"), "{text}");
}

#[test]
fn unknown_commands_fail_with_usage() {
    let out = gm().arg("frobnicate").output().expect("gm runs");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("Usage"));
}
