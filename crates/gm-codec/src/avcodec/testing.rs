//! Support for tests that need FFmpeg's libraries (as `gm_cuda::testing` for the GPU): without
//! them a test prints `SKIP (no FFmpeg libraries): <name>` and passes; with
//! `GM_REQUIRE_LIBAVCODEC=1` (set by CI, and on a GPU machine given a build) it fails.

use std::io::Write;

use super::CpuDecoder;

/// The variable that turns a missing ffmpeg CLI into a failure.
pub const REQUIRE_FFMPEG_VAR: &str = "GM_REQUIRE_FFMPEG";

/// Whether the ffmpeg CLI runs here (the reference tests compare against), for the test
/// `name`; `false` after a `SKIP (no ffmpeg)` line.
///
/// # Panics
/// When it does not run and `GM_REQUIRE_FFMPEG` is set (CI installs it).
pub fn ffmpeg_or_skip(name: &str) -> bool {
    let ok = std::process::Command::new("ffmpeg")
        .arg("-version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        if std::env::var_os(REQUIRE_FFMPEG_VAR).is_some() {
            panic!("{name}: {REQUIRE_FFMPEG_VAR} is set but ffmpeg is missing");
        }
        let _ = writeln!(std::io::stderr(), "SKIP (no ffmpeg): {name}");
    }
    ok
}

/// The variable that turns skips into failures.
pub const REQUIRE_LIBAVCODEC_VAR: &str = "GM_REQUIRE_LIBAVCODEC";

/// Whether FFmpeg's libraries load here, for the test `name`; `false` after the SKIP line.
///
/// # Panics
/// When they do not load and `GM_REQUIRE_LIBAVCODEC` is set.
pub fn libavcodec_or_skip(name: &str) -> bool {
    match CpuDecoder::library() {
        Ok(_) => true,
        Err(e) => {
            if std::env::var_os(REQUIRE_LIBAVCODEC_VAR).is_some() {
                panic!("{name}: {REQUIRE_LIBAVCODEC_VAR} is set but FFmpeg did not load: {e}");
            }
            let _ = writeln!(std::io::stderr(), "SKIP (no FFmpeg libraries): {name}: {e}");
            false
        }
    }
}
