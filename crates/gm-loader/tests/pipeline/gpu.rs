//! The loader on the GPU: batches in sampler order, bit-identical whatever the worker count,
//! close to the CPU path, resumable, bad samples handled, memory reused, consumer-stream
//! ordering. Skips without a GPU unless GM_REQUIRE_GPU=1.

use std::sync::Arc;

use super::common::*;
use gm_codec::jpeg::{CudaWorkers, DecoderOptions, Split, SplitKey};
use gm_cuda::{Device, Stream, gpu_test_device};
use gm_loader::{BadSamplePolicy, Dataset, DeviceCache, Images, Loader, LoaderError, Sampler};
use gm_transforms::{HorizontalFlip, RandomResizedCrop};

fn gpu_loader(device: &Device, data: Arc<dyn Dataset>, workers: usize) -> gm_loader::LoaderBuilder {
    Loader::builder_shared(data).device(device).workers(workers)
}

/// PSNR in dB of two u8 images of the same size.
fn psnr_u8(x: &[u8], y: &[u8]) -> f64 {
    let mse = x
        .iter()
        .zip(y)
        .map(|(&a, &b)| (f64::from(a) - f64::from(b)).powi(2))
        .sum::<f64>()
        / x.len().max(1) as f64;
    10.0 * (255.0f64 * 255.0 / mse.max(1e-9)).log10()
}

#[test]
fn gpu_batches_are_ordered_deterministic_and_resumable() {
    let device = gpu_test_device!("gpu_batches_are_ordered_deterministic_and_resumable");
    let data: Arc<dyn Dataset> = Arc::new(photos(4));
    let n = data.len();
    let build = |workers: usize, stages: usize| {
        gpu_loader(&device, data.clone(), workers)
            .gpu_stages(stages)
            .sampler(Sampler::shuffled(3))
            .seed(17)
            .batch_size(8)
            .transforms(train_chain(64))
            .build()
            .unwrap()
    };
    let mut one = build(1, 1);
    assert!(one.on_gpu(), "{}", one.placement());
    let a = run_epoch(&mut one, 2);
    let mut many = build(6, 3);
    let b = run_epoch(&mut many, 2);
    assert_eq!(a.len(), n.div_ceil(8));
    assert_same(&a, &b, "bit-identical across worker and stage counts");
    let mut order: Vec<usize> = a.iter().flat_map(|s| s.indices.clone()).collect();
    assert_eq!(order, Sampler::shuffled(3).indices(n, 2));
    order.sort_unstable();
    assert_eq!(order, (0..n).collect::<Vec<_>>());
    for (p, s) in a.iter().enumerate() {
        assert_eq!(s.position, p);
        assert_eq!(s.shape, [s.indices.len(), 3, 64, 64]);
        assert_eq!(
            s.labels,
            s.indices.iter().map(|&i| data.label(i)).collect::<Vec<_>>()
        );
    }

    // Resume after batch 2 of epoch 2 in a new loader.
    let mut first = build(3, 2);
    let mut ep = first.epoch(2);
    for _ in 0..3 {
        ep.next().unwrap().unwrap();
    }
    let state = ep.state();
    drop(ep);
    let mut second = build(2, 3);
    let tail: Vec<Seen> = second
        .resume(&state)
        .unwrap()
        .map(|b| seen(&b.unwrap()))
        .collect();
    assert_same(&tail, &a[3..], "resumed");
}

