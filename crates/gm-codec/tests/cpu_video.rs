//! The CPU decoder (libavcodec, loaded at run time) against ffmpeg's framemd5: every frame of
//! every fixture, random frames and clips planned mid-stream, 8- and 10-bit, AV1 with hidden
//! frames and film grain, H.264 4:4:4. Runs wherever FFmpeg's libraries are installed (CI
//! installs Debian's); without them the tests print SKIP lines, and GM_REQUIRE_LIBAVCODEC=1 turns
//! that into a failure.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod common;

use common::{
    CHROMA_FIXTURES, VIDEO_FIXTURES, check_cpu as check, seeded_rng as rng, shared_media, video,
    video_demuxer,
};

use gm_codec::avcodec::testing::libavcodec_or_skip;
use gm_codec::avcodec::{ChromaLayout, CpuDecoder};
use gm_codec::nvdec::FrameStatus;
use gm_codec::{CodecError, LibraryError};
use gm_demux::{IndexOptions, IndexingDemuxer};
use gm_transforms::cpu::SemiPlanar;
use md5::{Digest, Md5};
use rand::Rng;

/// A CPU decoder, or `None` after a SKIP line when FFmpeg is not installed
/// (a failure under GM_REQUIRE_LIBAVCODEC=1).
fn decoder_or_skip(test: &str, threads: usize) -> Option<CpuDecoder> {
    libavcodec_or_skip(test).then(|| CpuDecoder::new(threads).unwrap())
}

#[test]
fn every_frame_of_every_fixture_equals_ffmpeg() {
    let Some(mut decoder) = decoder_or_skip("every_frame_of_every_fixture_equals_ffmpeg", 2) else {
        return;
    };
    eprintln!("{}", CpuDecoder::library().unwrap());
    let mut total = 0;
    for name in VIDEO_FIXTURES {
        let n = video(name).1.len();
        total += check(&mut decoder, name, &(0..n).collect::<Vec<_>>());
    }
    let stats = decoder.stats();
    eprintln!("{total} frames, {stats:?}");
    assert!(total >= 330, "{total}");
    assert_eq!(
        stats.opened,
        VIDEO_FIXTURES.len() as u64,
        "one decoder per file: {stats:?}"
    );
    assert!(stats.frames >= total as u64);
}

/// 4:2:2 and 4:4:4 (8- and 10-bit) decode in their own formats, equal to ffmpeg's framemd5,
/// whole and out of order.
#[test]
fn chroma_422_and_444_frames_equal_ffmpeg() {
    let Some(mut decoder) = decoder_or_skip("chroma_422_and_444_frames_equal_ffmpeg", 1) else {
        return;
    };
    let mut total = 0;
    for name in CHROMA_FIXTURES {
        let n = video(name).1.len();
        total += check(&mut decoder, name, &(0..n).collect::<Vec<_>>());
        total += check(&mut decoder, name, &[n - 1, 2, 7, 2]);
    }
    assert_eq!(total, CHROMA_FIXTURES.len() * 14);
}

#[test]
fn random_frames_and_clips_planned_mid_stream_equal_ffmpeg() {
    let Some(mut decoder) = decoder_or_skip("random_frames_and_clips", 1) else {
        return;
    };
    let mut rng = rng("random_frames_and_clips");
    let mut frames = 0;
    for _ in 0..120 {
        let name = VIDEO_FIXTURES[rng.random_range(0..VIDEO_FIXTURES.len())];
        let n = video(name).1.len();
        frames += check(&mut decoder, name, &[rng.random_range(0..n)]);
    }
    for _ in 0..60 {
        let name = VIDEO_FIXTURES[rng.random_range(0..VIDEO_FIXTURES.len())];
        let n = video(name).1.len();
        let start = rng.random_range(0..=n - 8);
        let mut clip: Vec<usize> = (start..start + 8).step_by(rng.random_range(1..3)).collect();
        if rng.random_bool(0.3) {
            clip.reverse();
        }
        if rng.random_bool(0.2) {
            clip.push(clip[0]);
        }
        frames += check(&mut decoder, name, &clip);
    }
    eprintln!("{frames} frames, {:?}", decoder.stats());
}

