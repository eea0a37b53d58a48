//! `gm demo`: the image pipeline on the bundled sample images, with a report and a contact
//! sheet of the first augmented batch.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Args;
use gm_cuda::DType;
use gm_loader::{BadSamplePolicy, Dataset, DeviceCache, Loader, Sampler, Stats};
use gm_transforms::{HorizontalFlip, Layout, Normalize, RandomResizedCrop, ToDtype};
use indicatif::{ProgressBar, ProgressStyle};

/// Arguments of `gm demo`.
#[derive(Args)]
pub struct DemoArgs {
    /// An ImageFolder-style directory or bucket prefix (`s3://bucket/train/`, `gs://`,
    /// `az://`; default: the bundled `assets/demo/images`).
    #[arg(long)]
    images: Option<PathBuf>,
    /// Passes over the images, for a throughput figure.
    #[arg(long, default_value_t = 100)]
    epochs: u64,
    /// Images per batch.
    #[arg(long, default_value_t = 16)]
    batch: usize,
    /// Output side (random-resized crop to size x size).
    #[arg(long, default_value_t = 224)]
    size: u32,
    /// Host worker threads.
    #[arg(long, default_value_t = 4)]
    workers: usize,
    /// The contact sheet of the first batch.
    #[arg(long, default_value = "gm-demo.png")]
    out: PathBuf,
    /// Run on the CPU even if there is a GPU.
    #[arg(long)]
    cpu: bool,
    /// Decode every image once into a GPU cache at this shorter side, then serve every epoch
    /// from it.
    #[arg(long, value_name = "SIDE")]
    cache: Option<u32>,
    /// Run the video pipeline instead: episodes of the bundled videos (or --videos DIR) on
    /// NVDEC, or on the CPU without a GPU; the contact sheet has a row per episode.
    #[arg(long)]
    video: bool,
    /// A directory or bucket prefix of videos for --video (default: the bundled
    /// `assets/demo/videos`).
    #[arg(long, value_name = "DIR")]
    videos: Option<PathBuf>,
    #[command(flatten)]
    storage: crate::source::StorageArgs,
}

fn default_images() -> Result<PathBuf> {
    let candidates = [
        std::env::var_os("GM_DEMO_IMAGES").map(PathBuf::from),
        Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/demo/images")),
        Some(PathBuf::from("assets/demo/images")),
    ];
    candidates
        .into_iter()
        .flatten()
        .find(|p| p.is_dir())
        .context("the demo images (assets/demo/images) are not here: pass --images DIR")
}