#[test]
fn gpu_epochs_started_ahead_give_the_same_batches_and_drop_at_once() {
    let device =
        gpu_test_device!("gpu_epochs_started_ahead_give_the_same_batches_and_drop_at_once");
    let data: Arc<dyn Dataset> = Arc::new(photos(4));
    let build = || {
        gpu_loader(&device, data.clone(), 2)
            .gpu_stages(3)
            .prefetch(1)
            .sampler(Sampler::shuffled(3))
            .seed(11)
            .batch_size(2)
            .transforms(train_chain(48))
            .build()
            .unwrap()
    };
    let mut loader = build();
    back_to_back_equal_alone(&mut build(), &mut loader, 0..3);
    let want = run_epoch(&mut build(), 1);

    // An epoch started ahead waits for the stages the running epoch holds while that one
    // waits for its consumer; dropping it must not wait for the running epoch's end.
    let mut running = loader.epoch_owned(1);
    let first = seen(&running.next().unwrap().unwrap());
    let ahead = loader.epoch_owned(2);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let t = std::time::Instant::now();
    drop(ahead);
    assert!(
        t.elapsed().as_secs_f64() < 2.0,
        "dropping took {:?}",
        t.elapsed()
    );
    let mut rest = vec![first];
    rest.extend(running.map(|b| seen(&b.unwrap())));
    assert_same(
        &rest,
        &want,
        "the running epoch after an ahead one was dropped",
    );
}

#[test]
fn gpu_output_is_close_to_the_cpu_pipeline() {
    let device = gpu_test_device!("gpu_output_is_close_to_the_cpu_pipeline");
    let data: Arc<dyn Dataset> = Arc::new(demo_folder());
    let build = |gpu: bool| {
        let b = Loader::builder_shared(data.clone())
            .batch_size(7)
            .transforms(eval_chain(96));
        let b = if gpu { b.device(&device) } else { b.cpu() };
        b.build().unwrap()
    };
    let g = run_epoch(&mut build(true), 0);
    let c = run_epoch(&mut build(false), 0);
    assert_eq!(g.len(), c.len());
    let slot = 96 * 96 * 3;
    let mut worst = f64::INFINITY;
    for (gb, cb) in g.iter().zip(&c) {
        assert_eq!(
            gb.indices, cb.indices,
            "same samples, truncated file skipped on both"
        );
        for k in 0..gb.indices.len() {
            let psnr = psnr_u8(
                &gb.bytes[k * slot..(k + 1) * slot],
                &cb.bytes[k * slot..(k + 1) * slot],
            );
            eprintln!("{}: {psnr:.1} dB", data.name(gb.indices[k]));
            worst = worst.min(psnr);
        }
    }
    // The two paths share the transform (its kernel equals its CPU twin within 1 LSB); they
    // differ by decoder: nvJPEG against zune-jpeg (see gm-codec's jpeg_gpu bounds).
    assert!(worst >= 35.0, "worst PSNR {worst:.1} dB");
}

/// GaussianBlur then Normalize and GaussianNoise on a float output: the GPU stage runs the
/// fused kernel into the pre-blur u8 batch, the blur pass and the noise pass; the result is
/// close to the CPU path's (same plans and noise keys; the decoders differ).
#[test]
fn gpu_blur_and_noise_chain_is_close_to_the_cpu_pipeline() {
    use gm_cuda::DType;
    use gm_transforms::{GaussianBlur, GaussianNoise, Layout, Normalize, ToDtype};
    let device = gpu_test_device!("gpu_blur_and_noise_chain_is_close_to_the_cpu_pipeline");
    let data: Arc<dyn Dataset> = Arc::new(demo_folder());
    let chain = || {
        eval_chain(64)
            .then(GaussianBlur::new((7, 5), (0.5, 2.0)).unwrap())
            .then(HorizontalFlip(0.5))
            .then(Normalize {
                mean: [0.0; 3],
                std: [1.0; 3],
            })
            .then(ToDtype(DType::F32, Layout::Chw))
            .then(GaussianNoise::new(0.0, 0.05, true).unwrap())
    };
    let build = |gpu: bool| {
        let b = Loader::builder_shared(data.clone())
            .batch_size(5)
            .transforms(chain());
        let b = if gpu { b.device(&device) } else { b.cpu() };
        b.build().unwrap()
    };
    let g = run_epoch(&mut build(true), 1);
    let c = run_epoch(&mut build(false), 1);
    assert_eq!(g.len(), c.len());
    let floats = |b: &[u8]| -> Vec<f32> {
        b.chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    };
    let mut worst = f64::INFINITY;
    for (gb, cb) in g.iter().zip(&c) {
        assert_eq!(gb.indices, cb.indices);
        assert_eq!(gb.shape, cb.shape);
        let (x, y) = (floats(&gb.bytes), floats(&cb.bytes));
        let mse = x
            .iter()
            .zip(&y)
            .map(|(&a, &b)| (f64::from(a) - f64::from(b)).powi(2))
            .sum::<f64>()
            / x.len() as f64;
        worst = worst.min(10.0 * (1.0 / mse.max(1e-12)).log10());
    }
    // As gpu_output_is_close_to_the_cpu_pipeline: the decoders differ, the passes do not.
    assert!(worst >= 35.0, "worst PSNR {worst:.1} dB");
}

