//! NVDEC throughput and latency of gm-codec on the videos given as arguments (the GPU bundle
//! carries 1080p H.264 and HEVC twins): sequential decode with 1..8 sessions, random 8-frame
//! clips and random single frames through a 7-session pool, first-frame latency and decoder
//! memory. Every decoded frame is copied into device memory (as a pipeline would), so the
//! numbers compare with peers that return frames in device memory.
//!
//! Prints one JSON object per measurement, then a table. Run on the GPU machine:
//! `target/gpu-bundle/bench/gm-codec--nvdec VIDEO...`.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use gm_codec::nvdec::{DecodedFrame, DecoderPool, DecoderSession, SessionTime, SurfaceFormat};
use gm_cuda::{Device, DeviceBuffer};
use gm_demux::{IndexOptions, IndexingDemuxer};

/// Copies a frame into `buf` (packed NV12/P016) on the frame's stream.
fn copy_out(f: &DecodedFrame<'_>, buf: &mut Option<DeviceBuffer>) -> gm_codec::Result<()> {
    let bps = if f.format == SurfaceFormat::P016 {
        2
    } else {
        1
    };
    let row = f.width as usize * bps;
    let rows = f.height as usize;
    let need = row * rows * 3 / 2;
    if buf.as_ref().is_none_or(|b| b.len() < need) {
        *buf = Some(DeviceBuffer::alloc(f.stream.device(), need)?);
    }
    let dst = buf.as_ref().unwrap().device_ptr();
    // SAFETY: the surface is mapped during this call; `dst` holds `need` bytes.
    unsafe {
        f.stream
            .copy_2d_on_device(f.luma, f.pitch, dst, row, row, rows)?;
        f.stream.copy_2d_on_device(
            f.chroma,
            f.pitch,
            dst.offset(row * rows),
            row,
            row,
            rows.div_ceil(2),
        )?;
    }
    Ok(())
}

fn decode(
    session: &mut DecoderSession,
    demux: &IndexingDemuxer,
    frames: &[usize],
    buf: &mut Option<DeviceBuffer>,
) -> usize {
    let plan = demux.plan(frames).unwrap();
    let mut n = 0;
    session
        .decode(demux, &plan, &mut |f| {
            n += 1;
            copy_out(f, buf)
        })
        .unwrap();
    session.stream().synchronize().unwrap();
    n
}

struct Lcg(u64);
impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n
    }
}

