//! Decode plans: properties on random requests over the real fixtures, exact byte accounting,
//! the GOP cache, and decoding each planned run with ffmpeg to check that every requested frame
//! comes out bit-exact (equal to ffmpeg's decode of the whole file).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use common::{fixtures, video};
use gm_demux::{BitstreamScan, GopCache, IndexOptions, IndexingDemuxer, VideoIndex};
use proptest::prelude::*;

const FIXTURES: &[&str] = &[
    "h264_no_bframes",
    "h264_bpyramid",
    "h264_open_gop",
    "h264_slices",
    "h264_fragmented",
    "h264_vfr",
    "hevc_closed_gop",
    "hevc_open_gop",
    "hevc_main10",
    "hevc_fragmented",
    "vp9.mp4",
    "vp9_altref.webm",
    "vp9_10bit.webm",
    "vp9_odd.webm",
    "av1_hidden.webm",
    "av1_svt.webm",
    "av1_10bit.webm",
    "av1_odd.mp4",
    "h264_bframes.mkv",
    "hevc_bframes.mkv",
];

/// A fixture's golden files are named after its file name without the extension.
fn stem(name: &str) -> &str {
    name.split('.').next().unwrap()
}

fn indexes() -> &'static Vec<(String, VideoIndex)> {
    static I: OnceLock<Vec<(String, VideoIndex)>> = OnceLock::new();
    I.get_or_init(|| {
        let mut v = Vec::new();
        for name in FIXTURES {
            for scan in [BitstreamScan::None, BitstreamScan::Full] {
                let idx = VideoIndex::open(
                    &video(name),
                    IndexOptions {
                        scan,
                        ..Default::default()
                    },
                )
                .unwrap();
                v.push((format!("{name} ({scan:?})"), idx));
            }
        }
        v
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn plans_produce_each_request_once_from_valid_starts(
        which in 0usize..20,
        picks in proptest::collection::vec(0usize..1000, 1..24),
    ) {
        let (name, idx) = &indexes()[which % indexes().len()];
        let n = idx.frame_count();
        let frames: Vec<usize> = picks.iter().map(|p| p % n).collect();
        let plan = idx.plan(&frames).unwrap();
        prop_assert_eq!(plan.requested, frames.len());
        let mut seen = vec![0u32; frames.len()];
        let mut last_end: Option<u32> = None;
        let max_tid = idx.packets.iter().filter_map(|p| p.picture.map(|q| q.temporal_id)).max().unwrap_or(0);
        for run in &plan.runs {
            let first = run.packets[0];
            prop_assert!(idx.gops.iter().any(|g| g.start == first), "{}: run starts at {} which is no GOP start", name, first);
            prop_assert!(run.packets.windows(2).all(|w| w[0] < w[1]));
            if let Some(e) = last_end { prop_assert!(first > e, "{}: runs overlap", name); }
            last_end = run.packets.last().copied();
            for &d in &run.packets {
                let p = &idx.packets[d as usize];
                prop_assert!(p.offset + u64::from(p.size) <= idx.file_size, "{}: read outside the file", name);
            }
            // Skipped packets inside the run are pictures nothing references, or HEVC leading
            // pictures of the run's first CRA that need the GOP before it.
            for d in first..=*run.packets.last().unwrap() {
                if !run.packets.contains(&d) {
                    let p = &idx.packets[d as usize];
                    let leading = idx.codec.codec == gm_demux::Codec::Hevc
                        && p.decode_start < first
                        && p.presented_before(&idx.packets[first as usize]);
                    if leading {
                        continue;
                    }
                    let pic = p.picture.expect("only scanned pictures are skipped");
                    prop_assert!(!pic.reference && pic.temporal_id == max_tid, "{}: skipped a reference picture {}", name, d);
                }
            }
            for k in &run.keep {
                let p = &idx.packets[k.decode_index as usize];
                prop_assert!(first <= p.decode_start && run.packets.contains(&k.decode_index), "{}: frame {} not reachable", name, k.frame);
                prop_assert_eq!(p.presentation_index.map(u32::from), Some(k.frame));
                for &s in &k.slots {
                    prop_assert_eq!(frames[s as usize], k.frame as usize);
                    seen[s as usize] += 1;
                }
            }
            prop_assert!(run.keep.windows(2).all(|w| w[0].frame < w[1].frame), "keep is in display order");
        }
        prop_assert!(seen.iter().all(|&c| c == 1), "{}: every request exactly once: {:?}", name, seen);
    }
}

#[test]
fn out_of_range_frames_are_errors() {
    let (_, idx) = &indexes()[0];
    let err = idx.plan(&[0, idx.frame_count()]).unwrap_err();
    assert!(
        err.to_string()
            .contains(&format!("frame {} requested", idx.frame_count())),
        "{err}"
    );
}

#[test]
fn reads_are_exactly_the_planned_packets_and_the_cache_serves_repeats() {
    let path = video("hevc_open_gop");
    let cache = Arc::new(GopCache::new(1 << 20));
    let demux = IndexingDemuxer::open(&path, IndexOptions::default())
        .unwrap()
        .with_cache(cache.clone(), 1);
    let after_index = demux.bytes_read();
    let plan = demux.plan(&[3, 17, 18, 29]).unwrap();
    let planned: u64 = plan
        .runs
        .iter()
        .flat_map(|r| &r.packets)
        .map(|&d| u64::from(demux.index().packets[d as usize].size))
        .sum();
    let mut first_packets = Vec::new();
    for run in &plan.runs {
        let packets = demux.read_run(run).unwrap();
        assert_eq!(packets.len(), run.packets.len());
        first_packets.push(packets[0].data.clone());
        for p in &packets {
            assert!(p.data.starts_with(&[0, 0, 0, 1]), "Annex-B start code");
        }
    }
    assert_eq!(
        demux.bytes_read() - after_index,
        planned,
        "only the planned byte ranges were read"
    );
    // The first packet of each run carries VPS, SPS, PPS before the slice data.
    for data in &first_packets {
        let types: Vec<u8> = data
            .windows(5)
            .filter(|w| w[..4] == [0, 0, 0, 1])
            .map(|w| (w[4] >> 1) & 0x3f)
            .take(3)
            .collect();
        assert_eq!(types, vec![32, 33, 34]);
    }
    let before = demux.bytes_read();
    for run in &plan.runs {
        demux.read_run(run).unwrap();
    }
    assert_eq!(
        demux.bytes_read(),
        before,
        "the second pass came from the cache"
    );
    assert!(cache.stats().hits >= plan.packet_count() as u64);
}

// ---- decoding planned runs with ffmpeg ----

fn ffmpeg_available(test: &str) -> bool {
    let ok = std::process::Command::new("ffmpeg")
        .arg("-version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var("GM_REQUIRE_FFMPEG").is_err(),
            "GM_REQUIRE_FFMPEG=1 but ffmpeg is not installed"
        );
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "SKIP (no ffmpeg): {test}");
    }
    ok
}