/// The decoders' run-time split (`DecoderOptions::balanced`): the same samples in the same
/// order as the default fixed split, and pixels that differ at most as the engines and the
/// CUDA backend do (an image may take the other path).
#[test]
fn a_balanced_decoder_gives_the_same_batches_up_to_the_decoders_rounding() {
    let device = gpu_test_device!("a_balanced_decoder_gives_the_same_batches");
    let data: Arc<dyn Dataset> = Arc::new(photos(6));
    let build = |balanced: bool| {
        gpu_loader(&device, data.clone(), 3)
            .gpu_stages(2)
            .decoder(DecoderOptions {
                split: if balanced {
                    Split::Balanced { hw_load: 0.3 }
                } else {
                    Split::Fixed { hw_load: 0.3 }
                },
                cuda: CudaWorkers {
                    threads: 3,
                    ..CudaWorkers::default()
                },
                ..DecoderOptions::default()
            })
            .sampler(Sampler::shuffled(9))
            .batch_size(32)
            .transforms(eval_chain(80))
            .build()
            .unwrap()
    };
    let mut fixed_loader = build(false);
    let fixed = run_epoch(&mut fixed_loader, 1);
    let mut loader = build(true);
    let balanced = run_epoch(&mut loader, 1);
    let (f, b) = (fixed_loader.stats().paths, loader.stats().paths);
    eprintln!("paths: fixed {f:?}, balanced {b:?}");
    // Only the engines' and the CUDA backend's shares move; the CPU keeps its images.
    assert_eq!(b.cpu, f.cpu);
    assert_eq!(b.hardware + b.cuda, f.hardware + f.cuda);
    let (worst, differ, total) = byte_difference(&fixed, &balanced);
    eprintln!("{differ} of {total} bytes differ, by at most {worst}");
    // Both decoders follow the JPEG IDCT to within a step or two of rounding.
    assert!(worst <= 8, "largest difference {worst}");
    assert!(differ * 10 < total, "{differ} of {total} bytes differ");
}

/// Each sample's bytes in an epoch of `loader`, by sample index.
fn bytes_by_sample(loader: &mut Loader) -> std::collections::BTreeMap<usize, Vec<u8>> {
    let mut by = std::collections::BTreeMap::new();
    for b in run_epoch(loader, 0) {
        let each = b.bytes.len() / b.indices.len();
        for (k, &i) in b.indices.iter().enumerate() {
            by.insert(i, b.bytes[k * each..(k + 1) * each].to_vec());
        }
    }
    by
}

/// The loader's split draws each sample's decoder by its name, so a sample's pixels are the
/// same whatever batch it falls in: at another batch size, or another world size after a
/// resumption. By position, some samples change decoder and with it their last bits.
#[test]
fn a_sample_decodes_the_same_in_any_batch_with_the_loaders_split() {
    let device = gpu_test_device!("a_sample_decodes_the_same_in_any_batch");
    let data: Arc<dyn Dataset> = Arc::new(photos(4));
    let build = |key: SplitKey, batch: usize| {
        gpu_loader(&device, data.clone(), 3)
            .decoder(DecoderOptions {
                split_key: key,
                ..DecoderOptions::for_loader()
            })
            .sampler(Sampler::shuffled(5))
            .batch_size(batch)
            .transforms(eval_chain(64))
            .build()
            .unwrap()
    };
    let mut by_name = build(SplitKey::Name, 32);
    let a = bytes_by_sample(&mut by_name);
    let paths = by_name.stats().paths;
    eprintln!("paths by name: {paths:?}");
    assert!(paths.hardware > 0 && paths.cuda > 0, "{paths:?}");
    assert_eq!(a.len(), data.len());
    let b = bytes_by_sample(&mut build(SplitKey::Name, 13));
    let differ = a.iter().filter(|(i, x)| b.get(i) != Some(*x)).count();
    assert_eq!(
        differ,
        0,
        "{differ} of {} samples changed with the batch size",
        a.len()
    );
    // The same comparison by position finds samples that changed decoder.
    let c = bytes_by_sample(&mut build(SplitKey::Position, 32));
    let d = bytes_by_sample(&mut build(SplitKey::Position, 13));
    let moved = c.iter().filter(|(i, x)| d.get(i) != Some(*x)).count();
    eprintln!(
        "by position, {moved} of {} samples changed with the batch size",
        c.len()
    );
    assert!(moved > 0);
}

