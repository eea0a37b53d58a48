//! NVDEC against ffmpeg's software decoder: every decoded frame's MD5 (in ffmpeg's yuv420p /
//! yuv420p10le layout) must equal ffmpeg's framemd5 of that frame. GPU tests: without a GPU
//! they print SKIP lines; the GPU bundle runs them with GM_REQUIRE_GPU=1.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::{
    CHROMA_FIXTURES, VIDEO_FIXTURES, seeded_rng as rng, shared_media as shared, video,
    video_demuxer,
};
use gm_codec::nvdec::{DecoderPool, DecoderSession, FrameStatus};
use gm_codec::{CodecError, DecoderChoice, Routing};
use gm_cuda::gpu_test_device;
use gm_demux::{
    BitstreamScan, Codec, CodecInfo, DecodePlan, DecodeRun, DemuxError, IndexOptions,
    IndexingDemuxer, Packet, PacketSource, VideoIndex, append_annexb, append_parameter_sets,
};
use md5::{Digest, Md5};
use rand::Rng;

/// The fixtures this GPU's NVDEC decodes. Hopper's (H100, H200) has no AV1: its AV1 fixtures
/// are left to `av1_decodes_bit_exact_or_is_refused_clearly`; every other codec must be there.
fn decodable(device: &gm_cuda::Device) -> Vec<&'static str> {
    let mut session = DecoderSession::new(device, None).unwrap();
    VIDEO_FIXTURES
        .iter()
        .copied()
        .filter(|name| {
            let (path, _) = video(name);
            let codec = demuxer(&path).index().codec.clone();
            match session.check_support(&path, &codec) {
                Ok(()) => true,
                Err(e) => {
                    assert_eq!(codec.codec, Codec::Av1, "{name}: {e}");
                    false
                }
            }
        })
        .collect()
}

fn demuxer(path: &Path) -> IndexingDemuxer {
    video_demuxer(path)
}

/// Decodes `frames` of `demux`; returns the MD5 of each request slot's frame.
fn decode_md5(
    session: &mut DecoderSession,
    demux: &IndexingDemuxer,
    frames: &[usize],
) -> Result<Vec<String>, CodecError> {
    let plan = demux.plan(frames)?;
    decode_plan_md5(session, demux, &plan)
}

/// Decodes `plan` with packets from `source`; returns the MD5 of each request slot's frame.
fn decode_plan_md5(
    session: &mut DecoderSession,
    source: &dyn PacketSource,
    plan: &DecodePlan,
) -> Result<Vec<String>, CodecError> {
    let mut out = vec![String::new(); plan.requested];
    session.decode(source, plan, &mut |f| {
        assert_eq!(
            f.status,
            FrameStatus::Ok,
            "frame {} reported damaged",
            f.frame
        );
        let md5 = format!("{:x}", Md5::digest(f.to_planar()?));
        for &s in f.slots {
            out[s as usize] = md5.clone();
        }
        Ok(())
    })?;
    Ok(out)
}

fn check(name: &str, session: &mut DecoderSession, frames: &[usize]) -> usize {
    let (path, golden) = video(name);
    let demux = demuxer(&path);
    assert_eq!(demux.index().frame_count(), golden.len(), "{name}");
    let got = decode_md5(session, &demux, frames).unwrap_or_else(|e| panic!("{name}: {e}"));
    for (slot, &f) in frames.iter().enumerate() {
        assert_eq!(
            got[slot], golden[f],
            "{name}: frame {f} (request slot {slot}) differs from ffmpeg"
        );
    }
    frames.len()
}

#[test]
fn every_frame_of_every_video_decodes_bit_exact() {
    let device = gpu_test_device!("every_frame_of_every_video_decodes_bit_exact");
    let mut session = DecoderSession::new(&device, None).unwrap();
    let mut names: Vec<String> = decodable(&device).iter().map(|s| s.to_string()).collect();
    if shared().is_some() {
        for n in [
            "humming_bird_1s",
            "humming_bird_1s_keyframes_only",
            "phone_1080p",
            "birds_720p",
        ] {
            names.push(format!("shared_{n}"));
        }
    }
    let mut total = 0;
    for name in &names {
        let n = video(name).1.len();
        total += check(name, &mut session, &(0..n).collect::<Vec<_>>());
    }
    let stats = session.stats();
    eprintln!("{total} frames, {stats:?}");
    assert!(total >= 330);
    assert!(
        stats.decoders_created >= 2,
        "sizes and codecs changed: {stats:?}"
    );
}

