//! GPU batches into candle's CUDA backend and burn: exact bytes, gm's pool statistics, and no
//! buffer reused while a framework's copy of it is still queued. Skips without a GPU (fails
//! with GM_REQUIRE_GPU=1); the candle tests need the `candle-cuda` feature.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use std::path::PathBuf;

use gm_cuda::{DType, gpu_test_device};
use gm_frameworks::patterns::write_dataset;
use gm_loader::{Batch, ImageFolder, Loader, Sampler};
use gm_transforms::{Layout, Normalize, RandomResizedCrop, ToDtype};

fn dataset(name: &str, count: usize) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gm-interop-gpu-{name}-{}", std::process::id()));
    write_dataset(&dir, count, 96, 11).unwrap();
    dir
}

fn gpu_loader(dir: &PathBuf, device: &gm_cuda::Device, batch: usize) -> Loader {
    Loader::builder(ImageFolder::new(dir).unwrap())
        .sampler(Sampler::shuffled(9))
        .batch_size(batch)
        .transform(RandomResizedCrop::new(64, 48))
        .transform(Normalize::IMAGENET)
        .transform(ToDtype(DType::F16, Layout::Chw))
        .device(device)
        .build()
        .unwrap()
}

/// The batch's images, read back to the host.
fn host_f16(batch: &Batch) -> Vec<half::f16> {
    let b = batch.images.to_host_bytes(None).unwrap();
    b.chunks_exact(2)
        .map(|c| half::f16::from_ne_bytes([c[0], c[1]]))
        .collect()
}

#[test]
fn burn_gets_the_gpu_batch() {
    let device = gpu_test_device!("burn_gets_the_gpu_batch");
    let dir = dataset("burn", 32);
    let mut l = gpu_loader(&dir, &device, 8);
    let cuda = burn::backend::cuda::CudaDevice::new(device.ordinal());
    for batch in l.epoch(0) {
        let batch: Batch = batch.unwrap();
        let want: Vec<f32> = host_f16(&batch).iter().map(|x| x.to_f32()).collect();
        let t = gm_interop::burn::images::<burn::backend::Cuda, 4>(&batch, &cuda).unwrap();
        assert_eq!(t.into_data().to_vec::<f32>().unwrap(), want);
    }
    std::fs::remove_dir_all(dir).unwrap();
}

mod burn_cuda {
    use super::*;
    use burn::tensor::Tensor;
    use burn_cubecl::cubecl::cuda::{CudaDevice, CudaRuntime};
    use gm_interop::burn::images_cuda;

    /// `burn::backend::Cuda<f16>` without burn's fusion (gm-frameworks builds burn without it).
    type Plain = burn_cubecl::CubeBackend<CudaRuntime, half::f16, i32, u8>;
    /// The same with fusion, as burn's default features make `burn::backend::Cuda`.
    type Fused = burn_fusion::Fusion<Plain>;
    type PlainF32 = burn_cubecl::CubeBackend<CudaRuntime, f32, i32, u8>;