#[test]
fn region_decoding_gives_the_same_batches_up_to_rounding_and_stays_deterministic() {
    let device = gpu_test_device!("region_decoding_gives_the_same_batches");
    let data: Arc<dyn Dataset> = Arc::new(photos(6));
    let build = |region: bool, stages: usize| {
        gpu_loader(&device, data.clone(), 3)
            .gpu_stages(stages)
            .region_decode(region)
            .decoder(DecoderOptions {
                split: Split::Fixed { hw_load: 0.3 },
                cuda: CudaWorkers {
                    threads: 3,
                    ..CudaWorkers::default()
                },
                ..DecoderOptions::for_loader()
            })
            .sampler(Sampler::shuffled(4))
            .batch_size(32)
            .transform(RandomResizedCrop::new(48, 40))
            .transform(HorizontalFlip(0.5))
            .build()
            .unwrap()
    };
    let mut whole_loader = build(false, 2);
    let whole = run_epoch(&mut whole_loader, 1);
    let mut loader = build(true, 2);
    let region = run_epoch(&mut loader, 1);
    let (w, r) = (whole_loader.stats(), loader.stats());
    eprintln!(
        "paths: whole {:?}, region {:?}; {} of {} images decoded as regions",
        w.paths, r.paths, r.regions, r.samples
    );
    assert_eq!(w.regions, 0);
    assert_eq!(
        (r.paths.cuda, r.paths.hardware),
        (w.paths.cuda, w.paths.hardware)
    );
    // Most CUDA-backend images: a random-resized crop rarely reads a whole image.
    assert!(r.regions * 2 >= r.paths.cuda && r.regions > 0, "{r:?}");
    // Deterministic: the same batches with 3 stages.
    let mut three = build(true, 3);
    assert_same(
        &region,
        &run_epoch(&mut three, 1),
        "region decoding, 2 and 3 stages",
    );
    let (worst, differ, total) = byte_difference(&whole, &region);
    eprintln!(
        "region against whole decoding: {differ} of {total} bytes differ, by at most {worst}"
    );
    // The same decoded pixels; sample positions rounded from a shifted origin.
    assert!(worst <= 2, "largest difference {worst}");
    assert!(differ * 20 < total, "{differ} of {total} bytes differ");
}

#[test]
fn gpu_bad_samples_follow_the_policy() {
    let device = gpu_test_device!("gpu_bad_samples_follow_the_policy");
    let folder = demo_folder();
    let n = folder.len();
    let bad = (0..n)
        .find(|&i| folder.name(i).contains("truncated"))
        .unwrap();
    let data: Arc<dyn Dataset> = Arc::new(folder);
    let build = |policy| {
        gpu_loader(&device, data.clone(), 2)
            .batch_size(4)
            .bad_samples(policy)
            .transforms(eval_chain(32))
            .build()
            .unwrap()
    };
    let mut skip = build(BadSamplePolicy::Skip);
    let s = run_epoch(&mut skip, 0);
    assert_eq!(s.iter().map(|b| b.indices.len()).sum::<usize>(), n - 1);
    let st = skip.stats();
    assert_eq!((st.bad, st.skipped), (1, 1));
    assert!(
        st.first_errors[0].reason.to_string().contains("truncated"),
        "{}",
        st.first_errors[0]
    );
    assert!(
        st.paths.hardware + st.paths.cuda > 0 && st.paths.cpu > 0,
        "{:?}",
        st.paths
    );

    let mut sub = build(BadSamplePolicy::Substitute);
    let s = run_epoch(&mut sub, 0);
    assert_eq!(s[bad / 4].indices.len(), 4);
    assert_eq!(sub.stats().substituted, 1);

    let mut fail = build(BadSamplePolicy::Fail);
    let r: Vec<_> = fail.epoch(0).collect();
    assert_eq!(r.len(), bad / 4 + 1);
    assert!(is_bad_sample(r.last().unwrap()));
}

