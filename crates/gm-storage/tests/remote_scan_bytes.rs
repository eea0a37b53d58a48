//! What a full bitstream scan costs over ranged reads against what it reads locally, on a
//! long-GOP video made here by ffmpeg (a few MB: too large to commit).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use std::path::PathBuf;
use std::process::Command;

use gm_demux::{BitstreamScan, ByteSource, FileSource, IndexOptions, VideoIndex};
use gm_storage::testing::FaultServer;
use gm_storage::{RemoteSource, Storage, StorageOptions};

/// A 20 s 640x360 H.264 video at 2.5 Mbit/s with one keyframe every 300 frames and B-frames
/// (about 6 MB), or `None` (a SKIP line; a failure under GM_REQUIRE_FFMPEG=1) without ffmpeg.
fn long_gop_video() -> Option<PathBuf> {
    let dir = std::env::temp_dir().join(format!("gm-remote-scan-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("long_gop.mp4");
    let made = Command::new("ffmpeg")
        .args(["-v", "error", "-y", "-f", "lavfi", "-i"])
        .arg("testsrc2=size=640x360:rate=30")
        .args([
            "-t", "20", "-c:v", "libx264", "-preset", "veryfast", "-g", "300",
        ])
        .args(["-bf", "3", "-b:v", "2500k", "-pix_fmt", "yuv420p"])
        .arg(&path)
        .status()
        .is_ok_and(|s| s.success());
    if !made {
        assert!(
            std::env::var("GM_REQUIRE_FFMPEG").is_err(),
            "GM_REQUIRE_FFMPEG=1 but ffmpeg could not make the video"
        );
        eprintln!("SKIP (no ffmpeg): a_full_scan_over_ranges_fetches_at_most_twice_what_it_reads");
        return None;
    }
    Some(path)
}

#[test]
fn a_full_scan_over_ranges_fetches_at_most_twice_what_it_reads() {
    let Some(video) = long_gop_video() else {
        return;
    };
    for scan in [BitstreamScan::Full, BitstreamScan::Keyframes] {
        let options = IndexOptions {
            scan,
            ..IndexOptions::default()
        };
        let local = FileSource::open(&video).unwrap();
        let local_index = VideoIndex::from_source(&local, options).unwrap();
        let server = FaultServer::start().expect("a loopback port");
        server.insert("long_gop.mp4", std::fs::read(&video).unwrap());
        let storage = Storage::new(StorageOptions::default());
        let src = RemoteSource::open(&storage, &server.url("long_gop.mp4")).unwrap();
        let index = VideoIndex::from_source(&src, options).unwrap();
        eprintln!(
            "{scan:?}: local read {} bytes; remote fetched {} bytes in {} requests, of {}",
            local.bytes_read(),
            src.bytes_fetched(),
            src.requests(),
            src.len()
        );
        if scan == BitstreamScan::Full {
            // Header windows rounded up to 64 KiB blocks fetched 99.8% of this file (6.0 MB
            // for a 622 KB local scan).
            assert!(
                src.bytes_fetched() <= 2 * local.bytes_read(),
                "{} fetched for {} read",
                src.bytes_fetched(),
                local.bytes_read()
            );
        }
        // The remote index is the local one.
        assert_eq!(index.packets, local_index.packets);
        assert_eq!(index.gops, local_index.gops);
    }
    std::fs::remove_dir_all(video.parent().unwrap()).ok();
}
