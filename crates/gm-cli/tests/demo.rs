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

#[test]
fn gm_demo_video_writes_a_row_per_episode_on_the_gpu_or_the_cpu() {
    let out = std::env::temp_dir().join(format!("gm-demo-video-{}.png", std::process::id()));
    let mut cmd = gm();
    cmd.args(["demo", "--video", "--epochs", "2", "--out"])
        .arg(&out);
    if let Some(d) = std::env::var_os("GM_DEMO_VIDEOS") {
        cmd.arg("--videos").arg(d);
    }
    let on_cpu = gm_cuda::available().is_err() && !gm_cuda::testing::gpu_required();
    if on_cpu && !gm_codec::avcodec::testing::libavcodec_or_skip("gm_demo_video_on_the_cpu") {
        return;
    }
    let run = cmd.output().unwrap();
    let text = String::from_utf8_lossy(&run.stdout);
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{text}\n{err}");
    // Without a GPU the same demo runs on CPU decoders and the kernels' CPU twins.
    let on = if on_cpu { "on the CPU" } else { "on the GPU" };
    assert!(text.contains(on), "{text}");
    // 2 videos of 120 frames; 8 frames every 2nd (span 15) every 15 frames: 8 episodes each.
    assert!(
        text.contains("2 in ") && text.contains("(16 episodes)"),
        "{text}"
    );
    assert!(text.contains("32 episodes (256 frames)"), "{text}");
    assert!(text.contains("bad episodes: 0"), "{text}");
    assert!(
        text.contains("phone_360p_h264.mp4 frames") || text.contains("phone_360p_hevc"),
        "{text}"
    );
    let (w, h, rgb) = read_png(&out);
    assert_eq!((w, h), (8 * 160, 4 * 90));
    let mut colours: Vec<&[u8]> = rgb.chunks_exact(3).collect();
    colours.sort_unstable();
    colours.dedup();
    assert!(colours.len() > 2000, "{} colours", colours.len());
    std::fs::remove_file(&out).unwrap();
}
