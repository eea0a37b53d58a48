//! The CPU path into candle and burn: the tensors hold exactly the batch's elements, and gm's
//! loader works as a burn `DataLoader`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use std::path::PathBuf;

use burn::backend::NdArray;
use burn::data::dataloader::DataLoader;
use candle_core::Device;
use gm_cuda::DType;
use gm_frameworks::patterns::write_dataset;
use gm_interop::InteropError;
use gm_interop::burn::{BurnLoader, ImageBatch};
use gm_interop::candle::{self, Handoff, batches};
use gm_loader::{BadSamplePolicy, Batch, ImageFolder, Loader, Sampler};
use gm_transforms::{Layout, Normalize, RandomResizedCrop, ToDtype};
use half::f16;

fn dataset(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gm-interop-{name}-{}", std::process::id()));
    write_dataset(&dir, 24, 40, 3).unwrap();
    dir
}

fn loader(dir: &PathBuf, dtype: DType) -> Loader {
    Loader::builder(ImageFolder::new(dir).unwrap())
        .sampler(Sampler::shuffled(5))
        .batch_size(5)
        .transform(RandomResizedCrop::new(24, 16))
        .transform(Normalize::IMAGENET)
        .transform(ToDtype(dtype, Layout::Chw))
        .cpu()
        .build()
        .unwrap()
}

fn host_f16(batch: &Batch) -> Vec<f16> {
    bytemuck_f16(&batch.images.to_host_bytes(None).unwrap())
}

fn bytemuck_f16(b: &[u8]) -> Vec<f16> {
    b.chunks_exact(2)
        .map(|c| f16::from_ne_bytes([c[0], c[1]]))
        .collect()
}

