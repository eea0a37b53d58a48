//! Tests of the Matroska reader: the real fixtures against ffprobe's goldens, rewritten and
//! synthetic variants (unknown sizes, BlockGroups, lacing, SeekHead loops), and hostile files.

#![allow(clippy::unwrap_used)]

use super::ebml::{Header, parse_header};
use super::*;
use crate::error::DemuxError;
use crate::source::MemSource;

/// tests/media, or `$GM_FIXTURES` where the tests run away from the source tree (the GPU
/// bundle).
fn media() -> String {
    std::env::var("GM_FIXTURES")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/media").into())
}

/// (name, extension, CodecID) of each Matroska fixture.
const FIXTURES: &[(&str, &str, &str)] = &[
    ("vp9_altref", "webm", "V_VP9"),
    ("vp9_10bit", "webm", "V_VP9"),
    ("vp9_odd", "webm", "V_VP9"),
    ("vp9_no_cues", "webm", "V_VP9"),
    ("av1_hidden", "webm", "V_AV1"),
    ("av1_svt", "webm", "V_AV1"),
    ("av1_10bit", "webm", "V_AV1"),
    ("av1_grain", "webm", "V_AV1"),
    ("h264_bframes", "mkv", "V_MPEG4/ISO/AVC"),
    ("hevc_bframes", "mkv", "V_MPEGH/ISO/HEVC"),
];

fn fixture(name: &str, ext: &str) -> Vec<u8> {
    std::fs::read(format!("{}/video/{name}.{ext}", media())).unwrap()
}

fn read(name: &str, bytes: Vec<u8>) -> Result<MkvTrack> {
    read_track(&MemSource::new(name, bytes), TrackSelect::FirstVideo)
}

/// One line of `NAME.packets.csv`: pts, dts (None for N/A), duration, size, pos, key.
struct Packet {
    pts: i64,
    dts: Option<i64>,
    duration: u32,
    size: u32,
    pos: u64,
    key: bool,
}

fn packets(name: &str) -> Vec<Packet> {
    let text = std::fs::read_to_string(format!("{}/golden/{name}.packets.csv", media())).unwrap();
    text.lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            Packet {
                pts: f[0].parse().unwrap(),
                dts: f[1].parse().ok(),
                duration: f[2].parse().unwrap(),
                size: f[3].parse().unwrap(),
                pos: f[4].parse().unwrap(),
                key: f[5].starts_with('K'),
            }
        })
        .collect()
}

fn stream_field(name: &str, key: &str) -> String {
    let text = std::fs::read_to_string(format!("{}/golden/{name}.stream.txt", media())).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}=")))
        .unwrap()
        .to_string()
}

#[test]
fn fixtures_match_ffprobe() {
    for &(name, ext, codec) in FIXTURES {
        let bytes = fixture(name, ext);
        let len = bytes.len() as u64;
        let src = MemSource::new(name, bytes);
        let t = read_track(&src, TrackSelect::FirstVideo).unwrap();
        let gold = packets(name);
        assert_eq!(t.samples.len(), gold.len(), "{name}");
        for (i, (s, g)) in t.samples.iter().zip(&gold).enumerate() {
            let at = format!("{name} sample {i}");
            assert_eq!(s.cts, g.pts, "{at}");
            assert_eq!(s.size, g.size, "{at}");
            assert_eq!(s.offset, g.pos + 4, "{at}");
            assert_eq!(s.sync, g.key, "{at}");
            assert_eq!(s.duration, g.duration, "{at}");
            assert!(s.dts <= s.cts, "{at}");
        }
        assert!(t.samples.windows(2).all(|w| w[0].dts <= w[1].dts), "{name}");
        // ffprobe's decode times follow the codec's reorder depth (has_b_frames).
        let mut samples = t.samples.clone();
        let reorder: usize = stream_field(name, "has_b_frames").parse().unwrap();
        decode_times(&mut samples, reorder).unwrap();
        for (i, (s, g)) in samples.iter().zip(&gold).enumerate() {
            if let Some(dts) = g.dts {
                assert_eq!(s.dts, dts, "{name} sample {i}");
            }
        }
        assert_eq!(
            format!("1/{}", t.timescale),
            stream_field(name, "time_base")
        );
        assert_eq!(t.pixel_width.to_string(), stream_field(name, "width"));
        assert_eq!(t.pixel_height.to_string(), stream_field(name, "height"));
        assert_eq!(t.codec_id, codec, "{name}");
        assert_eq!(t.track_number, 1);
        let doc = if ext == "webm" { "webm" } else { "matroska" };
        assert_eq!(t.doc_type, doc);
        assert_eq!(t.has_cues, name != "vp9_no_cues", "{name}");
        let avc = codec.starts_with("V_MPEG");
        assert_eq!(
            !t.codec_private.is_empty(),
            avc || codec == "V_AV1",
            "{name}"
        );
        // Headers only: about one 32-byte read per block, plus the small elements.
        assert!(
            src.bytes_read() < 8192,
            "{name}: read {} of {len} bytes",
            src.bytes_read()
        );
    }
}

