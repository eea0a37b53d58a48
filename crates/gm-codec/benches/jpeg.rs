//! Batched JPEG decoding throughput of gm-codec on the folders given as arguments (the bench
//! bundle carries an ImageNet-style set and a large-photo set): the NVJPG engines alone, the
//! CUDA backend alone, and both at once with the share given to the engines (`hw_load`)
//! swept, each with 1..N decoder instances on their own threads. Batches of 128; every
//! batch's ready event is waited on before its buffer is returned, as a consumer would.
//!
//! Prints one JSON object per measurement: median images/s over the repetitions, their
//! spread, host CPU time per image, and the device memory held (device free memory before and
//! after, so nvJPEG's own buffers count). Run on the GPU machine:
//! `gm-codec--jpeg DIR...` (`GM_BENCH_REPS`, `GM_BENCH_PASSES` adjust the length).
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

#[path = "../../../bench/support/mod.rs"]
mod support;
use support::{cpu_seconds, env_usize};

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use gm_codec::jpeg::{
    BackendChoice, ChromaUpsampling, CudaWorkers, DecoderOptions, EncodedImage, ImageDecoder, Split,
};
use gm_cuda::Device;

const BATCH: usize = 128;

struct Config {
    name: String,
    backend: BackendChoice,
    /// The engines' share, and whether it is fixed, taken at run time, or the CUDA share in one
    /// GPU-Huffman call.
    split: Split,
    instances: usize,
    cuda_threads: usize,
    chroma: ChromaUpsampling,
}

fn run(
    device: &Device,
    set: &str,
    files: &[(String, Vec<u8>)],
    c: &Config,
    reps: usize,
    passes: usize,
) {
    let free_before = device.info().unwrap().free_memory;
    let mut decoders: Vec<ImageDecoder> = (0..c.instances)
        .map(|_| {
            ImageDecoder::new(
                device,
                DecoderOptions {
                    backend: c.backend,
                    split: c.split,
                    cuda: CudaWorkers {
                        threads: c.cuda_threads,
                        ..CudaWorkers::default()
                    },
                    preallocate: Some((BATCH, 640, 480)),
                    chroma: c.chroma,
                    ..DecoderOptions::default()
                },
            )
            .unwrap()
        })
        .collect();
    let inputs: Vec<EncodedImage<'_>> = files
        .iter()
        .map(|(n, d)| EncodedImage { name: n, data: d })
        .collect();
    // Batches of 128 cycling over the set.
    let total_batches = (files.len() * passes).div_ceil(BATCH).max(c.instances * 2);
    let batch_at = |b: usize| -> Vec<EncodedImage<'_>> {
        (0..BATCH)
            .map(|k| inputs[(b * BATCH + k) % inputs.len()])
            .collect()
    };
    let stage = [
        AtomicUsize::new(0),
        AtomicUsize::new(0),
        AtomicUsize::new(0),
        AtomicUsize::new(0),
        AtomicUsize::new(0),
        AtomicUsize::new(0),
    ];
    let first_note = std::sync::Mutex::new(None::<String>);
    let one_pass = |decoders: &mut [ImageDecoder], batches: usize| -> (usize, usize) {
        let next = AtomicUsize::new(0);
        let images = AtomicUsize::new(0);
        let failed = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for d in decoders.iter_mut() {
                let (next, images, failed, batch_at, stage, first_note) =
                    (&next, &images, &failed, &batch_at, &stage, &first_note);
                s.spawn(move || {
                    loop {
                        let b = next.fetch_add(1, Ordering::Relaxed);
                        if b >= batches {
                            break;
                        }
                        let batch = d.decode(&batch_at(b)).unwrap();
                        let t = Instant::now();
                        batch.ready_event().synchronize().unwrap();
                        let tm = batch.timings;
                        for (k, v) in [
                            tm.plan_us,
                            tm.hardware_us,
                            tm.cuda_us,
                            tm.cpu_us,
                            tm.total_us,
                            t.elapsed().as_micros() as u64,
                        ]
                        .into_iter()
                        .enumerate()
                        {
                            stage[k].fetch_add(v as usize, Ordering::Relaxed);
                        }
                        if let Some(n) = batch.notes.first() {
                            first_note.lock().unwrap().get_or_insert_with(|| n.clone());
                        }
                        let counts = batch.counts();
                        images.fetch_add(batch.images.len() - counts.failed, Ordering::Relaxed);
                        failed.fetch_add(counts.failed, Ordering::Relaxed);
                    }
                });
            }
        });
        (images.into_inner(), failed.into_inner())
    };
    // Warm-up: every decoder sees the whole set once.
    one_pass(
        &mut decoders,
        (files.len().div_ceil(BATCH) * c.instances).max(c.instances),
    );
    let paths = {
        let b = decoders[0].decode(&batch_at(0)).unwrap();
        b.ready_event().synchronize().unwrap();
        b.counts()
    };
    for a in &stage {
        a.store(0, Ordering::Relaxed);
    }
    let mut rates = Vec::new();
    let mut cpu_per_image = Vec::new();
    let mut failed_total = 0;
    for _ in 0..reps {
        let cpu0 = cpu_seconds();
        let t = Instant::now();
        let (n, failed) = one_pass(&mut decoders, total_batches);
        let secs = t.elapsed().as_secs_f64();
        let cpu = cpu_seconds() - cpu0;
        rates.push(n as f64 / secs);
        cpu_per_image.push(cpu / n.max(1) as f64 * 1e6);
        failed_total += failed;
    }
    let free_after = device.info().unwrap().free_memory;
    let measured_batches = (total_batches * reps) as f64;
    let per_batch: Vec<f64> = stage
        .iter()
        .map(|a| a.load(Ordering::Relaxed) as f64 / measured_batches / 1000.0)
        .collect();
    let mut sorted = rates.clone();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    let pool_bytes: usize = decoders.iter().map(|d| d.pool_stats().bytes_held).sum();
    println!(
        "{}",
        serde_json::json!({
            "bench": "jpeg_decode", "impl": "gm", "set": set, "config": c.name,
            "backend": format!("{:?}", c.backend), "hw_load": c.split.hw_load(),
            "instances": c.instances, "cuda_threads": c.cuda_threads, "batch": BATCH,
            "chroma": if c.chroma == ChromaUpsampling::Replicate { "replicate" } else { "smooth" },
            "balanced": c.split.is_balanced(), "cuda_batched": c.split.is_gpu_huffman(),
            "images_per_s": median, "min": sorted[0], "max": sorted[sorted.len() - 1],
            "reps": reps, "images_per_rep": total_batches * BATCH, "failed": failed_total,
            "cpu_us_per_image": cpu_per_image.iter().sum::<f64>() / cpu_per_image.len() as f64,
            "gpu_mem_held_mb": free_before.saturating_sub(free_after) as f64 / 1e6,
            "output_pool_mb": pool_bytes as f64 / 1e6,
            "ms_per_batch": {"plan": per_batch[0], "hardware_call": per_batch[1], "cuda": per_batch[2], "cpu": per_batch[3], "decode_call": per_batch[4], "wait_ready": per_batch[5]},
            "note": first_note.lock().unwrap().clone(),
            "paths": format!("hw {} cuda {} cpu {} failed {}", paths.hardware, paths.cuda, paths.cpu, paths.failed),
        })
    );
}

