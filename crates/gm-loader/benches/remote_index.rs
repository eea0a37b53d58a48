//! Indexing a directory of short videos from object storage (issue 22): `gm-loader--remote_index
//! URL [LOCAL_DIR]` opens a `VideoDataset` over the bucket prefix `URL` (one listing, then each
//! video indexed by ranged GETs of only what its index needs, in parallel) and prints one JSON
//! object: videos, episodes, seconds, requests and bytes per video (from gm-storage's
//! counters), and, with `LOCAL_DIR` (the same files on disk), the files' bytes per video, to
//! say what share of each file the index read. `GM_BENCH_STORAGE_CONCURRENCY` sets the
//! requests in flight (gm-storage's default, 64); `GM_BENCH_SCAN` (`none`, `keyframes`, the
//! default, or `full`) how much of each bitstream the index reads. No GPU: indexing decodes
//! nothing.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::time::Instant;

use gm_demux::{BitstreamScan, IndexOptions};
use gm_loader::VideoDataset;
use gm_storage::{Storage, StorageOptions};

fn main() {
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .expect("usage: gm-loader--remote_index URL [LOCAL_DIR]");
    let local = args.next().map(PathBuf::from);
    let mut options = StorageOptions::default();
    if let Ok(n) = std::env::var("GM_BENCH_STORAGE_CONCURRENCY") {
        options.concurrency = n.parse().expect("GM_BENCH_STORAGE_CONCURRENCY: a count");
    }
    let storage = Storage::new(options);
    let scan = std::env::var("GM_BENCH_SCAN").unwrap_or_else(|_| "keyframes".into());
    let index = IndexOptions {
        scan: match scan.as_str() {
            "none" => BitstreamScan::None,
            "full" => BitstreamScan::Full,
            _ => BitstreamScan::Keyframes,
        },
        ..IndexOptions::default()
    };
    let t = Instant::now();
    let data = VideoDataset::builder()
        .storage(&storage)
        .directory(&url)
        .frames(8, 8)
        .index_options(index)
        .open()
        .unwrap();
    let secs = t.elapsed().as_secs_f64();
    let s = storage.stats();
    let videos = data.scenes().max(1);
    let file_bytes: u64 = local.as_ref().map_or(0, |dir| {
        std::fs::read_dir(dir)
            .unwrap()
            .filter_map(|e| e.ok()?.metadata().ok())
            .map(|m| m.len())
            .sum()
    });
    println!(
        "{{\"bench\":\"remote_index\",\"url\":\"{url}\",\"scan\":\"{scan}\",\"videos\":{},\"skipped\":{},\"episodes\":{},\"seconds\":{secs:.3},\"videos_per_s\":{:.0},\"requests\":{},\"requests_per_video\":{:.2},\"bytes\":{},\"bytes_per_video\":{:.0},\"file_bytes_per_video\":{:.0},\"retries\":{},\"failures\":{},\"peak_in_flight\":{}}}",
        data.scenes(),
        data.skipped().len(),
        data.len(),
        videos as f64 / secs,
        s.requests,
        s.requests as f64 / videos as f64,
        s.bytes,
        s.bytes as f64 / videos as f64,
        file_bytes as f64 / videos as f64,
        s.retries,
        s.failures,
        s.peak_in_flight,
    );
}
