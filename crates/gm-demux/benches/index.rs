//! Index time and size for a one-hour 1080p video (H.264, 30 fps, GOP 30, B-frames), in
//! progressive and fragmented MP4, and a one-hour 1080p VP9 WebM (30 fps, key frame every
//! 30). The videos are made once with ffmpeg under target/bench-media (or named by
//! GM_BENCH_LONG_VIDEO / GM_BENCH_LONG_FRAGMENTED / GM_BENCH_LONG_WEBM; `skip` leaves the
//! fragmented or WebM one out).
//!
//! Run: `cargo bench -p gm-demux --bench index`.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use gm_demux::{BitstreamScan, IndexOptions, Sample, VideoIndex};

fn media_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench-media")
}

fn ffmpeg(args: &[&str]) {
    let ok = Command::new("ffmpeg")
        .args(["-hide_banner", "-loglevel", "error", "-y"])
        .args(args)
        .status()
        .expect("ffmpeg is needed to make the benchmark videos")
        .success();
    assert!(ok, "ffmpeg {args:?} failed");
}

/// `clip` (10 s) repeated by stream copy to one hour in `out`.
fn repeat_to_an_hour(clip: &Path, out: &Path) {
    ffmpeg(&[
        "-stream_loop",
        "359",
        "-i",
        clip.to_str().unwrap(),
        "-c",
        "copy",
        out.to_str().unwrap(),
    ]);
}

/// A 10 s 1080p clip of the phone recording, repeated by stream copy to one hour.
fn long_videos() -> (PathBuf, PathBuf) {
    let dir = media_dir();
    let prog = std::env::var_os("GM_BENCH_LONG_VIDEO")
        .map(PathBuf::from)
        .unwrap_or_else(|| dir.join("long_1080p_1h.mp4"));
    let frag = std::env::var_os("GM_BENCH_LONG_FRAGMENTED")
        .map(PathBuf::from)
        .unwrap_or_else(|| dir.join("long_1080p_1h_frag.mp4"));
    let clip = dir.join("clip_1080p_10s.mp4");
    let source =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/media/video/phone_1080p.mp4");
    if !prog.exists() {
        std::fs::create_dir_all(&dir).unwrap();
        if !clip.exists() {
            let src = source.to_str().unwrap();
            ffmpeg(&[
                "-stream_loop",
                "-1",
                "-i",
                src,
                "-t",
                "10",
                "-an",
                "-c:v",
                "libx264",
                "-preset",
                "ultrafast",
                "-crf",
                "35",
                "-bf",
                "3",
                "-g",
                "30",
                "-r",
                "30",
                "-pix_fmt",
                "yuv420p",
                clip.to_str().unwrap(),
            ]);
        }
        repeat_to_an_hour(&clip, &prog);
    }
    if !frag.exists() && std::env::var("GM_BENCH_LONG_FRAGMENTED").as_deref() != Ok("skip") {
        ffmpeg(&[
            "-i",
            prog.to_str().unwrap(),
            "-c",
            "copy",
            "-movflags",
            "frag_keyframe+empty_moov+default_base_moof",
            frag.to_str().unwrap(),
        ]);
    }
    (prog, frag)
}

/// The phone recording's first 10 s as 1080p VP9, repeated by stream copy to one hour.
fn long_webm() -> Option<PathBuf> {
    let var = std::env::var_os("GM_BENCH_LONG_WEBM");
    if var.as_deref() == Some(std::ffi::OsStr::new("skip")) {
        return None;
    }
    let dir = media_dir();
    let path = var
        .map(PathBuf::from)
        .unwrap_or_else(|| dir.join("long_1080p_1h.webm"));
    if !path.exists() {
        let clip = dir.join("clip_1080p_10s.webm");
        let source = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/media/video/phone_1080p.mp4");
        if !clip.exists() {
            ffmpeg(&[
                "-stream_loop",
                "-1",
                "-i",
                source.to_str().unwrap(),
                "-t",
                "10",
                "-an",
                "-vf",
                "scale=1920:1080",
                "-r",
                "30",
                "-c:v",
                "libvpx-vp9",
                "-deadline",
                "realtime",
                "-cpu-used",
                "8",
                "-b:v",
                "2M",
                "-g",
                "30",
                clip.to_str().unwrap(),
            ]);
        }
        repeat_to_an_hour(&clip, &path);
    }
    Some(path)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let (prog, frag) = long_videos();
    println!("| video | scan | frames | median ms | min..max ms | bytes read | file MB |");
    println!("|---|---|---|---|---|---|---|");
    // GM_BENCH_LONG_FRAGMENTED=skip leaves the fragmented twin out (no ffmpeg to make it).
    let webm = long_webm();
    let mut paths: Vec<&PathBuf> =
        if std::env::var("GM_BENCH_LONG_FRAGMENTED").as_deref() == Ok("skip") {
            vec![&prog]
        } else {
            vec![&prog, &frag]
        };
    paths.extend(webm.as_ref());
    let mut json = Vec::new();
    for path in paths {
        for scan in [
            BitstreamScan::None,
            BitstreamScan::Keyframes,
            BitstreamScan::Full,
        ] {
            let options = IndexOptions {
                scan,
                ..Default::default()
            };
            let idx = VideoIndex::open(path, options).unwrap(); // warm-up (and page cache)
            let times: Vec<f64> = (0..7)
                .map(|_| {
                    let t = Instant::now();
                    let i = VideoIndex::open(path, options).unwrap();
                    std::hint::black_box(&i);
                    t.elapsed().as_secs_f64() * 1e3
                })
                .collect();
            json.push(format!(
                "{{\"bench\":\"index\",\"video\":\"{}\",\"scan\":\"{scan:?}\",\"frames\":{},\"ms\":{:.2}}}",
                path.file_name().unwrap().to_string_lossy(),
                idx.frame_count(),
                median(times.clone())
            ));
            let (lo, hi) = times
                .iter()
                .fold((f64::MAX, 0f64), |(a, b), &t| (a.min(t), b.max(t)));
            println!(
                "| {} | {scan:?} | {} | {:.1} | {lo:.1}..{hi:.1} | {} | {:.0} |",
                path.file_name().unwrap().to_string_lossy(),
                idx.frame_count(),
                median(times),
                idx.bytes_read,
                idx.file_size as f64 / 1e6
            );
        }
    }
    for j in json {
        println!("{j}");
    }
    let idx = VideoIndex::open(&prog, IndexOptions::default()).unwrap();
    let saved = std::env::temp_dir().join("gm-bench-long.gmidx");
    idx.save(&saved).unwrap();
    let t = Instant::now();
    let loaded = VideoIndex::load(&saved, &prog).unwrap();
    let load_ms = t.elapsed().as_secs_f64() * 1e3;
    println!();
    println!(
        "memory: {} bytes per frame in the index ({:.1} MB for {} frames); saved index {:.2} MB ({:.1} bytes per frame), loaded in {load_ms:.1} ms",
        std::mem::size_of::<Sample>(),
        (std::mem::size_of::<Sample>() * idx.packets.len()) as f64 / 1e6,
        loaded.packets.len(),
        std::fs::metadata(&saved).unwrap().len() as f64 / 1e6,
        std::fs::metadata(&saved).unwrap().len() as f64 / idx.packets.len() as f64
    );
}