/// The configurations measured on every folder.
fn configs() -> Vec<Config> {
    let mut configs = Vec::new();
    for inst in [1, 2, 4] {
        configs.push(Config {
            name: format!("hw x{inst}"),
            backend: BackendChoice::Hardware,
            split: Split::Balanced { hw_load: 1.0 },
            instances: inst,
            cuda_threads: 1,
            chroma: ChromaUpsampling::Smooth,
        });
    }
    for (inst, threads) in [(1, 4), (4, 4)] {
        configs.push(Config {
            name: format!("cuda x{inst} t{threads}"),
            backend: BackendChoice::Cuda,
            split: Split::Balanced { hw_load: 0.0 },
            instances: inst,
            cuda_threads: threads,
            chroma: ChromaUpsampling::Smooth,
        });
    }
    for (inst, threads) in [(2, 2), (4, 2), (4, 4)] {
        for load in [0.9, 0.75] {
            configs.push(Config {
                name: format!("auto x{inst} t{threads} hw_load {load}"),
                backend: BackendChoice::Auto,
                split: Split::Balanced { hw_load: load },
                instances: inst,
                cuda_threads: threads,
                chroma: ChromaUpsampling::Smooth,
            });
        }
    }
    // The CUDA share with its Huffman decoding on the GPU, batched: alone, and beside the
    // engines.
    for (name, backend, load, inst) in [
        ("gpu-huffman x1", BackendChoice::Cuda, 0.0, 1),
        ("gpu-huffman x2", BackendChoice::Cuda, 0.0, 2),
        (
            "gpu-huffman auto x2 hw_load 0.7",
            BackendChoice::Auto,
            0.7,
            2,
        ),
        (
            "gpu-huffman auto x4 hw_load 0.7",
            BackendChoice::Auto,
            0.7,
            4,
        ),
    ] {
        configs.push(Config {
            name: name.into(),
            backend,
            split: Split::GpuHuffman { hw_load: load },
            instances: inst,
            cuda_threads: 1,
            chroma: ChromaUpsampling::Smooth,
        });
    }
    // The fixed split of the same best configuration, for the balanced split's gain.
    configs.push(Config {
        name: "fixed auto x4 t4 hw_load 0.75".into(),
        backend: BackendChoice::Auto,
        split: Split::Fixed { hw_load: 0.75 },
        instances: 4,
        cuda_threads: 4,
        chroma: ChromaUpsampling::Smooth,
    });
    // The price of our chroma upsampling: the same decoders with nvJPEG's own conversion
    // (the peers' output), on the engines alone and on the usual best configuration.
    for (name, backend, load, inst, threads) in [
        ("replicate hw x2", BackendChoice::Hardware, 1.0, 2, 1),
        (
            "replicate auto x4 t2 hw_load 0.9",
            BackendChoice::Auto,
            0.9,
            4,
            2,
        ),
    ] {
        configs.push(Config {
            name: name.into(),
            backend,
            split: Split::Balanced { hw_load: load },
            instances: inst,
            cuda_threads: threads,
            chroma: ChromaUpsampling::Replicate,
        });
    }
    configs
}

fn main() {
    let dirs: Vec<PathBuf> = std::env::args().skip(1).map(PathBuf::from).collect();
    assert!(!dirs.is_empty(), "usage: jpeg DIR...");
    let device = Device::new(0).expect("a CUDA device");
    let reps = env_usize("GM_BENCH_REPS", 3);
    let only = std::env::var("GM_BENCH_ONLY").ok();
    for dir in &dirs {
        let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        names.sort();
        let files: Vec<(String, Vec<u8>)> = names
            .iter()
            .map(|p| (p.display().to_string(), std::fs::read(p).unwrap()))
            .collect();
        let set = dir.file_name().unwrap().to_string_lossy().into_owned();
        let large = set == "large";
        let passes = env_usize("GM_BENCH_PASSES", if large { 300 } else { 25 });
        for c in configs() {
            if only.as_deref().is_some_and(|o| !c.name.starts_with(o)) {
                continue;
            }
            run(&device, &set, &files, &c, reps, passes);
        }
    }
}
