//! Locating the `gm` binary and the fixtures, in a Cargo build and in the GPU bundle.
// Each test binary uses only some of these.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The `gm` binary: GM_BIN in the GPU bundle (where the build machine's path does not exist),
/// else the one Cargo built for this test.
pub fn gm() -> Command {
    let bin = std::env::var_os("GM_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_gm").into());
    Command::new(bin)
}

/// tests/media, or GM_FIXTURES in the GPU bundle.
pub fn fixtures() -> PathBuf {
    std::env::var_os("GM_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/media"))
}

/// Width, height and pixels of a PNG file.
pub fn read_png(path: &Path) -> (u32, u32, Vec<u8>) {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let dec = png::Decoder::new(std::io::BufReader::new(file));
    let mut reader = dec
        .read_info()
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader
        .next_frame(&mut buf)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    buf.truncate(info.buffer_size());
    (info.width, info.height, buf)
}
