//! The index against ffprobe: every packet's pts, dts, duration, offset, size and key flag, for
//! the committed fixtures (tests/media, made by tests/media/make_fixtures.sh) and the real
//! videos of ../shared/media/video.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod common;

use std::path::Path;

use common::{fixtures, shared, video};
use gm_demux::{
    BitstreamScan, Codec, Container, DemuxError, IndexOptions, RandomAccess, VideoIndex,
};

struct GoldenPacket {
    pts: i64,
    /// `None` where ffprobe prints N/A (Matroska stores no decode times; ffprobe guesses them
    /// after the first `has_b_frames` packets).
    dts: Option<i64>,
    pos: u64,
    size: u32,
    key: bool,
}

fn golden(name: &str) -> (Vec<GoldenPacket>, String) {
    let dir = fixtures().join("golden");
    let csv = std::fs::read_to_string(dir.join(format!("{name}.packets.csv"))).unwrap();
    let packets = csv
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            GoldenPacket {
                pts: f[0].parse().unwrap(),
                dts: (f[1] != "N/A").then(|| f[1].parse().unwrap()),
                // f[2] is ffprobe's duration: N/A for some files, and not the container's
                // sample duration for VFR ones, so it is not compared.
                // ffprobe writes its own field order: pts,dts,duration,size,pos,flags.
                size: f[3].parse().unwrap(),
                pos: f[4].parse().unwrap(),
                key: f[5].starts_with('K'),
            }
        })
        .collect();
    let stream = std::fs::read_to_string(dir.join(format!("{name}.stream.txt"))).unwrap();
    (packets, stream)
}

fn field<'a>(stream: &'a str, key: &str) -> &'a str {
    stream
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("{key} missing in {stream}"))
}

