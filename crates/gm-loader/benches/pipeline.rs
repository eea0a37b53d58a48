//! Throughput of the ImageNet-style training pipeline (decode, random-resized crop 224, flip,
//! ImageNet normalize, f16 NCHW, batches of 256) over a folder of JPEGs, and a soak run that
//! watches memory. Run on the GPU machine: `gm-loader--pipeline DIR` with the files in page
//! cache. Each file is listed `GM_BENCH_REPEAT` times (default 50) so that an epoch is long
//! enough to time; `GM_BENCH_CONFIGS` (default "4x1,4x2,4x3,6x4") sweeps host workers x
//! GPU stages; `GM_BENCH_HW_LOAD` and `GM_BENCH_CUDA_THREADS` set the decoder's engine share and
//! CUDA-backend threads, `GM_BENCH_CHROMA` (smooth or replicate) its chroma upsampling;
//! `GM_BENCH_BALANCED` (0 or 1) the run-time split between the engines and the CUDA backend,
//! `GM_BENCH_BLOCKING_SYNC` (0 or 1) whether waiting host threads sleep, `GM_BENCH_CUDA_BATCHED`
//! (0 or 1) the CUDA share's Huffman decoding on the GPU, `GM_BENCH_GPU_HUFFMAN` the CUDA
//! backend's GPU-Huffman size threshold, `GM_BENCH_REGION` (0 or 1) whether the CUDA backend
//! decodes only the crop's region;
//! `GM_BENCH_SPLIT_KEY=position` gives the engines the first images of each batch instead of
//! those drawn by name;
//! `GM_BENCH_SHARDS` (a brace pattern or a comma-separated list of WebDataset shards, paths or
//! URLs with their `.idx`) reads the images from those shards, listed `GM_BENCH_REPEAT` times,
//! instead of DIR's files, with `GM_BENCH_STORAGE_CONCURRENCY` requests in flight for remote
//! ones (gm-storage's default otherwise, 64); with `GM_BENCH_STREAM=1` the shards are read as
//! streams (`Loader::streaming`: `GM_BENCH_STREAMS` streams, default 4, shuffle buffers of
//! `GM_BENCH_SHUFFLE` samples, default 1000, drawing from `GM_BENCH_SHUFFLE_INITIAL`, 100); `GM_BENCH_CORES` (`auto` or a number) leaves workers and decoder to the loader's core
//! budget (the host's, or that number of cores) instead;
//! `GM_BENCH_SOAK` (default 0) is the number of images of the soak run; `GM_BENCH_DEVICE` picks
//! the GPU (one process per GPU, as under torchrun, for the scaling figure); `GM_BENCH_CACHE`
//! (a shorter side, default 0 = off) adds a run from the device cache.
//!
//! Prints one JSON object per measurement: median images/s of `GM_BENCH_REPS` epochs after a
//! warm-up epoch, their spread, the consumer's wait per batch, host CPU cores used, and the
//! device memory the loader holds; then `back_to_back`, the images/s of `GM_BENCH_REPS` more
//! epochs run through `Loader::epochs` as a training loop runs them (each epoch started
//! behind the last batches of the one before, where a per-epoch figure pays every epoch's
//! start); and for the soak, a memory sample every 100,000 images.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

#[path = "../../../bench/support/mod.rs"]
mod support;
use support::{cpu_seconds, env_flag, env_usize, rss_kb};

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use gm_codec::jpeg::{DecoderOptions, Split, SplitKey};
use gm_cuda::{DType, Device, Stream};
use gm_loader::shards::{StreamOptions, WebDatasetStream};
use gm_loader::{CorePlan, Dataset, DeviceCache, ListFile, Loader, Sampler, WebDataset};
use gm_transforms::{
    Compose, ErasingValue, HorizontalFlip, Layout, Normalize, RandomErasing, RandomResizedCrop,
    ToDtype, TrivialAugmentWide,
};

/// `GM_BENCH_RECIPE`: "plain" (default) or "timm", timm's ImageNet training recipe:
/// TrivialAugmentWide after the crop and flip, RandomErasing 0.25 after normalize.
fn timm_recipe() -> bool {
    std::env::var("GM_BENCH_RECIPE").is_ok_and(|r| r == "timm")
}

