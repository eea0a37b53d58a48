//! The image pipeline on the CPU over an ImageFolder, from a crate outside gm's workspace:
//! decode, random-resized crop, flip, normalize, f16 CHW batches; bad files skipped. Exits
//! with an error unless every good image of the folder came out in each epoch, in batches of
//! the asked shape.
//!
//! `cargo run --manifest-path tests/downstream/Cargo.toml [DIR]` (default: the bundled demo
//! images)

use std::path::PathBuf;

use anyhow::{Result, ensure};
use gm_cuda::DType;
use gm_loader::{BadSamplePolicy, Dataset, ImageFolder, Loader, Sampler};
use gm_transforms::{HorizontalFlip, Layout, Normalize, RandomResizedCrop, ToDtype, Transform};

fn main() -> Result<()> {
    let dir = std::env::args_os().nth(1).map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../assets/demo/images"),
        PathBuf::from,
    );
    let folder = ImageFolder::new(&dir)?;
    let files = folder.len();
    let chain: Vec<Box<dyn Transform>> = vec![
        Box::new(RandomResizedCrop::new(96, 96)),
        Box::new(HorizontalFlip(0.5)),
        Box::new(Normalize::IMAGENET),
        Box::new(ToDtype(DType::F16, Layout::Chw)),
    ];
    let mut loader = Loader::builder(folder)
        .sampler(Sampler::shuffled(7))
        .batch_size(4)
        .transforms(chain)
        .bad_samples(BadSamplePolicy::Skip)
        .cpu()
        .build()?;
    println!("{} ({files} files) on {}", dir.display(), loader.placement());
    let mut per_epoch = Vec::new();
    for epoch in 0..2 {
        let mut images = 0;
        for batch in loader.epoch(epoch) {
            let batch = batch?;
            let shape = batch.images.shape().to_vec();
            ensure!(shape[1..] == [3, 96, 96], "batch shape {shape:?}");
            ensure!(batch.images.dtype() == DType::F16, "{:?}", batch.images.dtype());
            ensure!(batch.labels.len() == shape[0], "labels {:?}", batch.labels);
            images += shape[0];
        }
        per_epoch.push(images);
    }
    let stats = loader.stats();
    println!("images per epoch {per_epoch:?}, {} bad", stats.bad);
    for e in &stats.first_errors {
        println!("  {e}");
    }
    let good = files - (stats.bad as usize) / per_epoch.len();
    ensure!(
        per_epoch.iter().all(|&n| n == good) && good > 0,
        "expected {good} images in each epoch, got {per_epoch:?}"
    );
    Ok(())
}
