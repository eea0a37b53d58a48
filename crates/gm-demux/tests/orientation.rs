//! Display orientation from the MP4 track header and the Matroska Projection: each fixture of tests/media/rotated (one
//! clip stored as is, turned 90, 180 and 270 degrees by ffmpeg's muxer and mirrored by a
//! written matrix) reads as ffprobe reports it, and survives a saved index.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod common;

use common::fixtures;
use gm_demux::{DisplayOrientation, IndexOptions, VideoIndex};

/// (file stem, ffprobe's rotation side data: None when it printed none).
fn ffprobe_rotations() -> Vec<(String, Option<i32>)> {
    std::fs::read_to_string(fixtures().join("rotated/rotations.txt"))
        .unwrap()
        .lines()
        .map(|l| {
            let (name, r) = l.split_once(' ').unwrap_or((l, ""));
            (name.to_string(), r.trim().parse().ok())
        })
        .collect()
}

#[test]
fn display_matrices_read_as_ffprobe_reports_them() {
    let rotations = ffprobe_rotations();
    assert_eq!(rotations.len(), 5);
    for (name, ffprobe) in rotations {
        let path = fixtures().join(format!("rotated/{name}.mp4"));
        let index = VideoIndex::open(&path, IndexOptions::default()).unwrap();
        let o = index.orientation;
        if name == "mirror" {
            // ffprobe prints only the angle of a mirrored matrix (-180 for x' = -x); the
            // mirror itself is checked against ffmpeg's pixels in gm-tests' orientation test.
            let mirrored = DisplayOrientation {
                rotation: 0,
                mirror: true,
            };
            assert_eq!(o, mirrored);
            continue;
        }
        // ffprobe: counter-clockwise degrees in -180..=180, none for an identity matrix.
        let want = ffprobe.unwrap_or(0).rem_euclid(360) as u16;
        assert_eq!((o.rotation, o.mirror), (want, false), "{name}");
        let (w, h) = o.displayed_size(index.codec.width, index.codec.height);
        assert_eq!((index.codec.width, index.codec.height), (96, 64), "{name}");
        assert_eq!((w, h), if want % 180 == 90 { (64, 96) } else { (96, 64) });
    }
}

#[test]
fn matroska_projections_read_as_their_mp4_twins() {
    // ffmpeg 9 wrote each file's pose from the same `-display_rotation`/`-display_hflip` as
    // the MP4 of that name's matrix; the pixels are checked against ffmpeg 9's autorotated
    // frames in gm-tests' orientation test.
    for name in ["rotate_90", "rotate_180", "rotate_270", "mirror"] {
        let open = |ext: &str| {
            let path = fixtures().join(format!("rotated/{name}.{ext}"));
            VideoIndex::open(&path, IndexOptions::default()).unwrap()
        };
        let (mkv, mp4) = (open("mkv"), open("mp4"));
        assert!(mkv.orientation.is_turned(), "{name}");
        assert_eq!(mkv.orientation, mp4.orientation, "{name}");
    }
    let path = fixtures().join("rotated/rotate_90_mirror.mkv");
    let both = VideoIndex::open(&path, IndexOptions::default()).unwrap();
    let want = DisplayOrientation {
        rotation: 90,
        mirror: true,
    };
    assert_eq!(both.orientation, want);
}

#[test]
fn the_orientation_survives_a_saved_index() {
    let dir = std::env::temp_dir().join(format!("gm-orientation-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for name in [
        "rotate_90.mp4",
        "rotate_270.mp4",
        "mirror.mp4",
        "rotate_90_mirror.mkv",
    ] {
        let path = fixtures().join(format!("rotated/{name}"));
        let index = VideoIndex::open(&path, IndexOptions::default()).unwrap();
        let saved = dir.join(format!("{name}.gmidx"));
        index.save(&saved).unwrap();
        let loaded = VideoIndex::load(&saved, &path).unwrap();
        assert_eq!(loaded.orientation, index.orientation, "{name}");
        assert!(loaded.orientation.is_turned());
    }
    std::fs::remove_dir_all(&dir).ok();
}