fn chain() -> Compose {
    // `GM_BENCH_ANTIALIAS=1`: torchvision's default resize filter (antialias=True), which
    // gm's Python transforms use; the Rust default is bilinear.
    let c = if std::env::var("GM_BENCH_ANTIALIAS").is_ok_and(|v| v == "1") {
        Compose::new().then(gm_transforms::Filter(gm_transforms::Interp::Antialias))
    } else {
        Compose::new()
    };
    let c = c
        .then(RandomResizedCrop::new(224, 224))
        .then(HorizontalFlip(0.5));
    let c = if timm_recipe() {
        c.then(TrivialAugmentWide::new())
    } else {
        c
    };
    c.then(Normalize::IMAGENET)
        .then(ToDtype(DType::F16, Layout::Chw))
}

/// The recipe's RandomErasing (None for the plain pipeline).
fn erasing() -> Option<RandomErasing> {
    timm_recipe().then(|| {
        RandomErasing::new(0.25, (0.02, 0.33), (0.3, 3.3), ErasingValue::Number(0.0)).unwrap()
    })
}

fn list_path() -> PathBuf {
    std::env::temp_dir().join(format!("gm-loader-bench-{}.txt", std::process::id()))
}

fn list(dir: &PathBuf, repeat: usize) -> PathBuf {
    // The list lives in the temp directory: its paths must not be relative to ours.
    let dir = std::fs::canonicalize(dir).expect("the image directory");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "jpg" || e == "jpeg"))
        .collect();
    files.sort();
    let mut text = String::new();
    for r in 0..repeat {
        for (i, f) in files.iter().enumerate() {
            text.push_str(&format!("{} {}\n", f.display(), (i + r) % 1000));
        }
    }
    let path = list_path();
    std::fs::write(&path, text).unwrap();
    path
}

/// The loader's settings with the `GM_BENCH_*` overrides: read once, used for every loader
/// and printed with every measurement.
struct Settings {
    decoder: DecoderOptions,
    blocking_sync: bool,
    region_decode: bool,
}

impl Settings {
    fn from_env() -> Settings {
        let mut decoder = DecoderOptions::for_loader();
        let hw_load = std::env::var("GM_BENCH_HW_LOAD")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(decoder.split.hw_load());
        decoder.cuda.threads = env_usize("GM_BENCH_CUDA_THREADS", decoder.cuda.threads);
        let balanced = env_flag("GM_BENCH_BALANCED", decoder.split.is_balanced());
        let cuda_batched = env_flag("GM_BENCH_CUDA_BATCHED", decoder.split.is_gpu_huffman());
        // The batched GPU-Huffman call takes the CUDA share whatever GM_BENCH_BALANCED says.
        decoder.split = if cuda_batched {
            Split::GpuHuffman { hw_load }
        } else if balanced {
            Split::Balanced { hw_load }
        } else {
            Split::Fixed { hw_load }
        };
        decoder.cuda.gpu_huffman_pixels = env_usize(
            "GM_BENCH_GPU_HUFFMAN",
            decoder.cuda.gpu_huffman_pixels as usize,
        ) as u64;
        if std::env::var("GM_BENCH_SPLIT_KEY").is_ok_and(|v| v == "position") {
            decoder.split_key = SplitKey::Position;
        }
        if let Some(c) = std::env::var("GM_BENCH_CHROMA")
            .ok()
            .and_then(|v| v.parse().ok())
        {
            decoder.chroma = c;
        }
        Settings {
            decoder,
            blocking_sync: env_flag("GM_BENCH_BLOCKING_SYNC", gm_loader::LOADER_BLOCKING_SYNC),
            region_decode: env_flag("GM_BENCH_REGION", gm_loader::LOADER_REGION_DECODE),
        }
    }
}

/// Where the images come from: an indexed dataset, or shards read as streams.
enum Source {
    Indexed(Arc<dyn Dataset>),
    Stream(WebDatasetStream),
}

