//! Indexes an MP4/MOV file without decoding it and prints a summary, then plans the decoding
//! of three frames.
//!
//! `cargo run -p gm-demux --example index [VIDEO]` (default: a fixture of `tests/media`)
#![allow(clippy::print_stdout)] // an example reports on stdout

use std::path::PathBuf;

use gm_demux::{IndexOptions, VideoIndex};

fn main() -> anyhow::Result<()> {
    let path = std::env::args_os().nth(1).map_or_else(
        || {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../tests/media/video/h264_open_gop.mp4")
        },
        PathBuf::from,
    );
    let index = VideoIndex::open(&path, IndexOptions::default())?;
    println!("{index}");
    let n = index.frame_count();
    if n == 0 {
        return Ok(());
    }
    // The frames a training sample might want: the first, the middle and the last.
    let wanted = [0, n / 2, n - 1];
    let plan = index.plan(&wanted)?;
    println!(
        "frames {wanted:?} need {} packets of {n}, in {} run(s)",
        plan.packet_count(),
        plan.runs.len()
    );
    Ok(())
}