#[test]
fn random_frames_and_clips_decode_bit_exact() {
    let device = gpu_test_device!("random_frames_and_clips_decode_bit_exact");
    let mut rng = rng("random_frames_and_clips");
    let mut session = DecoderSession::new(&device, None).unwrap();
    let fixtures = decodable(&device);
    let mut frames = 0;
    for _ in 0..300 {
        let name = fixtures[rng.random_range(0..fixtures.len())];
        let n = video(name).1.len();
        frames += check(name, &mut session, &[rng.random_range(0..n)]);
    }
    for _ in 0..100 {
        let name = fixtures[rng.random_range(0..fixtures.len())];
        let n = video(name).1.len();
        let start = rng.random_range(0..=n - 8);
        let mut clip: Vec<usize> = (start..start + 8).collect();
        if rng.random_bool(0.3) {
            clip.reverse();
        }
        frames += check(name, &mut session, &clip);
    }
    eprintln!("{frames} frames, {:?}", session.stats());
}

#[test]
fn unsupported_streams_are_refused_before_decoding_with_a_clear_error() {
    let device =
        gpu_test_device!("unsupported_streams_are_refused_before_decoding_with_a_clear_error");
    let Some(shared) = shared() else {
        eprintln!("../shared/media absent: the 4:4:4 check needs cockatoo_h264_444.mp4");
        return;
    };
    let mut session = DecoderSession::new(&device, None).unwrap();
    session.set_routing(routing(DecoderChoice::Gpu));
    let demux = demuxer(&shared.join("video/cockatoo_h264_444.mp4"));
    let err = decode_md5(&mut session, &demux, &[0]).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, CodecError::Unsupported(_)), "{msg}");
    for part in [
        "cockatoo_h264_444.mp4",
        "h264",
        "High 4:4:4",
        "4:4:4",
        "8-bit",
        device.name(),
    ] {
        assert!(msg.contains(part), "'{part}' missing from: {msg}");
    }
    assert_eq!(session.stats().packets, 0, "nothing was fed");
    // The session still works.
    check("h264_bpyramid", &mut session, &[5]);
    // Under auto the stream goes to the CPU decoder, its 4:4:4 frames staged as NV24: equal
    // to ffmpeg's yuv444p.
    session.set_routing(routing(DecoderChoice::Auto));
    let route = session.route(demux.name(), demux.codec()).unwrap();
    assert!(route.is_cpu(), "{route}");
    if ffmpeg_present("444 under auto") {
        let (_, golden) = video("shared_cockatoo_h264_444.yuv444p");
        let got = decode_md5(&mut session, &demux, &[0, 9]).unwrap();
        assert_eq!(got, [golden[0].clone(), golden[9].clone()]);
    }
}

fn routing(choice: DecoderChoice) -> Routing {
    Routing {
        choice,
        cpu_threads: 2,
    }
}

/// Whether FFmpeg's libraries load here (see `avcodec::testing`).
fn ffmpeg_present(what: &str) -> bool {
    gm_codec::avcodec::testing::libavcodec_or_skip(what)
}