fn check(path: &Path, golden_name: &str) {
    let (want, stream) = golden(golden_name);
    for scan in [
        BitstreamScan::None,
        BitstreamScan::Keyframes,
        BitstreamScan::Full,
    ] {
        let idx = VideoIndex::open(
            path,
            IndexOptions {
                scan,
                ..Default::default()
            },
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let name = path.display();
        // ffprobe's pos of a Matroska packet is its Block's start: the payload follows the
        // track number (one byte here), the timestamp and the flags.
        let block_header = match idx.container {
            Container::Matroska => 4,
            Container::Mp4 => 0,
        };
        assert_eq!(idx.packets.len(), want.len(), "{name}: packet count");
        for (i, (p, w)) in idx.packets.iter().zip(&want).enumerate() {
            let got = (p.pts, w.dts.map(|_| p.dts), p.offset, p.size, p.keyframe);
            let exp = (w.pts, w.dts, w.pos + block_header, w.size, w.key);
            assert_eq!(got, exp, "{name}: packet {i} (pts, dts, pos, size, key)");
            assert!(
                p.dts <= p.pts,
                "{name}: packet {i} decoded after it is shown"
            );
        }
        assert_eq!(
            idx.codec.codec.name(),
            field(&stream, "codec_name"),
            "{name}"
        );
        match field(&stream, "codec_tag_string") {
            // Matroska has no four-character codes; its CodecID stands in.
            "[0][0][0][0]" => {
                assert_eq!(idx.container, Container::Matroska, "{name}");
                assert!(
                    idx.codec.fourcc.starts_with("V_"),
                    "{name}: {}",
                    idx.codec.fourcc
                );
            }
            tag => assert_eq!(idx.codec.fourcc, tag, "{name}"),
        }
        if matches!(idx.codec.codec, Codec::Vp9 | Codec::Av1) {
            assert_eq!(
                idx.codec.profile_name(),
                field(&stream, "profile"),
                "{name}"
            );
        }
        assert_eq!(
            idx.codec.width.to_string(),
            field(&stream, "width"),
            "{name}"
        );
        assert_eq!(
            idx.codec.height.to_string(),
            field(&stream, "height"),
            "{name}"
        );
        assert_eq!(
            format!("1/{}", idx.timescale),
            field(&stream, "time_base"),
            "{name}"
        );
        assert_eq!(
            idx.codec.bit_depth,
            if field(&stream, "pix_fmt").contains("10") {
                10
            } else {
                8
            },
            "{name}"
        );
        // Presentation order is a permutation sorted by pts.
        assert_eq!(
            idx.frame_count(),
            idx.packets.len(),
            "{name}: every packet presented"
        );
        for k in 1..idx.frame_count() {
            assert!(
                idx.frame(k - 1).unwrap().pts < idx.frame(k).unwrap().pts,
                "{name}: frame {k}"
            );
        }
        for (d, p) in idx.packets.iter().enumerate() {
            let shown = p.presentation_index.expect("every packet presented");
            assert_eq!(idx.presentation[shown.as_usize()] as usize, d);
            // Decoding starts at a GOP start at or before the packet.
            let start = p.decode_start as usize;
            assert!(
                start <= d && idx.gops.iter().any(|g| g.start as usize == start),
                "{name}: packet {d}"
            );
        }
        if scan != BitstreamScan::None {
            assert!(
                idx.sync_mismatches.is_empty(),
                "{name}: {:?}",
                idx.sync_mismatches
            );
        }
        if scan == BitstreamScan::Full {
            assert!(
                idx.packets.iter().all(|p| p.picture.is_some()),
                "{name}: every picture read"
            );
        }
        let md5 = fixtures()
            .join("golden")
            .join(format!("{golden_name}.framemd5"));
        if let Ok(text) = std::fs::read_to_string(&md5) {
            let decoded = text
                .lines()
                .filter(|l| !l.starts_with('#') && !l.is_empty())
                .count();
            assert_eq!(idx.frame_count(), decoded, "{name}: frames ffmpeg decodes");
        }
        assert!(
            idx.bytes_read < idx.file_size,
            "{name}: read {} of {} bytes",
            idx.bytes_read,
            idx.file_size
        );
    }
}

macro_rules! golden_tests {
    ($($name:ident $(= $file:literal)?),* $(,)?) => { $(
        #[test]
        fn $name() {
            let file = golden_tests!(@file $name $($file)?);
            let stem = file.split('.').next().unwrap();
            check(&video(file), stem);
        }
    )* };
    (@file $name:ident) => { stringify!($name) };
    (@file $name:ident $file:literal) => { $file };
}

golden_tests!(
    h264_no_bframes,
    h264_bpyramid,
    h264_open_gop,
    h264_slices,
    h264_fragmented,
    h264_1366x766,
    h264_vfr,
    hevc_closed_gop,
    hevc_open_gop,
    hevc_main10,
    hevc_fragmented,
    vp9_mp4 = "vp9.mp4",
    av1_odd_mp4 = "av1_odd.mp4",
    vp9_altref = "vp9_altref.webm",
    vp9_10bit = "vp9_10bit.webm",
    vp9_odd = "vp9_odd.webm",
    vp9_no_cues = "vp9_no_cues.webm",
    av1_hidden = "av1_hidden.webm",
    av1_svt = "av1_svt.webm",
    av1_10bit = "av1_10bit.webm",
    av1_grain = "av1_grain.webm",
    h264_bframes_mkv = "h264_bframes.mkv",
    hevc_bframes_mkv = "hevc_bframes.mkv",
);

#[test]
fn shared_real_videos_match_ffprobe() {
    let Some(shared) = shared() else {
        eprintln!("../shared/media not present; the committed fixtures cover the formats");
        return;
    };
    for name in [
        "humming_bird_1s",
        "humming_bird_1s_keyframes_only",
        "phone_1080p",
        "birds_720p",
        "cockatoo_h264_444",
    ] {
        let path = shared.join("video").join(format!("{name}.mp4"));
        check(&path, &format!("shared_{name}"));
    }
    let c = VideoIndex::open(
        &shared.join("video/cockatoo_h264_444.mp4"),
        IndexOptions::default(),
    )
    .unwrap();
    assert_eq!(
        (c.codec.profile_idc, c.codec.chroma_format),
        (244, 3),
        "High 4:4:4 is indexed and said so"
    );
}

#[test]
fn open_gops_send_leading_pictures_to_the_previous_gop() {
    for (name, open_expected) in [
        ("hevc_open_gop", true),
        ("h264_open_gop", true),
        ("hevc_closed_gop", false),
        ("h264_bpyramid", false),
    ] {
        let idx = VideoIndex::open(
            &video(name),
            IndexOptions {
                scan: BitstreamScan::Full,
                ..Default::default()
            },
        )
        .unwrap();
        let leading_needing_previous = idx
            .packets
            .iter()
            .filter(|p| p.decode_start < idx.gops[p.gop as usize].start)
            .count();
        assert_eq!(
            leading_needing_previous > 0,
            open_expected,
            "{name}: {leading_needing_previous}"
        );
        let open_gops = idx
            .gops
            .iter()
            .skip(1)
            .filter(|g| g.random_access.is_some_and(|r| r.is_open()))
            .count();
        assert_eq!(open_gops > 0, open_expected, "{name}: {:?}", idx.gops);
        if !open_expected {
            assert!(
                idx.gops
                    .iter()
                    .all(|g| g.random_access == Some(RandomAccess::Idr)),
                "{name}"
            );
        }
    }
}

#[test]
fn unsupported_codecs_are_named() {
    let err = VideoIndex::open(&video("mpeg4_part2"), IndexOptions::default()).unwrap_err();
    assert!(matches!(err, DemuxError::UnsupportedCodec { .. }), "{err}");
    assert!(
        err.to_string().starts_with("unsupported codec mp4v in "),
        "{err}"
    );
    assert!(err.to_string().contains("mpeg4_part2.mp4"), "{err}");
}
