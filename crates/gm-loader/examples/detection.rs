//! A detection pipeline on the CPU over a COCO file: torchvision's detection recipe (random
//! shorter side, flip, IoU crop, sanitize), batches padded to the largest image as
//! torchvision's detection models batch them, each image's boxes moved with its pixels and
//! its object masks moved by the loader (in the fused launch on a GPU).
//!
//! `cargo run -p gm-loader --example detection [INSTANCES.json IMAGE_DIR]` (default: the COCO
//! fixture over the committed test photos, under `GM_FIXTURES` when set)
#![allow(clippy::print_stdout)] // an example reports on stdout

use std::path::PathBuf;

use gm_cuda::DType;
use gm_loader::coco::{CocoDataset, EmptyImages};
use gm_loader::{BatchSizes, Loader, Sampler};
use gm_transforms::targets::SanitizeBoundingBoxes;
use gm_transforms::{
    Compose, HorizontalFlip, Layout, Normalize, RandomIoUCrop, RandomShortestSize, ToDtype,
};

fn main() -> anyhow::Result<()> {
    // The fixtures where the tests find them (GM_FIXTURES), else in this checkout.
    let media = std::env::var_os("GM_FIXTURES").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/media"),
        PathBuf::from,
    );
    let mut args = std::env::args_os().skip(1).map(PathBuf::from);
    let (file, images) = match (args.next(), args.next()) {
        (Some(f), Some(d)) => (f, d),
        _ => (media.join("coco/instances.json"), media.join("jpeg")),
    };
    let coco = CocoDataset::open(&file, &images, EmptyImages::Drop)?;
    let chain = Compose::new()
        .then(RandomIoUCrop::default())
        .then(SanitizeBoundingBoxes::default())
        .then(RandomShortestSize::new(&[96, 112, 128], Some(200))?)
        .then(HorizontalFlip(0.5))
        .then(ToDtype(DType::F32, Layout::Chw))
        .then(Normalize::IMAGENET);
    let mut loader = Loader::builder(coco.clone())
        .sampler(Sampler::shuffled(7))
        .batch_size(2)
        .transforms(chain)
        .batch_sizes(BatchSizes::DETECTION)
        .masks(true)
        .cpu() // the same pipeline runs on the GPU without this line, when there is one
        .build()?;
    println!("{} on {}", file.display(), loader.placement());
    for epoch in 0..3 {
        for batch in loader.epoch(epoch) {
            let batch = batch?;
            println!(
                "epoch {epoch} batch {}: images {:?}",
                batch.position,
                batch.images.shape()
            );
            for (k, &i) in batch.indices.iter().enumerate() {
                let targets = coco.targets(i)?;
                let g = &batch.geometry[k];
                let boxes = g.boxes(&targets.boxes)?;
                let kept = g.kept(&targets.boxes)?;
                let n = kept.iter().filter(|k| **k).count();
                let masks = batch.masks.as_ref().map_or(0, |m| m.parts[k].planes);
                println!(
                    "  {} as {:?} (height, width): {n} of {} objects kept ({masks} masks), \
                     first box {:?}",
                    coco.image(i).map_or("?", |im| im.file_name.as_str()),
                    batch.sizes[k],
                    kept.len(),
                    boxes
                        .boxes
                        .iter()
                        .zip(&kept)
                        .find(|(_, k)| **k)
                        .map(|(b, _)| b)
                );
            }
        }
    }
    let stats = loader.stats();
    println!("{} images, {} bad", stats.samples, stats.bad);
    for e in &stats.first_errors {
        println!("  {e}");
    }
    Ok(())
}
