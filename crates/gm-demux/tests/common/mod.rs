//! Where the test media is: the committed fixtures (GM_FIXTURES in the GPU bundle, where the
//! build machine's paths do not exist) and ../shared/media (GM_SHARED_MEDIA).
#![allow(dead_code)] // each test file uses a subset

use std::path::{Path, PathBuf};

/// tests/media of the workspace.
pub fn fixtures() -> PathBuf {
    std::env::var_os("GM_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/media"))
}

/// A committed fixture video by name: `name.mp4`, or the file named when `name` has an
/// extension (`vp9_altref.webm`).
pub fn video(name: &str) -> PathBuf {
    let dir = fixtures().join("video");
    if Path::new(name).extension().is_some() {
        dir.join(name)
    } else {
        dir.join(format!("{name}.mp4"))
    }
}

/// ../shared/media, if present.
pub fn shared() -> Option<PathBuf> {
    let p = std::env::var_os("GM_SHARED_MEDIA")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/media"));
    p.join("video").is_dir().then_some(p)
}