/// MD5s of ffmpeg's whole-file decode, by presentation index.
fn golden_md5(name: &str) -> Vec<String> {
    let file = format!("{}.framemd5", stem(name));
    let text = std::fs::read_to_string(fixtures().join("golden").join(file)).unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| l.rsplit(',').next().unwrap().trim().to_string())
        .collect()
}

/// A run's packets as ffmpeg's demuxers take them: Annex-B (H.264, HEVC) as one stream, VP9
/// and AV1 packets in an IVF file (one frame record per packet), and the demuxer's name.
fn elementary_stream(packets: Vec<gm_demux::Packet>, codec: &str) -> (Vec<u8>, &'static str) {
    let fourcc: &[u8; 4] = match codec {
        "h264" => return (packets.into_iter().flat_map(|p| p.data).collect(), "h264"),
        "hevc" => return (packets.into_iter().flat_map(|p| p.data).collect(), "hevc"),
        "vp9" => b"VP90",
        "av1" => b"AV01",
        other => panic!("{other}"),
    };
    let mut ivf = Vec::new();
    ivf.extend_from_slice(b"DKIF");
    ivf.extend_from_slice(&0u16.to_le_bytes());
    ivf.extend_from_slice(&32u16.to_le_bytes());
    ivf.extend_from_slice(fourcc);
    ivf.extend_from_slice(&[0; 4]); // width, height: the decoder reads them from the stream
    ivf.extend_from_slice(&1000u32.to_le_bytes());
    ivf.extend_from_slice(&1u32.to_le_bytes());
    ivf.extend_from_slice(&(packets.len() as u32).to_le_bytes());
    ivf.extend_from_slice(&[0; 4]);
    for (i, p) in packets.iter().enumerate() {
        ivf.extend_from_slice(&(p.data.len() as u32).to_le_bytes());
        ivf.extend_from_slice(&(i as u64).to_le_bytes());
        ivf.extend_from_slice(&p.data);
    }
    (ivf, "ivf")
}

/// MD5s of the frames ffmpeg decodes from a run's stream.
fn decode_md5s(es: &[u8], format: &str, ten_bit: bool, tmp: &Path) -> Vec<String> {
    std::fs::write(tmp, es).unwrap();
    let out = std::process::Command::new("ffmpeg")
        .args(["-hide_banner", "-loglevel", "error", "-f", format, "-i"])
        .arg(tmp)
        .args([
            "-fps_mode",
            "passthrough",
            "-pix_fmt",
            if ten_bit { "yuv420p10le" } else { "yuv420p" },
            "-f",
            "framemd5",
            "-",
        ])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| l.rsplit(',').next().unwrap().trim().to_string())
        .collect()
}

