//! `gm demo --video`: the video pipeline on the bundled sample videos: episodes decoded on
//! NVDEC and resized on the GPU (or, without a GPU, decoded and resized on the CPU), a
//! report and a contact sheet (one row per episode).

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use gm_cuda::{DType, Device};
use gm_loader::{ClipLoader, Sampler, VideoDataset};
use gm_storage::Storage;
use gm_transforms::{Layout, Resize, ToDtype};

const W: usize = 160;
const H: usize = 90;
const T: usize = 8;

fn default_videos() -> Result<PathBuf> {
    let candidates = [
        std::env::var_os("GM_DEMO_VIDEOS").map(PathBuf::from),
        Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/demo/videos")),
        Some(PathBuf::from("assets/demo/videos")),
    ];
    candidates
        .into_iter()
        .flatten()
        .find(|p| p.is_dir())
        .context("the demo videos (assets/demo/videos) are not here: pass --videos DIR")
}

/// Runs `gm demo --video`.
pub fn run(videos: Option<&Path>, epochs: u64, out: &Path, storage: &Storage) -> Result<()> {
    let dir = match videos {
        Some(d) => d.to_path_buf(),
        None => default_videos()?,
    };
    let device = match gm_cuda::available() {
        Ok(_) => Some(Device::new(0)?),
        Err(e) => {
            tracing::info!("no GPU ({e}): the video demo runs on the CPU");
            None
        }
    };
    // Episodes of 8 frames, every 2nd frame (0.5 s at 30 fps), a new one every 15 frames.
    let builder = VideoDataset::builder()
        .directory(&dir)
        .storage(storage)
        .frames(T, 15)
        .step(2);
    let dataset = crate::bars::open_videos(builder, &dir.display().to_string())?;
    let files = dataset.scenes();
    let episodes = dataset.len();
    let names: Vec<String> = (0..files)
        .map(|v| {
            dataset
                .path(v)
                .file_name()
                .map_or_else(|| "?".into(), |n| n.to_string_lossy().into_owned())
        })
        .collect();
    for s in dataset.skipped() {
        println!("  left out: {} ({})", s.name, s.reason);
    }
    let builder = match &device {
        Some(d) => ClipLoader::builder(dataset).device(d).sessions(4),
        // The loader finds no GPU either and says why in its placement.
        None => ClipLoader::builder(dataset),
    };
    let mut loader = builder
        .transform(Resize::Exact(W as u32, H as u32))
        .transform(ToDtype(DType::U8, Layout::Hwc))
        .sampler(Sampler::shuffled(0))
        .batch_size(4)
        .build()?;
    let on = if device.is_some() { "GPU" } else { "CPU" };
    println!(
        "gm demo --video: episodes of {T} frames (every 2nd frame), resized to {W}x{H} on the {on}"
    );
    println!(
        "  videos:  {files} in {} ({episodes} episodes)",
        dir.display()
    );
    match &device {
        Some(d) => println!(
            "  runs on: GPU {} ({}), 4 NVDEC sessions",
            d.ordinal(),
            d.info()?.name
        ),
        None => println!(
            "  runs on: {}: CPU decoding and the CPU twins of the GPU kernels, for the same result",
            loader.placement()
        ),
    }
    let t0 = Instant::now();
    let mut sheet = None;
    for epoch in 0..epochs {
        for batch in loader.epoch(epoch) {
            let batch = batch?;
            if sheet.is_none() {
                let host = batch.frames.to_host_bytes(None)?;
                let rows: Vec<String> = batch
                    .sources
                    .iter()
                    .map(|s| {
                        let (v, f) = &s[0];
                        let name = names.get(*v).map_or("?", String::as_str);
                        format!("{name} frames {f:?}")
                    })
                    .collect();
                contact_sheet(out, &host, batch.episodes.len())?;
                sheet = Some(rows);
            }
        }
    }
    let secs = t0.elapsed().as_secs_f64().max(1e-9);
    let s = loader.stats();
    println!(
        "  {} episodes ({} frames) in {} batches, {secs:.2} s: {:.0} frames/s",
        s.clips,
        s.frames,
        s.batches,
        s.frames as f64 / secs
    );
    println!(
        "  decoded {:.2} frames per frame delivered (episodes start mid-GOP: decoding starts at the keyframe)",
        s.decode_amplification()
    );
    println!("  bad episodes: {}", s.bad_clips);
    println!(
        "  contact sheet of the first batch (a row per episode): {}",
        out.display()
    );
    for r in sheet.unwrap_or_default() {
        println!("    {r}");
    }
    Ok(())
}

/// `n` episodes of `T` frames (`[n, T, H, W, 3]` u8) as `n` rows of `T` frames.
fn contact_sheet(out: &Path, frames: &[u8], n: usize) -> Result<()> {
    let (sw, sh) = (T * W, n * H);
    let mut rgb = vec![0u8; sw * sh * 3];
    for e in 0..n {
        for t in 0..T {
            for y in 0..H {
                let src = ((e * T + t) * H + y) * W * 3;
                let dst = ((e * H + y) * sw + t * W) * 3;
                rgb[dst..dst + W * 3].copy_from_slice(&frames[src..src + W * 3]);
            }
        }
    }
    crate::frames::write_png(out, &rgb, sw, sh)
        .with_context(|| format!("writing {}", out.display()))
}