#[test]
fn track_selection() {
    let bytes = fixture("vp9_altref", "webm");
    let src = MemSource::new("vp9_altref.webm", bytes);
    assert_eq!(
        read_track(&src, TrackSelect::Id(1)).unwrap().samples.len(),
        30
    );
    let e = read_track(&src, TrackSelect::Id(2)).unwrap_err();
    assert!(matches!(e, DemuxError::NoTrack { .. }), "{e}");
    assert!(e.to_string().contains("vp9_altref.webm"), "{e}");
    assert!(is_matroska(&[0x1A, 0x45, 0xDF, 0xA3, 0x9F]));
    assert!(!is_matroska(&[0, 0, 0, 0x20, b'f', b't', b'y', b'p']));
    assert!(!is_matroska(&[0x1A, 0x45]));
}

// ---- Rewriting fixtures ----

/// The Segment's header and its top-level children (known sizes) in a fixture.
fn top_level(bytes: &[u8]) -> (Header, Vec<Header>) {
    let len = bytes.len() as u64;
    let ebml = parse_header(bytes, 0, len).unwrap();
    let at = ebml.end().unwrap();
    let seg = parse_header(&bytes[at as usize..], at, len).unwrap();
    let end = seg.end().unwrap_or(len);
    (seg, children(bytes, seg.data, end))
}

/// The children (known sizes) of the element data `start..end` of `bytes`.
fn children(bytes: &[u8], start: u64, end: u64) -> Vec<Header> {
    let mut out = Vec::new();
    let mut pos = start;
    while pos < end {
        let h = parse_header(&bytes[pos as usize..], pos, end).unwrap();
        pos = h.end().unwrap();
        out.push(h);
    }
    out
}

fn slice(bytes: &[u8], h: &Header) -> Vec<u8> {
    bytes[h.at as usize..h.end().unwrap() as usize].to_vec()
}

fn data(bytes: &[u8], h: &Header) -> Vec<u8> {
    bytes[h.data as usize..h.end().unwrap() as usize].to_vec()
}

/// Sets every Cluster's size to "unknown", at the same width.
fn unknown_size_clusters(bytes: &[u8]) -> Vec<u8> {
    let mut out = bytes.to_vec();
    let (_, kids) = top_level(bytes);
    for c in kids.iter().filter(|c| c.id == ids::CLUSTER) {
        let (start, end) = (c.at as usize + 4, c.data as usize);
        let width = end - start;
        out[start] = 0xFF >> (width - 1);
        out[start + 1..end].fill(0xFF);
    }
    out
}

#[test]
fn unknown_size_clusters_index_the_same() {
    for &(name, ext, _) in FIXTURES {
        let bytes = fixture(name, ext);
        let variant = unknown_size_clusters(&bytes);
        assert_ne!(variant, bytes);
        let a = read(name, bytes).unwrap();
        let b = read(name, variant).unwrap();
        assert_eq!(a, b, "{name}");
    }
}

