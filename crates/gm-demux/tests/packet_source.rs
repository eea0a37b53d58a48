//! `PacketSource`, the seam decoders take packets through: `IndexingDemuxer` implements it
//! consistently (the trait's name, codec and run packets are the demuxer's own), and its
//! packets are the file's samples as Annex-B, checked against a conversion done here from the
//! bytes the index points at.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod common;

use std::sync::Arc;

use common::{fixtures, video};
use gm_demux::{
    BitstreamScan, DecodeRun, DemuxError, GopCache, IndexOptions, IndexingDemuxer, Packet,
    PacketSource, append_annexb, append_parameter_sets,
};

const FIXTURES: &[&str] = &[
    "h264_no_bframes",
    "h264_bpyramid",
    "h264_open_gop",
    "h264_fragmented",
    "hevc_open_gop",
    "hevc_main10",
    "hevc_fragmented",
];

/// The packets of `run` built from the file's bytes, without the demuxer's reading code.
fn expected(demux: &IndexingDemuxer, file: &[u8], run: &DecodeRun) -> Vec<Packet> {
    let idx = demux.index();
    run.packets
        .iter()
        .enumerate()
        .map(|(k, &d)| {
            let s = &idx.packets[d as usize];
            let raw = &file[s.offset as usize..(s.offset + u64::from(s.size)) as usize];
            let mut data = Vec::new();
            if k == 0 {
                append_parameter_sets(&mut data, &idx.codec.parameter_sets);
            }
            append_annexb(&mut data, raw, idx.codec.nal_length_size).unwrap();
            Packet {
                decode_index: d,
                pts: s.pts,
                data,
            }
        })
        .collect()
}

#[test]
fn the_demuxer_gives_the_same_packets_through_the_trait_as_directly() {
    let cache = Arc::new(GopCache::new(1 << 20));
    let mut runs_checked = 0;
    for (v, name) in FIXTURES.iter().enumerate() {
        let path = video(name);
        let file = std::fs::read(&path).unwrap();
        let options = IndexOptions {
            scan: BitstreamScan::Full,
            ..Default::default()
        };
        let plain = IndexingDemuxer::open(&path, options).unwrap();
        let cached = IndexingDemuxer::open(&path, options)
            .unwrap()
            .with_cache(cache.clone(), v as u64);
        for demux in [&plain, &cached] {
            let source: &dyn PacketSource = demux;
            let idx = demux.index();
            assert_eq!(source.name(), idx.path.as_path(), "{name}");
            assert_eq!(source.codec(), &idx.codec, "{name}");
            let n = idx.frame_count();
            let requests: Vec<Vec<usize>> = vec![
                (0..n).collect(),
                vec![n - 1, 0, n / 2, n / 2],
                (n / 3..(n / 3 + 5).min(n)).rev().collect(),
            ];
            for frames in requests {
                let plan = demux.plan(&frames).unwrap();
                for run in &plan.runs {
                    let through_trait = source.read_run(run).unwrap();
                    assert_eq!(through_trait, demux.read_run(run).unwrap(), "{name}");
                    assert_eq!(through_trait, expected(demux, &file, run), "{name}");
                    runs_checked += 1;
                }
            }
        }
    }
    assert!(
        cache.stats().hits > 0,
        "the cached demuxer read from its cache"
    );
    assert!(runs_checked >= 3 * 2 * FIXTURES.len());
}

#[test]
fn a_run_naming_a_packet_past_the_end_is_an_error_through_the_trait() {
    let path = video("h264_bpyramid");
    let demux = IndexingDemuxer::open(&path, IndexOptions::default()).unwrap();
    let past = demux.index().packets.len() as u32;
    let run = DecodeRun {
        packets: vec![0, past],
        keep: vec![],
    };
    let source: &dyn PacketSource = &demux;
    let err = source.read_run(&run).unwrap_err();
    assert!(
        matches!(err, DemuxError::BadSample { sample, .. } if sample == past as usize),
        "{err}"
    );
}

/// VP9 key frames carry their colour space in VP9's own numbering; `vp9_key_frame_colour`
/// gives it as ISO/IEC 23091-4 matrix coefficients, as ffprobe reports the fixtures (BT.709,
/// limited range), and nothing for a frame that is not a key frame.
#[test]
fn vp9_key_frames_signal_their_colour_as_ffprobe_reports_it() {
    for name in [
        "vp9_altref.webm",
        "vp9_10bit.webm",
        "vp9.mp4",
        "vp9_odd.webm",
    ] {
        let path = fixtures().join("video").join(name);
        let demux = IndexingDemuxer::open(&path, IndexOptions::default()).unwrap();
        let n = demux.index().frame_count();
        let plan = demux.plan(&[n - 1]).unwrap();
        let packets = demux.read_run(&plan.runs[0]).unwrap();
        assert_eq!(
            gm_demux::vp9_key_frame_colour(&packets[0].data),
            Some((1, false)),
            "{name}"
        );
        let later = packets
            .iter()
            .skip(1)
            .find(|p| gm_demux::vp9_key_frame_colour(&p.data).is_some());
        assert!(later.is_none(), "{name}: only the key frame signals colour");
    }
}