/// `decoder = cpu`: every frame of every fixture decoded by libavcodec and staged into device
/// memory in NVDEC's layout, read back from the device: ffmpeg's framemd5 exactly. The same
/// frames the consumers of a session see whichever decoder made them.
#[test]
fn cpu_routed_frames_staged_on_the_device_equal_ffmpeg() {
    let device = gpu_test_device!("cpu_routed_frames_staged_on_the_device_equal_ffmpeg");
    if !ffmpeg_present("cpu_routed_frames_staged_on_the_device") {
        return;
    }
    let mut session = DecoderSession::new(&device, None).unwrap();
    session.set_routing(routing(DecoderChoice::Cpu));
    let mut total = 0;
    // 4:2:2 and 4:4:4 frames are staged as NV16/NV24 (P216/P416 above 8 bits).
    for name in VIDEO_FIXTURES.iter().chain(CHROMA_FIXTURES) {
        let n = video(name).1.len();
        let frames: Vec<usize> = (0..n).rev().collect();
        total += check(name, &mut session, &frames);
    }
    let stats = session.stats();
    eprintln!("{total} frames, {stats:?}");
    assert_eq!(stats.packets, 0, "NVDEC was not fed: {stats:?}");
    assert!(stats.cpu.delivered >= total as u64, "{stats:?}");
}

#[test]
fn sessions_reconfigure_for_smaller_videos_instead_of_recreating() {
    let device = gpu_test_device!("sessions_reconfigure_for_smaller_videos_instead_of_recreating");
    let mut session = DecoderSession::new(&device, None).unwrap();
    check("h264_1366x766", &mut session, &[0, 7]);
    let created = session.stats().decoders_created;
    check("h264_bpyramid", &mut session, &[0, 29, 13]);
    check("h264_1366x766", &mut session, &[3]);
    let s = session.stats();
    assert_eq!(
        s.decoders_created, created,
        "no new decoder for the smaller video: {s:?}"
    );
    assert!(s.reconfigurations >= 2, "{s:?}");
}

#[test]
fn one_session_alternating_codecs_and_bit_depths_keeps_its_decoders() {
    let device =
        gpu_test_device!("one_session_alternating_codecs_and_bit_depths_keeps_its_decoders");
    let mut session = DecoderSession::new(&device, None).unwrap();
    let names = ["h264_bpyramid", "hevc_closed_gop", "hevc_main10"];
    let rounds = 4;
    let mut frames_checked = 0;
    for round in 0..rounds {
        for name in names {
            let n = video(name).1.len();
            let mut frames: Vec<usize> = (0..n).collect();
            if round % 2 == 1 {
                frames.reverse();
            }
            frames_checked += check(name, &mut session, &frames);
        }
    }
    let s = session.stats();
    eprintln!("{frames_checked} frames, {s:?}");
    assert_eq!(s.decoders_created, 3, "one per codec and bit depth: {s:?}");
    assert_eq!(s.decoders_destroyed, 0, "{s:?}");
    assert_eq!(s.parsers_created, 2, "one per codec: {s:?}");
    assert!(
        s.decoder_reuses >= (rounds as u64 - 1) * names.len() as u64,
        "every switch after the first round reuses a decoder: {s:?}"
    );
}