/// Sets the Segment's size to "unknown", at the same width.
fn unknown_size_segment(bytes: &[u8]) -> Vec<u8> {
    let mut out = bytes.to_vec();
    let (seg, _) = top_level(bytes);
    let (start, end) = (seg.at as usize + 4, seg.data as usize);
    out[start] = 0xFF >> (end - start - 1);
    out[start + 1..end].fill(0xFF);
    out
}

/// Rewrites the fixture with every SimpleBlock as a BlockGroup (key flag cleared, a
/// ReferenceBlock for non-keyframes), dropping SeekHead, Cues, Tags and CRC-32 elements.
fn as_block_groups(bytes: &[u8]) -> Vec<u8> {
    let (seg, kids) = top_level(bytes);
    let mut body = Vec::new();
    for k in &kids {
        match k.id {
            ids::INFO | ids::TRACKS => body.extend(slice(bytes, k)),
            ids::CLUSTER => {
                let mut cluster = Vec::new();
                for c in children(bytes, k.data, k.end().unwrap()) {
                    match c.id {
                        ids::SIMPLE_BLOCK => {
                            let mut block = data(bytes, &c);
                            let key = block[3] & 0x80 != 0;
                            block[3] &= !0x80;
                            let mut group = el(ids::BLOCK, &block);
                            if !key {
                                group.extend(el(ids::REFERENCE_BLOCK, &[0xDF]));
                            }
                            cluster.extend(el(ids::BLOCK_GROUP, &group));
                        }
                        ids::CRC32 => {}
                        _ => cluster.extend(slice(bytes, &c)),
                    }
                }
                body.extend(el(ids::CLUSTER, &cluster));
            }
            _ => {}
        }
    }
    let mut out = bytes[..seg.at as usize].to_vec();
    out.extend(el(ids::SEGMENT, &body));
    out
}

#[test]
fn block_groups_index_like_simple_blocks() {
    for &(name, ext, _) in FIXTURES {
        let bytes = fixture(name, ext);
        let variant = as_block_groups(&bytes);
        let a = read(name, bytes.clone()).unwrap();
        let b = read(name, variant.clone()).unwrap();
        assert_eq!(a.samples.len(), b.samples.len(), "{name}");
        assert!(!b.has_cues);
        for (x, y) in a.samples.iter().zip(&b.samples) {
            assert_eq!(
                (x.cts, x.dts, x.duration, x.size, x.sync),
                (y.cts, y.dts, y.duration, y.size, y.sync)
            );
            let range = |s: &RawSample| s.offset as usize..(s.offset + u64::from(s.size)) as usize;
            assert_eq!(bytes[range(x)], variant[range(y)], "{name}");
        }
    }
}

// ---- A small EBML writer ----

fn id_bytes(id: u32) -> Vec<u8> {
    let b = id.to_be_bytes();
    let skip = b.iter().position(|&x| x != 0).unwrap();
    b[skip..].to_vec()
}

fn size_vint(n: u64) -> Vec<u8> {
    let width = (1..=8).find(|&w| n < (1u64 << (7 * w)) - 1).unwrap();
    let v = n | (1u64 << (7 * width));
    v.to_be_bytes()[8 - width..].to_vec()
}

fn el(id: u32, body: &[u8]) -> Vec<u8> {
    el_sized(id, &size_vint(body.len() as u64), body)
}

fn el_sized(id: u32, size: &[u8], body: &[u8]) -> Vec<u8> {
    let mut out = id_bytes(id);
    out.extend(size);
    out.extend(body);
    out
}

fn uint_el(id: u32, v: u64) -> Vec<u8> {
    let b = v.to_be_bytes();
    let skip = b.iter().position(|&x| x != 0).unwrap_or(7);
    el(id, &b[skip..])
}

/// An unsigned integer element in 8 bytes, so its size does not depend on its value.
fn uint8_el(id: u32, v: u64) -> Vec<u8> {
    el(id, &v.to_be_bytes())
}

