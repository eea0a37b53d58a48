//! COCO: masks equal to pycocotools' (tests/media/coco/masks.json, make_masks.py), and a
//! small instances file over committed photos read as torchvision's CocoDetection wrapped for
//! transforms v2 reads it (expected.json, make_instances.py), with the bad annotation named.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use std::path::{Path, PathBuf};

use gm_loader::Dataset;
use gm_loader::coco::{CocoAnnotations, CocoDataset, CocoError, EmptyImages, Rle, polygon_mask};
use serde_json::Value;

fn media() -> PathBuf {
    std::env::var_os("GM_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/media"))
}

fn json(name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(media().join("coco").join(name)).unwrap())
        .unwrap()
}

fn u32s(v: &Value) -> Vec<u32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as u32)
        .collect()
}

/// Row-major pixels back to COCO's column-major runs.
fn runs_of(mask: &[u8], h: u32, w: u32) -> Vec<u32> {
    let (h, w) = (h as usize, w as usize);
    let column_major: Vec<u8> = (0..w * h).map(|k| mask[(k % h) * w + k / h]).collect();
    let mut counts = Vec::new();
    let (mut cur, mut n) = (0u8, 0u32);
    for v in column_major {
        if v != cur {
            counts.push(n);
            (cur, n) = (v, 0);
        }
        n += 1;
    }
    counts.push(n);
    counts
}

#[test]
fn masks_equal_pycocotools() {
    let cases = json("masks.json");
    let cases = cases.as_array().unwrap();
    assert_eq!(cases.len(), 240);
    for (i, c) in cases.iter().enumerate() {
        let (w, h) = (
            c["width"].as_u64().unwrap() as u32,
            c["height"].as_u64().unwrap() as u32,
        );
        let text = c["counts"].as_str().unwrap();
        let area = c["area"].as_u64().unwrap();
        let rle = match c.get("polygons") {
            Some(polys) => {
                let rles: Vec<Rle> = polys
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|p| {
                        let xy: Vec<f64> = p
                            .as_array()
                            .unwrap()
                            .iter()
                            .map(|v| v.as_f64().unwrap())
                            .collect();
                        polygon_mask(&xy, h, w).unwrap()
                    })
                    .collect();
                Rle::union(&rles).unwrap().unwrap()
            }
            None => Rle::new(h, w, u32s(&c["uncompressed"])).unwrap(),
        };
        assert_eq!(rle.to_text(), text, "case {i} ({w}x{h})");
        assert_eq!(rle.area(), area, "case {i}");
        let back = Rle::from_text(h, w, text).unwrap();
        assert_eq!(back.counts, rle.counts, "case {i}");
        let pixels = back.decode();
        assert_eq!(pixels.iter().map(|&v| u64::from(v)).sum::<u64>(), area);
        assert_eq!(
            runs_of(&pixels, h, w),
            Rle::union(&[back]).unwrap().unwrap().counts
        );
    }
}

#[test]
fn broken_masks_are_refused_with_a_reason() {
    assert!(Rle::from_text(4, 4, "5").is_err(), "runs short of 16");
    assert!(
        Rle::from_text(4, 4, "0\u{7f}").is_err(),
        "a character COCO does not use"
    );
    assert!(Rle::from_text(4, 4, "`").is_err(), "a count cut short");
    assert!(Rle::new(2, 2, vec![1, 2]).is_err());
    assert!(
        polygon_mask(&[1.0, 2.0, 3.0, 4.0], 5, 5).is_err(),
        "two points"
    );
    assert!(polygon_mask(&[1.0, 2.0, 3.0, f64::NAN, 0.0, 0.0], 5, 5).is_err());
}

