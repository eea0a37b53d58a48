//! The cost of handing gm batches to candle on the GPU, per batch of 256 224x224 f16 images:
//! the device copy (`Handoff::Copy`) against the zero-copy handover (`Handoff::Move`), and the
//! loader's throughput with each (a handover makes gm's pool allocate a new buffer per batch).
//!
//! `cargo run -p gm-frameworks --features candle-cuda --release --example handoff [-- --batches 40 --driver-pool-default]`
#![allow(clippy::print_stdout)] // an example reports on stdout

use std::time::{Duration, Instant};

use anyhow::bail;
use candle_core::Device;
use gm_cuda::DType;
use gm_frameworks::patterns::write_dataset;
use gm_interop::candle::{self, Handoff};
use gm_loader::{Batch, ImageFolder, Loader, Sampler};
use gm_transforms::{Layout, Normalize, RandomResizedCrop, ToDtype};

fn main() -> anyhow::Result<()> {
    let batches: usize = match std::env::args().skip_while(|a| a != "--batches").nth(1) {
        Some(n) => n.parse()?,
        None => 40,
    };
    let data = std::env::temp_dir().join("gm-patterns-2560-256");
    if !data.exists() {
        write_dataset(&data, 2560, 256, 7)?;
    }
    let device = Device::new_cuda(0)?;
    if device.is_cpu() {
        bail!("needs a GPU");
    }
    let keep = !std::env::args().any(|a| a == "--driver-pool-default");
    if keep {
        candle::keep_freed_memory(&device)?;
    }
    for handoff in [Handoff::Copy, Handoff::Move, Handoff::Copy, Handoff::Move] {
        let mut loader = loader(&data)?;
        let (mut handoff_time, mut host_time) = (Duration::ZERO, Duration::ZERO);
        let start = Instant::now();
        let n = for_batches(&mut loader, batches, |mut batch| {
            let t = Instant::now();
            let tensor = match handoff {
                Handoff::Copy => candle::images(&mut batch, &device)?,
                Handoff::Move => candle::into_images(batch, &device)?.0,
            };
            host_time += t.elapsed();
            device.synchronize()?; // the copy has run on candle's stream
            handoff_time += t.elapsed();
            drop(tensor);
            Ok(())
        })?;
        let wall = start.elapsed().as_secs_f64();
        let pool = loader.batch_pool_stats();
        println!(
            "{handoff:?} (keep freed memory: {keep}): {n} batches of 256x3x224x224 f16: handoff \
             {:.3} ms per batch until done on the GPU, {:.3} ms of it in the host call; loader \
             {:.0} images/s; batch pool (allocations, reuses, detached) {:?}",
            handoff_time.as_secs_f64() * 1e3 / n as f64,
            host_time.as_secs_f64() * 1e3 / n as f64,
            (n * 256) as f64 / wall,
            pool.map(|s| (s.allocations, s.reuses, s.detached))
        );
    }
    burn_costs(&data, batches.min(10))
}

/// burn's paths for the same batches: one device copy into its CUDA backend, and through host
/// memory to its CUDA backend and to NdArray.
fn burn_costs(data: &std::path::Path, batches: usize) -> anyhow::Result<()> {
    use burn::backend::{Cuda, NdArray, cuda::CudaDevice};
    let cuda = CudaDevice::new(0);
    let mut loader = loader(data)?;
    let (mut to_cuda, mut to_ndarray, mut copy) = (Duration::ZERO, Duration::ZERO, Duration::ZERO);
    let n = for_batches(&mut loader, batches, |batch| {
        // The copy returns with the bytes in place (it waits for them): no sync to add.
        let t = Instant::now();
        let c = gm_interop::burn::images_cuda::<Cuda<half::f16>, 4>(&batch, &cuda)?;
        copy += t.elapsed();
        drop(c);
        let t = Instant::now();
        let x = gm_interop::burn::images::<Cuda, 4>(&batch, &cuda)?;
        <Cuda as burn::tensor::backend::Backend>::sync(&cuda)?;
        to_cuda += t.elapsed();
        drop(x);
        let t = Instant::now();
        let y = gm_interop::burn::images::<NdArray, 4>(&batch, &Default::default())?;
        to_ndarray += t.elapsed();
        drop(y);
        Ok(())
    })?;
    println!(
        "burn (device copy): {n} batches of 256x3x224x224 f16: {:.3} ms per batch (burn's queue \
         idle, copy done)",
        copy.as_secs_f64() * 1e3 / n as f64
    );
    println!(
        "burn (through host memory): {n} batches of 256x3x224x224 f16: to Cuda {:.3} ms per \
         batch (download, upload, synchronized), to NdArray {:.3} ms",
        to_cuda.as_secs_f64() * 1e3 / n as f64,
        to_ndarray.as_secs_f64() * 1e3 / n as f64
    );
    Ok(())
}

/// The benchmark's pipeline: 256 images per batch, RandomResizedCrop 224, normalize, f16 CHW.
fn loader(data: &std::path::Path) -> anyhow::Result<Loader> {
    Ok(Loader::builder(ImageFolder::new(data)?)
        .sampler(Sampler::shuffled(3))
        .batch_size(256)
        .drop_last(true)
        .transform(RandomResizedCrop::new(224, 224))
        .transform(Normalize::IMAGENET)
        .transform(ToDtype(DType::F16, Layout::Chw))
        .build()?)
}

/// Calls `f` on `n` batches, across as many epochs as it takes, each batch complete on the
/// GPU first (so `f` times the handoff alone, not the decode behind it). Returns `n`.
fn for_batches(
    loader: &mut Loader,
    n: usize,
    mut f: impl FnMut(Batch) -> anyhow::Result<()>,
) -> anyhow::Result<usize> {
    let mut done = 0;
    for epoch in 0.. {
        let before = done;
        for batch in loader.epoch(epoch) {
            let batch = batch?;
            if let Some(e) = batch.ready_event() {
                e.synchronize()?;
            }
            f(batch)?;
            done += 1;
            if done == n {
                return Ok(done);
            }
        }
        if done == before {
            bail!("epoch {epoch} yielded no batch");
        }
    }
    Ok(done)
}