#[test]
fn h264_444_and_real_videos_decode_in_their_own_format() {
    let Some(mut decoder) = decoder_or_skip("h264_444_and_real_videos", 0) else {
        return;
    };
    if shared_media().is_none() {
        eprintln!("SKIP (no shared media): h264_444_and_real_videos");
        return;
    }
    let (path, golden) = video("shared_cockatoo_h264_444.yuv444p");
    let demux = video_demuxer(&path);
    let picks: Vec<usize> = (0..golden.len())
        .step_by(7)
        .chain([golden.len() - 1])
        .collect();
    let plan = demux.plan(&picks).unwrap();
    let mut layouts = Vec::new();
    decoder
        .decode(&demux, &plan, &mut |f| {
            layouts.push((f.layout, f.bit_depth));
            let md5 = format!("{:x}", Md5::digest(f.to_planar()));
            assert_eq!(md5, golden[f.frame as usize], "cockatoo frame {}", f.frame);
            // Staged for the GPU as NV24: each pixel's U and V side by side, rows of twice
            // the width, after the luma plane.
            let pitch = f.semi_planar_pitch();
            let (w, h) = (f.width as usize, f.height as usize);
            assert_eq!(pitch, 2 * w);
            let mut buf = vec![0u8; f.semi_planar_bytes(pitch)];
            assert!(f.write_semi_planar(&mut buf, pitch).is_some());
            let planar = f.to_planar();
            let (u, v) = (&planar[w * h..2 * w * h], &planar[2 * w * h..]);
            let chroma_at = pitch * h.next_multiple_of(2);
            for (x, y) in [(0, 0), (w - 1, 0), (w / 2, h / 2), (w - 1, h - 1)] {
                let at = chroma_at + y * pitch + 2 * x;
                assert_eq!(
                    (buf[at], buf[at + 1]),
                    (u[y * w + x], v[y * w + x]),
                    "({x}, {y})"
                );
            }
            Ok(())
        })
        .unwrap();
    assert_eq!(layouts.len(), picks.len());
    assert!(layouts.iter().all(|&l| l == (ChromaLayout::Yuv444, 8)));
    for name in ["shared_humming_bird_1s", "shared_phone_1080p"] {
        let n = video(name).1.len();
        check(&mut decoder, name, &(0..n).step_by(5).collect::<Vec<_>>());
    }
}

#[test]
fn semi_planar_staging_matches_the_twins_repacking() {
    let Some(mut decoder) = decoder_or_skip("semi_planar_staging", 1) else {
        return;
    };
    for name in ["vp9_odd.webm", "hevc_main10.mp4", "av1_10bit.webm"] {
        let (path, _) = video(name);
        let demux = video_demuxer(&path);
        let plan = demux.plan(&[3]).unwrap();
        decoder
            .decode(&demux, &plan, &mut |f| {
                let pitch = f.semi_planar_pitch() + 64;
                let mut nv = vec![0u8; f.semi_planar_bytes(pitch)];
                f.write_semi_planar(&mut nv, pitch).unwrap();
                // What the CPU twin is fed from ffmpeg's planar frames in other tests.
                let sp = SemiPlanar::from_yuv420p(&f.to_planar(), f.width, f.height, f.bit_depth)
                    .unwrap();
                let h = f.height as usize;
                let row = f.width as usize * if f.bit_depth > 8 { 2 } else { 1 };
                for y in 0..h {
                    let got = &nv[y * pitch..y * pitch + row];
                    assert_eq!(
                        got,
                        &sp.luma[y * sp.pitch..y * sp.pitch + row],
                        "{name}: row {y}"
                    );
                }
                let at = pitch * h.next_multiple_of(2);
                for y in 0..h.div_ceil(2) {
                    let got = &nv[at + y * pitch..at + y * pitch + sp.pitch];
                    let want = &sp.chroma[y * sp.pitch..(y + 1) * sp.pitch];
                    assert_eq!(got, want, "{name}: chroma row {y}");
                }
                Ok(())
            })
            .unwrap();
    }
}