    /// One device copy per batch, with and without fusion: the tensors hold the batch's exact
    /// f16 values, read back only after the loader reused its buffers for later batches.
    #[test]
    fn burn_cuda_copies_hold_the_batch() {
        let device = gpu_test_device!("burn_cuda_copies_hold_the_batch");
        let dir = dataset("burn-copy", 48);
        let mut l = gpu_loader(&dir, &device, 8);
        let cuda = CudaDevice::new(device.ordinal());
        let mut kept = Vec::new();
        for epoch in 0..3 {
            for batch in l.epoch(epoch) {
                let batch = batch.unwrap();
                let want = host_f16(&batch);
                let plain = images_cuda::<Plain, 4>(&batch, &cuda).unwrap();
                let fused = images_cuda::<Fused, 4>(&batch, &cuda).unwrap();
                assert_eq!(plain.dims(), [8, 3, 48, 64]);
                drop(batch);
                kept.push((want, plain, fused));
            }
        }
        let stats = l.stats();
        for (k, (want, plain, fused)) in kept.into_iter().enumerate() {
            assert_eq!(
                plain.into_data().to_vec::<half::f16>().unwrap(),
                want,
                "batch {k}"
            );
            // Through a fused operation too, not only the registered tensor itself.
            let doubled: Vec<half::f16> = (fused * 2.0).into_data().to_vec().unwrap();
            let want2: Vec<half::f16> =
                want.iter().map(|x| *x * half::f16::from_f32(2.0)).collect();
            assert_eq!(doubled, want2, "batch {k} (fusion)");
        }
        assert!(stats.batches >= 18, "{stats:?}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// burn's allocator may give the copy memory that a burn kernel queued earlier still
    /// reads (here, a sum queued behind 20 large matmuls, of a tensor dropped before the
    /// copy). Were the copy not ordered after burn's queued work, the sum would read the
    /// batch's bytes instead of ones.
    #[test]
    fn burn_copy_waits_for_queued_burn_reads() {
        let device = gpu_test_device!("burn_copy_waits_for_queued_burn_reads");
        let dir = dataset("burn-race", 48);
        let mut l = gpu_loader(&dir, &device, 8);
        let cuda = CudaDevice::new(device.ordinal());
        let busy = Tensor::<PlainF32, 2>::ones([2048, 2048], &cuda);
        for batch in l.epoch(0) {
            let batch = batch.unwrap();
            // As many f32 as the batch has bytes / 4: the same allocation size.
            let n = batch.images.shape().iter().product::<usize>() / 2;
            let ones = Tensor::<PlainF32, 1>::ones([n], &cuda);
            let mut acc = busy.clone();
            for _ in 0..20 {
                acc = acc.matmul(busy.clone());
            }
            let sum = ones.clone().sum();
            drop(ones);
            let t = images_cuda::<Plain, 4>(&batch, &cuda).unwrap();
            assert_eq!(
                sum.into_scalar(),
                n as f32,
                "the copy overwrote memory burn still read"
            );
            assert_eq!(
                t.into_data().to_vec::<half::f16>().unwrap(),
                host_f16(&batch)
            );
            drop(acc);
        }
        std::fs::remove_dir_all(dir).unwrap();
    }
}

#[cfg(feature = "candle-cuda")]
mod candle_cuda {
    use super::*;
    use candle_core::{Device, Tensor};
    use gm_interop::candle;

    fn candle_device(device: &gm_cuda::Device) -> candle_core::CudaDevice {
        match Device::new_cuda(device.ordinal()).unwrap() {
            Device::Cuda(d) => d,
            _ => unreachable!(),
        }
    }

    fn bytes_of(t: &Tensor) -> Vec<half::f16> {
        t.flatten_all().unwrap().to_vec1::<half::f16>().unwrap()
    }

    #[test]
    fn candle_shares_gms_primary_context() {
        let device = gpu_test_device!("candle_shares_gms_primary_context");
        let c = candle_device(&device);
        assert_eq!(c.cuda_stream().context().cu_ctx(), device.raw_context());
    }

    #[test]
    fn copies_hold_the_batch_and_the_pool_stays_warm() {
        let device = gpu_test_device!("copies_hold_the_batch_and_the_pool_stays_warm");
        let dir = dataset("copy", 96);
        let c = Device::Cuda(candle_device(&device));
        let mut l = gpu_loader(&dir, &device, 16);
        let mut kept = Vec::new();
        for epoch in 0..3 {
            for batch in l.epoch(epoch) {
                let mut batch = batch.unwrap();
                let want = host_f16(&batch);
                let t = candle::images(&mut batch, &c).unwrap();
                drop(batch); // the copy is queued on candle's stream; the pool must wait for it
                assert_eq!(bytes_of(&t), want);
                kept.push(t);
            }
        }
        let s = l.batch_pool_stats().unwrap();
        assert_eq!((s.detached, s.buffers_in_use), (0, 0), "{s:?}");
        assert!(s.allocations <= 8, "the pool reuses its buffers: {s:?}");
        assert!(s.reuses >= 10, "{s:?}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn moves_hand_the_memory_over() {
        let device = gpu_test_device!("moves_hand_the_memory_over");
        let dir = dataset("move", 64);
        let c = Device::Cuda(candle_device(&device));
        let mut l = gpu_loader(&dir, &device, 16);
        let mut held = Vec::new();
        for batch in l.epoch(0) {
            let batch = batch.unwrap();
            let want = host_f16(&batch);
            let gm_ptr = match &batch.images {
                gm_loader::Images::Device(t) => t.data_ptr().0,
                _ => unreachable!(),
            };
            let (t, _labels) = candle::into_images(batch, &c).unwrap();
            let (storage, _) = t.storage_and_layout();
            let candle_ptr = match &*storage {
                candle_core::Storage::Cuda(s) => {
                    let slice = s.as_cuda_slice::<half::f16>().unwrap();
                    let stream = slice.stream().clone();
                    use candle_core::cuda_backend::cudarc::driver::DevicePtr;
                    slice.device_ptr(&stream).0
                }
                _ => unreachable!(),
            };
            drop(storage);
            assert_eq!(candle_ptr, gm_ptr, "zero-copy: candle reads gm's buffer");
            assert_eq!(bytes_of(&t), want);
            held.push(t);
        }
        let s = l.batch_pool_stats().unwrap();
        assert_eq!(s.detached, 4, "{s:?}");
        assert_eq!(s.buffers_in_use, 0, "{s:?}");
        drop(held); // candle frees them; a double free would fail the process
        c.synchronize().unwrap();
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// candle's stream is kept busy before the copy is queued; the batch is dropped and the
    /// loader runs on. Were its buffer reused before candle's copy ran, the copy would read a
    /// later batch's images.
    #[test]
    fn no_buffer_is_reused_before_candles_copy() {
        let device = gpu_test_device!("no_buffer_is_reused_before_candles_copy");
        let dir = dataset("race", 128);
        let cd = candle_device(&device);
        let c = Device::Cuda(cd.clone());
        let mut l = gpu_loader(&dir, &device, 16);
        let busy = Tensor::ones((2048, 2048), candle_core::DType::F32, &c).unwrap();
        for epoch in 0..2 {
            let mut it = l.epoch(epoch);
            while let Some(batch) = it.next() {
                let mut batch = batch.unwrap();
                let want = host_f16(&batch);
                let mut acc = busy.clone();
                for _ in 0..20 {
                    acc = acc.matmul(&busy).unwrap(); // ~100 ms queued on candle's stream
                }
                let t = candle::images(&mut batch, &c).unwrap();
                drop(batch);
                // Pull two more batches while the copy still waits behind the matmuls.
                let later: Vec<_> = (&mut it).take(2).collect();
                assert_eq!(
                    bytes_of(&t),
                    want,
                    "epoch {epoch}: buffer reused before the copy"
                );
                drop((later, acc));
            }
        }
        std::fs::remove_dir_all(dir).unwrap();
    }
}
