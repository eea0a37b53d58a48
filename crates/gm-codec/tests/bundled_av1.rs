//! The bundled AV1 decoder (rav1d, feature `bundled-av1`) against ffmpeg's framemd5: every
//! frame of every AV1 fixture (8- and 10-bit, hidden frames with `show_existing_frame`, film
//! grain, odd sizes, GOP 2), random frames and clips planned mid-stream (the thread count asked
//! for is libavcodec's: rav1d always runs on the caller's thread). It needs nothing installed, so these run everywhere, CI included; where FFmpeg is
//! installed too, its libdav1d path is checked to agree on colour and layout.
#![cfg(feature = "bundled-av1")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod common;

use common::{check_cpu as check, seeded_rng as rng, video, video_demuxer};

use gm_codec::avcodec::{Av1Backend, CpuDecoder};
use gm_demux::{Codec, IndexOptions, IndexingDemuxer};
use md5::{Digest, Md5};
use rand::Rng;

const AV1: &[&str] = &[
    "av1_hidden.webm",
    "av1_svt.webm",
    "av1_10bit.webm",
    "av1_odd.mp4",
    "av1_grain.webm",
];

fn bundled(threads: usize) -> CpuDecoder {
    CpuDecoder::with_av1(threads, Av1Backend::Bundled)
}

#[test]
fn every_frame_of_every_av1_fixture_equals_ffmpeg() {
    let mut decoder = bundled(1);
    let mut total = 0;
    for name in AV1 {
        let n = video(name).1.len();
        total += check(&mut decoder, name, &(0..n).collect::<Vec<_>>());
    }
    let stats = decoder.stats();
    eprintln!("{total} frames, {stats:?}");
    assert!(total >= 100, "{total}");
    // One context serves every file.
    assert_eq!(stats.opened, 1, "{stats:?}");
    assert_eq!(stats.delivered, total as u64);
}

#[test]
fn random_frames_and_clips_equal_ffmpeg() {
    let mut rng = rng("bundled random frames");
    for threads in [1, 3] {
        let mut decoder = bundled(threads);
        for _ in 0..25 {
            let name = AV1[rng.random_range(0..AV1.len())];
            let n = video(name).1.len();
            check(&mut decoder, name, &[rng.random_range(0..n)]);
            let start = rng.random_range(0..=n - 6);
            let mut clip: Vec<usize> = (start..start + 6).step_by(rng.random_range(1..3)).collect();
            if rng.random_bool(0.3) {
                clip.reverse();
            }
            check(&mut decoder, name, &clip);
        }
    }
}

#[test]
fn the_bundled_decoder_is_named_and_chosen_as_asked() {
    assert_eq!(
        CpuDecoder::backend_for(Codec::Av1, Av1Backend::Bundled).unwrap(),
        "rav1d (bundled)"
    );
    // Auto takes FFmpeg's libdav1d where it is installed, the bundled decoder otherwise.
    let auto = CpuDecoder::backend_for(Codec::Av1, Av1Backend::Auto).unwrap();
    match CpuDecoder::library() {
        Ok(_) => assert!(
            ["libavcodec (libdav1d)", "rav1d (bundled)"].contains(&auto),
            "{auto}"
        ),
        Err(_) => assert_eq!(auto, "rav1d (bundled)"),
    }
    assert_eq!("RAV1D".parse::<Av1Backend>().unwrap(), Av1Backend::Bundled);
    assert_eq!(
        "ffmpeg".parse::<Av1Backend>().unwrap(),
        Av1Backend::Libavcodec
    );
    let e = "dav2d".parse::<Av1Backend>().unwrap_err().to_string();
    assert!(e.contains("GM_AV1_DECODER") && e.contains("bundled"), "{e}");
}

/// Where FFmpeg with libdav1d is installed (CI installs Debian's), both decoders give the same
/// frames, layouts, depths and colour signalling.
#[test]
fn the_bundled_decoder_agrees_with_libavcodec_on_colour_and_layout() {
    if !gm_codec::avcodec::testing::libavcodec_or_skip("bundled_vs_libavcodec") {
        return;
    }
    if CpuDecoder::backend_for(Codec::Av1, Av1Backend::Libavcodec).is_err() {
        eprintln!("SKIP (FFmpeg without libdav1d): bundled_vs_libavcodec");
        return;
    }
    let mut ours = bundled(1);
    let mut theirs = CpuDecoder::with_av1(1, Av1Backend::Libavcodec);
    for name in AV1 {
        let (path, golden) = video(name);
        let demux = video_demuxer(&path);
        let frames = [0, golden.len() / 2, golden.len() - 1];
        let plan = demux.plan(&frames).unwrap();
        let mut seen = [Vec::new(), Vec::new()];
        for (k, d) in [&mut ours, &mut theirs].into_iter().enumerate() {
            d.decode(&demux, &plan, &mut |f| {
                seen[k].push((
                    f.frame,
                    f.layout,
                    f.bit_depth,
                    f.colour.matrix_coefficients,
                    f.colour.full_range,
                    format!("{:x}", Md5::digest(f.to_planar())),
                ));
                Ok(())
            })
            .unwrap();
        }
        assert_eq!(seen[0], seen[1], "{name}");
    }
}

/// Hostile input: AV1 packets with bytes flipped anywhere (sequence headers, frame headers,
/// tile data) give frames or an error naming the file, never a panic or a hang, and the
/// decoder then decodes a clean file exactly.
#[test]
fn damaged_av1_packets_give_errors_never_panics_and_the_decoder_recovers() {
    let mut rng = rng("bundled damaged packets");
    let mut decoder = bundled(1);
    let dir = std::env::temp_dir().join(format!("gm-rav1d-damaged-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut errors = 0;
    for round in 0..30 {
        let name = AV1[round % AV1.len()];
        let (path, golden) = video(name);
        let mut bytes = std::fs::read(&path).unwrap();
        let samples = video_demuxer(&path).index().packets.clone();
        // Light damage (a byte or two, as a bad sector leaves) and heavy damage in turn.
        let flips = if round % 2 == 0 { 1..3 } else { 3..40 };
        for _ in 0..rng.random_range(flips) {
            let s = &samples[rng.random_range(0..samples.len())];
            let at = s.offset as usize + rng.random_range(0..s.size as usize);
            bytes[at] = if rng.random_bool(0.5) {
                bytes[at] ^ rng.random_range(1..=255u8)
            } else {
                rng.random()
            };
        }
        let damaged = dir.join(format!(
            "{round}-{}",
            path.file_name().unwrap().to_str().unwrap()
        ));
        std::fs::write(&damaged, &bytes).unwrap();
        // The indexer reads AV1 frame headers to count shown frames, so damage there is
        // refused at open, naming the file and sample, rather than decoded as a wrong count.
        let outcome = IndexingDemuxer::open(&damaged, IndexOptions::default())
            .map_err(|e| e.to_string())
            .and_then(|demux| {
                let n = demux.index().frame_count();
                let plan = demux.plan(&(0..n).collect::<Vec<_>>()).unwrap();
                decoder
                    .decode(&demux, &plan, &mut |_| Ok(()))
                    .map_err(|e| e.to_string())
            });
        if let Err(msg) = outcome {
            errors += 1;
            assert!(msg.contains(damaged.to_str().unwrap()), "{name}: {msg}");
        }
        check(&mut decoder, name, &[golden.len() - 1, 0]);
    }
    eprintln!("{errors} of 30 damaged files ended in an error");
    assert!(errors > 0, "no damage was noticed");
    std::fs::remove_dir_all(&dir).ok();
}
