//! Chroma locations: every video fixture's location (its bitstream's VUI or sequence header,
//! the codec's default, else Matroska's Colour) reads as ffprobe reports it for the decoded
//! frames (`tests/media/chroma/locations.txt`), and survives a saved index.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod common;

use common::fixtures;
use gm_demux::{IndexOptions, VideoIndex};

#[test]
fn chroma_locations_read_as_ffprobe_reports_them() {
    let listed = std::fs::read_to_string(fixtures().join("chroma/locations.txt")).unwrap();
    let mut kinds = std::collections::HashSet::new();
    for line in listed.lines() {
        let (name, want) = line.split_once(' ').unwrap();
        let path = fixtures().join(name);
        let index = VideoIndex::open(&path, IndexOptions::default()).unwrap();
        let got = index.chroma_location();
        assert_eq!(got.name(), want.trim(), "{name}");
        kinds.insert(got);
        let saved = std::env::temp_dir().join(format!(
            "gm-chroma-{}-{}.gmidx",
            std::process::id(),
            name.replace('/', "_")
        ));
        index.save(&saved).unwrap();
        let back = VideoIndex::load(&saved, &path).unwrap();
        let _ = std::fs::remove_file(&saved);
        assert_eq!(back.chroma_location(), got, "{name}: after a save");
        assert_eq!(back.container_chroma, index.container_chroma, "{name}");
    }
    // Left (VUI default and Matroska), centre, top-left (H.264 VUI, AV1), bottom (HEVC VUI)
    // and unspecified all occur.
    assert!(kinds.len() >= 5, "{kinds:?}");
}