/// Runs `gm demo`.
pub fn run(args: &DemoArgs) -> Result<()> {
    if args.batch == 0 || args.epochs == 0 {
        bail!("--batch and --epochs must be at least 1");
    }
    if args.video || args.videos.is_some() {
        let storage = args.storage.storage()?;
        return crate::demo_video::run(args.videos.as_deref(), args.epochs, &args.out, &storage);
    }
    let dir = match &args.images {
        Some(d) => d.clone(),
        None => default_images()?,
    };
    let dir = dir.canonicalize().unwrap_or(dir);
    let folder = crate::bars::list_images(&dir, &args.storage.storage()?)?;
    let (n, classes) = (folder.len(), folder.classes().join(", "));
    let names: Vec<String> = (0..n)
        .map(|i| {
            let p = folder.path(i);
            p.strip_prefix(&dir).unwrap_or(p).display().to_string()
        })
        .collect();
    let builder = Loader::builder(folder)
        .sampler(Sampler::shuffled(0))
        .batch_size(args.batch)
        .workers(args.workers)
        .prefetch(3)
        .bad_samples(BadSamplePolicy::Skip)
        .transform(RandomResizedCrop::new(args.size, args.size))
        .transform(HorizontalFlip(0.5))
        .transform(Normalize::IMAGENET)
        .transform(ToDtype(DType::F16, Layout::Chw));
    let builder = if args.cpu { builder.cpu() } else { builder };
    let builder = match args.cache {
        Some(side) => builder.device_cache(DeviceCache::shorter_side(side)),
        None => builder,
    };
    let mut loader = builder.build()?;
    println!(
        "gm demo: the image pipeline (decode, random-resized crop {0}x{0}, flip, ImageNet normalize, f16 NCHW)",
        args.size
    );
    println!("  images:  {n} in {} ({classes})", dir.display());
    println!("  runs on: {}", loader.placement());
    if let (Some(bytes), Some(n)) = (loader.cache_bytes(), loader.cached_images()) {
        println!(
            "  device cache: {n} images at shorter side {}, {:.1} MB",
            args.cache.unwrap_or_default(),
            bytes as f64 / 1e6
        );
    }
    if !loader.on_gpu() {
        println!(
            "  (no GPU: CPU decoding and the CPU twins of the GPU kernels, for the same result)"
        );
    }

    let per_epoch = loader.batches_per_epoch() as u64;
    let bar = ProgressBar::new(per_epoch * args.epochs);
    bar.set_style(
        ProgressStyle::with_template("  {bar:40} {pos}/{len} batches, {per_sec}, {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let t0 = Instant::now();
    let mut first_done = None;
    for epoch in 0..args.epochs {
        for batch in loader.epoch(epoch) {
            let batch = batch?;
            if first_done.is_none() {
                let bytes = batch.images.to_host_bytes(None)?;
                let labels: Vec<String> = batch.indices.iter().map(|&i| names[i].clone()).collect();
                contact_sheet(&args.out, &bytes, batch.len(), args.size as usize)?;
                first_done = Some((t0.elapsed(), labels));
            }
            bar.inc(1);
        }
    }
    let elapsed = t0.elapsed();
    bar.finish_and_clear();
    let stats = loader.stats();
    report(&stats, elapsed, first_done.as_ref().map(|f| f.0));
    println!("  contact sheet of the first batch: {}", args.out.display());
    if let Some((_, names)) = first_done {
        println!("    {}", names.join(" | "));
    }
    Ok(())
}

fn report(s: &Stats, elapsed: std::time::Duration, first: Option<std::time::Duration>) {
    let secs = elapsed.as_secs_f64().max(1e-9);
    let per = |us: u64| us as f64 / s.samples.max(1) as f64;
    println!(
        "  {} images in {} batches, {:.2} s: {:.0} images/s",
        s.samples,
        s.batches,
        secs,
        s.samples as f64 / secs
    );
    if let Some(f) = first {
        println!(
            "  first batch after {:.0} ms (decoder start-up included)",
            f.as_secs_f64() * 1e3
        );
    }
    println!("  where time went, per image (host µs; stages overlap):");
    let read = if s.decode_us > 0 {
        "read files"
    } else {
        "read+decode+transform"
    };
    println!("    {read:<20}{:8.1}", per(s.read_us));
    if s.decode_us > 0 {
        println!("    {:<20}{:8.1}", "decode (GPU stage)", per(s.decode_us));
    }
    println!("    {:<20}{:8.1}", "transform", per(s.transform_us));
    println!(
        "    {:<20}{:8.1}  ({:.0}% of the time: {})",
        "consumer waited",
        per(s.wait_us),
        100.0 * s.wait_fraction(),
        if s.wait_fraction() > 0.5 {
            "the loader is the bottleneck"
        } else {
            "the consumer is"
        }
    );
    println!(
        "  decoded on: NVJPG engines {}, CUDA backend {} ({} only in the crop's region), CPU {}",
        s.paths.hardware, s.paths.cuda, s.regions, s.paths.cpu
    );
    println!(
        "  queues: at most {} batches ready for the consumer, {} read ahead of the stage",
        s.max_ready, s.max_read_ahead
    );
    if s.bad > 0 {
        println!(
            "  bad samples: {} (skipped {}, substituted {}); first:",
            s.bad, s.skipped, s.substituted
        );
        for e in &s.first_errors {
            println!("    {e}");
        }
    }
}

/// Undoes the ImageNet normalization of f16 CHW images and tiles them, 4 to a row.
fn contact_sheet(out: &Path, f16_chw: &[u8], n: usize, size: usize) -> Result<()> {
    let cols = n.clamp(1, 4);
    let rows = n.div_ceil(cols);
    let (w, h) = (cols * size, rows * size);
    let mut rgb = vec![0u8; w * h * 3];
    let norm = Normalize::IMAGENET;
    for i in 0..n {
        let (ox, oy) = ((i % cols) * size, (i / cols) * size);
        for c in 0..3 {
            for y in 0..size {
                for x in 0..size {
                    let e = ((i * 3 + c) * size + y) * size + x;
                    let v = half::f16::from_le_bytes([f16_chw[2 * e], f16_chw[2 * e + 1]]).to_f32();
                    let u = (v * norm.std[c] + norm.mean[c]) * 255.0;
                    rgb[((oy + y) * w + ox + x) * 3 + c] = u.round().clamp(0.0, 255.0) as u8;
                }
            }
        }
    }
    crate::frames::write_png(out, &rgb, w, h).with_context(|| format!("writing {}", out.display()))
}
