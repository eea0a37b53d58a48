//! The clip loader's throughput on the videos given as arguments (1080p H.264 and HEVC in the
//! bench bundle): 8-frame episodes, resized to 224x224 RGB u8 NCHW on the GPU, batches of 8.
//!
//! - stream access: every episode of every video in order (sequential sampler, 8 batches per
//!   decoding job), with 1, 4 and 7 NVDEC sessions;
//! - random access: episodes starting at any frame, shuffled (one batch per job), 7 sessions;
//!
//! each with and without the GOP packet cache (`GM_BENCH_GOP_CACHE=0` or `1`: one of them;
//! `GM_BENCH_BLOCKING_SYNC=1`: host threads sleep on GPU waits; `GM_BENCH_DEVICE=cpu`: the
//! loader without a GPU, its sessions being CPU decoders; `GM_BENCH_SESSIONS`: the session
//! counts to run, 0 being the loader's default; `GM_BENCH_SCAN=full`: videos indexed with
//! every sample's headers, so that plans skip non-reference pictures). The dataset lists each file `GM_BENCH_COPIES`
//! times (16) as separate videos, so an epoch is long enough to time. With `GM_BENCH_MIX=1`
//! one dataset interleaves all the files given (a, b, a, b, ...: consecutive videos change
//! codec), measured as video "mix" with `"mix": true`. With `GM_BENCH_SCENES=1` the files are
//! the cameras of one scene (bench/data/make_scenes.sh: six 1600x900 HEVC cameras, the accvlab
//! workload): a multi-camera dataset of `GM_BENCH_COPIES` copies of that scene, measured as
//! video "scene" with `"cameras": N` (frames counted over all cameras). The random episodes are
//! also written to `$GM_BENCH_EPISODES/random-<video>.json` (a mixed dataset's as
//! `random-mix.json`, `[path, start]` pairs) for the peers to decode the same ones. One JSON object per measurement: frames per second (median of `GM_BENCH_REPS`), spread,
//! host CPU seconds per 1000 frames, device memory in use, frames decoded per frame returned.

// The report is one json! object with more keys than the macro's default recursion allows.
#![recursion_limit = "256"]
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

#[path = "../../../bench/support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::time::Instant;

use gm_cuda::{DType, Device, Stream};
use gm_demux::{BitstreamScan, IndexOptions};
use gm_loader::{ClipLoader, ClipStats, Sampler, VideoDataset};
use gm_transforms::{Compose, Layout, Resize, ToDtype};
use support::{
    cores_by_thread, cpu_seconds, cpu_seconds_by_thread, env_list, env_usize, median_spread,
};

fn chain() -> Compose {
    Compose::new()
        .then(Resize::Exact(224, 224))
        .then(ToDtype(DType::U8, Layout::Chw))
}

struct Run {
    name: String,
    /// The files, interleaved in one dataset (one file: that file alone).
    paths: Vec<PathBuf>,
    access: &'static str,
    sessions: usize,
    gop_cache: bool,
    batches: Option<usize>,
}

fn scenes() -> bool {
    env_usize("GM_BENCH_SCENES", 0) != 0
}

fn dataset(files: &[PathBuf], copies: usize, stride: usize, gop_cache: bool) -> VideoDataset {
    let mut b = if scenes() {
        VideoDataset::builder().scenes(vec![files.to_vec(); copies])
    } else {
        let paths: Vec<PathBuf> = (0..copies).flat_map(|_| files.iter().cloned()).collect();
        VideoDataset::builder().videos(&paths)
    };
    b = b.frames(8, stride);
    // GM_BENCH_SCAN=full: index every sample's headers (plans then skip non-reference
    // pictures no clip needs).
    if std::env::var("GM_BENCH_SCAN").is_ok_and(|v| v == "full") {
        b = b.index_options(IndexOptions {
            scan: BitstreamScan::Full,
            ..IndexOptions::default()
        });
    }
    if gop_cache {
        b = b.gop_cache(512 << 20);
    }
    b.open().expect("indexing the bench video")
}

