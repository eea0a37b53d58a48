//! Hostile and broken files: each is an error naming the file and the problem, never a panic.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod common;

use std::sync::Arc;

use common::fixtures;
use gm_demux::{
    BitstreamScan, Codec, CodecInfo, DemuxError, IndexOptions, IndexingDemuxer, MemSource,
    VideoIndex,
};
use proptest::prelude::*;

fn fixture_bytes(name: &str) -> Vec<u8> {
    std::fs::read(fixtures().join(format!("video/{name}.mp4"))).unwrap()
}

fn index(name: &str, bytes: Vec<u8>) -> Result<VideoIndex, DemuxError> {
    VideoIndex::from_source(
        &MemSource::new(name, bytes),
        IndexOptions {
            scan: BitstreamScan::Full,
            ..Default::default()
        },
    )
}

fn expect_error(name: &str, bytes: Vec<u8>, needle: &str) {
    let err = index(name, bytes).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.starts_with(name) || msg.contains(name),
        "error does not name the file: {msg}"
    );
    assert!(msg.contains(needle), "expected '{needle}' in: {msg}");
}

/// Position of the first box of type `kind` (its size field).
fn box_at(bytes: &[u8], kind: &[u8; 4]) -> usize {
    bytes.windows(4).position(|w| w == kind).unwrap() - 4
}

#[test]
fn empty_garbage_and_incomplete_files() {
    expect_error("empty.mp4", vec![], "the file is empty");
    expect_error(
        "garbage.mp4",
        b"this is certainly not a video file at all".to_vec(),
        "not an MP4/MOV or Matroska/WebM file",
    );
    let mut mdat_only = vec![
        0, 0, 0, 16, b'f', b't', b'y', b'p', b'i', b's', b'o', b'm', 0, 0, 2, 0,
    ];
    mdat_only.extend_from_slice(&[0, 0, 0, 12, b'm', b'd', b'a', b't', 1, 2, 3, 4]);
    expect_error("mdat_only.mp4", mdat_only, "no 'moov' box");
    let full = fixture_bytes("h264_bpyramid");
    let moov = box_at(&full, b"moov");
    expect_error(
        "cut_in_moov.mp4",
        full[..moov + 100].to_vec(),
        "past the end",
    );
    // Cut inside mdat, moov at the end (ffmpeg's layout): the moov box is gone.
    expect_error(
        "cut_in_mdat.mp4",
        full[..full.len() / 2].to_vec(),
        "past the end",
    );
}

#[test]
fn sample_tables_pointing_outside_the_file() {
    let mut bytes = fixture_bytes("h264_no_bframes");
    let stco = box_at(&bytes, b"stco");
    // stco: size, type, version+flags, entry count, then the first chunk offset.
    bytes[stco + 16..stco + 20].copy_from_slice(&0xffff_fff0u32.to_be_bytes());
    expect_error("stco_outside.mp4", bytes, "lies outside the");
}

#[test]
fn absurd_counts_are_refused_before_allocating() {
    let mut bytes = fixture_bytes("h264_no_bframes");
    let stsz = box_at(&bytes, b"stsz");
    let stts = box_at(&bytes, b"stts");
    // A constant sample size of 1 byte with 4 billion samples in stts.
    bytes[stsz + 12..stsz + 16].copy_from_slice(&1u32.to_be_bytes());
    bytes[stts + 16..stts + 20].copy_from_slice(&u32::MAX.to_be_bytes());
    let err = index("absurd.mp4", bytes).unwrap_err().to_string();
    assert!(
        err.contains("more than")
            || err.contains("do not fit")
            || err.contains("could not be parsed"),
        "{err}"
    );
}