#[test]
fn gpu_memory_is_reused_and_consumers_order_on_the_ready_event() {
    let device = gpu_test_device!("gpu_memory_is_reused_and_consumers_order_on_the_ready_event");
    let data: Arc<dyn Dataset> = Arc::new(photos(3));
    let mut l = gpu_loader(&device, data, 3)
        .sampler(Sampler::shuffled(1))
        .batch_size(8)
        .prefetch(3)
        .transforms(train_chain(128))
        .build()
        .unwrap();
    let consumer = Stream::new(&device).unwrap();
    let mut sums = Vec::new();
    let mut held_after_first = None;
    for epoch in 0..6 {
        for b in l.epoch(epoch) {
            let mut b = b.unwrap();
            let Images::Device(t) = &b.images else {
                panic!("GPU loader made a host tensor")
            };
            // Read on our own stream after the ready event, then hand the batch back while
            // the read may still be queued.
            b.wait_on(&consumer).unwrap();
            let bytes = t.to_host_bytes(&consumer).unwrap();
            sums.push(bytes.iter().map(|&x| u64::from(x)).sum::<u64>());
            b.record_stream(&consumer).unwrap();
        }
        if epoch == 0 {
            held_after_first = Some((
                l.batch_pool_stats().unwrap(),
                l.decoder_pool_stats().unwrap(),
            ));
        }
    }
    let (b0, d0) = held_after_first.unwrap();
    let (b1, d1) = (
        l.batch_pool_stats().unwrap(),
        l.decoder_pool_stats().unwrap(),
    );
    eprintln!("batch pool after epoch 0: {b0:?}\nafter epoch 5: {b1:?}");
    eprintln!("decoder pool after epoch 0: {d0:?}\nafter epoch 5: {d1:?}");
    // Batches alive at once are bounded by the ready queue, one per stage in flight and the
    // one the consumer holds, so the pool never needs more buffers than that, however long
    // the run (the 1,000,000-image soak in bench/results shows it flat).
    let bound = 3 + 3 + 1;
    assert!(
        b1.allocations as usize <= bound,
        "batch pool: {b0:?} -> {b1:?}"
    );
    assert!(b1.reuses > b0.reuses);
    assert_eq!(b1.buffers_in_use, 0, "every batch returned its memory");
    assert!(sums.iter().all(|&s| s > 0));
    let st = l.stats();
    assert_eq!(st.samples, 6 * 3 * photos(1).len() as u64);
    assert!(st.decode_us > 0 && st.transform_us > 0 && st.read_us > 0);
}

