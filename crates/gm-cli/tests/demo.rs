//! `gm demo`, the README's main job: it runs on the bundled images (on the GPU when there is
//! one, else on the CPU), reports throughput and the bad file, and writes a contact sheet.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod common;

use common::{gm, read_png};

#[test]
fn gm_demo_reports_and_writes_a_contact_sheet_on_the_gpu_or_the_cpu() {
    let gpu_required = gm_cuda::testing::gpu_required();
    for force_cpu in [false, true] {
        let out =
            std::env::temp_dir().join(format!("gm-demo-{}-{force_cpu}.png", std::process::id()));
        let mut cmd = gm();
        cmd.args([
            "demo", "--epochs", "2", "--batch", "8", "--size", "64", "--out",
        ])
        .arg(&out);
        if force_cpu {
            cmd.arg("--cpu");
        }
        if let Some(d) = std::env::var_os("GM_DEMO_IMAGES") {
            cmd.arg("--images").arg(d);
        }
        let run = cmd.output().unwrap();
        let text = String::from_utf8_lossy(&run.stdout);
        assert!(
            run.status.success(),
            "{text}\n{}",
            String::from_utf8_lossy(&run.stderr)
        );
        // 23 images, one truncated: 22 per epoch.
        assert!(text.contains("44 images in 6 batches"), "{text}");
        assert!(
            text.contains("video-001.truncated.jpeg") && text.contains("truncated"),
            "{text}"
        );
        let on_gpu = text.contains("runs on: GPU");
        assert_eq!(on_gpu, !force_cpu && gm_cuda::available().is_ok(), "{text}");
        if gpu_required && !force_cpu {
            assert!(
                on_gpu,
                "GM_REQUIRE_GPU=1 but the demo ran on the CPU:\n{text}"
            );
        }
        let (w, h, rgb) = read_png(&out);
        assert_eq!((w, h), (4 * 64, 2 * 64));
        // Real photos: many distinct colours, not a blank or a constant sheet.
        let mut colours: Vec<&[u8]> = rgb.chunks_exact(3).collect();
        colours.sort_unstable();
        colours.dedup();
        assert!(colours.len() > 5000, "{} colours", colours.len());
        std::fs::remove_file(&out).unwrap();
    }
}
