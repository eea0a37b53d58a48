//! Fixtures of the video tests.

use std::path::PathBuf;

/// A video of `tests/media/video` (or of `$GM_FIXTURES/video` in the GPU bundle).
pub fn fixture(name: &str) -> PathBuf {
    std::env::var_os("GM_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/media"))
        .join("video")
        .join(name)
}

/// B-pyramid H.264, open-GOP HEVC and VFR H.264.
pub fn videos() -> Vec<PathBuf> {
    ["h264_bpyramid.mp4", "hevc_open_gop.mp4", "h264_vfr.mp4"]
        .iter()
        .map(|n| fixture(n))
        .collect()
}