#[test]
fn candle_tensors_hold_the_batch() {
    let dir = dataset("candle");
    let mut l = loader(&dir, DType::F16);
    let mut seen = 0;
    for batch in l.epoch(0) {
        let mut batch = batch.unwrap();
        let want = host_f16(&batch);
        let t = candle::images(&mut batch, &Device::Cpu).unwrap();
        assert_eq!(t.dims(), batch.images.shape());
        assert_eq!(t.dtype(), candle_core::DType::F16);
        assert_eq!(t.flatten_all().unwrap().to_vec1::<f16>().unwrap(), want);
        let labels = candle::labels(&batch, &Device::Cpu).unwrap();
        assert_eq!(labels.to_vec1::<i64>().unwrap(), batch.labels);
        let (moved, labels) = candle::into_images(batch, &Device::Cpu).unwrap();
        assert_eq!(moved.flatten_all().unwrap().to_vec1::<f16>().unwrap(), want);
        assert!(labels.iter().all(|&l| (0..4).contains(&l)));
        seen += 1;
    }
    assert_eq!(seen, 5, "24 images in batches of 5");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn the_candle_iterator_yields_every_batch_in_order() {
    let dir = dataset("iter");
    let mut a = loader(&dir, DType::U8);
    let mut b = loader(&dir, DType::U8);
    let direct: Vec<Vec<u8>> = a
        .epoch(1)
        .map(|x| x.unwrap().images.to_host_bytes(None).unwrap())
        .collect();
    for handoff in [Handoff::Copy, Handoff::Move] {
        let pairs: Vec<_> = batches(b.epoch(1), &Device::Cpu, handoff)
            .collect::<Result<_, InteropError>>()
            .unwrap();
        assert_eq!(pairs.len(), direct.len());
        for ((images, labels), want) in pairs.iter().zip(&direct) {
            assert_eq!(
                &images.flatten_all().unwrap().to_vec1::<u8>().unwrap(),
                want
            );
            assert_eq!(labels.dims()[0], images.dims()[0]);
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn burn_tensors_hold_the_batch() {
    let dir = dataset("burn");
    let mut l = loader(&dir, DType::F16);
    let device = Default::default();
    for batch in l.epoch(0) {
        let batch = batch.unwrap();
        let want: Vec<f32> = host_f16(&batch).iter().map(|x| x.to_f32()).collect();
        let t = gm_interop::burn::images::<NdArray, 4>(&batch, &device).unwrap();
        assert_eq!(t.dims().to_vec(), batch.images.shape());
        assert_eq!(t.into_data().to_vec::<f32>().unwrap(), want);
        let labels = gm_interop::burn::labels::<NdArray>(&batch, &device);
        assert_eq!(labels.into_data().to_vec::<i64>().unwrap(), batch.labels);
        let wrong = gm_interop::burn::images::<NdArray, 5>(&batch, &device);
        assert!(matches!(wrong, Err(InteropError::Rank { expected: 5, .. })));
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// `(images, labels)` of every batch of `epoch`, read from gm directly.
fn direct_epoch(l: &mut Loader, epoch: u64) -> Vec<(Vec<f32>, Vec<i64>)> {
    l.epoch(epoch)
        .map(|b| {
            let b = b.unwrap();
            let bytes = b.images.to_host_bytes(None).unwrap();
            let images = bytes
                .chunks_exact(4)
                .map(|c| f32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
                .collect();
            (images, b.labels)
        })
        .collect()
}

fn burn_items(it: &mut dyn Iterator<Item = ImageBatch<NdArray>>) -> Vec<(Vec<f32>, Vec<i64>)> {
    it.map(|item| {
        (
            item.images.into_data().to_vec::<f32>().unwrap(),
            item.targets.into_data().to_vec::<i64>().unwrap(),
        )
    })
    .collect()
}

#[test]
fn the_burn_dataloader_runs_epochs_in_order_and_slices_whole_batches() {
    let dir = dataset("burn-dataloader");
    let mut direct = loader(&dir, DType::F32);
    let want = [direct_epoch(&mut direct, 0), direct_epoch(&mut direct, 1)];
    let device = Default::default();
    let dl = BurnLoader::<NdArray>::new(loader(&dir, DType::F32), &device);
    assert_eq!(dl.num_items(), 24);
    for epoch_want in &want {
        let mut it = dl.iter();
        let got = burn_items(&mut it);
        assert_eq!(
            &got, epoch_want,
            "each iter() is the next epoch, batch for batch"
        );
        let p = it.progress();
        assert_eq!((p.items_processed, p.items_total), (24, 24));
    }
    // Items 7..17 lie in batches 1..4 (items 5..20) of 5: the slice keeps those whole.
    dl.set_epoch(1);
    let slice = dl.slice(7, 17);
    assert_eq!(slice.num_items(), 15);
    assert_eq!(burn_items(&mut slice.iter()), want[1][1..4].to_vec());
    // The last batch holds 4 images: a slice to the end counts them.
    assert_eq!(dl.slice(20, 24).num_items(), 4);
    dl.set_epoch(0);
    let moved = dl.to_device(&device);
    assert_eq!(burn_items(&mut moved.iter()), want[0]);
    assert!(dl.take_error().is_none());
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_failing_epoch_ends_early_and_keeps_its_error() {
    let dir = dataset("burn-dataloader-bad");
    let class = std::fs::read_dir(&dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::write(class.join("broken.jpg"), b"\xff\xd8\xff\xe0 not a jpeg").unwrap();
    let l = Loader::builder(ImageFolder::new(&dir).unwrap())
        .batch_size(5)
        .transform(RandomResizedCrop::new(24, 16))
        .transform(ToDtype(DType::F32, Layout::Chw))
        .bad_samples(BadSamplePolicy::Fail)
        .cpu()
        .build()
        .unwrap();
    let dl = BurnLoader::<NdArray>::new(l, &Default::default());
    let delivered = dl.iter().count();
    assert!(
        delivered < 5,
        "the epoch stops at the bad batch: {delivered} batches"
    );
    let err = dl.take_error().expect("the error is kept").to_string();
    assert!(err.contains("broken.jpg"), "{err}");
    assert!(dl.take_error().is_none(), "taken once");
    std::fs::remove_dir_all(dir).unwrap();
}