fn measure(device: Option<&Device>, run: &Run, copies: usize, reps: usize) {
    let stride = if run.access == "stream" { 8 } else { 1 };
    let sampler = if run.access == "stream" {
        Sampler::sequential()
    } else {
        Sampler::shuffled(7)
    };
    let mut builder = ClipLoader::builder(dataset(&run.paths, copies, stride, run.gop_cache));
    if let Some(n) = std::env::var("GM_BENCH_BATCHES_PER_JOB")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        builder = builder.batches_per_job(n);
    }
    // GM_BENCH_REPLICATE_CHROMA=1: chroma repeated instead of interpolated as swscale does.
    let replicate = env_usize("GM_BENCH_REPLICATE_CHROMA", 0) != 0;
    if let Some(n) = std::env::var("GM_BENCH_JOBS_IN_FLIGHT")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        builder = builder.jobs_in_flight(n);
    }
    if let Some(n) = std::env::var("GM_BENCH_CPU_DECODERS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        builder = builder.cpu_decoders(n);
    }
    // GM_BENCH_NVDEC_BATCH=0 or 1: the NVDEC threads' SCHED_BATCH off or on (default: on in
    // a mixed dataset).
    if let Some(n) = std::env::var("GM_BENCH_NVDEC_BATCH")
        .ok()
        .and_then(|v| v.parse::<u8>().ok())
    {
        builder = builder.nvdec_batch_scheduling(n != 0);
    }
    builder = match device {
        Some(d) => builder.device(d),
        None => builder.cpu(),
    };
    builder = builder.replicate_chroma(replicate);
    // Sessions 0: the loader's default.
    if run.sessions > 0 {
        builder = builder.sessions(run.sessions);
    }
    let mut loader = builder
        .transforms(chain())
        .sampler(sampler)
        .batch_size(8)
        .seed(1)
        .build()
        .expect("the clip loader");
    let consumer = device.map(|d| Stream::new(d).unwrap());
    let wait = |b: &gm_loader::ClipBatch| {
        if let Some(c) = &consumer {
            b.wait_on(c).unwrap();
        }
    };
    let sync = || {
        if let Some(c) = &consumer {
            c.synchronize().unwrap();
        }
    };
    let limit = run.batches.unwrap_or(usize::MAX);
    // Warm-up: decoders created, pool filled.
    for b in loader.epoch(0).take(limit.min(16)) {
        wait(&b.unwrap());
    }
    sync();
    let before = loader.stats();
    let threads_before = cpu_seconds_by_thread();
    let mut rates = Vec::new();
    let (mut frames, mut cpu, mut wall) = (0u64, 0.0, 0.0);
    for rep in 0..reps {
        let (t, c) = (Instant::now(), cpu_seconds());
        let mut n = 0u64;
        for b in loader.epoch(1 + rep as u64).take(limit) {
            let b = b.unwrap();
            wait(&b);
            // [B, T, ...] or [B, cameras, T, ...]: every frame of every camera.
            let dims = if scenes() { 3 } else { 2 };
            n += b.frames.shape()[..dims].iter().product::<usize>() as u64;
        }
        sync();
        let secs = t.elapsed().as_secs_f64();
        rates.push(n as f64 / secs);
        frames += n;
        cpu += cpu_seconds() - c;
        wall += secs;
    }
    let after = loader.stats();
    let threads = cores_by_thread(&threads_before, &cpu_seconds_by_thread(), wall);
    let cpu_decoded = after.cpu_frames_decoded - before.cpu_frames_decoded;
    let cpu_ms = |us: u64| (us as f64 / cpu_decoded.max(1) as f64 / 10.0).round() / 100.0;
    let mem_used_mb = device.map_or(0, |d| {
        let info = d.info().unwrap();
        (info.total_memory - info.free_memory) >> 20
    });
    let (fps, spread) = median_spread(&rates);
    let decoded = after.packets_decoded - before.packets_decoded;
    let delivered = after.frames - before.frames;
    // Every decoder thread, NVDEC sessions and CPU decoders (on the CPU path only the latter).
    let (nvdec, cpu_decoders) = loader.decoder_threads();
    let decoder_threads = nvdec + cpu_decoders;
    println!(
        "{}",
        serde_json::json!({
            "bench": "clips", "video": run.name, "mix": run.paths.len() > 1 && !scenes(),
            "cameras": if scenes() { run.paths.len() } else { 1 },
            "access": run.access, "sessions": run.sessions,
            "decoder_threads": [nvdec, cpu_decoders],
            "gop_cache": run.gop_cache,
            "chroma": if replicate { "replicate" } else { "interpolate" }, "frames": frames, "seconds": wall, "fps": fps.round(),
            "spread": (spread * 1000.0).round() / 1000.0,
            "cpu_ms_per_1000_frames": (cpu / frames.max(1) as f64 * 1e6).round(),
            "decoded_per_returned": (decoded as f64 / delivered.max(1) as f64 * 1000.0).round() / 1000.0,
            "device_mem_used_mb": mem_used_mb,
            "gop_cache_hits": loader.dataset().gop_cache_stats().map(|s| s.hits),
            "bad_clips": after.bad_clips,
            "decoders_created": after.decoders_created - before.decoders_created,
            "decoders_destroyed": after.decoders_destroyed - before.decoders_destroyed,
            "decoder_reuses": after.decoder_reuses - before.decoder_reuses,
            "parsers_created": after.parsers_created - before.parsers_created,
            "display_delay": std::env::var("GM_NVDEC_DISPLAY_DELAY").ok(),
            "batches_per_job": std::env::var("GM_BENCH_BATCHES_PER_JOB").ok(),
            "jobs_in_flight": std::env::var("GM_BENCH_JOBS_IN_FLIGHT").ok(),
            "cpu_decoders": std::env::var("GM_BENCH_CPU_DECODERS").ok(),
            "placement": loader.placement(),
            "scan": std::env::var("GM_BENCH_SCAN").ok(),
            "cpu_parts": after.cpu_parts - before.cpu_parts,
            "cpu_parts_taken_back": after.cpu_parts_taken_back - before.cpu_parts_taken_back,
            "cpu_parts_dropped": after.cpu_parts_dropped - before.cpu_parts_dropped,
            "nvdec_parts": after.nvdec_parts - before.nvdec_parts,
            "nvdec_parts_taken_back": after.nvdec_parts_taken_back - before.nvdec_parts_taken_back,
            "nvdec_parts_dropped": after.nvdec_parts_dropped - before.nvdec_parts_dropped,
            "parked_jobs": after.parked_jobs - before.parked_jobs,
            "status_reads_per_frame": ((after.nvdec_status_reads - before.nvdec_status_reads) as f64 / delivered.max(1) as f64 * 100.0).round() / 100.0,
            "runs_per_1000_frames": ((after.runs - before.runs) as f64 * 1000.0 / delivered.max(1) as f64).round(),
            "session_us_per_frame": breakdown(&before, &after, decoder_threads, wall, delivered),
            "cores_by_thread": threads,
            "cpu_frames_decoded": cpu_decoded,
            "cpu_decode_ms_per_decoded_frame": cpu_ms(after.cpu_decode_us - before.cpu_decode_us),
            "cpu_stage_ms_per_decoded_frame": cpu_ms(after.cpu_stage_us - before.cpu_stage_us),
            "cpu_stage_wait_ms_per_decoded_frame": cpu_ms(after.cpu_stage_wait_us - before.cpu_stage_wait_us),
            "cpu_consume_ms_per_decoded_frame": cpu_ms(after.cpu_consume_us - before.cpu_consume_us),
        })
    );
}

