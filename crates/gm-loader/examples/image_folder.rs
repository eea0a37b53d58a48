//! Runs the image pipeline on the CPU over an ImageFolder (class subdirectories): decode,
//! random-resized crop, flip, normalize, f16 CHW batches; bad files are skipped and reported.
//!
//! `cargo run -p gm-loader --example image_folder [DIR]` (default: the bundled demo images)
#![allow(clippy::print_stdout)] // an example reports on stdout

use std::path::PathBuf;

use gm_cuda::DType;
use gm_loader::{BadSamplePolicy, ImageFolder, Loader, Sampler};
use gm_transforms::{HorizontalFlip, Layout, Normalize, RandomResizedCrop, ToDtype, Transform};

fn main() -> anyhow::Result<()> {
    let dir = std::env::args_os().nth(1).map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../assets/demo/images"),
        PathBuf::from,
    );
    let chain: Vec<Box<dyn Transform>> = vec![
        Box::new(RandomResizedCrop::new(224, 224)),
        Box::new(HorizontalFlip(0.5)),
        Box::new(Normalize::IMAGENET),
        Box::new(ToDtype(DType::F16, Layout::Chw)),
    ];
    let mut loader = Loader::builder(ImageFolder::new(&dir)?)
        .sampler(Sampler::shuffled(42))
        .batch_size(8)
        .transforms(chain)
        .bad_samples(BadSamplePolicy::Skip)
        .cpu() // the same pipeline runs on the GPU without this line, when there is one
        .build()?;
    println!("{} on {}", dir.display(), loader.placement());
    for epoch in 0..2 {
        for batch in loader.epoch(epoch) {
            let batch = batch?;
            println!(
                "epoch {epoch} batch {}: images {:?} {:?}, labels {:?}",
                batch.position,
                batch.images.shape(),
                batch.images.dtype(),
                batch.labels
            );
        }
    }
    let stats = loader.stats();
    println!("{} images, {} bad", stats.samples, stats.bad);
    for e in &stats.first_errors {
        println!("  {e}");
    }
    Ok(())
}