#[test]
fn the_device_cache_serves_the_same_batches_without_decoding_again() {
    let device =
        gpu_test_device!("the_device_cache_serves_the_same_batches_without_decoding_again");
    let data: Arc<dyn Dataset> = Arc::new(demo_folder());
    let n = data.len();
    // Which decoder takes an image depends on the batch it is in (the engines' share), and
    // the engines and the CUDA backend differ in the last bit; with no share for the engines
    // every image takes the same path in the cache's batches and in the loader's.
    let one_path = DecoderOptions {
        split: Split::Fixed { hw_load: 0.0 },
        ..DecoderOptions::default()
    };
    // The cache holds whole images, so the loader it is compared with decodes whole images too
    // (region decoding shifts sample positions by the region's origin: the last bit moves).
    let build = |cache: Option<DeviceCache>| {
        let b = gpu_loader(&device, data.clone(), 2)
            .decoder(one_path.clone())
            .region_decode(false)
            .sampler(Sampler::shuffled(5))
            .seed(3)
            .batch_size(6)
            .transforms(train_chain(48));
        match cache {
            Some(c) => b.device_cache(c),
            None => b,
        }
        .build()
        .unwrap()
    };
    // Cached at full size, the cache is an exact copy of the decoded images, so every batch
    // equals the decoding loader's, bit for bit.
    let mut plain = build(None);
    let mut full = build(Some(DeviceCache::shorter_side(u32::MAX)));
    assert_eq!(
        full.cached_images(),
        Some(n - 1),
        "the truncated file is not cached"
    );
    let decodable: u64 = (0..n)
        .filter(|&i| !data.name(i).contains("truncated"))
        .count() as u64;
    assert!(full.cache_bytes().unwrap() > decodable * 100 * 100 * 3);
    for epoch in 0..2 {
        let a = run_epoch(&mut plain, epoch);
        let b = run_epoch(&mut full, epoch);
        assert_same(&a, &b, &format!("epoch {epoch}"));
    }
    let st = full.stats();
    assert_eq!(
        st.decode_us, 0,
        "nothing decoded after the cache was filled"
    );
    assert_eq!(st.bad, 2, "the truncated file, once per epoch");

    // At a smaller size: the shapes of the chain, new augmentations every epoch.
    let mut small = build(Some(DeviceCache::shorter_side(64)));
    assert!(small.cache_bytes().unwrap() < full.cache_bytes().unwrap() / 4);
    let e0 = run_epoch(&mut small, 0);
    let e1 = run_epoch(&mut small, 1);
    assert_eq!(e0[0].shape, [6, 3, 48, 48]);
    assert!(
        e0.iter()
            .zip(&e1)
            .any(|(x, y)| x.bytes != y.bytes || x.indices != y.indices)
    );

    // Too large: an error that says how much, before anything is allocated.
    let err = gpu_loader(&device, data.clone(), 1)
        .transforms(train_chain(48))
        .device_cache(DeviceCache {
            shorter_side: 64,
            max_bytes: Some(10_000),
        })
        .build()
        .err()
        .unwrap();
    match err {
        LoaderError::CacheTooLarge {
            needed,
            available,
            images,
        } => {
            assert_eq!(available, 10_000);
            assert_eq!(images, n);
            assert_eq!(Some(needed), small.cache_bytes());
        }
        other => panic!("expected CacheTooLarge, got {other}"),
    }
}

#[test]
fn a_small_core_budget_decodes_on_the_engines_alone_and_repeats_its_batches() {
    let device = gpu_test_device!("a_small_core_budget_decodes_on_the_engines_alone");
    let data: Arc<dyn Dataset> = Arc::new(photos(6));
    let build = |cores: usize| {
        Loader::builder_shared(data.clone())
            .device(&device)
            .cores(cores)
            .sampler(Sampler::shuffled(4))
            .batch_size(16)
            .transforms(eval_chain(64))
            .build()
            .unwrap()
    };
    let mut small = build(2);
    let a = run_epoch(&mut small, 1);
    let paths = small.stats().paths;
    // What the engines take, they all take: only what they cannot decode goes elsewhere.
    let mut engines_only = Loader::builder_shared(data.clone())
        .device(&device)
        .decoder(gm_loader::CorePlan::for_cores(2).decoder)
        .sampler(Sampler::shuffled(4))
        .batch_size(16)
        .transforms(eval_chain(64))
        .build()
        .unwrap();
    let b = run_epoch(&mut engines_only, 1);
    assert_same(&a, &b, "a 2-core budget is the engines-only decoder");
    let mut again = build(3);
    assert_same(&a, &run_epoch(&mut again, 1), "the same plan for 3 cores");
    let mut large = build(16);
    run_epoch(&mut large, 1);
    let big = large.stats().paths;
    eprintln!("paths: 2 cores {paths:?}, 16 cores {big:?}");
    assert!(
        paths.hardware > 0 && paths.hardware >= big.hardware,
        "{paths:?} {big:?}"
    );
    assert!(paths.cuda <= big.cuda, "{paths:?} {big:?}");
    assert!(
        big.cuda > 0,
        "from 10 cores the CUDA backend takes a share: {big:?}"
    );
}

