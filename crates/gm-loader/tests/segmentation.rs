//! Semantic segmentation: label maps decoded as PIL reads them (tests/media/segmentation,
//! make_masks.py: 8-bit palette and grey, 4-bit palette, 1-bit grey), bad maps refused with
//! the reason, images paired with their maps, and the loaders moving each map with its image
//! (a RandomCrop's padding filled with the ignore index).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use std::path::{Path, PathBuf};

use gm_loader::segmentation::{SegmentationError, SegmentationFolder, label_map};
use gm_loader::{Dataset, Loader, LoaderBuilder, Sampler};
use gm_transforms::{Compose, HorizontalFlip, RandomCrop, RandomResize, SampleRng};
use serde_json::Value;

fn media() -> PathBuf {
    std::env::var_os("GM_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/media"))
}

fn fnv1a(data: &[u8]) -> String {
    let mut h: u64 = 0xCBF2_9CE4_8422_2325;
    for &b in data {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01B3);
    }
    format!("{h:016x}")
}

#[test]
fn label_maps_decode_as_pil_reads_them() {
    let dir = media().join("segmentation");
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("expected.json")).unwrap()).unwrap();
    let expected = expected.as_object().unwrap();
    assert_eq!(expected.len(), 4);
    for (name, want) in expected {
        let path = dir.join("masks").join(name);
        let m = label_map(&std::fs::read(&path).unwrap(), &path).unwrap();
        assert_eq!(
            (u64::from(m.width), u64::from(m.height)),
            (
                want["width"].as_u64().unwrap(),
                want["height"].as_u64().unwrap()
            ),
            "{name}"
        );
        let sum: u64 = m.data.iter().map(|&v| u64::from(v)).sum();
        assert_eq!(sum, want["sum"].as_u64().unwrap(), "{name}");
        assert_eq!(fnv1a(&m.data), want["fnv1a"].as_str().unwrap(), "{name}");
    }
}

#[test]
fn bad_label_maps_are_refused_with_the_reason() {
    let dir = media().join("segmentation/bad");
    for (file, why) in [
        ("rgb.png", "not a label map"),
        ("deep.png", "16-bit"),
        ("cut.png", "decode"),
    ] {
        let path = dir.join(file);
        let err = label_map(&std::fs::read(&path).unwrap(), &path).unwrap_err();
        let text = err.to_string();
        assert!(text.contains(file) && text.contains(why), "{text}");
    }
    let path = Path::new("x.png");
    assert!(label_map(b"\x89PNG\r\n\x1a\n", path).is_err());
    assert!(label_map(b"", path).is_err());
}