#[test]
fn masks_kept_after_their_first_rasterizing_give_the_same_targets() {
    let (file, root) = (media().join("coco/instances.json"), media().join("jpeg"));
    let open = || CocoDataset::open(&file, &root, EmptyImages::Keep).unwrap();
    let fresh = open().mask_cache(0);
    let targets = |d: &CocoDataset, i: usize| d.targets(i).map_err(|e| e.to_string());
    let check = |d: &CocoDataset, what: &str| {
        for pass in 0..2 {
            for i in 0..d.len() {
                let at = format!("{what}, pass {pass}, image {i}");
                assert_eq!(targets(d, i), targets(&fresh, i), "{at}");
                let bare = |d: &CocoDataset| d.targets_without_masks(i).map_err(|e| e.to_string());
                assert_eq!(bare(d), bare(&fresh), "{at}: without masks");
                let masks = |d: &CocoDataset| d.masks(i).map_err(|e| e.to_string());
                assert_eq!(masks(d), masks(&fresh), "{at}: the loader's");
            }
        }
    };
    let kept = open();
    assert_eq!(kept.mask_cache_bytes(), 0);
    check(&kept, "the default budget");
    let all = kept.mask_cache_bytes();
    assert!(all > 0, "every image's masks kept");
    assert_eq!(fresh.mask_cache_bytes(), 0);
    // A budget short of every image's masks keeps some, and the targets stay the same.
    let some = open().mask_cache(all - 1);
    check(&some, "a smaller budget");
    assert!(some.mask_cache_bytes() < all);
}

#[test]
fn coco_targets_equal_torchvisions() {
    let root = media().join("jpeg");
    let file = media().join("coco/instances.json");
    let expected = json("expected.json");
    let targets = expected["targets"].as_array().unwrap();
    let all = CocoDataset::open(&file, &root, EmptyImages::Keep).unwrap();
    assert_eq!(all.len(), 4);
    for (k, want) in targets.iter().enumerate() {
        let t = all.targets(k).unwrap();
        assert_eq!(t.image_id, want["image_id"].as_i64().unwrap());
        let Some(boxes) = want.get("boxes") else {
            assert!(t.boxes.boxes.is_empty() && t.crowd_boxes.boxes.is_empty());
            assert_eq!(all.label(k), -1);
            continue;
        };
        // torchvision lists crowd objects among the others; gm keeps them apart.
        let crowd: Vec<bool> = want["iscrowd"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64() == Some(1))
            .collect();
        let pick = |is_crowd: bool| -> Vec<usize> {
            (0..crowd.len()).filter(|&i| crowd[i] == is_crowd).collect()
        };
        let rows = |v: &Value, idx: &[usize]| -> Vec<[f32; 4]> {
            idx.iter()
                .map(|&i| std::array::from_fn(|c| v[i][c].as_f64().unwrap() as f32))
                .collect()
        };
        let (single, crowds) = (pick(false), pick(true));
        assert_eq!(t.boxes.boxes, rows(boxes, &single), "image {k}");
        assert_eq!(t.crowd_boxes.boxes, rows(boxes, &crowds), "image {k}");
        let canvas = &want["canvas"];
        let canvas = (
            canvas[1].as_u64().unwrap() as u32,
            canvas[0].as_u64().unwrap() as u32,
        );
        assert_eq!(t.boxes.canvas, canvas);
        let labels: Vec<i64> = want["labels"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_i64().unwrap())
            .collect();
        assert_eq!(
            t.labels,
            single.iter().map(|&i| labels[i]).collect::<Vec<_>>()
        );
        assert_eq!(
            t.crowd_labels,
            crowds.iter().map(|&i| labels[i]).collect::<Vec<_>>()
        );
        let masks = want["masks"].as_array().unwrap();
        let text = |m: &Option<Vec<Rle>>| -> Vec<String> {
            m.as_ref().unwrap().iter().map(Rle::to_text).collect()
        };
        let want_text = |idx: &[usize]| -> Vec<String> {
            idx.iter()
                .map(|&i| masks[i].as_str().unwrap().to_string())
                .collect()
        };
        assert_eq!(text(&t.masks), want_text(&single), "image {k} masks");
        if !crowds.is_empty() {
            assert_eq!(
                text(&t.crowd_masks),
                want_text(&crowds),
                "image {k} crowd masks"
            );
        }
        let kps = &want["keypoints"];
        match &t.keypoints {
            None => assert!(single.iter().all(|&i| kps[i].is_null()), "image {k}"),
            Some(p) => {
                let mut flat = Vec::new();
                for &i in &single {
                    for trio in kps[i].as_array().unwrap().chunks(3) {
                        let v: Vec<f64> = trio.iter().map(|x| x.as_f64().unwrap()).collect();
                        flat.push(([v[0] as f32, v[1] as f32], v[2] > 0.0));
                    }
                }
                assert_eq!(t.keypoints_per_object, 5);
                let got: Vec<([f32; 2], bool)> = p
                    .points
                    .iter()
                    .copied()
                    .zip(p.visible.iter().copied())
                    .collect();
                assert_eq!(got, flat, "image {k} keypoints");
            }
        }
    }
    // The fourth image's box reaches 39 pixels past its edge: a bad sample, named.
    let err = all.targets(3).unwrap_err();
    let CocoError::Annotation {
        image_id,
        annotation_id,
        ..
    } = &err
    else {
        panic!("{err}");
    };
    assert_eq!((*image_id, *annotation_id), (14, 401));
    let text = err.to_string();
    assert!(
        text.contains("instances.json") && text.contains("baboon-201x151-440.jpg"),
        "{text}"
    );
    assert!(text.contains("outside its 201x151 image"), "{text}");
    // Without empty images: image 13 left out; reads give the photos' bytes.
    let kept = CocoDataset::open(&file, &root, EmptyImages::Drop).unwrap();
    assert_eq!(kept.len(), 3);
    assert_eq!(
        (0..3)
            .map(|i| kept.image(i).unwrap().id)
            .collect::<Vec<_>>(),
        vec![11, 12, 14]
    );
    let mut buf = Vec::new();
    kept.read(1, &mut buf).unwrap();
    assert_eq!(
        buf,
        std::fs::read(root.join("baboon-201x151-422.jpg")).unwrap()
    );
}