/// Writes `bytes` to a temporary file and indexes it.
fn damaged_copy(tag: &str, bytes: &[u8]) -> (PathBuf, IndexingDemuxer) {
    let dir = std::env::temp_dir().join(format!("gm-nvdec-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("damaged.mp4");
    std::fs::write(&path, bytes).unwrap();
    // The default scan reads keyframes only, so the index does not trip over the damage.
    let demux = IndexingDemuxer::open(&path, IndexOptions::default()).unwrap();
    (dir, demux)
}

#[test]
fn damaged_packets_give_errors_or_flags_never_hangs_and_the_session_recovers() {
    let device = gpu_test_device!(
        "damaged_packets_give_errors_or_flags_never_hangs_and_the_session_recovers"
    );
    let (path, golden) = video("h264_no_bframes");
    let intact = demuxer(&path);
    let all: Vec<usize> = (0..golden.len()).collect();
    let p = intact.index().packets[5];
    let original = std::fs::read(&path).unwrap();
    let mut session = DecoderSession::new(&device, None).unwrap();

    // 1. A NAL length running past its packet (container damage): an error naming the file and
    //    the packet for the requests that need it; frames before it are still delivered.
    let mut bytes = original.clone();
    bytes[p.offset as usize..p.offset as usize + 4].copy_from_slice(&(p.size + 100).to_be_bytes());
    let (dir, bad) = damaged_copy("nal-length", &bytes);
    let err = decode_md5(&mut session, &bad, &all).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("damaged.mp4") && msg.contains("sample 5"),
        "{msg}"
    );
    assert_eq!(
        decode_md5(&mut session, &bad, &[3]).unwrap()[0],
        golden[3],
        "frames before the damage"
    );
    assert!(
        decode_md5(&mut session, &bad, &[7]).is_err(),
        "a frame that needs packet 5"
    );
    std::fs::remove_dir_all(&dir).ok();

    // 2. Garbage in the slice data: the decoder must not hang or crash; what it detects is
    //    flagged (FrameStatus), and frames of the next GOP, which do not depend on the damage,
    //    are exact.
    let mut bytes = original.clone();
    let start = p.offset as usize + 8;
    for b in &mut bytes[start..start + (p.size as usize - 8).min(64)] {
        *b ^= 0xff;
    }
    let (dir, bad) = damaged_copy("slice-data", &bytes);
    let plan = bad.plan(&all).unwrap();
    let mut flagged = Vec::new();
    let mut exact_after = 0;
    let result = session.decode(&bad, &plan, &mut |f| {
        let md5 = format!("{:x}", Md5::digest(f.to_planar()?));
        if f.status != FrameStatus::Ok {
            flagged.push(f.frame);
        }
        if f.frame >= 10 && md5 == golden[f.frame as usize] {
            exact_after += 1;
        }
        Ok(())
    });
    eprintln!(
        "slice-data damage: result {:?}, flagged frames {flagged:?}",
        result.as_ref().err()
    );
    if result.is_ok() {
        assert_eq!(
            exact_after,
            golden.len() - 10,
            "the GOPs after the damaged one are exact"
        );
    }
    std::fs::remove_dir_all(&dir).ok();

    // 3. The same session decodes the intact file exactly afterwards.
    check("h264_no_bframes", &mut session, &all);
}

#[test]
fn a_pool_of_seven_sessions_decodes_concurrently_and_bounds_memory() {
    let device =
        gpu_test_device!("a_pool_of_seven_sessions_decodes_concurrently_and_bounds_memory");
    let mut rng = rng("pool");
    let pool = DecoderPool::new(&device, 7, Some(2 << 30)).unwrap();
    assert_eq!(pool.sessions(), 7);
    let fixtures = decodable(&device);
    let demuxers: HashMap<&str, Arc<IndexingDemuxer>> = fixtures
        .iter()
        .map(|n| (*n, Arc::new(demuxer(&video(n).0))))
        .collect();
    let mut pending = Vec::new();
    for _ in 0..140 {
        let name = fixtures[rng.random_range(0..fixtures.len())];
        let n = video(name).1.len();
        let start = rng.random_range(0..=n - 8);
        let frames: Vec<usize> = (start..start + 8).collect();
        let demux = demuxers[name].clone();
        let f2 = frames.clone();
        let rx = pool.submit(move |session| decode_md5(session, &demux, &f2));
        pending.push((name, frames, rx));
    }
    for (name, frames, rx) in pending {
        let got = rx.recv().unwrap().unwrap_or_else(|e| panic!("{name}: {e}"));
        let golden = video(name).1;
        for (slot, &f) in frames.iter().enumerate() {
            assert_eq!(got[slot], golden[f], "{name}: frame {f}");
        }
    }
    let used = pool.decoder_memory().unwrap();
    assert!(used > 0 && used <= 2 << 30, "{used}");
    drop(pool);

    // A budget too small for one decoder: a clear error from the job, not a hang.
    let tiny = DecoderPool::new(&device, 2, Some(64 << 10)).unwrap();
    let demux = demuxers["h264_bpyramid"].clone();
    let err = tiny
        .submit(move |s| decode_md5(s, &demux, &[0]))
        .recv()
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(err, CodecError::OutOfDecoderMemory { budget: 65_536, .. }),
        "{err}"
    );
}

