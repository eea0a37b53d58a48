//! Saved indexes: identical after a round trip, compact, and refused when damaged, of another
//! version, or when the video changed.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod common;

use std::path::PathBuf;

use common::fixtures;
use gm_demux::{BitstreamScan, DemuxError, IndexOptions, VideoIndex};

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("gm-demux-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn saved_indexes_load_identical_and_compact() {
    let dir = temp_dir("persist");
    for entry in std::fs::read_dir(fixtures().join("video")).unwrap() {
        let video = entry.unwrap().path();
        if video
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("mpeg4")
        {
            continue;
        }
        for scan in [
            BitstreamScan::None,
            BitstreamScan::Keyframes,
            BitstreamScan::Full,
        ] {
            let idx = VideoIndex::open(
                &video,
                IndexOptions {
                    scan,
                    ..Default::default()
                },
            )
            .unwrap();
            let file = dir.join("v.gmidx");
            idx.save(&file).unwrap();
            let mut loaded = VideoIndex::load(&file, &video).unwrap();
            loaded.bytes_read = idx.bytes_read;
            assert_eq!(loaded, idx, "{} ({scan:?})", video.display());
            // The header holds the parameter sets (x265 adds a 2 KB settings SEI); packets take
            // a few bytes each.
            let len = std::fs::metadata(&file).unwrap().len() as usize;
            let sets: usize = idx.codec.parameter_sets.iter().map(Vec::len).sum();
            assert!(
                len < 100 + sets + 14 * idx.packets.len(),
                "{}: {len} bytes",
                video.display()
            );
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn stale_damaged_and_foreign_indexes_are_refused_and_rebuilt() {
    let dir = temp_dir("stale");
    let video = dir.join("v.mp4");
    std::fs::copy(fixtures().join("video/hevc_open_gop.mp4"), &video).unwrap();
    let file = dir.join("v.gmidx");
    let idx = VideoIndex::open_cached(&video, &file, IndexOptions::default()).unwrap();
    assert!(file.exists(), "open_cached saved the index");
    let again = VideoIndex::open_cached(&video, &file, IndexOptions::default()).unwrap();
    assert_eq!(
        again.bytes_read, 0,
        "the second open read the saved index, not the video"
    );
    assert_eq!(again.packets, idx.packets);

    let bytes = std::fs::read(&file).unwrap();
    let mut damaged = bytes.clone();
    let k = damaged.len() - 3;
    damaged[k] ^= 0x40;
    std::fs::write(&file, &damaged).unwrap();
    let err = VideoIndex::load(&file, &video).unwrap_err();
    assert!(
        matches!(err, DemuxError::StaleIndex { .. }) && err.to_string().contains("checksum"),
        "{err}"
    );

    let mut other_version = bytes.clone();
    other_version[5] = 99;
    std::fs::write(&file, &other_version).unwrap();
    let err = VideoIndex::load(&file, &video).unwrap_err();
    assert!(err.to_string().contains("format version 99"), "{err}");
    // Files of format 5 (before Matroska's orientation) are stale, not misread.
    other_version[5] = 5;
    std::fs::write(&file, &other_version).unwrap();
    let err = VideoIndex::load(&file, &video).unwrap_err();
    assert!(
        matches!(err, DemuxError::StaleIndex { .. })
            && err
                .to_string()
                .contains("format version 5, this build reads 6"),
        "{err}"
    );

    std::fs::write(&file, &bytes).unwrap();
    assert!(VideoIndex::load(&file, &video).is_ok());
    // Appending to the video invalidates the index; open_cached rebuilds it.
    let mut v = std::fs::read(&video).unwrap();
    v.extend_from_slice(&[0, 0, 0, 8, b'f', b'r', b'e', b'e']);
    std::fs::write(&video, &v).unwrap();
    let err = VideoIndex::load(&file, &video).unwrap_err();
    assert!(
        err.to_string().contains("changed since it was indexed"),
        "{err}"
    );
    let rebuilt = VideoIndex::open_cached(&video, &file, IndexOptions::default()).unwrap();
    assert!(rebuilt.bytes_read > 0 && rebuilt.file_size == idx.file_size + 8);
    std::fs::remove_dir_all(&dir).ok();
}