/// Where the `sessions` decoder threads' time went between two snapshots, microseconds per
/// frame delivered: waiting for jobs (idle), planning batches (start), decoding (the session's
/// parts), and finishing batches. Only jobs count as busy: in a mixed loader a CPU decoder's
/// time on another job's part counts as idle.
fn breakdown(
    before: &ClipStats,
    after: &ClipStats,
    sessions: usize,
    wall: f64,
    frames: u64,
) -> serde_json::Value {
    let per = |us: f64| (us / frames.max(1) as f64 * 100.0).round() / 100.0;
    let t = after.session_time.since(&before.session_time);
    let busy = (after.decode_us - before.decode_us) as f64;
    let (start, finish) = (
        (after.start_us - before.start_us) as f64,
        (after.finish_us - before.finish_us) as f64,
    );
    let parts = [
        t.read_ns,
        t.parser_ns(),
        t.submit_ns,
        t.map_ns,
        t.consume_ns,
        t.retire_ns,
        t.drain_ns,
        t.decoded_wait_ns,
    ];
    let decode: f64 = parts.iter().map(|&ns| ns as f64 / 1e3).sum();
    serde_json::json!({
        "idle": per(sessions as f64 * wall * 1e6 - busy),
        "start": per(start), "finish": per(finish),
        "read": per(t.read_ns as f64 / 1e3), "parser": per(t.parser_ns() as f64 / 1e3),
        "submit": per(t.submit_ns as f64 / 1e3), "map": per(t.map_ns as f64 / 1e3),
        "consume": per(t.consume_ns as f64 / 1e3), "retire": per(t.retire_ns as f64 / 1e3),
        "drain": per(t.drain_ns as f64 / 1e3),
        "decoded_wait": per(t.decoded_wait_ns as f64 / 1e3),
        "other": per(busy - start - finish - decode),
    })
}