/// The images: `GM_BENCH_SHARDS` (a brace pattern or a comma-separated list of WebDataset
/// shards, paths or URLs, read through their `.idx`, or with `GM_BENCH_STREAM=1` as streams:
/// `GM_BENCH_STREAMS` (4) streams with shuffle buffers of `GM_BENCH_SHUFFLE` (1000) samples
/// (drawing from `GM_BENCH_SHUFFLE_INITIAL`, 100);
/// listed `GM_BENCH_REPEAT` times), or else the folder's JPEGs in a list file. Returns the
/// source and what it is, for the report.
fn dataset(dir: &PathBuf, repeat: usize) -> (Source, String) {
    let Ok(spec) = std::env::var("GM_BENCH_SHARDS") else {
        let list = list(dir, repeat);
        let data = Arc::new(ListFile::new(&list).unwrap());
        return (Source::Indexed(data), "folder".into());
    };
    let shards: Vec<String> = spec
        .split(',')
        .flat_map(|p| gm_loader::shards::expand(p.trim()).unwrap())
        .collect();
    let streamed = env_flag("GM_BENCH_STREAM", false);
    let kind = match (shards[0].split_once("://"), streamed) {
        (Some((scheme, _)), false) => format!("shards over {scheme}"),
        (Some((scheme, _)), true) => format!("shards streamed over {scheme}"),
        (None, false) => "shards".into(),
        (None, true) => "shards streamed".into(),
    };
    let all: Vec<String> = (0..repeat).flat_map(|_| shards.iter().cloned()).collect();
    // Remote shards: requests in flight (gm-storage's `concurrency`, default 64).
    let storage = std::env::var("GM_BENCH_STORAGE_CONCURRENCY").map_or_else(
        |_| gm_storage::Storage::global(),
        |n| {
            let n = n.parse().expect("GM_BENCH_STORAGE_CONCURRENCY: a count");
            let options = gm_storage::StorageOptions {
                concurrency: n,
                ..Default::default()
            };
            gm_storage::Storage::new(options)
        },
    );
    if streamed {
        let options = StreamOptions {
            batch_size: 256,
            streams: env_usize("GM_BENCH_STREAMS", 4),
            shuffle_buffer: env_usize("GM_BENCH_SHUFFLE", 1000),
            shuffle_initial: env_usize("GM_BENCH_SHUFFLE_INITIAL", 100),
            ..StreamOptions::default()
        };
        let stream = WebDatasetStream::from_shards(all, options, storage).unwrap();
        return (Source::Stream(stream), kind);
    }
    let data = WebDataset::from_shards(all)
        .storage(storage)
        .open()
        .unwrap();
    (Source::Indexed(Arc::new(data)), kind)
}

fn build(
    device: &Device,
    source: &Source,
    set: &Settings,
    workers: usize,
    stages: usize,
) -> Loader {
    let mut b = match source {
        Source::Indexed(data) => Loader::builder_shared(data.clone())
            .sampler(Sampler::shuffled(0))
            .batch_size(256)
            .drop_last(true),
        // Batch size and order are the stream's options.
        Source::Stream(stream) => Loader::streaming(stream.clone()),
    };
    b = match cores() {
        // The loader's own choice from its core budget.
        Some(Some(n)) => b.cores(n),
        Some(None) => b,
        None => b.decoder(set.decoder.clone()).workers(workers),
    };
    let b = b
        .device(device)
        .blocking_sync(Some(set.blocking_sync))
        .region_decode(set.region_decode)
        .gpu_stages(stages)
        .prefetch(3)
        .transforms(chain());
    match erasing() {
        Some(e) => b.random_erasing(e),
        None => b,
    }
    .build()
    .unwrap()
}

/// `GM_BENCH_CORES`: unset, the settings above; `auto`, the loader's defaults (its core
/// budget from the host and the launcher's variables); a number, that core budget.
fn cores() -> Option<Option<usize>> {
    let v = std::env::var("GM_BENCH_CORES").ok()?;
    Some(v.trim().parse().ok())
}

/// One epoch's measurements: images, seconds, wait µs per batch, CPU seconds, and its
/// timeline in ms: until the first batch, the median gap between batches, after the last.
type Run = (usize, f64, f64, f64, [f64; 3]);

/// A batch taken as a training step takes it: waited for on the consumer's stream, marked
/// used there, dropped. Its images.
fn take(mut b: gm_loader::Batch, consumer: &Stream) -> usize {
    b.wait_on(consumer).unwrap();
    b.record_stream(consumer).unwrap();
    b.len()
}

/// One epoch as a training loop consumes it: wait for each batch on the consumer's stream,
/// mark it used there, drop it.
fn epoch(l: &mut Loader, e: u64, consumer: &Stream) -> Run {
    let before = l.stats();
    let (t, c) = (Instant::now(), cpu_seconds());
    let mut n = 0;
    let mut arrivals = Vec::new();
    for b in l.epoch(e) {
        arrivals.push(t.elapsed().as_secs_f64() * 1e3);
        n += take(b.unwrap(), consumer);
    }
    consumer.synchronize().unwrap();
    let secs = t.elapsed().as_secs_f64();
    assert!(n > 0, "no image loaded: {:?}", l.stats().first_errors);
    let after = l.stats();
    let batches = (after.batches - before.batches).max(1) as f64;
    let wait = (after.wait_us - before.wait_us) as f64 / batches;
    let mut gaps: Vec<f64> = arrivals.windows(2).map(|w| w[1] - w[0]).collect();
    gaps.sort_by(f64::total_cmp);
    let timeline = [
        arrivals.first().copied().unwrap_or(0.0),
        gaps.get(gaps.len() / 2).copied().unwrap_or(0.0),
        secs * 1e3 - arrivals.last().copied().unwrap_or(0.0),
    ];
    (n, secs, wait, cpu_seconds() - c, timeline)
}