fn ebml_header(doc: &str) -> Vec<u8> {
    el(ids::EBML, &el(ids::DOC_TYPE, doc.as_bytes()))
}

fn video_entry(number: u64, extra: &[u8]) -> Vec<u8> {
    let mut body = uint_el(ids::TRACK_NUMBER, number);
    body.extend(uint_el(ids::TRACK_TYPE, 1));
    body.extend(el(ids::CODEC_ID, b"V_VP9"));
    body.extend(uint_el(ids::DEFAULT_DURATION, 33_333_333));
    let mut video = uint_el(ids::PIXEL_WIDTH, 64);
    video.extend(uint_el(ids::PIXEL_HEIGHT, 48));
    body.extend(el(ids::VIDEO, &video));
    body.extend(extra);
    el(ids::TRACK_ENTRY, &body)
}

fn audio_entry(number: u64) -> Vec<u8> {
    let mut body = uint_el(ids::TRACK_NUMBER, number);
    body.extend(uint_el(ids::TRACK_TYPE, 2));
    body.extend(el(ids::CODEC_ID, b"A_OPUS"));
    el(ids::TRACK_ENTRY, &body)
}

fn tracks(entries: &[Vec<u8>]) -> Vec<u8> {
    el(ids::TRACKS, &entries.concat())
}

/// Block data: track number, relative time, flags, then `rest` (lace header and frames).
fn block(track: u8, rel: i16, flags: u8, rest: &[u8]) -> Vec<u8> {
    let mut b = vec![0x80 | track];
    b.extend(rel.to_be_bytes());
    b.push(flags);
    b.extend(rest);
    b
}

fn cluster(time: u64, blocks: &[Vec<u8>]) -> Vec<u8> {
    let mut body = uint_el(ids::TIMESTAMP, time);
    body.extend(blocks.concat());
    el(ids::CLUSTER, &body)
}

fn file(children: &[Vec<u8>]) -> Vec<u8> {
    let mut out = ebml_header("webm");
    out.extend(el(ids::SEGMENT, &children.concat()));
    out
}

/// Frames filled with `fill`, of these sizes.
fn frames(fill: u8, sizes: &[usize]) -> Vec<Vec<u8>> {
    sizes.iter().map(|&n| vec![fill; n]).collect()
}

/// Checks that the samples' bytes are the frames, in order.
fn assert_frames(bytes: &[u8], samples: &[RawSample], expected: &[Vec<u8>]) {
    assert_eq!(samples.len(), expected.len());
    for (s, f) in samples.iter().zip(expected) {
        let got = &bytes[s.offset as usize..(s.offset + u64::from(s.size)) as usize];
        assert_eq!(got, &f[..]);
    }
}