/// A streaming WebDataset on the GPU: bit-identical across worker and stage counts, in the
/// stream's order, resumable mid-epoch, and close to the CPU path image by image (the same
/// indices seed the same crops and flips; the decoders differ).
#[test]
fn gpu_streamed_batches_repeat_resume_and_match_the_cpu_path() {
    use super::stream_loader::{epoch_named, options, temp_dir, write_shards};
    use gm_loader::shards::WebDatasetStream;
    use gm_storage::Storage;
    let device = gpu_test_device!("gpu_streamed_batches_repeat_resume_and_match_the_cpu_path");
    let dir = temp_dir("gpu");
    let (shards, files) = write_shards(&dir, 300_000);
    let build = |gpu: bool, workers: usize, stages: usize| {
        let stream = WebDatasetStream::from_shards(shards.clone(), options(), Storage::default());
        let b = Loader::streaming(stream.unwrap())
            .workers(workers)
            .gpu_stages(stages)
            .transforms(train_chain(64));
        let b = if gpu { b.device(&device) } else { b.cpu() };
        b.build().unwrap()
    };
    let mut one = build(true, 1, 1);
    assert!(one.on_gpu(), "{}", one.placement());
    let a = epoch_named(one.epoch(3));
    let b = epoch_named(build(true, 4, 3).epoch(3));
    let strip = |v: &[(Seen, Vec<String>)]| v.iter().map(|x| x.1.clone()).collect::<Vec<_>>();
    assert_eq!(strip(&a), strip(&b));
    for (x, y) in a.iter().zip(&b) {
        assert!(
            x.0.bytes == y.0.bytes,
            "batch {} differs across worker counts",
            x.0.position
        );
    }
    assert_eq!(a.iter().map(|x| x.1.len()).sum::<usize>(), files.len());
    // Resume after 2 batches.
    let mut first = build(true, 2, 2);
    let mut ep = first.epoch(3);
    for _ in 0..2 {
        ep.next().unwrap().unwrap();
    }
    let state = ep.state();
    drop(ep);
    let rest = epoch_named(build(true, 3, 1).resume(&state).unwrap());
    assert_eq!(strip(&rest), strip(&a[2..]));
    for (x, y) in rest.iter().zip(&a[2..]) {
        assert!(
            x.0.bytes == y.0.bytes,
            "resumed batch {} differs",
            x.0.position
        );
    }
    // The CPU path: same samples and labels per batch; images close (f16, normalized).
    let c = epoch_named(build(false, 2, 1).epoch(3));
    assert_eq!(strip(&c), strip(&a));
    let mut worst = 0f32;
    for (g, c) in a.iter().zip(&c) {
        assert_eq!(g.0.labels, c.0.labels);
        let (g, c) = (f16s(&g.0.bytes), f16s(&c.0.bytes));
        let mean = g.iter().zip(&c).map(|(x, y)| (x - y).abs()).sum::<f32>() / g.len() as f32;
        worst = worst.max(mean);
    }
    eprintln!("streamed GPU vs CPU: worst batch mean |difference| {worst:.4} (normalized units)");
    assert!(worst < 0.05, "worst batch mean difference {worst}");
    std::fs::remove_dir_all(&dir).unwrap();
}

fn f16s(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(2)
        .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())
        .collect()
}

