//! Batches whose images differ in size (detection's resize to a shorter side): padded to the
//! largest image (rounded up to a multiple, filled) or packed one after another, each image
//! the same as in a ragged batch, and equal to the sample loaded alone on the CPU (close to it
//! on the GPU, whose decoders split a batch differently), on the CPU and on the GPU.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use std::path::{Path, PathBuf};

use gm_cuda::DType;
use gm_loader::{Batch, BatchSizes, Images, InMemory, Loader, LoaderBuilder, LoaderError, Sampler};
use gm_transforms::{
    Compose, HorizontalFlip, Layout, Normalize, RandomErasing, RandomShortestSize, Resize, ToDtype,
};

fn media() -> PathBuf {
    std::env::var_os("GM_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/media"))
}

/// Real photos of two sizes and aspect ratios, repeated.
fn photos() -> InMemory {
    let dir = media().join("jpeg");
    let names = [
        "baboon-201x151-420.jpg",
        "baboon-12x10-420.jpg",
        "baboon-201x151-422.jpg",
    ];
    InMemory::new((0..9).map(|i| {
        let name = names[i % names.len()];
        let bytes = std::fs::read(dir.join(name)).unwrap();
        (format!("{i}-{name}"), bytes, i as i64)
    }))
}

/// A detection chain: a random shorter side (so even same-size photos differ), a flip,
/// normalized floats.
fn chain(dtype: DType, layout: Layout) -> Compose {
    let c = Compose::new()
        .then(RandomShortestSize::new(&[24, 32, 40], Some(90)).unwrap())
        .then(HorizontalFlip(0.5))
        .then(Resize::ShorterMax {
            shorter: 30,
            max_size: 70,
        })
        .then(ToDtype(dtype, layout));
    if dtype == DType::U8 {
        c
    } else {
        c.then(Normalize::IMAGENET)
    }
}

fn host(b: &Batch, on_gpu: bool) -> Vec<u8> {
    match &b.images {
        Images::Host(h) => h.data.clone(),
        Images::Device(t) => {
            assert!(on_gpu);
            let stream = gm_cuda::Stream::new(t.device()).unwrap();
            b.wait_on(&stream).unwrap();
            t.to_host_bytes(&stream).unwrap()
        }
    }
}

/// Every sample of epoch `epoch` alone (batches of one), by dataset index.
fn alone(
    builder: impl Fn() -> LoaderBuilder,
    dtype: DType,
    layout: Layout,
    epoch: u64,
) -> Vec<(Vec<usize>, Vec<u8>)> {
    let mut loader = builder()
        .batch_size(1)
        .transforms(chain(dtype, layout))
        .build()
        .unwrap();
    let mut by_index = vec![(Vec::new(), Vec::new()); 9];
    let on_gpu = loader.on_gpu();
    for b in loader.epoch(epoch) {
        let b = b.unwrap();
        by_index[b.indices[0]] = (b.images.shape()[1..].to_vec(), host(&b, on_gpu));
    }
    by_index
}

fn element(dtype: DType, bytes: &[u8]) -> f32 {
    match dtype {
        DType::U8 => f32::from(bytes[0]),
        DType::F16 => half::f16::from_le_bytes([bytes[0], bytes[1]]).to_f32(),
        DType::BF16 => half::bf16::from_le_bytes([bytes[0], bytes[1]]).to_f32(),
        _ => f32::from_le_bytes(bytes[..4].try_into().unwrap()),
    }
}

/// Each sample of epoch `epoch` from ragged batches of four, by dataset index, after checking
/// that a ragged batch is its images one after another. On the CPU each image equals the
/// sample alone; on the GPU a batch of four splits its images between the decoders
/// differently from a batch of one (the engines, nvJPEG's CUDA backend and the CPU differ
/// by a step here and there), so there each image is only close to it.
fn ragged(
    builder: &impl Fn() -> LoaderBuilder,
    dtype: DType,
    layout: Layout,
    on_gpu: bool,
) -> Vec<(Vec<usize>, Vec<u8>)> {
    let e = dtype.size();
    let alone = alone(builder, dtype, layout, 3);
    let mut loader = builder()
        .batch_size(4)
        .batch_sizes(BatchSizes::Ragged)
        .transforms(chain(dtype, layout))
        .build()
        .unwrap();
    let mut by_index = vec![(Vec::new(), Vec::new()); 9];
    for b in loader.epoch(3) {
        let b = b.unwrap();
        let data = host(&b, on_gpu);
        let mut end = 0;
        for (k, &i) in b.indices.iter().enumerate() {
            let shape = b.image_shape(k).unwrap();
            assert_eq!(shape, alone[i].0, "sample {i}");
            assert_eq!(b.offsets[k] * e, end);
            let len = shape.iter().product::<usize>() * e;
            let image = data[end..end + len].to_vec();
            end += len;
            if on_gpu {
                let n = len / e;
                let mean = (0..n)
                    .map(|j| {
                        let a = element(dtype, &image[j * e..]);
                        let b = element(dtype, &alone[i].1[j * e..]);
                        f64::from((a - b).abs())
                    })
                    .sum::<f64>()
                    / n as f64;
                let step = if dtype == DType::U8 {
                    1.0
                } else {
                    1.0 / (255.0 * 0.224)
                };
                assert!(
                    mean < 2.0 * step,
                    "sample {i}: mean difference {mean} from alone"
                );
            } else {
                assert!(image == alone[i].1, "sample {i} differs from alone");
            }
            by_index[i] = (shape, image);
        }
        assert_eq!(b.images.shape(), &[end / e]);
    }
    by_index
}