#[test]
fn laced_blocks() {
    let xiph = frames(1, &[300, 5, 7]);
    let mut xiph_block = vec![2, 255, 45, 5];
    xiph_block.extend(xiph.concat());
    let ebml = frames(2, &[300, 5, 7]);
    let d = (8191u16 - 295) | 0x4000;
    let mut ebml_block = vec![2, 0x41, 0x2C, (d >> 8) as u8, d as u8];
    ebml_block.extend(ebml.concat());
    let fixed = frames(3, &[4, 4, 4]);
    let mut fixed_block = vec![2];
    fixed_block.extend(fixed.concat());
    let mut group = el(ids::BLOCK, &block(1, 210, 0x04, &fixed_block));
    group.extend(uint_el(ids::BLOCK_DURATION, 60));
    group.extend(el(ids::REFERENCE_BLOCK, &[0x9E]));
    let blocks = [
        el(ids::SIMPLE_BLOCK, &block(1, 10, 0x82, &xiph_block)),
        el(ids::SIMPLE_BLOCK, &block(2, 10, 0x80, &[9; 40])),
        el(ids::SIMPLE_BLOCK, &block(1, 110, 0x06, &ebml_block)),
        el(ids::BLOCK_GROUP, &group),
    ];
    let bytes = file(&[
        tracks(&[audio_entry(2), video_entry(1, &[])]),
        cluster(1000, &blocks),
    ]);
    let t = read("laced.webm", bytes.clone()).unwrap();
    assert_eq!(t.timescale, 1000);
    assert_eq!((t.pixel_width, t.pixel_height), (64, 48));
    assert_frames(&bytes, &t.samples, &[xiph, ebml, fixed].concat());
    let cts: Vec<i64> = t.samples.iter().map(|s| s.cts).collect();
    assert_eq!(cts, [1010, 1043, 1076, 1110, 1143, 1176, 1210, 1230, 1250]);
    let durations: Vec<u32> = t.samples.iter().map(|s| s.duration).collect();
    assert_eq!(durations, [33, 33, 33, 33, 33, 33, 20, 20, 20]);
    let keys: Vec<bool> = t.samples.iter().map(|s| s.sync).collect();
    assert_eq!(
        keys,
        [true, false, false, false, false, false, false, false, false]
    );
    let e = read_track(
        &MemSource::new("laced.webm", bytes.clone()),
        TrackSelect::Id(2),
    );
    assert!(matches!(e, Err(DemuxError::NoTrack { .. })));
    let e = read_track(&MemSource::new("laced.webm", bytes), TrackSelect::Id(7));
    assert!(matches!(e, Err(DemuxError::NoTrack { .. })));
}

#[test]
fn times_scales_delays_and_missing_durations() {
    // TimestampScale 3 ms does not divide into a 1/N tick: nanoseconds. No DefaultDuration:
    // durations are the gaps to the next presentation time (file order has B-frames).
    let mut entry = uint_el(ids::TRACK_NUMBER, 1);
    entry.extend(uint_el(ids::TRACK_TYPE, 1));
    entry.extend(el(ids::CODEC_ID, b"V_MPEG4/ISO/AVC"));
    entry.extend(uint_el(ids::CODEC_DELAY, 4_400_000));
    entry.extend(el(
        ids::VIDEO,
        &[uint_el(ids::PIXEL_WIDTH, 8), uint_el(ids::PIXEL_HEIGHT, 8)].concat(),
    ));
    let info = el(ids::INFO, &uint_el(ids::TIMESTAMP_SCALE, 3_000_000));
    let rels = [0i16, 20, 10, 30];
    let blocks: Vec<Vec<u8>> = rels
        .iter()
        .map(|&r| {
            el(
                ids::SIMPLE_BLOCK,
                &block(1, r, if r == 0 { 0x80 } else { 0 }, &[7; 3]),
            )
        })
        .collect();
    let bytes = file(&[
        info,
        tracks(&[el(ids::TRACK_ENTRY, &entry)]),
        cluster(100, &blocks),
    ]);
    let t = read("scale.mkv", bytes).unwrap();
    assert_eq!(t.timescale, 1_000_000_000);
    // CodecDelay 4.4 ms is 1.47 ticks of 3 ms: 1 tick, as ffmpeg rounds.
    let ms = |ticks: i64| ticks * 3_000_000;
    let cts: Vec<i64> = t.samples.iter().map(|s| s.cts).collect();
    assert_eq!(cts, [ms(99), ms(119), ms(109), ms(129)]);
    let dts: Vec<i64> = t.samples.iter().map(|s| s.dts).collect();
    assert_eq!(dts, [ms(89), ms(99), ms(109), ms(119)]);
    let durations: Vec<u32> = t.samples.iter().map(|s| s.duration).collect();
    assert_eq!(durations, [30_000_000, 30_000_000, 30_000_000, 0]);
}

/// A SeekHead listing (ID, position) with 8-byte positions.
fn seek_head(entries: &[(u32, u64)]) -> Vec<u8> {
    let seeks: Vec<Vec<u8>> = entries
        .iter()
        .map(|&(id, p)| {
            let mut s = el(ids::SEEK_ID, &id.to_be_bytes());
            s.extend(uint8_el(ids::SEEK_POSITION, p));
            el(ids::SEEK, &s)
        })
        .collect();
    el(ids::SEEK_HEAD, &seeks.concat())
}