/// Where the sessions' time went, microseconds per frame delivered.
fn breakdown(t: &SessionTime, frames: usize) -> serde_json::Value {
    let per = |ns: u64| (ns as f64 / 1e3 / frames.max(1) as f64 * 100.0).round() / 100.0;
    serde_json::json!({
        "read": per(t.read_ns), "parser": per(t.parser_ns()), "submit": per(t.submit_ns),
        "map": per(t.map_ns), "consume": per(t.consume_ns), "retire": per(t.retire_ns),
        "drain": per(t.drain_ns),
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let videos: Vec<PathBuf> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .map(PathBuf::from)
        .collect();
    assert!(!videos.is_empty(), "usage: nvdec VIDEO...");
    let device = Device::new(0).unwrap();
    let mut table = Vec::new();
    for path in &videos {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let demux = Arc::new(IndexingDemuxer::open(path, IndexOptions::default()).unwrap());
        let n = demux.index().frame_count();
        let all: Arc<Vec<usize>> = Arc::new((0..n).collect());

        // GM_BENCH_FIRST_FRAME_ONLY=1: only the first-frame latency (long videos).
        let throughput = std::env::var_os("GM_BENCH_FIRST_FRAME_ONLY").is_none();
        // Sequential: every session decodes the whole video `reps` times.
        // GM_BENCH_SESSIONS=7,8: only those session counts.
        let counts: Vec<usize> = std::env::var("GM_BENCH_SESSIONS")
            .map(|v| v.split(',').filter_map(|s| s.trim().parse().ok()).collect())
            .unwrap_or_else(|_| vec![1, 2, 4, 7, 8]);
        for sessions in counts.into_iter().filter(|_| throughput) {
            let pool = DecoderPool::new(&device, sessions, None).unwrap();
            let reps = 3;
            let warm: Vec<_> = (0..sessions)
                .map(|_| {
                    let (d, a) = (demux.clone(), all.clone());
                    pool.submit(move |s| Ok(decode(s, &d, &a[..30], &mut None)))
                })
                .collect();
            warm.into_iter().for_each(|r| {
                r.recv().unwrap().unwrap();
            });
            let t = Instant::now();
            let jobs: Vec<_> = (0..sessions)
                .map(|_| {
                    let (d, a) = (demux.clone(), all.clone());
                    pool.submit(move |s| {
                        let mut buf = None;
                        let before = s.stats().time;
                        let n = (0..reps)
                            .map(|_| decode(s, &d, &a, &mut buf))
                            .sum::<usize>();
                        Ok((n, s.stats().time.since(&before)))
                    })
                })
                .collect();
            let mut time = SessionTime::default();
            let mut frames = 0;
            for r in jobs {
                let (n, t) = r.recv().unwrap().unwrap();
                frames += n;
                time.add(&t);
            }
            let secs = t.elapsed().as_secs_f64();
            let fps = frames as f64 / secs;
            println!(
                "{}",
                serde_json::json!({
                    "video": name, "workload": "sequential", "sessions": sessions,
                    "frames": frames, "fps": (fps * 10.0).round() / 10.0,
                    "display_delay": std::env::var("GM_NVDEC_DISPLAY_DELAY").ok(),
                    "session_us_per_frame": breakdown(&time, frames),
                })
            );
            table.push((
                name.clone(),
                format!("sequential, {sessions} sessions"),
                fps,
            ));
        }

        // Random access through a 7-session pool.
        let pool = DecoderPool::new(&device, 7, None).unwrap();
        let mut rng = Lcg(0x5eed ^ n as u64);
        for (workload, count, len) in [
            ("random 8-frame clips", 140usize, 8usize),
            ("random single frames", 280, 1),
        ]
        .into_iter()
        .filter(|_| throughput)
        {
            let t = Instant::now();
            let jobs: Vec<_> = (0..count)
                .map(|_| {
                    let start = rng.below(n - len + 1);
                    let d = demux.clone();
                    pool.submit(move |s| {
                        Ok(decode(
                            s,
                            &d,
                            &(start..start + len).collect::<Vec<_>>(),
                            &mut None,
                        ))
                    })
                })
                .collect();
            let frames: usize = jobs.into_iter().map(|r| r.recv().unwrap().unwrap()).sum();
            let fps = frames as f64 / t.elapsed().as_secs_f64();
            println!(
                "{{\"video\":\"{name}\",\"workload\":\"{workload}\",\"sessions\":7,\"frames\":{frames},\"fps\":{fps:.1}}}"
            );
            table.push((name.clone(), format!("{workload}, 7 sessions"), fps));
        }

        // First frame: index the file, start a session, decode frame 0.
        let mut lat = Vec::new();
        let mut bytes = 0;
        for _ in 0..5 {
            let t = Instant::now();
            let d = IndexingDemuxer::open(path, IndexOptions::default()).unwrap();
            let mut s = DecoderSession::new(&device, None).unwrap();
            decode(&mut s, &d, &[0], &mut None);
            lat.push(t.elapsed().as_secs_f64() * 1e3);
            bytes = s.stats().decoder_bytes;
        }
        let ms = median(lat);
        println!(
            "{{\"video\":\"{name}\",\"workload\":\"first frame\",\"ms\":{ms:.2},\"decoder_bytes\":{bytes}}}"
        );
        table.push((
            name.clone(),
            format!(
                "first frame latency (ms); decoder memory {:.1} MB",
                bytes as f64 / 1e6
            ),
            ms,
        ));
    }
    println!("\n| video | workload | fps (or ms) |\n|---|---|---|");
    for (v, w, x) in table {
        println!("| {v} | {w} | {x:.1} |");
    }
}