/// Checks ragged batches of `builder` against each sample alone, then padded batches against
/// the ragged ones.
fn check_sizes(builder: impl Fn() -> LoaderBuilder, on_gpu: bool) {
    for (dtype, layout) in [(DType::F32, Layout::Chw), (DType::U8, Layout::Hwc)] {
        let e = dtype.size();
        let reference = ragged(&builder, dtype, layout, on_gpu);
        // Padded: each image the top-left corner of its slot, the rest the fill.
        let mut loader = builder()
            .batch_size(4)
            .batch_sizes(BatchSizes::Padded {
                multiple: 32,
                fill: -2.0,
            })
            .transforms(chain(dtype, layout))
            .build()
            .unwrap();
        let mut distinct = std::collections::BTreeSet::new();
        for b in loader.epoch(3) {
            let b = b.unwrap();
            let data = host(&b, on_gpu);
            let shape = b.images.shape().to_vec();
            let (ch, hh, ww) = match layout {
                Layout::Chw => (shape[1], shape[2], shape[3]),
                Layout::Hwc => (shape[3], shape[1], shape[2]),
            };
            let max_h = b.sizes.iter().map(|s| s.0).max().unwrap() as usize;
            let max_w = b.sizes.iter().map(|s| s.1).max().unwrap() as usize;
            assert_eq!(
                (hh, ww),
                (max_h.next_multiple_of(32), max_w.next_multiple_of(32))
            );
            let slot = ch * hh * ww;
            for (k, &i) in b.indices.iter().enumerate() {
                let (h, w) = (b.sizes[k].0 as usize, b.sizes[k].1 as usize);
                distinct.insert((h, w));
                assert_eq!(b.image_shape(k).unwrap(), reference[i].0, "sample {i}");
                assert_eq!(b.offsets[k], k * slot);
                for c in 0..ch {
                    for y in 0..hh {
                        for x in 0..ww {
                            let at = |cw: usize, chh: usize| match layout {
                                Layout::Chw => c * cw * chh + y * cw + x,
                                Layout::Hwc => (y * cw + x) * ch + c,
                            };
                            let got = &data[(k * slot + at(ww, hh)) * e..][..e];
                            if x < w && y < h {
                                let want = &reference[i].1[at(w, h) * e..][..e];
                                assert_eq!(got, want, "sample {i} ({c}, {y}, {x})");
                            } else {
                                let want = if dtype == DType::U8 { 0.0 } else { -2.0 };
                                assert_eq!(element(dtype, got), want, "padding of {i}");
                            }
                        }
                    }
                }
            }
        }
        assert!(distinct.len() >= 3, "too few sizes to test: {distinct:?}");
    }
}

fn cpu_builder() -> LoaderBuilder {
    Loader::builder(photos())
        .cpu()
        .workers(2)
        .seed(11)
        .sampler(Sampler::shuffled(7))
}

#[test]
fn cpu_batches_of_many_sizes_hold_each_image_as_alone() {
    check_sizes(cpu_builder, false);
}

#[test]
fn gpu_batches_of_many_sizes_hold_each_image_as_alone() {
    let device = gm_cuda::gpu_test_device!("gpu_batches_of_many_sizes_hold_each_image_as_alone");
    let builder = || {
        Loader::builder(photos())
            .device(&device)
            .seed(11)
            .sampler(Sampler::shuffled(7))
    };
    check_sizes(builder, true);
}

/// A uniform loader refuses a batch whose images differ, naming the sample; erasing and
/// mixing, which draw over one size, are refused with many sizes.
#[test]
fn sizes_that_cannot_be_batched_are_reported() {
    let mut loader = cpu_builder()
        .batch_size(4)
        .transforms(chain(DType::U8, Layout::Chw))
        .build()
        .unwrap();
    let err = loader.epoch(0).find_map(Result::err).unwrap();
    assert!(
        matches!(err, LoaderError::Plan(_)) && err.to_string().contains("batch_sizes"),
        "{err}"
    );
    let err = cpu_builder()
        .batch_sizes(BatchSizes::DETECTION)
        .transforms(chain(DType::F32, Layout::Chw))
        .random_erasing(RandomErasing::default())
        .build()
        .err()
        .unwrap();
    assert!(err.to_string().contains("many sizes"), "{err}");
}