#[test]
fn mixed_requests_decode_bit_exact_with_every_index_scan() {
    // The other tests index with a full bitstream scan. With the default (keyframes only) or no
    // scan, plans keep more pictures; a request holding an open-GOP HEVC CRA and later frames
    // once lost the CRA's output that way. Random request lists (dilated clips, repeats, CRA
    // plus later frames) on every fixture, with each scan, against ffmpeg.
    let device = gpu_test_device!("mixed_requests_decode_bit_exact_with_every_index_scan");
    let mut rng = rng("mixed_requests");
    let mut session = DecoderSession::new(&device, None).unwrap();
    let fixtures = decodable(&device);
    let mut frames_checked = 0;
    for scan in [
        BitstreamScan::None,
        BitstreamScan::Keyframes,
        BitstreamScan::Full,
    ] {
        for &name in &fixtures {
            let (path, golden) = video(name);
            let demux = IndexingDemuxer::open(
                &path,
                IndexOptions {
                    scan,
                    ..Default::default()
                },
            )
            .unwrap();
            let n = golden.len();
            let mut requests: Vec<Vec<usize>> = (0..12)
                .map(|_| {
                    let (len, step) = (rng.random_range(1..=8), rng.random_range(1..=3));
                    let start = rng.random_range(0..n);
                    let mut r: Vec<usize> =
                        (0..len).map(|j| (start + j * step).min(n - 1)).collect();
                    if rng.random_bool(0.5) {
                        r.push(rng.random_range(0..n));
                    }
                    r
                })
                .collect();
            // Every keyframe with the frames after it.
            for g in &demux.index().gops {
                // A GOP start before the edit list's start is not presented: no request.
                let Some(key) = demux.index().packets[g.start as usize].presentation_index else {
                    continue;
                };
                let key = key.as_usize();
                requests.push((key..(key + 4).min(n)).collect());
            }
            for r in requests {
                let got = decode_md5(&mut session, &demux, &r)
                    .unwrap_or_else(|e| panic!("{name} {scan:?} {r:?}: {e}"));
                for (slot, &f) in r.iter().enumerate() {
                    assert_eq!(got[slot], golden[f], "{name} {scan:?} {r:?}: frame {f}");
                }
                frames_checked += r.len();
            }
        }
    }
    eprintln!("{frames_checked} frames, {:?}", session.stats());
}

/// A container the decoder knows nothing of: every sample of a video as Annex-B in memory,
/// cut from the file's bytes by the index's byte ranges and converted here, not by
/// `IndexingDemuxer`.
struct MemPackets {
    name: PathBuf,
    codec: CodecInfo,
    /// (pts, bytes without parameter sets: Annex-B for H.264/HEVC, as stored for VP9/AV1) by
    /// decode index.
    samples: Vec<(i64, Vec<u8>)>,
}

impl MemPackets {
    fn new(index: &VideoIndex) -> MemPackets {
        let bytes = std::fs::read(&index.path).unwrap();
        let samples = index
            .packets
            .iter()
            .map(|s| {
                let raw = &bytes[s.offset as usize..s.offset as usize + s.size as usize];
                if !index.codec.codec.is_nal() {
                    return (s.pts, raw.to_vec());
                }
                let mut annexb = Vec::new();
                append_annexb(&mut annexb, raw, index.codec.nal_length_size).unwrap();
                (s.pts, annexb)
            })
            .collect();
        MemPackets {
            name: PathBuf::from(format!("memory:{}", index.path.display())),
            codec: index.codec.clone(),
            samples,
        }
    }
}

impl PacketSource for MemPackets {
    fn name(&self) -> &Path {
        &self.name
    }

    fn codec(&self) -> &CodecInfo {
        &self.codec
    }

    fn read_run(&self, run: &DecodeRun) -> gm_demux::Result<Vec<Packet>> {
        let mut out = Vec::with_capacity(run.packets.len());
        for (k, &d) in run.packets.iter().enumerate() {
            let (pts, annexb) =
                self.samples
                    .get(d as usize)
                    .ok_or_else(|| DemuxError::BadSample {
                        file: self.name.clone(),
                        sample: d as usize,
                        reason: "no such packet".into(),
                    })?;
            let mut data = Vec::new();
            if k == 0 && self.codec.codec.is_nal() {
                append_parameter_sets(&mut data, &self.codec.parameter_sets);
            } else if k == 0 {
                // AV1's configuration OBUs; VP9 has none.
                self.codec
                    .parameter_sets
                    .iter()
                    .for_each(|s| data.extend_from_slice(s));
            }
            data.extend_from_slice(annexb);
            out.push(Packet {
                decode_index: d,
                pts: *pts,
                data,
            });
        }
        Ok(out)
    }
}