fn simple_clusters() -> Vec<Vec<u8>> {
    (0..3u64)
        .map(|c| {
            let blocks: Vec<Vec<u8>> = (0..4i16)
                .map(|b| {
                    el(
                        ids::SIMPLE_BLOCK,
                        &block(1, b * 33, if b == 0 { 0x80 } else { 0 }, &[c as u8; 9]),
                    )
                })
                .collect();
            cluster(c * 133, &blocks)
        })
        .collect()
}

/// A file whose Tracks comes after its Clusters, found through two SeekHeads that list each
/// other (and themselves); `with_tracks`: whether the second lists Tracks.
fn seek_loop_file(with_tracks: bool) -> Vec<u8> {
    let probe = seek_head(&[(ids::SEEK_HEAD, 0), (ids::SEEK_HEAD, 0)]);
    let n = probe.len() as u64;
    let info = el(ids::INFO, &uint_el(ids::TIMESTAMP_SCALE, 1_000_000));
    let clusters = simple_clusters().concat();
    let tracks_at = 2 * n + info.len() as u64 + clusters.len() as u64;
    let a = seek_head(&[(ids::SEEK_HEAD, 0), (ids::SEEK_HEAD, n)]);
    let second = if with_tracks {
        (ids::TRACKS, tracks_at)
    } else {
        (ids::SEEK_HEAD, n)
    };
    let b = seek_head(&[(ids::SEEK_HEAD, 0), second]);
    file(&[a, b, info, clusters, tracks(&[video_entry(1, &[])])])
}

#[test]
fn seek_heads_that_loop() {
    let plain = file(&[
        seek_head(&[(ids::SEEK_HEAD, 0)]),
        tracks(&[video_entry(1, &[])]),
        simple_clusters().concat(),
    ]);
    let expected = read("plain.webm", plain).unwrap().samples;
    assert_eq!(expected.len(), 12);
    let t = read("loop.webm", seek_loop_file(true)).unwrap();
    let key = |s: &[RawSample]| {
        s.iter()
            .map(|s| (s.cts, s.size, s.sync))
            .collect::<Vec<_>>()
    };
    assert_eq!(key(&t.samples), key(&expected));
    let e = read("loop.webm", seek_loop_file(false)).unwrap_err();
    assert!(
        e.to_string().contains("loop.webm") && e.to_string().contains("Tracks"),
        "{e}"
    );
    // A SeekHead entry that points at the wrong element.
    let wrong = file(&[seek_head(&[(ids::TRACKS, 0)]), simple_clusters().concat()]);
    let e = read("wrong.webm", wrong).unwrap_err();
    assert!(e.to_string().contains("where there is SeekHead"), "{e}");
}

// ---- Hostile files ----

fn assert_names_file(r: Result<MkvTrack>, name: &str) -> String {
    let e = r.unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains(name), "{msg}");
    msg
}

#[test]
fn truncation_never_panics() {
    let mut inputs: Vec<(String, Vec<u8>)> = FIXTURES
        .iter()
        .map(|&(n, ext, _)| (format!("{n}.{ext}"), fixture(n, ext)))
        .collect();
    // Unknown sizes let truncation reach the Clusters and blocks (a known-size Segment that
    // runs past the end of the file is refused at once).
    for &(n, ext, _) in FIXTURES {
        let bytes = unknown_size_clusters(&unknown_size_segment(&fixture(n, ext)));
        inputs.push((format!("{n}.unknown.{ext}"), bytes));
    }
    let groups = unknown_size_segment(&as_block_groups(&fixture("h264_bframes", "mkv")));
    inputs.push(("groups.mkv".into(), groups));
    for (name, bytes) in &inputs {
        for cut in (0..bytes.len()).step_by(997) {
            if let Err(e) = read(name, bytes[..cut].to_vec()) {
                assert!(e.to_string().contains(name.as_str()), "{e}");
            }
        }
    }
}