/// The episodes of a mixed dataset's random run (its first measured epoch), for the peers:
/// `[[path, start], ...]`, to `$GM_BENCH_EPISODES/random-mix.json`.
fn write_mix_episodes(files: &[PathBuf], copies: usize, batches: usize) {
    let Some(dir) = std::env::var_os("GM_BENCH_EPISODES") else {
        return;
    };
    let d = dataset(files, copies, 1, false);
    let order = Sampler::shuffled(7).indices(d.len(), 1);
    let clips: Vec<(String, usize)> = order
        .iter()
        .take(batches * 8)
        .map(|&e| {
            let clip = d.clip(e).unwrap();
            let (v, frames) = &clip.cameras[0];
            (d.path(*v).display().to_string(), frames[0])
        })
        .collect();
    let out = PathBuf::from(dir).join("random-mix.json");
    std::fs::write(&out, serde_json::to_string(&clips).unwrap()).unwrap();
}

/// The episodes of the random runs, for the peers: `[[start, ...], ...]` per batch.
fn write_episodes(path: &Path, name: &str, copies: usize, batches: usize) {
    let Some(dir) = std::env::var_os("GM_BENCH_EPISODES") else {
        return;
    };
    let d = dataset(&[path.to_path_buf()], copies, 1, false);
    let order = Sampler::shuffled(7).indices(d.len(), 1);
    let starts: Vec<usize> = order
        .iter()
        .take(batches * 8)
        .map(|&e| d.frames(e).unwrap()[0])
        .collect();
    let out = PathBuf::from(dir).join(format!("random-{name}.json"));
    std::fs::write(&out, serde_json::to_string(&starts).unwrap()).unwrap();
}

fn main() {
    let videos: Vec<PathBuf> = std::env::args().skip(1).map(PathBuf::from).collect();
    assert!(!videos.is_empty(), "usage: gm-loader--clips VIDEO...");
    // GM_BENCH_DEVICE=cpu: the loader without a GPU (CPU decoders and the kernels' twins).
    let device = match std::env::var("GM_BENCH_DEVICE").as_deref() {
        Ok("cpu") => None,
        _ => Some(Device::new(env_usize("GM_BENCH_DEVICE", 0)).expect("a CUDA device")),
    };
    // GM_BENCH_BLOCKING_SYNC=1: host threads sleep while they wait for the GPU.
    if let Some(d) = &device
        && env_usize("GM_BENCH_BLOCKING_SYNC", 0) != 0
    {
        d.set_blocking_sync(true).expect("blocking sync");
    }
    let copies = env_usize("GM_BENCH_COPIES", 16);
    let reps = env_usize("GM_BENCH_REPS", 3);
    let random_batches = env_usize("GM_BENCH_RANDOM_BATCHES", 100);
    let sessions: Vec<usize> = env_list("GM_BENCH_SESSIONS", "1,4,7")
        .iter()
        .filter_map(|s| s.parse().ok())
        .collect();
    let workloads = env_list("GM_BENCH_ACCESS", "stream,random");
    // GM_BENCH_GOP_CACHE: 0 (without the GOP packet cache), 1 (with), or both (default).
    let caches: Vec<usize> = env_list("GM_BENCH_GOP_CACHE", "0,1")
        .iter()
        .filter_map(|v| v.parse().ok())
        .collect();
    let sets: Vec<(String, Vec<PathBuf>)> = if scenes() {
        vec![("scene".to_string(), videos.clone())]
    } else if env_usize("GM_BENCH_MIX", 0) != 0 {
        write_mix_episodes(&videos, copies, random_batches);
        vec![("mix".to_string(), videos.clone())]
    } else {
        videos
            .iter()
            .map(|p| {
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                write_episodes(p, &name, copies, random_batches);
                (name, vec![p.clone()])
            })
            .collect()
    };
    for (name, paths) in &sets {
        for access in &workloads {
            for gop_cache in [false, true] {
                if !caches.contains(&usize::from(gop_cache)) {
                    continue;
                }
                let counts: Vec<usize> = if access == "stream" {
                    sessions.clone()
                } else {
                    vec![*sessions.iter().max().unwrap_or(&7)]
                };
                for &s in &counts {
                    // The cache only matters at full load.
                    if gop_cache && s != *counts.iter().max().unwrap_or(&7) {
                        continue;
                    }
                    let run = Run {
                        name: name.clone(),
                        paths: paths.clone(),
                        access: if access == "stream" {
                            "stream"
                        } else {
                            "random"
                        },
                        sessions: s,
                        gop_cache,
                        batches: (access != "stream").then_some(random_batches),
                    };
                    measure(device.as_ref(), &run, copies, reps);
                }
            }
        }
    }
}