#[test]
fn malformed_files_name_the_file_and_the_problem() {
    let p = Path::new("bad.json");
    let cases: [(&str, &str); 4] = [
        ("{", "not a COCO annotation file"),
        (
            r#"{"images": [{"id": 1, "file_name": "a", "width": 2, "height": 2}, {"id": 1, "file_name": "b", "width": 2, "height": 2}]}"#,
            "appears twice",
        ),
        (
            r#"{"images": [], "annotations": [{"id": 5, "image_id": 9, "category_id": 1, "bbox": [0,0,1,1]}]}"#,
            "does not list",
        ),
        (r#"{"images": 3}"#, "not a COCO annotation file"),
    ];
    for (text, why) in cases {
        let err = CocoAnnotations::parse(p, text.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(err.contains("bad.json") && err.contains(why), "{err}");
    }
    // Per object: an unknown category, keypoints of the wrong length, runs of another size.
    let file = r#"{"images": [{"id": 1, "file_name": "a.jpg", "width": 4, "height": 3}],
      "categories": [{"id": 1, "name": "p", "keypoints": ["a", "b"]}],
      "annotations": [OBJ]}"#;
    let objects = [
        (
            r#"{"id": 7, "image_id": 1, "category_id": 2, "bbox": [0,0,1,1]}"#,
            "category 2",
        ),
        (
            r#"{"id": 7, "image_id": 1, "category_id": 1, "bbox": [0,0,1,1], "keypoints": [1,1,2]}"#,
            "3 numbers for a category of 2",
        ),
        (
            r#"{"id": 7, "image_id": 1, "category_id": 1, "bbox": [0,0,1,1], "segmentation": {"size": [4, 4], "counts": [16]}}"#,
            "runs of 4x4 on a 4x3",
        ),
        (
            r#"{"id": 7, "image_id": 1, "category_id": 1, "bbox": [0,0,-1,1]}"#,
            "negative size",
        ),
    ];
    for (obj, why) in objects {
        let a = CocoAnnotations::parse(p, file.replace("OBJ", obj).as_bytes()).unwrap();
        let err = a.objects(0).unwrap_err().to_string();
        assert!(err.contains("annotation 7") && err.contains(why), "{err}");
    }
}

/// The loader's batches carry each image's geometry: the same as planning that image alone
/// from (seed, epoch, index), so its boxes, keypoints and masks move with its pixels.
fn check_batches_carry_geometry(builder: gm_loader::LoaderBuilder, dataset: &CocoDataset) {
    check_batches_carry_geometry_of(builder, dataset, 3);
}

/// [`check_batches_carry_geometry`] over a dataset of `n` samples.
fn check_batches_carry_geometry_of(
    builder: gm_loader::LoaderBuilder,
    dataset: &CocoDataset,
    n: usize,
) {
    use gm_transforms::{Compose, HorizontalFlip, RandomResizedCrop, SampleRng};
    let chain = || {
        Compose::new()
            .then(RandomResizedCrop::new(64, 48))
            .then(HorizontalFlip(0.5))
    };
    let mut loader = builder
        .sampler(gm_loader::Sampler::shuffled(2))
        .seed(5)
        .batch_size(2)
        .transforms(chain())
        .build()
        .unwrap();
    let mut seen = 0;
    for epoch in 0..3 {
        for batch in loader.epoch(epoch) {
            let batch = batch.unwrap();
            assert_eq!(batch.geometry.len(), batch.indices.len());
            for (k, &i) in batch.indices.iter().enumerate() {
                let im = dataset.image(i).unwrap();
                assert_eq!(batch.geometry[k].canvas(), (64, 48));
                if dataset.targets(i).is_err() && im.width == 0 {
                    // A shard sample without a record: its size is the decoded image's, which
                    // the record would have given.
                    seen += 1;
                    continue;
                }
                let mut rng = SampleRng::new(5, epoch, i as u64);
                let (_, _, alone) = chain().plan_post(im.width, im.height, &mut rng).unwrap();
                assert_eq!(
                    batch.geometry[k], alone.geometry,
                    "epoch {epoch}, sample {i}"
                );
                assert_eq!(batch.geometry[k].canvas(), (64, 48));
                if let Ok(t) = dataset.targets(i) {
                    let moved = batch.geometry[k].boxes(&t.boxes).unwrap();
                    assert_eq!(
                        (moved.canvas, moved.boxes.len()),
                        ((64, 48), t.boxes.boxes.len())
                    );
                    for m in t.masks.iter().flatten() {
                        let mask = batch.geometry[k].mask(&m.to_mask()).unwrap();
                        assert_eq!((mask.width, mask.height), (64, 48));
                    }
                }
                seen += 1;
            }
        }
    }
    assert_eq!(seen, n * 3);
}

/// The instances fixture over committed photos, images without objects dropped.
fn fixture() -> CocoDataset {
    let file = media().join("coco/instances.json");
    CocoDataset::open(&file, &media().join("jpeg"), EmptyImages::Drop).unwrap()
}

#[test]
fn cpu_batches_carry_each_images_geometry() {
    let d = fixture();
    let builder = gm_loader::Loader::builder(d.clone()).cpu().workers(2);
    check_batches_carry_geometry(builder, &d);
}

#[test]
fn gpu_batches_carry_each_images_geometry() {
    let device = gm_cuda::gpu_test_device!("gpu_batches_carry_each_images_geometry");
    let d = fixture();
    let builder = gm_loader::Loader::builder(d.clone()).device(&device);
    check_batches_carry_geometry(builder, &d);
}

/// A chain that draws from each sample's boxes (RandomIoUCrop): the loader plans every image
/// with its own boxes, as planning it alone with them does, the sanitize step's kept objects
/// are sound on the output canvas, the kept objects' masks move with the pixels (the dropped
/// ones' are left out), and an image whose annotations are bad is a bad sample.
fn check_iou_crops(builder: gm_loader::LoaderBuilder, dataset: &CocoDataset) {
    use gm_transforms::targets::SanitizeBoundingBoxes;
    use gm_transforms::{Compose, RandomIoUCrop, Resize, SampleRng};
    let chain = || {
        Compose::new()
            .then(RandomIoUCrop::default())
            .then(SanitizeBoundingBoxes::default())
            .then(Resize::Exact(64, 48))
    };
    let mut loader = builder
        .masks(true)
        .targets(true)
        .seed(9)
        .batch_size(2)
        .transforms(chain())
        .build()
        .unwrap();
    let (mut cropped, mut seen, mut dropped) = (0, 0, 0);
    let on_gpu = loader.on_gpu();
    for epoch in 0..8 {
        for batch in loader.epoch(epoch) {
            let batch = batch.unwrap();
            let masks = batch.masks.as_ref().expect("the loader moves masks");
            let bytes = masks.data.to_host_bytes(None).unwrap();
            // A GPU loader's stages upload the targets; a CPU one's stay on the host.
            assert_eq!(batch.device_targets.is_some(), on_gpu);
            let uploaded = batch.device_targets.as_ref().map(|d| {
                let stream = gm_cuda::Stream::new(d.data.device()).unwrap();
                (d.data.to_host_bytes(&stream).unwrap(), &d.places)
            });
            for (k, &i) in batch.indices.iter().enumerate() {
                let im = dataset.image(i).unwrap();
                let boxes = dataset.boxes(i).unwrap().unwrap();
                let mut rng = SampleRng::new(9, epoch, i as u64);
                let (_, _, alone) = chain()
                    .plan_with_boxes(im.width, im.height, Some(&boxes), &mut rng)
                    .unwrap();
                let g = &batch.geometry[k];
                assert_eq!(*g, alone.geometry, "epoch {epoch}, sample {i}");
                cropped += usize::from(g.steps.len() > 2);
                let moved = g.boxes(&boxes).unwrap();
                for (b, keep) in moved.boxes.iter().zip(g.kept(&boxes).unwrap()) {
                    if keep {
                        assert!(b[0] < b[2] && b[1] < b[3] && b[2] <= 64.0 && b[3] <= 48.0);
                    }
                }
                let kept = g.kept(&boxes).unwrap();
                let runs = dataset.targets(i).unwrap().masks.unwrap();
                let want: Vec<u8> = runs
                    .iter()
                    .zip(&kept)
                    .filter(|(_, k)| **k)
                    .flat_map(|(r, _)| g.mask(&r.to_mask()).unwrap().data)
                    .collect();
                let part = masks.parts[k];
                assert_eq!((part.width, part.height), (64, 48));
                assert_eq!(part.planes as usize, kept.iter().filter(|k| **k).count());
                assert_eq!(
                    bytes[part.offset..part.offset + part.bytes()],
                    want[..],
                    "epoch {epoch}, sample {i}"
                );
                // The targets the stages moved: the kept objects' boxes and labels on the
                // output canvas, the masks left to the loader's launch.
                let t = &batch.targets.as_ref().expect("the loader moves targets")[k];
                let t = t.as_ref().unwrap();
                let kept_boxes: Vec<[f32; 4]> = moved
                    .boxes
                    .iter()
                    .zip(&kept)
                    .filter(|(_, k)| **k)
                    .map(|(b, _)| *b)
                    .collect();
                let labels = dataset.targets(i).unwrap().labels;
                let kept_labels: Vec<i64> = labels
                    .iter()
                    .zip(&kept)
                    .filter(|(_, k)| **k)
                    .map(|(l, _)| *l)
                    .collect();
                assert_eq!(t.image_id, im.id);
                assert_eq!(t.boxes.as_ref().unwrap().boxes, kept_boxes);
                assert_eq!(t.labels, kept_labels);
                assert_eq!(t.masks, Some((part.planes as usize, Vec::new())));
                assert_eq!(t.canvas, (64, 48));
                if let Some((data, places)) = &uploaded {
                    let p = places[k].as_ref().expect("uploaded targets");
                    let at = |place: &gm_loader::TargetPlace, size: usize| {
                        let n: usize = place.shape.iter().product();
                        data[place.offset..place.offset + n * size].to_vec()
                    };
                    let b = p.boxes.as_ref().unwrap();
                    assert_eq!(b.shape, vec![kept_boxes.len(), 4]);
                    let want: Vec<u8> = kept_boxes
                        .iter()
                        .flatten()
                        .flat_map(|v| v.to_ne_bytes())
                        .collect();
                    assert_eq!(at(b, 4), want, "epoch {epoch}, sample {i}");
                    let want: Vec<u8> = kept_labels.iter().flat_map(|v| v.to_ne_bytes()).collect();
                    assert_eq!(at(&p.labels, 8), want);
                    assert_eq!(p.crowd_boxes.shape, vec![t.crowd_boxes.boxes.len(), 4]);
                    assert_eq!(p.crowd_labels.shape, vec![t.crowd_labels.len()]);
                    match (&t.keypoints, &p.keypoints, &p.keypoints_visible) {
                        (Some((k, per)), Some(xy), Some(vis)) => {
                            assert_eq!(xy.shape, vec![k.points.len() / per, *per, 2]);
                            let want: Vec<u8> = k
                                .points
                                .iter()
                                .flatten()
                                .flat_map(|v| v.to_ne_bytes())
                                .collect();
                            assert_eq!(at(xy, 4), want);
                            let want: Vec<u8> = k.visible.iter().map(|&v| u8::from(v)).collect();
                            assert_eq!(at(vis, 1), want);
                        }
                        (None, None, None) => {}
                        other => panic!("keypoints {other:?}"),
                    }
                }
                dropped += kept.iter().filter(|k| !**k).count();
                seen += 1;
            }
        }
    }
    // The image with a bad annotation cannot be cropped around its boxes: a bad sample,
    // named, skipped every epoch.
    assert_eq!(seen, 8 * 2);
    let stats = loader.stats();
    assert_eq!(stats.bad, 8);
    let why = stats.first_errors[0].to_string();
    assert!(why.contains("annotation 401"), "{why}");
    assert!(cropped > 0, "no sample was cropped");
    assert!(dropped > 0, "no object was dropped");
    assert!(stats.targets_us > 0);
    if loader.on_gpu() {
        // Every good sample's masks went as spans and were written on the device.
        assert_eq!(stats.masks_from_spans, 8 * 2);
    }
}

#[test]
fn cpu_iou_crops_draw_from_each_samples_boxes() {
    let d = fixture();
    let builder = gm_loader::Loader::builder(d.clone()).cpu().workers(2);
    check_iou_crops(builder, &d);
}

#[test]
fn gpu_iou_crops_draw_from_each_samples_boxes() {
    let device = gm_cuda::gpu_test_device!("gpu_iou_crops_draw_from_each_samples_boxes");
    let d = fixture();
    let builder = gm_loader::Loader::builder(d.clone()).device(&device);
    check_iou_crops(builder, &d);
}

/// The instances fixture written as WebDataset shards (two, with their indexes): each photo
/// with its record (`{"image": .., "annotations": [..]}`), then a sample without a record and
/// one whose record is not JSON. Gives the shards' pattern.
fn write_coco_shards(dir: &Path) -> String {
    let file = json("instances.json");
    let mut w = gm_loader::shards::ShardWriter::new(dir, "coco", 40_000).unwrap();
    for im in file["images"].as_array().unwrap() {
        let annotations: Vec<&Value> = file["annotations"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a["image_id"] == im["id"])
            .collect();
        let record = serde_json::json!({ "image": im, "annotations": annotations });
        let name = im["file_name"].as_str().unwrap();
        let jpeg = std::fs::read(media().join("jpeg").join(name)).unwrap();
        let key = gm_loader::shards::sample_key(name.trim_end_matches(".jpg"));
        let record = serde_json::to_vec(&record).unwrap();
        w.add(&key, &[("jpg", &jpeg), ("json", &record)]).unwrap();
    }
    let jpeg = std::fs::read(media().join("jpeg/baboon-201x151-420.jpg")).unwrap();
    w.add("no-record", &[("jpg", &jpeg)]).unwrap();
    w.add(
        "broken-record",
        &[("jpg", &jpeg), ("json", b"{\"image\": {")],
    )
    .unwrap();
    let shards = w.finish().unwrap();
    assert!(shards.len() >= 2, "{shards:?}");
    let names: Vec<String> = shards.iter().map(|p| p.display().to_string()).collect();
    names.join("::")
}

#[test]
fn coco_records_in_shards_give_the_folders_targets() {
    let dir = std::env::temp_dir().join(format!("gm-coco-shards-{}", std::process::id()));
    let pattern = write_coco_shards(&dir);
    let file = media().join("coco/instances.json");
    let folder = CocoDataset::open(&file, &media().join("jpeg"), EmptyImages::Keep).unwrap();
    let open = |empty| {
        let shards = gm_loader::shards::WebDataset::builder(&pattern).unwrap();
        CocoDataset::from_shards(shards, &file, empty).unwrap()
    };
    let sharded = open(EmptyImages::Keep);
    assert_eq!(sharded.len(), folder.len() + 2);
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for k in 0..folder.len() {
        assert_eq!(sharded.image(k), folder.image(k), "sample {k}");
        assert_eq!(sharded.label(k), folder.label(k), "sample {k}");
        match (sharded.boxes(k), folder.boxes(k)) {
            (Ok(s), Ok(f)) => assert_eq!(s, f, "sample {k}"),
            (Err(s), Err(_)) => assert!(s.to_string().contains("#baboon-201x151-440"), "{s}"),
            (s, f) => panic!("sample {k}: {s:?} against {f:?}"),
        }
        match (sharded.targets(k), folder.targets(k)) {
            (Ok(s), Ok(f)) => assert_eq!(s, f, "sample {k}"),
            (
                Err(CocoError::Annotation {
                    file,
                    annotation_id,
                    issue,
                    ..
                }),
                Err(CocoError::Annotation {
                    annotation_id: want_id,
                    issue: want_issue,
                    ..
                }),
            ) => {
                // The bad box of the fourth image, named by its sample.
                assert_eq!((annotation_id, &issue), (want_id, &want_issue));
                let name = file.display().to_string();
                assert!(
                    name.contains("coco-000") && name.contains("#baboon-201x151-440"),
                    "{name}"
                );
            }
            (s, f) => panic!("sample {k}: {s:?} against {f:?}"),
        }
        sharded.read(k, &mut a).unwrap();
        folder.read(k, &mut b).unwrap();
        assert!(a == b, "sample {k}: its bytes");
    }
    let batch: Vec<usize> = (0..sharded.len()).collect();
    let mut bufs = vec![Vec::new(); batch.len()];
    assert!(
        sharded
            .read_batch(&batch, &mut bufs)
            .iter()
            .all(Result::is_ok)
    );
    assert_eq!(
        bufs[1],
        std::fs::read(media().join("jpeg/baboon-201x151-422.jpg")).unwrap()
    );
    // The samples without a usable record: bad samples naming the sample and the reason.
    for (k, why) in [(4, "no .json member"), (5, "its .json")] {
        let err = sharded.targets(k).unwrap_err().to_string();
        assert!(err.contains("#") && err.contains(why), "{err}");
        assert!(sharded.boxes(k).is_err());
        let key = if k == 4 { "no-record" } else { "broken-record" };
        assert!(
            sharded.name(k).ends_with(&format!("#{key}")),
            "{}",
            sharded.name(k)
        );
    }
    // Images without objects left out, as from the folder; bad records kept (to be reported).
    let kept = open(EmptyImages::Drop);
    let ids: Vec<i64> = (0..kept.len()).map(|i| kept.image(i).unwrap().id).collect();
    assert_eq!(ids, vec![11, 12, 14, 4, 5]);
    // Through the image loader: every image loads (a bad record fails only its targets), and
    // each carries its own geometry.
    let loader = gm_loader::Loader::builder(kept.clone()).cpu().workers(2);
    check_batches_carry_geometry_of(loader, &kept, 5);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn mask_sources_write_the_kept_masks_as_masks_gives_them() {
    let d = fixture();
    let mut checked = 0;
    for i in 0..d.len() {
        let all = match d.masks(i) {
            Ok(Some(all)) => all,
            Ok(None) => continue,
            // The fixture's bad annotation: the source is refused the same way.
            Err(e) => {
                let refused = d.mask_source(i).err().expect("a bad sample's source");
                assert_eq!(refused.to_string(), e.to_string());
                continue;
            }
        };
        let keep: Vec<bool> = (0..all.planes)
            .map(|k| (k + i as u32).is_multiple_of(2))
            .collect();
        let source = d.mask_source(i).unwrap().expect("masks");
        assert_eq!(source.shape(), (all.width, all.height, all.planes));
        let want = all.select(&keep);
        let runs = source.runs(Some(&keep)).expect("COCO masks as runs");
        assert_eq!(runs.to_stack(), want, "sample {i}: spans of 1s");
        let mut out = vec![7u8; want.data.len()];
        source.write(Some(&keep), &mut out).unwrap();
        assert_eq!(out, want.data, "sample {i}");
        checked += 1;
    }
    assert!(checked > 0);
}
