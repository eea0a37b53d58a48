//! Frames turned as ffmpeg turns them: the orientation gm-demux reads from each fixture of
//! tests/media/rotated (MP4 display matrices, Matroska Projections), given to the fused kernel's CPU twin with the stored frame (ffmpeg's
//! decode of plain.mp4, the same bitstream as every file), gives exactly the twin's conversion
//! of the frame ffmpeg autorotated. The kernel runs the same mapping (its GPU test is in
//! gm-loader's video_orientation). Needs no GPU and no ffmpeg: the frames are committed.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use std::path::{Path, PathBuf};

use gm_demux::{IndexOptions, VideoIndex};
use gm_transforms::cpu::SemiPlanar;
use gm_transforms::{ChromaFilter, Matrix, Orientation};

fn rotated() -> PathBuf {
    std::env::var_os("GM_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("media"))
        .join("rotated")
}

/// The twin's RGB of a 4:2:0 frame, shown with `orientation`, at its displayed size.
fn rgb(yuv: &[u8], w: u32, h: u32, orientation: Orientation) -> (u32, u32, Vec<u8>) {
    let frame = SemiPlanar::from_yuv420p(yuv, w, h, 8).unwrap();
    // BT.709, limited range: what the fixtures signal (ffprobe: bt709, tv). Chroma replicated:
    // ffmpeg turns the planes before converting, which moves the chroma siting; replicated
    // chroma turns with the planes exactly, so the geometry alone is compared.
    let src = frame
        .host_image(Matrix::Bt709, false, orientation)
        .with_chroma(ChromaFilter::Replicate);
    let (dw, dh) = src.displayed_size();
    (dw, dh, src.to_rgb8())
}

#[test]
fn oriented_frames_equal_ffmpegs_autorotated_frames() {
    let stored = std::fs::read(rotated().join("plain.yuv")).unwrap();
    let mut turned = 0;
    let mp4 = ["plain", "rotate_90", "rotate_180", "rotate_270", "mirror"].map(|n| (n, "mp4"));
    let mkv = [
        "rotate_90",
        "rotate_180",
        "rotate_270",
        "mirror",
        "rotate_90_mirror",
    ]
    .map(|n| (n, "mkv"));
    for (name, container) in mp4.into_iter().chain(mkv) {
        let file = rotated().join(format!("{name}.{container}"));
        let index = VideoIndex::open(&file, IndexOptions::default()).unwrap();
        let (w, h) = (index.codec.width, index.codec.height);
        let o = index.orientation;
        let shown = Orientation::rotated(u32::from(o.rotation), o.mirror).unwrap();
        let (dw, dh, got) = rgb(&stored, w, h, shown);
        assert_eq!((dw, dh), o.displayed_size(w, h), "{name}.{container}");
        // ffmpeg's autorotated frame is `dw` x `dh`; as stored, it converts to the same RGB.
        let ffmpeg = std::fs::read(rotated().join(format!("{name}.yuv"))).unwrap();
        let (_, _, want) = rgb(&ffmpeg, dw, dh, Orientation::STORED);
        assert!(got == want, "{name}.{container}: not ffmpeg's orientation");
        turned += usize::from(o.is_turned());
    }
    assert_eq!(turned, 9);
}

#[test]
fn the_eight_orientations_are_distinct_and_sizes_follow_the_transpose() {
    let stored = std::fs::read(rotated().join("plain.yuv")).unwrap();
    let mut seen = Vec::new();
    for degrees in [0, 90, 180, 270] {
        for mirror in [false, true] {
            let o = Orientation::rotated(degrees, mirror).unwrap();
            let (dw, dh, out) = rgb(&stored, 96, 64, o);
            assert_eq!((dw, dh), o.displayed_size(96, 64));
            assert!(!seen.contains(&out), "{degrees} {mirror}: a repeat");
            seen.push(out);
        }
    }
    assert_eq!(Orientation::rotated(45, false), None);
}