#[test]
fn forged_sizes_and_ids() {
    let name = "hostile.webm";
    let good = file(&[tracks(&[video_entry(1, &[])]), simple_clusters().concat()]);
    assert_eq!(read(name, good.clone()).unwrap().samples.len(), 12);
    let (seg, kids) = top_level(&good);
    let first_cluster = kids.iter().find(|k| k.id == ids::CLUSTER).unwrap();
    let at = first_cluster.at as usize;
    let mut b = good.clone();
    b[at] = 0x08;
    assert!(assert_names_file(read(name, b), name).contains("longer than 4 bytes"));
    let mut b = good.clone();
    b[at + 4] = 0x00;
    assert!(assert_names_file(read(name, b), name).contains("0x00 length marker"));
    // Segment larger than the file.
    let mut b = good.clone();
    b.truncate(b.len() - 1);
    assert!(assert_names_file(read(name, b), name).contains("past the end"));
    let _ = seg;
    // Blocks of 2^56 - 2 bytes and of unknown size (2^56 - 1).
    let huge = [0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE];
    let unknown = [0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF];
    for size in [huge, unknown] {
        let blk = el_sized(ids::SIMPLE_BLOCK, &size, &block(1, 0, 0x80, &[0; 4]));
        let b = file(&[tracks(&[video_entry(1, &[])]), cluster(0, &[blk])]);
        assert_names_file(read(name, b), name);
    }
    // A 9-byte ID and a 0x00 size marker inside a Cluster.
    for junk in [&[0x00u8, 0x80, 0, 0][..], &[0xA3, 0x00, 1, 2]] {
        let mut body = uint_el(ids::TIMESTAMP, 0);
        body.extend(junk);
        let b = file(&[tracks(&[video_entry(1, &[])]), el(ids::CLUSTER, &body)]);
        assert_names_file(read(name, b), name);
    }
}

#[test]
fn hostile_blocks_and_tracks() {
    let name = "hostile.webm";
    let with = |entry: Vec<u8>, blocks: &[Vec<u8>]| file(&[tracks(&[entry]), cluster(0, blocks)]);
    let key = el(ids::SIMPLE_BLOCK, &block(1, 0, 0x80, &[0; 4]));
    // A lace count larger than the block.
    let laced = el(ids::SIMPLE_BLOCK, &block(1, 0, 0x84, &[255, 1, 2, 3]));
    let msg = assert_names_file(read(name, with(video_entry(1, &[]), &[laced])), name);
    assert!(msg.contains("cannot hold 256 frames"), "{msg}");
    // A block too short for its header.
    let short = el(ids::SIMPLE_BLOCK, &[0x81, 0]);
    assert_names_file(read(name, with(video_entry(1, &[]), &[short])), name);
    // A block before the Cluster's Timestamp.
    let early = el(
        ids::CLUSTER,
        &[key.clone(), uint_el(ids::TIMESTAMP, 0)].concat(),
    );
    let b = file(&[tracks(&[video_entry(1, &[])]), early]);
    assert!(assert_names_file(read(name, b), name).contains("before its Cluster's Timestamp"));
    // Timestamps that overflow i64.
    let b = file(&[
        tracks(&[video_entry(1, &[])]),
        cluster(u64::MAX, std::slice::from_ref(&key)),
    ]);
    assert_names_file(read(name, b), name);
    let b = file(&[
        tracks(&[video_entry(1, &[])]),
        cluster(
            i64::MAX as u64,
            &[el(ids::SIMPLE_BLOCK, &block(1, 1, 0x80, &[0; 4]))],
        ),
    ]);
    assert_names_file(read(name, b), name);
    // Content encodings, a huge CodecPrivate, no picture size, another DocType, not EBML.
    let enc = video_entry(1, &el(ids::CONTENT_ENCODINGS, &[]));
    let msg = assert_names_file(read(name, with(enc, std::slice::from_ref(&key))), name);
    assert!(
        msg.contains("compression/encryption not supported"),
        "{msg}"
    );
    let big = video_entry(1, &el(ids::CODEC_PRIVATE, &vec![0; (1 << 20) + 1]));
    assert_names_file(read(name, with(big, std::slice::from_ref(&key))), name);
    let mut entry = uint_el(ids::TRACK_NUMBER, 1);
    entry.extend(uint_el(ids::TRACK_TYPE, 1));
    entry.extend(el(ids::CODEC_ID, b"V_VP9"));
    let b = with(el(ids::TRACK_ENTRY, &entry), std::slice::from_ref(&key));
    assert!(assert_names_file(read(name, b), name).contains("PixelWidth"));
    let mut b = ebml_header("mp4x");
    b.extend(el(ids::SEGMENT, &tracks(&[video_entry(1, &[])])));
    assert!(assert_names_file(read(name, b), name).contains("not a Matroska/WebM file"));
    let msg = assert_names_file(read(name, b"\0\0\0\x18ftypmp42".to_vec()), name);
    assert!(msg.contains("not a Matroska/WebM file"), "{msg}");
    assert_names_file(read(name, Vec::new()), name);
    // Blocks of no track at all, and no Tracks.
    let b = file(&[cluster(0, &[key])]);
    assert!(assert_names_file(read(name, b), name).contains("Tracks"));
}

