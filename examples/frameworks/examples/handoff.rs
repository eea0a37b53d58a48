//! The cost of handing gm batches to candle on the GPU, per batch of 256 224x224 f16 images:
//! the device copy (`Handoff::Copy`) against the zero-copy handover (`Handoff::Move`), and the
//! loader's throughput with each (a handover makes gm's pool allocate a new buffer per batch).
//!
//! `cargo run -p gm-frameworks --features candle-cuda --release --example handoff [-- --batches 40 --driver-pool-default]`
//!
//! `--burn-only` measures burn's paths alone (no candle CUDA backend needed to build it).
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
    if std::env::args().any(|a| a == "--burn-only") {
        return burn_costs(&data, batches);
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

/// burn's paths for the same batches: one device copy into its CUDA backend (warm, `batches`
/// of them, with the cubecl calls it is made of timed alone), and through host memory to its
/// CUDA backend and to NdArray (10 batches: they take hundreds of milliseconds each).
fn burn_costs(data: &std::path::Path, batches: usize) -> anyhow::Result<()> {
    use burn::backend::{Cuda, NdArray, cuda::CudaDevice};
    let cuda = CudaDevice::new(0);
    let mut loader = loader(data)?;
    let mut warm = 3;
    let (mut copy, mut floor) = (Duration::ZERO, Duration::ZERO);
    let mut scratch: Option<(gm_cuda::Stream, gm_cuda::DeviceBuffer)> = None;
    let n = for_batches(&mut loader, batches + warm, |batch| {
        // The copy returns with the bytes in place (it waits for them): no sync to add.
        let t = Instant::now();
        let c = gm_interop::burn::images_cuda::<Cuda<half::f16>, 4>(&batch, &cuda)?;
        let spent = t.elapsed();
        drop(c);
        // The floor: the same bytes copied by gm into its own buffer, then synchronized.
        let floor_once = copy_floor(&batch, &mut scratch)?;
        if warm > 0 {
            warm -= 1;
        } else {
            copy += spent;
            floor += floor_once;
        }
        Ok(())
    })? - 3;
    println!(
        "burn (device copy): {n} batches of 256x3x224x224 f16: {:.3} ms per batch (burn's queue \
         idle, copy done); the same copy into gm's own buffer, synchronized: {:.3} ms",
        copy.as_secs_f64() * 1e3 / n as f64,
        floor.as_secs_f64() * 1e3 / n as f64
    );
    cubecl_parts(&cuda, n)?;
    copy_steps(&mut loader, &cuda, n)?;
    // As candle's `keep_freed_memory`: the driver's pool keeps what cubecl frees.
    gm_cuda::Device::new(0)?.set_mempool_release_threshold(u64::MAX)?;
    let mut kept = Duration::ZERO;
    let n = for_batches(&mut loader, batches, |batch| {
        let t = Instant::now();
        let c = gm_interop::burn::images_cuda::<Cuda<half::f16>, 4>(&batch, &cuda)?;
        kept += t.elapsed();
        drop(c);
        Ok(())
    })?;
    println!(
        "burn (device copy, the driver's pool keeping freed memory): {:.3} ms per batch",
        kept.as_secs_f64() * 1e3 / n as f64
    );
    copy_steps(&mut loader, &cuda, n)?;
    let (mut to_cuda, mut to_ndarray) = (Duration::ZERO, Duration::ZERO);
    let n = for_batches(&mut loader, batches.min(10), |batch| {
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
        "burn (through host memory): {n} batches of 256x3x224x224 f16: to Cuda {:.3} ms per \
         batch (download, upload, synchronized), to NdArray {:.3} ms",
        to_cuda.as_secs_f64() * 1e3 / n as f64,
        to_ndarray.as_secs_f64() * 1e3 / n as f64
    );
    Ok(())
}

/// One device copy of the batch's images into a buffer of gm's (made once) on a stream of
/// gm's (made once), synchronized: how long the copy alone takes.
fn copy_floor(
    batch: &Batch,
    scratch: &mut Option<(gm_cuda::Stream, gm_cuda::DeviceBuffer)>,
) -> anyhow::Result<Duration> {
    let gm_loader::Images::Device(t) = &batch.images else {
        bail!("a CPU batch");
    };
    let bytes = t.numel() * t.dtype().size();
    let (stream, buffer) = match scratch {
        Some(s) => s,
        None => scratch.insert((
            gm_cuda::Stream::new(t.device())?,
            gm_cuda::DeviceBuffer::alloc(t.device(), bytes)?,
        )),
    };
    let start = Instant::now();
    stream.copy_on_device(t.storage(), t.byte_offset(), buffer, 0, bytes)?;
    stream.synchronize()?;
    Ok(start.elapsed())
}

/// The steps of `images_cuda`, made here one by one and each timed over `n` batches.
fn copy_steps(
    loader: &mut Loader,
    device: &burn::backend::cuda::CudaDevice,
    n: usize,
) -> anyhow::Result<()> {
    use burn_cubecl::cubecl::Runtime;
    use burn_cubecl::cubecl::cuda::CudaRuntime;
    use burn_cubecl::cubecl::future::block_on;
    struct Dst(gm_cuda::DevicePtr, usize);
    impl gm_cuda::DeviceMemory for Dst {
        fn device_ptr(&self) -> gm_cuda::DevicePtr {
            self.0
        }
        fn byte_len(&self) -> usize {
            self.1
        }
    }
    let mut steps = [Duration::ZERO; 5];
    let mut stream = None;
    for_batches(loader, n, |batch| {
        let gm_loader::Images::Device(t) = &batch.images else {
            bail!("a CPU batch");
        };
        let bytes = t.numel() * t.dtype().size();
        let s0 = Instant::now();
        let client = CudaRuntime::client(device);
        let c1 = Instant::now();
        let handle = client.empty(bytes);
        let resource = client
            .get_resource(handle.clone())
            .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        let s1 = Instant::now();
        block_on(client.sync()).map_err(|e| anyhow::anyhow!("{e:?}"))?;
        let s2 = Instant::now();
        let stream = match &mut stream {
            Some(s) => s,
            None => stream.insert(gm_cuda::Stream::new(t.device())?),
        };
        if let Some(e) = batch.ready_event() {
            stream.wait(e)?;
        }
        let mut dst = Dst(gm_cuda::DevicePtr(resource.resource().ptr), bytes);
        stream.copy_on_device(t.storage(), t.byte_offset(), &mut dst, 0, bytes)?;
        stream.synchronize()?;
        let s3 = Instant::now();
        drop(resource);
        let shape = burn::tensor::Shape::from(t.shape().to_vec());
        let cube = burn_cubecl::tensor::CubeTensor::new_contiguous(
            client,
            device.clone(),
            shape,
            handle,
            burn::tensor::DType::F16,
        );
        let tensor: burn::tensor::Tensor<burn::backend::Cuda<half::f16>, 4> =
            burn::tensor::Tensor::from_primitive(burn::tensor::TensorPrimitive::Float(cube));
        let s4 = Instant::now();
        drop(tensor);
        for (k, d) in [s1 - s0, s2 - s1, s3 - s2, s4 - s3, c1 - s0]
            .into_iter()
            .enumerate()
        {
            steps[k] += d;
        }
        Ok(())
    })?;
    let ms = |d: Duration| d.as_secs_f64() * 1e3 / n as f64;
    println!(
        "burn (device copy's steps, ms per batch): client, allocation and address {:.3} (the \
         client alone {:.3}); wait for burn's queue {:.3}; copy and its wait {:.3}; the tensor \
         {:.3}",
        ms(steps[0]),
        ms(steps[4]),
        ms(steps[1]),
        ms(steps[2]),
        ms(steps[3])
    );
    Ok(())
}

/// The cubecl calls the device copy makes, each timed alone over `n` rounds: the allocation
/// and its address, and the wait for burn's queue.
fn cubecl_parts(device: &burn::backend::cuda::CudaDevice, n: usize) -> anyhow::Result<()> {
    use burn_cubecl::cubecl::Runtime;
    use burn_cubecl::cubecl::cuda::CudaRuntime;
    use burn_cubecl::cubecl::future::block_on;
    let client = CudaRuntime::client(device);
    let bytes = 256 * 3 * 224 * 224 * 2;
    let (mut alloc, mut sync) = (Duration::ZERO, Duration::ZERO);
    for _ in 0..n {
        let t = Instant::now();
        let handle = client.empty(bytes);
        let resource = client
            .get_resource(handle.clone())
            .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        alloc += t.elapsed();
        let t = Instant::now();
        block_on(client.sync()).map_err(|e| anyhow::anyhow!("{e:?}"))?;
        sync += t.elapsed();
        drop((resource, handle));
    }
    println!(
        "burn (device copy's parts): allocation and address {:.3} ms, wait for burn's queue \
         {:.3} ms per batch",
        alloc.as_secs_f64() * 1e3 / n as f64,
        sync.as_secs_f64() * 1e3 / n as f64
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
