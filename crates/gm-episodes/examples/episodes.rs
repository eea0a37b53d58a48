//! Cuts episodes from a video's index: fixed-length ones by frame count, and timed ones from
//! the presentation timestamps.
//!
//! `cargo run -p gm-episodes --example episodes [VIDEO]` (default: a fixture of `tests/media`)
#![allow(clippy::print_stdout)] // an example reports on stdout

use std::path::PathBuf;

use gm_demux::{IndexOptions, VideoIndex};
use gm_episodes::{EpisodeGenerator, TimedEpisodes, Timeline};

fn main() -> anyhow::Result<()> {
    let path = std::env::args_os().nth(1).map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/media/video/h264_vfr.mp4"),
        PathBuf::from,
    );
    let index = VideoIndex::open(&path, IndexOptions::default())?;
    println!("{}: {} frames", path.display(), index.frame_count());

    // 8 frames every 8 frames, every 2nd frame: each episode spans 15 frames.
    let fixed = EpisodeGenerator::new(index.frame_count(), 8, 8)?.with_step(2)?;
    println!("{} fixed-length episodes", fixed.episode_count());
    for (k, frames) in fixed.iter().take(3).enumerate() {
        println!("  episode {k}: frames {frames:?}");
    }

    // 1-second clips at 4 fps, one every 0.5 s, from the timestamps (variable frame rates
    // give evenly timed clips).
    let timed = TimedEpisodes::new(Timeline::from_index(&index), 1.0, 4.0, 0.5)?;
    println!("{} timed episodes", timed.episode_count());
    for k in 0..timed.episode_count().min(3) {
        println!("  episode {k}: frames {:?}", timed.episode(k as i64)?);
    }
    Ok(())
}