/// A chain cut into passes (a rotation after RandomResizedCrop, then a random equalize) on
/// the GPU stage: the pre-pass launch into the kernel's scratch, then the final pass; the
/// same batches for any worker and stage count, and close to the CPU path's (the decoders
/// differ, the passes do not).
#[test]
fn gpu_chains_in_several_passes_repeat_and_are_close_to_the_cpu_pipeline() {
    let device =
        gpu_test_device!("gpu_chains_in_several_passes_repeat_and_are_close_to_the_cpu_pipeline");
    let data: Arc<dyn Dataset> = Arc::new(demo_folder());
    let build = |gpu: bool, workers: usize, stages: usize| {
        let b = Loader::builder_shared(data.clone())
            .batch_size(6)
            .workers(workers)
            .transforms(warp_after_resize_chain(80));
        let b = if gpu {
            b.device(&device).gpu_stages(stages)
        } else {
            b.cpu()
        };
        b.build().unwrap()
    };
    let g = run_epoch(&mut build(true, 1, 1), 2);
    assert_same(
        &g,
        &run_epoch(&mut build(true, 4, 3), 2),
        "workers and stages",
    );
    let c = run_epoch(&mut build(false, 2, 1), 2);
    assert_eq!(g.len(), c.len());
    let slot = 80 * 80 * 3;
    let mut worst = f64::INFINITY;
    for (gb, cb) in g.iter().zip(&c) {
        assert_eq!(gb.indices, cb.indices);
        for k in 0..gb.indices.len() {
            worst = worst.min(psnr_u8(
                &gb.bytes[k * slot..(k + 1) * slot],
                &cb.bytes[k * slot..(k + 1) * slot],
            ));
        }
    }
    eprintln!("worst PSNR {worst:.1} dB");
    // Equalize turns the decoders' small differences into larger ones in a few images.
    assert!(worst >= 25.0, "worst PSNR {worst:.1} dB");
}

/// CPU lists of the loader's threads in this process, from /proc.
fn loader_thread_cpus() -> Vec<Vec<usize>> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for t in tasks.flatten() {
        let name = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        if !(name.starts_with("gm-loader-read") || name.starts_with("gm-loader-stag")) {
            continue;
        }
        let status = std::fs::read_to_string(t.path().join("status")).unwrap_or_default();
        if let Some(list) = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        {
            out.push(gm_loader::parse_cpulist(list).unwrap());
        }
    }
    out
}

/// Where the GPU's NUMA node holds part of the host's CPUs, the loader's threads run there;
/// on a one-node host they keep every CPU. Batches are the same either way.
#[test]
fn loader_threads_run_on_the_gpus_numa_node() {
    let device = gpu_test_device!("loader_threads_run_on_the_gpus_numa_node");
    let info = device.info().unwrap();
    let node = gm_loader::NodeCpus::of_gpu(&info.pci_bus_id);
    let allowed = gm_loader::allowed_cpus().unwrap();
    eprintln!(
        "GPU {} at {}: {}; this process may use CPUs {}",
        info.ordinal,
        info.pci_bus_id,
        node.as_ref()
            .map_or("no NUMA placement (one node)".into(), |n| n.describe()),
        gm_loader::format_cpulist(&allowed)
    );
    let expected = node.as_ref().map_or(allowed.clone(), |n| n.cpus.clone());
    let data: Arc<dyn Dataset> = Arc::new(photos(4));
    let build = |numa: bool| {
        Loader::builder_shared(data.clone())
            .device(&device)
            .workers(3)
            .numa_placement(numa)
            .sampler(Sampler::shuffled(5))
            .batch_size(8)
            .transforms(train_chain(64))
            .build()
            .unwrap()
    };
    let mut placed = build(true);
    match &node {
        Some(n) => assert!(
            placed.placement().contains(&n.describe()),
            "{}",
            placed.placement()
        ),
        None => assert!(
            !placed.placement().contains("NUMA"),
            "{}",
            placed.placement()
        ),
    }
    let mut epoch = placed.epoch(0);
    let first = epoch.next().unwrap().unwrap();
    let cpus = loader_thread_cpus();
    assert!(cpus.len() >= 3, "{} loader threads seen", cpus.len());
    for c in &cpus {
        assert_eq!(c, &expected, "a loader thread's CPUs");
    }
    let mut a = vec![seen(&first)];
    a.extend(epoch.map(|b| seen(&b.unwrap())));
    let mut unplaced = build(false);
    assert_same(
        &a,
        &run_epoch(&mut unplaced, 0),
        "placed and unplaced loaders",
    );
}