#[test]
fn deep_nesting_is_skipped_not_followed() {
    // 20,000 BlockGroups, each inside the one before: the walk reads the outer one's children
    // and skips the inner ones by size.
    let mut inner = el(ids::BLOCK, &block(1, 0, 0, &[1; 4]));
    for _ in 0..20_000 {
        inner = el(ids::BLOCK_GROUP, &inner);
    }
    let b = file(&[tracks(&[video_entry(1, &[])]), cluster(0, &[inner])]);
    assert_eq!(read("deep.webm", b).unwrap().samples.len(), 0);
    // Unknown-size elements nested inside an unknown-size Cluster: an error, at once.
    let mut body = uint_el(ids::TIMESTAMP, 0);
    for _ in 0..20_000 {
        body.extend([0xA0, 0xFF]);
    }
    let c = el_sized(ids::CLUSTER, &[0xFF], &body);
    let b = file(&[tracks(&[video_entry(1, &[])]), c]);
    assert!(assert_names_file(read("deep.webm", b), "deep.webm").contains("unknown size"));
}

#[test]
fn an_hour_of_blocks_reads_headers_only() {
    // 108,000 blocks of 200 bytes in 1,800 Clusters of 60, beside an audio track.
    let clusters: Vec<Vec<u8>> = (0..1800u64)
        .map(|c| {
            let blocks: Vec<Vec<u8>> = (0..60i16)
                .flat_map(|b| {
                    let flags = if b == 0 { 0x80 } else { 0 };
                    [
                        el(ids::SIMPLE_BLOCK, &block(1, b * 33, flags, &[0; 200])),
                        el(ids::SIMPLE_BLOCK, &block(2, b * 33, 0x80, &[0; 50])),
                    ]
                })
                .collect();
            let blocks: Vec<Vec<u8>> = blocks.into_iter().filter(|b| b[1] != 0).collect();
            cluster(c * 2000, &blocks)
        })
        .collect();
    let bytes = file(&[
        tracks(&[video_entry(1, &[]), audio_entry(2)]),
        clusters.concat(),
    ]);
    let len = bytes.len() as u64;
    let src = MemSource::new("hour.webm", bytes);
    let t = read_track(&src, TrackSelect::FirstVideo).unwrap();
    assert_eq!(t.samples.len(), 108_000);
    assert_eq!(t.samples.iter().filter(|s| s.sync).count(), 1800);
    // One 32-byte read per block and per Cluster header and Timestamp, and the Tracks.
    let reads = 32 * (216_000 + 2 * 1800) + 4096;
    assert!(
        src.bytes_read() <= reads,
        "read {} of {len} bytes",
        src.bytes_read()
    );
}