#[test]
fn folders_pair_maps_with_images() {
    let jpeg = media().join("jpeg");
    let d = SegmentationFolder::open(&jpeg, &media().join("segmentation/masks"), "").unwrap();
    assert_eq!(d.len(), 4);
    let names: Vec<String> = (0..4).map(|i| d.name(i)).collect();
    assert!(names[0].ends_with("baboon-12x10-420.jpg"), "{names:?}");
    assert!(names.windows(2).all(|w| w[0] < w[1]));
    for i in 0..4 {
        let m = d.mask(i).unwrap();
        let path = d.mask_path(i).unwrap();
        assert_eq!(m, label_map(&std::fs::read(path).unwrap(), path).unwrap());
        let mut buf = Vec::new();
        d.read(i, &mut buf).unwrap();
        assert_eq!(&buf[..2], &[0xFF, 0xD8], "a JPEG");
    }
    // A map without its image is named.
    let err = SegmentationFolder::open(&jpeg, &media().join("segmentation/bad"), "").unwrap_err();
    assert!(matches!(err, SegmentationError::Pairing { .. }), "{err}");
    assert!(err.to_string().contains("cut.png") && err.to_string().contains("no image"));
    // A suffix is stripped from the map's stem (Cityscapes-like names).
    let tmp = std::env::temp_dir().join(format!("gm-seg-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::copy(
        media().join("segmentation/masks/baboon-12x10-420.png"),
        tmp.join("baboon-12x10-420_labelIds.png"),
    )
    .unwrap();
    let d = SegmentationFolder::open(&jpeg, &tmp, "_labelIds").unwrap();
    assert!(d.name(0).ends_with("baboon-12x10-420.jpg"));
    std::fs::remove_dir_all(&tmp).unwrap();
}

/// The segmentation references' chain: a random scale, a flip, a crop padded where the image
/// is smaller, the masks' padding the ignore index 255.
fn chain() -> Compose {
    Compose::new()
        .then(RandomResize::new(60, 200).unwrap())
        .then(HorizontalFlip(0.5))
        .then(RandomCrop {
            pad_if_needed: true,
            mask_fill: 255,
            ..RandomCrop::new(96, 96)
        })
}

/// Each image's moved masks in a batch (`LoaderBuilder::masks`): (planes, width, height,
/// bytes) in batch order.
fn batch_masks(batch: &gm_loader::Batch) -> Vec<(u32, u32, u32, Vec<u8>)> {
    let m = batch.masks.as_ref().expect("the loader moves masks");
    let bytes = m.data.to_host_bytes(None).unwrap();
    m.parts
        .iter()
        .map(|p| {
            let data = bytes[p.offset..p.offset + p.bytes()].to_vec();
            (p.planes, p.width, p.height, data)
        })
        .collect()
}

fn check_moves_maps(builder: LoaderBuilder, d: &SegmentationFolder) {
    let mut loader = builder
        .masks(true)
        .sampler(Sampler::shuffled(3))
        .seed(3)
        .batch_size(2)
        .transforms(chain())
        .build()
        .unwrap();
    let (mut padded, mut seen) = (0, 0);
    for epoch in 0..6 {
        for batch in loader.epoch(epoch) {
            let batch = batch.unwrap();
            assert_eq!(batch.images.shape()[1..], [96, 96, 3]);
            let moved = batch_masks(&batch);
            for (k, &i) in batch.indices.iter().enumerate() {
                let src = d.mask(i).unwrap();
                let mut rng = SampleRng::new(3, epoch, i as u64);
                let (_, _, alone) = chain().plan_post(src.width, src.height, &mut rng).unwrap();
                let g = &batch.geometry[k];
                assert_eq!(*g, alone.geometry, "epoch {epoch} sample {i}");
                let m = g.mask(&src).unwrap();
                assert_eq!((m.width, m.height), (96, 96));
                assert_eq!(
                    moved[k],
                    (1, 96, 96, m.data.clone()),
                    "epoch {epoch} sample {i}"
                );
                let classes: std::collections::BTreeSet<u8> = src.data.iter().copied().collect();
                assert!(m.data.iter().all(|v| *v == 255 || classes.contains(v)));
                padded += usize::from(m.data.contains(&255) && !classes.contains(&255));
                seen += 1;
            }
        }
    }
    assert_eq!(seen, 6 * 4);
    assert!(padded > 0, "no crop needed padding");
}

fn folder() -> SegmentationFolder {
    SegmentationFolder::open(
        &media().join("jpeg"),
        &media().join("segmentation/masks"),
        "",
    )
    .unwrap()
}

#[test]
fn cpu_loader_moves_each_map_with_its_image() {
    let d = folder();
    check_moves_maps(Loader::builder(d.clone()).cpu().workers(2), &d);
}

#[test]
fn gpu_loader_moves_each_map_with_its_image() {
    let device = gm_cuda::gpu_test_device!("gpu_loader_moves_each_map_with_its_image");
    let d = folder();
    check_moves_maps(Loader::builder(d.clone()).device(&device), &d);
}

/// Through a rotation (a warp, moved on the host then copied by the launch) and into batches
/// of many sizes (each image's masks its own size), masks are what the geometry gives.
fn check_warped_maps(builder: LoaderBuilder, d: &SegmentationFolder) {
    use gm_transforms::{RandomRotation, Resize};
    let chain = || {
        Compose::new()
            .then(RandomRotation::new(30.0).unwrap().mask_fill(255))
            .then(Resize::Shorter(80))
    };
    let mut loader = builder
        .masks(true)
        .batch_sizes(gm_loader::BatchSizes::Ragged)
        .seed(4)
        .batch_size(3)
        .transforms(chain())
        .build()
        .unwrap();
    let mut seen = 0;
    for epoch in 0..2 {
        for batch in loader.epoch(epoch) {
            let batch = batch.unwrap();
            let moved = batch_masks(&batch);
            for (k, &i) in batch.indices.iter().enumerate() {
                let m = batch.geometry[k].mask(&d.mask(i).unwrap()).unwrap();
                let (h, w) = batch.sizes[k];
                assert_eq!((m.width, m.height), (w, h));
                assert_eq!(moved[k], (1, w, h, m.data), "epoch {epoch} sample {i}");
                seen += 1;
            }
        }
    }
    assert_eq!(seen, 2 * d.len());
}

#[test]
fn cpu_loader_moves_maps_through_warps_into_ragged_batches() {
    let d = folder();
    check_warped_maps(Loader::builder(d.clone()).cpu().workers(2), &d);
}

#[test]
fn gpu_loader_moves_maps_through_warps_into_ragged_batches() {
    let device =
        gm_cuda::gpu_test_device!("gpu_loader_moves_maps_through_warps_into_ragged_batches");
    let d = folder();
    check_warped_maps(Loader::builder(d.clone()).device(&device), &d);
}

/// A map whose size is not its image's is that sample's error, named, on both loaders; the
/// GPU loader's host workers, which plan each sample's masks from the map's size, leave it to
/// the stage to find.
fn check_map_of_another_size(builder: LoaderBuilder) {
    let mut loader = builder
        .masks(true)
        .batch_size(4)
        .transforms(chain())
        .build()
        .unwrap();
    let mut seen = 0;
    for batch in loader.epoch(0) {
        let batch = batch.unwrap();
        for (k, m) in batch_masks(&batch).iter().enumerate() {
            assert_eq!((m.0, m.1, m.2), (1, 96, 96), "sample {}", batch.indices[k]);
        }
        seen += batch.indices.len();
    }
    assert_eq!(seen, 3);
    let stats = loader.stats();
    assert_eq!(stats.bad, 1);
    let why = stats.first_errors[0].to_string();
    assert!(
        why.contains("baboon-201x151-422")
            && why.contains("masks of 12x10 for an image of 201x151"),
        "{why}"
    );
}

/// Four images, the map of one (201x151, 4:2:2) swapped for the 12x10 image's.
fn folder_with_a_map_of_another_size(tag: &str) -> (SegmentationFolder, PathBuf) {
    let tmp = std::env::temp_dir().join(format!("gm-seg-size-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let masks = media().join("segmentation/masks");
    for entry in std::fs::read_dir(&masks).unwrap() {
        let name = entry.unwrap().file_name();
        std::fs::copy(masks.join(&name), tmp.join(&name)).unwrap();
    }
    std::fs::copy(
        masks.join("baboon-12x10-420.png"),
        tmp.join("baboon-201x151-422.png"),
    )
    .unwrap();
    let d = SegmentationFolder::open(&media().join("jpeg"), &tmp, "").unwrap();
    (d, tmp)
}

#[test]
fn cpu_loader_names_a_map_of_another_size() {
    let (d, tmp) = folder_with_a_map_of_another_size("cpu");
    check_map_of_another_size(Loader::builder(d).cpu().workers(2));
    std::fs::remove_dir_all(&tmp).unwrap();
}

#[test]
fn gpu_loader_names_a_map_of_another_size() {
    let device = gm_cuda::gpu_test_device!("gpu_loader_names_a_map_of_another_size");
    let (d, tmp) = folder_with_a_map_of_another_size("gpu");
    check_map_of_another_size(Loader::builder(d).device(&device));
    std::fs::remove_dir_all(&tmp).unwrap();
}