#[test]
fn a_packet_source_of_another_container_decodes_bit_exact() {
    // The decoder takes its packets through `PacketSource` alone: packets held in memory by a
    // source written here decode to ffmpeg's frames, for every fixture, all frames and random
    // requests.
    let device = gpu_test_device!("a_packet_source_of_another_container_decodes_bit_exact");
    let mut rng = rng("packet_source");
    let mut session = DecoderSession::new(&device, None).unwrap();
    let mut frames_checked = 0;
    for name in decodable(&device) {
        let (path, golden) = video(name);
        let index = demuxer(&path).index().clone();
        let source = MemPackets::new(&index);
        let n = golden.len();
        let mut requests: Vec<Vec<usize>> = vec![(0..n).collect()];
        for _ in 0..8 {
            let start = rng.random_range(0..n);
            requests.push((start..(start + rng.random_range(1..=6)).min(n)).collect());
        }
        for r in requests {
            let plan = index.plan(&r).unwrap();
            let got = decode_plan_md5(&mut session, &source, &plan)
                .unwrap_or_else(|e| panic!("{name} {r:?}: {e}"));
            for (slot, &f) in r.iter().enumerate() {
                assert_eq!(
                    got[slot], golden[f],
                    "{name} {r:?}: frame {f} differs from ffmpeg"
                );
            }
            frames_checked += r.len();
        }
    }
    eprintln!("{frames_checked} frames, {:?}", session.stats());
    assert!(frames_checked >= 330);
}

#[test]
fn av1_decodes_bit_exact_or_is_refused_clearly() {
    // NVDEC decodes AV1 from Ampere's consumer parts on, but the decoder of Hopper (H100,
    // H200) reports AV1 unsupported: there gm must refuse before decoding, naming the file,
    // the codec and the GPU; where it is supported, every frame must equal ffmpeg's (libdav1d,
    // film grain applied as NVDEC applies it).
    let device = gpu_test_device!("av1_decodes_bit_exact_or_is_refused_clearly");
    let mut session = DecoderSession::new(&device, None).unwrap();
    let av1: Vec<&str> = VIDEO_FIXTURES
        .iter()
        .copied()
        .filter(|n| n.starts_with("av1"))
        .collect();
    assert!(av1.len() >= 5);
    for name in av1 {
        let (path, golden) = video(name);
        let demux = demuxer(&path);
        match session.check_support(&path, &demux.index().codec) {
            Ok(()) => {
                check(name, &mut session, &(0..golden.len()).collect::<Vec<_>>());
                eprintln!("{name}: decoded bit-exact on {}", device.name());
            }
            Err(e) => {
                let msg = e.to_string();
                assert!(matches!(e, CodecError::Unsupported(_)), "{msg}");
                for part in [name, "av1", device.name()] {
                    assert!(msg.contains(part), "'{part}' missing from: {msg}");
                }
                session.set_routing(routing(DecoderChoice::Gpu));
                let err = decode_md5(&mut session, &demux, &[0]).unwrap_err();
                assert!(matches!(err, CodecError::Unsupported(_)), "{err}");
                eprintln!(
                    "{name}: refused on {} under decoder=gpu: {msg}",
                    device.name()
                );
                // auto: the CPU decoder takes it, every frame equal to ffmpeg's.
                session.set_routing(routing(DecoderChoice::Auto));
                let route = session.route(&path, &demux.index().codec).unwrap();
                assert!(route.to_string().contains(device.name()), "{route}");
                if ffmpeg_present(name) {
                    check(name, &mut session, &(0..golden.len()).collect::<Vec<_>>());
                    eprintln!("{name}: decoded bit-exact on the CPU route ({route})");
                }
            }
        }
    }
    // The session still decodes what it can.
    check("vp9_altref.webm", &mut session, &[0, 29]);
}
