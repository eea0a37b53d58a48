//! Fixtures of the video tests.

use std::path::PathBuf;

/// `tests/media` (or `$GM_FIXTURES` in the GPU bundle).
#[allow(dead_code)]
pub fn fixtures() -> PathBuf {
    media()
}

fn media() -> PathBuf {
    std::env::var_os("GM_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/media"))
}

/// A video of `tests/media/video`.
#[allow(dead_code)] // each test binary uses a subset
pub fn fixture(name: &str) -> PathBuf {
    media().join("video").join(name)
}

/// A file of `tests/media/rotated` (display-orientation fixtures).
#[allow(dead_code)]
pub fn rotated(name: &str) -> PathBuf {
    media().join("rotated").join(name)
}

/// B-pyramid H.264, open-GOP HEVC and VFR H.264.
#[allow(dead_code)]
pub fn videos() -> Vec<PathBuf> {
    ["h264_bpyramid.mp4", "hevc_open_gop.mp4", "h264_vfr.mp4"]
        .iter()
        .map(|n| fixture(n))
        .collect()
}