/// Epochs `epochs` back to back through [`Loader::epochs`], as a training loop runs them (the
/// next epoch started behind the last batches of the running one): images/s over them all.
fn back_to_back(l: &mut Loader, epochs: std::ops::Range<u64>, consumer: &Stream) -> f64 {
    let t = Instant::now();
    let mut n = 0;
    for (_, b) in l.epochs(epochs) {
        n += take(b.unwrap(), consumer);
    }
    consumer.synchronize().unwrap();
    n as f64 / t.elapsed().as_secs_f64()
}

fn main() {
    let dir = PathBuf::from(
        std::env::args()
            .nth(1)
            .expect("usage: gm-loader--pipeline DIR"),
    );
    let device = Device::new(env_usize("GM_BENCH_DEVICE", 0)).unwrap();
    let set = Settings::from_env();
    // What the loader runs with when its core budget decides (printed as its settings).
    let plan = cores().map(|c| c.map_or_else(CorePlan::from_env, CorePlan::for_cores_here));
    let decoder = plan.as_ref().map_or(&set.decoder, |p| &p.decoder);
    let consumer = Stream::new(&device).unwrap();
    let repeat = env_usize("GM_BENCH_REPEAT", 50);
    let reps = env_usize("GM_BENCH_REPS", 3);
    let (data, source) = dataset(&dir, repeat);
    let configs: Vec<(usize, usize)> = std::env::var("GM_BENCH_CONFIGS")
        .unwrap_or_else(|_| "4x1,4x2,4x3,6x4".into())
        .split(',')
        .filter_map(|c| {
            let (w, s) = c.trim().split_once('x')?;
            Some((w.parse().ok()?, s.parse().ok()?))
        })
        .collect();
    for &(w, stages) in &configs {
        let w = plan.as_ref().map_or(w, |p| p.workers);
        let free0 = device.info().unwrap().free_memory;
        let mut l = build(&device, &data, &set, w, stages);
        epoch(&mut l, 0, &consumer);
        let mut runs: Vec<Run> = (1..=reps)
            .map(|e| epoch(&mut l, e as u64, &consumer))
            .collect();
        runs.sort_by(|a, b| (a.0 as f64 / a.1).total_cmp(&(b.0 as f64 / b.1)));
        let rate = |r: &Run| r.0 as f64 / r.1;
        let med = &runs[runs.len() / 2];
        let held = free0.saturating_sub(device.info().unwrap().free_memory);
        let s = l.stats();
        let b2b_rate = back_to_back(&mut l, reps as u64 + 1..2 * reps as u64 + 1, &consumer);
        let per_batch = |us: u64| us as f64 / 1e3 / s.batches.max(1) as f64;
        println!(
            "{{\"bench\":\"pipeline\",\"source\":\"{source}\",\"core_budget\":{},\"recipe\":\"{}\",\"device\":{},\"workers\":{w},\"stages\":{stages},\"hw_load\":{},\"cuda_threads\":{},\"batch\":256,\"images_per_epoch\":{},\"img_per_s\":{:.0},\"min\":{:.0},\"max\":{:.0},\"wait_us_per_batch\":{:.0},\"cpu_cores\":{:.2},\"cpu_us_per_img\":{:.1},\"device_mb_held\":{:.0},\"hardware\":{},\"cuda\":{},\"cpu\":{},\"bad\":{},\"chroma\":\"{}\",\"balanced\":{},\"blocking_sync\":{},\"cuda_batched\":{},\"max_connections\":\"{}\",\"gpu_huffman_pixels\":{},\"region_decode\":{},\"split_key\":\"{:?}\",\"regions\":{},\"ms_per_batch\":{{\"read\":{:.2},\"decode\":{:.2},\"decode_plan\":{:.2},\"hardware\":{:.2},\"cuda\":{:.2},\"transform\":{:.2}}},\"timeline_ms\":{{\"first_batch\":{:.1},\"median_gap\":{:.2},\"after_last\":{:.1}}},\"back_to_back\":{{\"epochs\":{},\"img_per_s\":{:.0}}}}}",
            plan.as_ref()
                .map_or("null".to_string(), |p| p.cores.to_string()),
            if timm_recipe() { "timm" } else { "plain" },
            device.ordinal(),
            decoder.split.hw_load(),
            decoder.cuda.threads,
            med.0,
            rate(med),
            rate(&runs[0]),
            rate(&runs[runs.len() - 1]),
            med.2,
            med.3 / med.1,
            med.3 * 1e6 / med.0 as f64,
            held as f64 / 1e6,
            s.paths.hardware,
            s.paths.cuda,
            s.paths.cpu,
            s.bad,
            format!("{:?}", decoder.chroma).to_lowercase(),
            decoder.split.is_balanced(),
            set.blocking_sync,
            decoder.split.is_gpu_huffman(),
            gm_cuda::max_connections().unwrap_or_default(),
            decoder.cuda.gpu_huffman_pixels,
            set.region_decode,
            decoder.split_key,
            s.regions,
            per_batch(s.read_us),
            per_batch(s.decode_us),
            per_batch(s.decode_plan_us),
            per_batch(s.decode_hardware_us),
            per_batch(s.decode_cuda_us),
            per_batch(s.transform_us),
            med.4[0],
            med.4[1],
            med.4[2],
            reps,
            b2b_rate,
        );
    }
    // The device cache: filled once (timed), then epochs of augmentation only.
    let cache_side = env_usize("GM_BENCH_CACHE", 0);
    if let (true, Source::Indexed(data)) = (cache_side > 0, &data) {
        let t = Instant::now();
        let mut l = Loader::builder_shared(data.clone())
            .device(&device)
            .sampler(Sampler::shuffled(0))
            .batch_size(256)
            .drop_last(true)
            .prefetch(3)
            .transforms(chain())
            .device_cache(DeviceCache::shorter_side(cache_side as u32))
            .build()
            .unwrap();
        let fill = t.elapsed().as_secs_f64();
        epoch(&mut l, 0, &consumer);
        let mut runs: Vec<Run> = (1..=reps)
            .map(|e| epoch(&mut l, e as u64, &consumer))
            .collect();
        runs.sort_by(|a, b| (a.0 as f64 / a.1).total_cmp(&(b.0 as f64 / b.1)));
        let med = &runs[runs.len() / 2];
        println!(
            "{{\"bench\":\"pipeline-cached\",\"shorter_side\":{cache_side},\"cache_mb\":{:.0},\"fill_s\":{fill:.2},\"img_per_s\":{:.0},\"wait_us_per_batch\":{:.0},\"cpu_cores\":{:.2},\"transform_us_per_img\":{:.2}}}",
            l.cache_bytes().unwrap_or(0) as f64 / 1e6,
            med.0 as f64 / med.1,
            med.2,
            med.3 / med.1,
            l.stats().transform_us as f64 / l.stats().samples.max(1) as f64
        );
    }
    let soak = env_usize("GM_BENCH_SOAK", 0);
    if soak > 0 {
        let (w, stages) = configs.last().copied().unwrap_or((4, 2));
        let free0 = device.info().unwrap().free_memory;
        let mut l = build(&device, &data, &set, w, stages);
        let (mut done, mut next_mark, mut e) = (0usize, 0usize, 0u64);
        let t = Instant::now();
        while done < soak {
            let (n, ..) = epoch(&mut l, e, &consumer);
            done += n;
            e += 1;
            if done >= next_mark {
                let bp = l.batch_pool_stats().unwrap();
                let dp = l.decoder_pool_stats().unwrap();
                println!(
                    "{{\"bench\":\"soak\",\"images\":{done},\"seconds\":{:.1},\"rss_mb\":{:.1},\"device_mb_held\":{:.1},\"batch_pool_mb\":{:.1},\"batch_allocs\":{},\"decoder_pool_mb\":{:.1},\"decoder_allocs\":{}}}",
                    t.elapsed().as_secs_f64(),
                    rss_kb() as f64 / 1024.0,
                    free0.saturating_sub(device.info().unwrap().free_memory) as f64 / 1e6,
                    bp.bytes_held as f64 / 1e6,
                    bp.allocations,
                    dp.bytes_held as f64 / 1e6,
                    dp.allocations
                );
                next_mark += 100_000;
            }
        }
    }
    let _ = std::fs::remove_file(list_path());
}