#[test]
fn damaged_packets_give_errors_or_flags_never_hang_and_the_decoder_recovers() {
    let Some(mut decoder) = decoder_or_skip("damaged_packets", 1) else {
        return;
    };
    let mut rng = rng("cpu damaged packets");
    for name in [
        "h264_bpyramid.mp4",
        "hevc_open_gop.mp4",
        "vp9_altref.webm",
        "av1_hidden.webm",
    ] {
        let (path, golden) = video(name);
        let mut bytes = std::fs::read(&path).unwrap();
        let clean = video_demuxer(&path);
        // Damage bytes inside the later half of the samples, never the container's boxes.
        let samples = &clean.index().packets;
        for _ in 0..40 {
            let s = &samples[rng.random_range(samples.len() / 2..samples.len())];
            let at = s.offset as usize + rng.random_range(0..s.size as usize);
            bytes[at] ^= rng.random_range(1..=255u8);
        }
        let dir = std::env::temp_dir().join(format!("gm-cpu-damaged-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let damaged = dir.join(path.file_name().unwrap());
        std::fs::write(&damaged, &bytes).unwrap();
        // The indexer reads frame headers (AV1's shown frames, H.264's slice headers), so
        // damage there is refused at open, naming the file and sample; the decoder is then
        // still checked on a clean file.
        let demux = match IndexingDemuxer::open(&damaged, IndexOptions::default()) {
            Ok(demux) => demux,
            Err(e) => {
                let msg = e.to_string();
                assert!(msg.contains(damaged.to_str().unwrap()), "{name}: {msg}");
                eprintln!("{name}: refused at open: {msg}");
                std::fs::remove_dir_all(&dir).ok();
                check(&mut decoder, name, &[golden.len() - 1, 0]);
                continue;
            }
        };
        let n = demux.index().frame_count();
        let plan = demux.plan(&(0..n).collect::<Vec<_>>()).unwrap();
        let mut outcome = (0usize, 0usize);
        let result = decoder.decode(&demux, &plan, &mut |f| {
            outcome.0 += 1;
            if f.status != FrameStatus::Ok {
                outcome.1 += 1;
            }
            Ok(())
        });
        if let Err(e) = &result {
            let msg = e.to_string();
            assert!(msg.contains(damaged.to_str().unwrap()), "{name}: {msg}");
        }
        eprintln!("{name}: {outcome:?} frames (delivered, flagged), {result:?}");
        std::fs::remove_dir_all(&dir).ok();
        // The decoder goes on with a clean file, bit-exact.
        check(&mut decoder, name, &[golden.len() - 1, 0]);
    }
}

#[test]
fn a_consumer_error_stops_the_plan_and_the_decoder_stays_usable() {
    let Some(mut decoder) = decoder_or_skip("a_consumer_error", 1) else {
        return;
    };
    let (path, _) = video("h264_bpyramid.mp4");
    let demux = video_demuxer(&path);
    let plan = demux.plan(&[0, 1, 2, 3]).unwrap();
    let mut seen = 0;
    let err = decoder
        .decode(&demux, &plan, &mut |_| {
            seen += 1;
            Err(CodecError::Consumer("disk full".into()))
        })
        .unwrap_err();
    assert_eq!(seen, 1);
    assert!(err.to_string().contains("disk full"), "{err}");
    check(&mut decoder, "h264_bpyramid.mp4", &[0, 1, 2, 3]);
}

#[test]
fn library_errors_name_ffmpeg() {
    // With FFmpeg present this checks the description; the missing-library text is a unit
    // test of the loader (it cannot hide an installed FFmpeg from this process).
    match CpuDecoder::library() {
        Ok(desc) => assert!(desc.starts_with("libavcodec "), "{desc}"),
        Err(CodecError::Library(LibraryError::NotFound { library, .. })) => {
            assert_eq!(library, "FFmpeg's libavcodec")
        }
        Err(e) => panic!("{e}"),
    }
}

/// A session alternating between the cameras of a scene keeps each file's context open
/// (opening libdav1d costs more than a GOP of 2): two files, twenty plans, two contexts.
#[test]
fn alternating_files_keep_their_contexts_open() {
    let Some(mut decoder) = decoder_or_skip("alternating_files", 1) else {
        return;
    };
    for k in 0..10 {
        check(&mut decoder, "av1_svt.webm", &[k, k + 1]);
        check(&mut decoder, "vp9_altref.webm", &[k + 2]);
    }
    assert_eq!(decoder.stats().opened, 2, "{:?}", decoder.stats());
}