fn check_plan_decodes(name: &str, frames: &[usize], tmp: &Path) -> usize {
    let demux = IndexingDemuxer::open(
        &video(name),
        IndexOptions {
            scan: BitstreamScan::Full,
            ..Default::default()
        },
    )
    .unwrap();
    let golden = golden_md5(name);
    assert_eq!(golden.len(), demux.index().frame_count());
    let codec = demux.index().codec.codec.name();
    let ten_bit = demux.index().codec.bit_depth > 8;
    let plan = demux.plan(frames).unwrap();
    let mut checked = 0;
    for run in &plan.runs {
        let (es, format) = elementary_stream(demux.read_run(run).unwrap(), codec);
        let got = decode_md5s(&es, format, ten_bit, tmp);
        let counts: HashMap<&String, usize> = got.iter().fold(HashMap::new(), |mut m, s| {
            *m.entry(s).or_default() += 1;
            m
        });
        for k in &run.keep {
            assert!(
                counts.contains_key(&golden[k.frame as usize]),
                "{name}: frame {} (decode {}) not reproduced by run starting at {}",
                k.frame,
                k.decode_index,
                run.packets[0]
            );
            checked += 1;
        }
    }
    checked
}

#[test]
fn planned_runs_decode_to_the_exact_frames() {
    if !ffmpeg_available("planned_runs_decode_to_the_exact_frames") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("gm-demux-plans-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let tmp = dir.join("run.es");
    let mut total = 0;
    for name in FIXTURES {
        let n = golden_md5(name).len();
        // Every frame on its own (each a separate request list), then one list of all frames.
        for f in 0..n {
            total += check_plan_decodes(name, &[f], &tmp);
        }
        let all: Vec<usize> = (0..n).rev().collect();
        total += check_plan_decodes(name, &all, &tmp);
    }
    std::fs::remove_dir_all(&dir).ok();
    assert!(total > 500, "{total} frames checked");
}

#[test]
fn starting_an_open_gop_at_its_own_keyframe_would_be_wrong() {
    // The control for the test above: leading pictures of an open GOP, decoded from their own
    // GOP's keyframe, do not come out right, so decode_start really matters there.
    if !ffmpeg_available("starting_an_open_gop_at_its_own_keyframe_would_be_wrong") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("gm-demux-control-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["hevc_open_gop", "h264_open_gop"] {
        let demux = IndexingDemuxer::open(&video(name), IndexOptions::default()).unwrap();
        let idx = demux.index();
        let golden = golden_md5(name);
        let leading: Vec<&gm_demux::Sample> = idx
            .packets
            .iter()
            .filter(|p| p.decode_start < idx.gops[p.gop as usize].start)
            .collect();
        assert!(!leading.is_empty(), "{name} has leading pictures");
        let mut wrong = 0;
        for p in &leading {
            let gop = idx.gops[p.gop as usize];
            let run = gm_demux::DecodeRun {
                packets: (gop.start..=p.decode_index).collect(),
                keep: vec![],
            };
            let es: Vec<u8> = demux
                .read_run(&run)
                .unwrap()
                .into_iter()
                .flat_map(|p| p.data)
                .collect();
            let got = decode_md5s(&es, idx.codec.codec.name(), false, &dir.join("c.es"));
            let shown = p.presentation_index.expect("fixtures present every packet");
            if !got.contains(&golden[shown.as_usize()]) {
                wrong += 1;
            }
        }
        assert!(
            wrong > 0,
            "{name}: every leading picture decoded right from its own GOP; the control proves nothing"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn stream_access_reads_each_gop_once_through_the_cache() {
    let path = video("h264_bpyramid");
    let cache = Arc::new(GopCache::new(8 << 20));
    let demux = IndexingDemuxer::open(&path, IndexOptions::default())
        .unwrap()
        .with_cache(cache, 7);
    let start = demux.bytes_read();
    let n = demux.index().frame_count();
    // Consecutive overlapping 8-frame clips with stride 4, as an episode sampler walks a video.
    let mut k = 0;
    let mut needed = std::collections::BTreeSet::new();
    let mut fed = 0;
    while k + 8 <= n {
        let clip: Vec<usize> = (k..k + 8).collect();
        for run in &demux.plan(&clip).unwrap().runs {
            demux.read_run(run).unwrap();
            needed.extend(run.packets.iter().copied());
            fed += run.packets.len();
        }
        k += 4;
    }
    let unique: u64 = needed
        .iter()
        .map(|&d| u64::from(demux.index().packets[d as usize].size))
        .sum();
    assert!(
        fed > needed.len() * 3 / 2,
        "clips overlap: {fed} packets fed, {} distinct",
        needed.len()
    );
    assert_eq!(
        demux.bytes_read() - start,
        unique,
        "every needed packet read from the file exactly once"
    );
}