#[test]
fn unsupported_and_missing_tracks_are_named() {
    let err = VideoIndex::open(
        &fixtures().join("video/h264_bpyramid.mp4"),
        IndexOptions {
            track: gm_demux::TrackSelect::Id(7),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("no track 7 among tracks [1 (Video)]"),
        "{err}"
    );
    let mut bytes = fixture_bytes("hevc_closed_gop");
    let hvc1 = box_at(&bytes, b"hvc1");
    bytes[hvc1 + 4..hvc1 + 8].copy_from_slice(b"vp08");
    expect_error(
        "vp8.mp4",
        bytes.clone(),
        "unsupported codec vp08 in vp8.mp4",
    );
    // A codec we read, with its configuration record missing.
    bytes[hvc1 + 4..hvc1 + 8].copy_from_slice(b"av01");
    expect_error("av1.mp4", bytes, "'av01' sample entry has no 'av1C' box");
}

fn mutate(mut bytes: Vec<u8>, edits: &[(usize, u32)], cut: Option<usize>) -> Vec<u8> {
    let len = bytes.len();
    for &(pos, value) in edits {
        let p = pos % len.saturating_sub(4).max(1);
        bytes[p..p + 4].copy_from_slice(&value.to_be_bytes());
    }
    if let Some(c) = cut {
        bytes.truncate(c % len);
    }
    bytes
}

fn exercise(bytes: Vec<u8>) {
    let src = Arc::new(MemSource::new("fuzz.mp4", bytes));
    match VideoIndex::from_source(
        &*src,
        IndexOptions {
            scan: BitstreamScan::Full,
            ..Default::default()
        },
    ) {
        Ok(idx) => {
            let n = idx.frame_count();
            let demux = IndexingDemuxer::new(Arc::new(idx), src);
            if n > 0
                && let Ok(plan) = demux.plan(&[0, n / 2, n - 1])
            {
                for run in &plan.runs {
                    let _ = demux.read_run(run);
                }
            }
        }
        Err(e) => assert!(e.to_string().contains("fuzz.mp4"), "{e}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]
    /// Overwrite 32-bit fields with hostile values (sizes, counts, offsets) anywhere, mostly
    /// in the metadata boxes, and cut the file anywhere.
    #[test]
    fn mutated_fixtures_never_panic(
        which in 0usize..4,
        edits in proptest::collection::vec((0usize..1 << 20, prop_oneof![Just(0u32), Just(1), Just(u32::MAX), Just(0x7fff_ffff), Just(0x8000_0000), any::<u32>()]), 1..6),
        near_moov in any::<bool>(),
        cut in proptest::option::of(0usize..1 << 20),
    ) {
        let name = ["h264_bpyramid", "hevc_open_gop", "h264_fragmented", "hevc_fragmented"][which];
        let bytes = fixture_bytes(name);
        let meta = if name.contains("fragmented") { box_at(&bytes, b"moof") } else { box_at(&bytes, b"moov") };
        let edits: Vec<(usize, u32)> = edits
            .into_iter()
            .map(|(p, v)| if near_moov { (meta + p % 2048, v) } else { (p, v) })
            .collect();
        exercise(mutate(bytes, &edits, cut));
    }
}

/// Inputs the fuzzer found (tests/media/regressions): each must be a clean error or index.
#[test]
fn fuzz_regressions_stay_fixed() {
    let dir = fixtures().join("regressions");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        if path.ends_with("stco_count_oom.mp4") {
            // Refused by our count check before mp4parse could reserve 30 GB for it.
            expect_error("stco_count_oom.mp4", bytes.clone(), "'stco' declares");
        }
        if path.ends_with("mkv_no_frames.webm") {
            // A WebM whose video track has no blocks: an error, not an index of nothing.
            expect_error("mkv_no_frames.webm", bytes.clone(), "has no frames");
        }
        // As the index fuzzer feeds them: also as each codec's parameter set.
        for codec in [Codec::H264, Codec::Hevc, Codec::Av1] {
            let info = CodecInfo {
                codec,
                fourcc: String::new(),
                profile_idc: 0,
                level_idc: 0,
                chroma_format: 1,
                bit_depth: 8,
                width: 0,
                height: 0,
                nal_length_size: 4,
                parameter_sets: vec![bytes.clone()],
            };
            let _ = info.signalled_chroma_location();
        }
        exercise(bytes);
        n += 1;
    }
    assert!(n > 0, "no regression inputs in {}", dir.display());
}

#[test]
fn sync_flags_that_contradict_the_bitstream_are_reported_and_not_trusted() {
    // hevc_closed_gop has sync samples 1, 13, 25 (all IDR). Flag sample 5 (a B or P picture)
    // as sync instead of 13.
    let mut bytes = fixture_bytes("hevc_closed_gop");
    let stss = box_at(&bytes, b"stss");
    let entries = stss + 16;
    assert_eq!(&bytes[entries + 4..entries + 8], &13u32.to_be_bytes());
    bytes[entries + 4..entries + 8].copy_from_slice(&5u32.to_be_bytes());
    let idx = index("forged_stss.mp4", bytes).unwrap();
    let mismatched: Vec<(u32, bool)> = idx
        .sync_mismatches
        .iter()
        .map(|m| (m.decode_index, m.container_sync))
        .collect();
    assert_eq!(
        mismatched,
        vec![(4, true), (12, false)],
        "{:?}",
        idx.sync_mismatches
    );
    let starts: Vec<u32> = idx.gops.iter().map(|g| g.start).collect();
    assert_eq!(
        starts,
        vec![0, 12, 24],
        "the flagged P/B is not a start; the unflagged IDR is"
    );
    assert!(!idx.packets[4].keyframe || idx.packets[4].decode_start == 0);
}
