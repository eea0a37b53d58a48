//! The loader on the CPU path (no GPU needed): datasets, order, determinism, resume, shards,
//! bad samples. The same properties are checked on the GPU in `gpu.rs`.

use std::sync::Arc;

use super::common::*;
use gm_codec::jpeg::{ImageErrorKind, decode_host};
use gm_loader::{
    BadSamplePolicy, Dataset, ImageFolder, Images, ListFile, Loader, LoaderError, LoaderState,
    SampleErrorKind, Sampler,
};
use gm_transforms::cpu::{HostImage, fused, fused_passes};
use gm_transforms::{Matrix, PixelFormat, SampleRng};

#[test]
fn image_folder_sorts_classes_and_files_and_skips_other_files() {
    let dir = std::env::temp_dir().join(format!("gm-loader-folder-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for (p, bytes) in [
        ("zebra/b.JPG", &b"x"[..]),
        ("zebra/a.jpeg", b"x"),
        ("zebra/deep/c.png", b"x"),
        ("ant/z.webp", b"x"),
        ("ant/notes.txt", b"x"),
        ("moth/readme", b"x"),
    ] {
        let p = dir.join(p);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
    let f = ImageFolder::new(&dir).unwrap();
    assert_eq!(f.classes(), ["ant", "moth", "zebra"]);
    let got: Vec<(String, i64)> = (0..f.len())
        .map(|i| {
            let rel = f.path(i).strip_prefix(&dir).unwrap().display().to_string();
            (rel, f.label(i))
        })
        .collect();
    assert_eq!(
        got,
        [
            ("ant/z.webp".to_string(), 0),
            ("zebra/a.jpeg".into(), 2),
            ("zebra/b.JPG".into(), 2),
            ("zebra/deep/c.png".into(), 2)
        ]
    );
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        ImageFolder::new(&dir).is_err(),
        "a missing root is an error"
    );
}

#[test]
fn list_files_resolve_paths_and_name_bad_lines() {
    let dir = std::env::temp_dir().join(format!("gm-loader-list-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let list = dir.join("train.txt");
    std::fs::write(&list, "# comment\n\na/b c.jpg 3\n/abs/x.jpg -1\n").unwrap();
    let l = ListFile::new(&list).unwrap();
    assert_eq!(l.len(), 2);
    assert_eq!(l.name(0), dir.join("a/b c.jpg").display().to_string());
    assert_eq!((l.label(0), l.label(1)), (3, -1));
    assert_eq!(l.name(1), "/abs/x.jpg");
    std::fs::write(&list, "ok.jpg 1\nnolabel.jpg\n").unwrap();
    let e = ListFile::new(&list).unwrap_err().to_string();
    assert!(e.contains("train.txt:2"), "{e}");
    std::fs::write(&list, "ok.jpg one\n").unwrap();
    let e = ListFile::new(&list).unwrap_err().to_string();
    assert!(e.contains(":1") && e.contains("\"one\""), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn batches_come_in_sampler_order_and_hold_the_right_images() {
    let data = photos(2);
    let n = data.len();
    let reference = photos(2);
    let mut loader = Loader::builder(data)
        .cpu()
        .batch_size(5)
        .workers(3)
        .transforms(eval_chain(48))
        .build()
        .unwrap();
    assert!(!loader.on_gpu());
    assert_eq!(loader.batches_per_epoch(), n.div_ceil(5));
    let seen = run_epoch(&mut loader, 0);
    assert_eq!(seen.len(), n.div_ceil(5));
    let all: Vec<usize> = seen.iter().flat_map(|s| s.indices.clone()).collect();
    assert_eq!(all, (0..n).collect::<Vec<_>>());
    for (p, s) in seen.iter().enumerate() {
        assert_eq!(s.position, p);
        assert_eq!(s.shape, [s.indices.len(), 48, 48, 3]);
        for (k, &i) in s.indices.iter().enumerate() {
            assert_eq!(s.labels[k], reference.label(i));
        }
    }
    // The pixels of one slot are the decode and transform of that sample, computed here.
    let (s, k) = (&seen[1], 3);
    let i = s.indices[k];
    let mut bytes = Vec::new();
    reference.read(i, &mut bytes).unwrap();
    let img = decode_host(&bytes, u64::MAX, true).unwrap();
    let (op, spec) = eval_chain(48)
        .plan_image(img.width, img.height, &mut SampleRng::new(0, 0, i as u64))
        .unwrap();
    let mut want = vec![0u8; spec.image_bytes()];
    let src = HostImage {
        data: &img.rgb,
        chroma: &[],
        pitch: img.width as usize * 3,
        width: img.width,
        height: img.height,
        format: PixelFormat::Rgb8,
        matrix: Matrix::default(),
        full_range: true,
        orientation: Default::default(),
        chroma_filter: Default::default(),
    };
    fused(&src, &op, &spec, &mut want);
    let slot = spec.image_bytes();
    assert_eq!(&s.bytes[k * slot..(k + 1) * slot], &want[..]);

    let mut dl = Loader::builder(photos(2))
        .cpu()
        .batch_size(5)
        .drop_last(true)
        .transforms(eval_chain(32))
        .build()
        .unwrap();
    let seen = run_epoch(&mut dl, 0);
    assert_eq!(seen.len(), n / 5);
    assert!(seen.iter().all(|s| s.indices.len() == 5));
    let st = dl.stats();
    assert_eq!(st.samples, (n / 5 * 5) as u64);
    assert!(st.wall_us > 0 && st.images_per_second() > 0.0);
    assert!((0.0..=1.0).contains(&st.wait_fraction()), "{st:?}");
}

#[test]
fn batches_are_identical_whatever_the_worker_count() {
    let run = |workers: usize, prefetch: usize| {
        let mut l = Loader::builder(photos(2))
            .cpu()
            .sampler(Sampler::shuffled(11))
            .seed(5)
            .batch_size(6)
            .workers(workers)
            .prefetch(prefetch)
            .transforms(train_chain(40))
            .build()
            .unwrap();
        (run_epoch(&mut l, 3), run_epoch(&mut l, 4))
    };
    let (a3, a4) = run(1, 1);
    let (b3, b4) = run(5, 3);
    assert_same(&a3, &b3, "epoch 3");
    assert_same(&a4, &b4, "epoch 4");
    assert_ne!(a3, a4, "epochs differ in order and augmentation");
    let order3: Vec<usize> = a3.iter().flat_map(|s| s.indices.clone()).collect();
    let mut sorted = order3.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..sorted.len()).collect::<Vec<_>>());
    assert_ne!(order3, sorted, "shuffled");
    assert!(matches!(&a3[0].shape[..], [6, 3, 40, 40]));
}

#[test]
fn resuming_yields_exactly_the_batches_that_would_have_followed() {
    let build = || {
        Loader::builder(photos(2))
            .cpu()
            .sampler(Sampler::shuffled(2))
            .seed(9)
            .batch_size(4)
            .workers(2)
            .transforms(train_chain(32))
            .build()
            .unwrap()
    };
    let mut full = build();
    let everything = run_epoch(&mut full, 7);
    let mut first = build();
    let mut epoch = first.epoch(7);
    let head: Vec<Seen> = (0..3)
        .map(|_| seen(&epoch.next().unwrap().unwrap()))
        .collect();
    let saved = epoch.state().to_json();
    drop(epoch);
    drop(first);
    let state = LoaderState::from_json(&saved).unwrap();
    assert_eq!((state.epoch, state.next_batch), (7, 3));
    let mut second = build();
    let tail: Vec<Seen> = second
        .resume(&state)
        .unwrap()
        .map(|b| seen(&b.unwrap()))
        .collect();
    assert_same(&head, &everything[..3], "before the save");
    assert_same(&tail, &everything[3..], "resumed");

    let other = Loader::builder(photos(2))
        .cpu()
        .batch_size(3)
        .build()
        .unwrap();
    let mut other = other;
    assert!(matches!(other.resume(&state), Err(LoaderError::Resume(_))));
    assert!(LoaderState::from_json("{\"epoch\": 1}").is_err());
}

#[test]
fn ranks_get_disjoint_shards_that_cover_the_dataset() {
    let n = photos(1).len();
    let world = 3;
    let mut all = Vec::new();
    let mut per_rank = Vec::new();
    for rank in 0..world {
        let mut l = Loader::builder(photos(1))
            .cpu()
            .sampler(Sampler::shuffled(4).sharded(rank, world, false).unwrap())
            .batch_size(2)
            .transforms(eval_chain(16))
            .build()
            .unwrap();
        let idx: Vec<usize> = run_epoch(&mut l, 1)
            .iter()
            .flat_map(|s| s.indices.clone())
            .collect();
        per_rank.push(idx.len());
        all.extend(idx);
    }
    assert!(
        per_rank.iter().all(|&c| c == n.div_ceil(world)),
        "{per_rank:?}"
    );
    all.sort_unstable();
    let padded = all.len() - n;
    all.dedup();
    assert_eq!(all, (0..n).collect::<Vec<_>>());
    assert_eq!(padded, n.div_ceil(world) * world - n);
}

#[test]
fn bad_samples_are_skipped_substituted_or_fail_the_epoch() {
    let folder = demo_folder();
    let n = folder.len();
    let truncated = (0..n)
        .find(|&i| folder.name(i).contains("truncated"))
        .unwrap();
    let shared: Arc<dyn Dataset> = Arc::new(folder);
    let build = |policy| {
        Loader::builder_shared(shared.clone())
            .cpu()
            .batch_size(4)
            .workers(3)
            .bad_samples(policy)
            .transforms(eval_chain(24))
            .build()
            .unwrap()
    };

    let mut skip = build(BadSamplePolicy::Skip);
    let seen = run_epoch(&mut skip, 0);
    let all: Vec<usize> = seen.iter().flat_map(|s| s.indices.clone()).collect();
    assert_eq!(all.len(), n - 1);
    assert!(!all.contains(&truncated));
    assert_eq!(
        seen[truncated / 4].indices.len(),
        3,
        "the batch is one shorter"
    );
    let st = skip.stats();
    assert_eq!((st.bad, st.skipped, st.substituted), (1, 1, 0));
    assert_eq!(st.first_errors[0].index, truncated);
    assert!(st.first_errors[0].name.contains("truncated.jpeg"));
    assert!(
        st.first_errors[0].reason.to_string().contains("truncated"),
        "{}",
        st.first_errors[0]
    );
    assert!(
        matches!(
            st.first_errors[0].reason,
            SampleErrorKind::Decode(ImageErrorKind::Truncated(_))
        ),
        "{:?}",
        st.first_errors[0].reason
    );

    let mut sub = build(BadSamplePolicy::Substitute);
    let seen = run_epoch(&mut sub, 0);
    let b = &seen[truncated / 4];
    assert_eq!(b.indices.len(), 4, "the batch stays full");
    assert!(!b.indices.contains(&truncated));
    let st = sub.stats();
    assert_eq!((st.bad, st.skipped, st.substituted), (1, 0, 1));
    let again = run_epoch(&mut build(BadSamplePolicy::Substitute), 0);
    assert_eq!(again[truncated / 4], *b, "substitutes repeat");

    let mut fail = build(BadSamplePolicy::Fail);
    let results: Vec<_> = fail.epoch(0).collect();
    assert_eq!(results.len(), truncated / 4 + 1, "nothing after the error");
    assert!(is_bad_sample(results.last().unwrap()));
    let msg = results.last().unwrap().as_ref().unwrap_err().to_string();
    assert!(
        msg.contains("truncated.jpeg") && msg.contains(&format!("sample {truncated}")),
        "{msg}"
    );
}

#[test]
fn missing_files_and_non_images_are_bad_samples() {
    let dir = std::env::temp_dir().join(format!("gm-loader-missing-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let photo = demo_folder().path(0).canonicalize().unwrap();
    std::fs::write(dir.join("junk.jpg"), b"not an image at all").unwrap();
    let list = dir.join("list.txt");
    std::fs::write(
        &list,
        format!(
            "{} 0\ngone.jpg 1\njunk.jpg 2\n{} 3\n",
            photo.display(),
            photo.display()
        ),
    )
    .unwrap();
    let mut l = Loader::builder(ListFile::new(&list).unwrap())
        .cpu()
        .batch_size(4)
        .transforms(eval_chain(16))
        .build()
        .unwrap();
    let seen = run_epoch(&mut l, 0);
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].indices, [0, 3]);
    assert_eq!(seen[0].labels, [0, 3]);
    let st = l.stats();
    assert_eq!(st.bad, 2);
    assert!(
        st.first_errors[0]
            .reason
            .to_string()
            .contains("cannot read"),
        "{}",
        st.first_errors[0]
    );
    assert!(
        st.first_errors[1]
            .reason
            .to_string()
            .contains("not an image"),
        "{}",
        st.first_errors[1]
    );
    // The reasons are typed: a caller can tell a missing file from a file that is no image.
    assert!(
        matches!(
            st.first_errors[0].reason,
            SampleErrorKind::Read {
                kind: std::io::ErrorKind::NotFound,
                ..
            }
        ),
        "{:?}",
        st.first_errors[0].reason
    );
    assert_eq!(
        st.first_errors[1].reason,
        SampleErrorKind::Decode(ImageErrorKind::NotAnImage)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn images_of_different_sizes_without_a_crop_are_a_clear_error() {
    let mut l = Loader::builder(photos(1))
        .cpu()
        .batch_size(8)
        .build()
        .unwrap();
    let first = l.epoch(0).next().unwrap();
    let msg = first.unwrap_err().to_string();
    assert!(msg.contains("fixed-size step"), "{msg}");
}

#[test]
fn host_tensors_hold_the_chain_output_type() {
    let mut l = Loader::builder(photos(1))
        .cpu()
        .batch_size(3)
        .transforms(train_chain(20))
        .build()
        .unwrap();
    let b = l.epoch(0).next().unwrap().unwrap();
    let Images::Host(t) = &b.images else {
        panic!("CPU loader made a device tensor")
    };
    assert_eq!(t.dtype, gm_cuda::DType::F16);
    assert_eq!(t.data.len(), 3 * 3 * 20 * 20 * 2);
    let vals: Vec<f32> = t
        .data
        .chunks_exact(2)
        .map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32())
        .collect();
    // ImageNet normalization maps 0..255 to about -2.1..2.6.
    assert!(vals.iter().all(|v| (-2.2..=2.7).contains(v)));
    assert!(vals.iter().any(|&v| v < -0.5) && vals.iter().any(|&v| v > 0.5));
}

#[test]
fn the_device_cache_needs_a_gpu() {
    let e = Loader::builder(photos(1))
        .cpu()
        .device_cache(gm_loader::DeviceCache::shorter_side(64))
        .build()
        .err()
        .unwrap();
    assert!(e.to_string().contains("needs a GPU"), "{e}");
}

/// A chain with GaussianBlur and GaussianNoise runs its passes after the fused twin: a slot
/// holds the decode, the fused twin into the pre-blur u8 image, the blur twin and the noise
/// twin, computed here.
#[test]
fn blur_and_noise_run_after_the_fused_twin_on_the_cpu_path() {
    use gm_cuda::DType;
    use gm_transforms::{
        Blur, GaussianBlur, GaussianNoise, Layout, Normalize, ToDtype, blur_image, noise_image,
    };
    let chain = || {
        eval_chain(40)
            .then(GaussianBlur::square(5).unwrap())
            .then(Normalize {
                mean: [0.0; 3],
                std: [1.0; 3],
            })
            .then(ToDtype(DType::F32, Layout::Chw))
            .then(GaussianNoise::default())
    };
    let reference = photos(1);
    let mut loader = Loader::builder(photos(1))
        .cpu()
        .batch_size(4)
        .transforms(chain())
        .build()
        .unwrap();
    let seen = run_epoch(&mut loader, 2);
    let (s, k) = (&seen[0], 1);
    assert_eq!(s.shape, [s.indices.len(), 3, 40, 40]);
    let i = s.indices[k];
    let mut bytes = Vec::new();
    reference.read(i, &mut bytes).unwrap();
    let img = decode_host(&bytes, u64::MAX, true).unwrap();
    let (op, spec, post) = chain()
        .plan_post(img.width, img.height, &mut SampleRng::new(0, 2, i as u64))
        .unwrap();
    let fspec = Blur::fused_spec(&spec);
    let mut mid = vec![0u8; fspec.image_bytes()];
    fused(
        &HostImage::rgb8(&img.rgb, img.width, img.height),
        &op,
        &fspec,
        &mut mid,
    );
    let mut want = vec![0u8; spec.image_bytes()];
    blur_image(&mid, &spec, post.blur.as_ref(), &mut want);
    let blurred = want.clone();
    noise_image(&mut want, &spec, &post.noise.unwrap());
    assert_ne!(want, blurred, "the noise changed the image");
    let slot = spec.image_bytes();
    assert_eq!(&s.bytes[k * slot..(k + 1) * slot], &want[..]);
}

/// A chain cut into passes (a rotation after RandomResizedCrop reads the resized uint8 image,
/// as torchvision's does) runs every pass on the CPU path: each slot equals the twin's passes
/// on the decoded image, computed here.
#[test]
fn chains_in_several_passes_run_every_pass_on_the_cpu_path() {
    let reference = photos(1);
    let mut loader = Loader::builder(photos(1))
        .cpu()
        .batch_size(4)
        .transforms(warp_after_resize_chain(48))
        .build()
        .unwrap();
    let seen = run_epoch(&mut loader, 3);
    let mut cut = 0;
    for s in &seen {
        assert_eq!(s.shape, [s.indices.len(), 48, 48, 3]);
        for (k, &i) in s.indices.iter().enumerate() {
            let mut bytes = Vec::new();
            reference.read(i, &mut bytes).unwrap();
            let img = decode_host(&bytes, u64::MAX, true).unwrap();
            let (op, spec, passes) = warp_after_resize_chain(48)
                .plan_post(img.width, img.height, &mut SampleRng::new(0, 3, i as u64))
                .unwrap();
            cut += usize::from(!passes.pre.is_empty());
            let mut want = vec![0u8; spec.image_bytes()];
            let src = HostImage::rgb8(&img.rgb, img.width, img.height);
            fused_passes(&src, &passes.pre, &op, &spec, &mut want);
            let slot = spec.image_bytes();
            assert!(s.bytes[k * slot..(k + 1) * slot] == want[..], "sample {i}");
        }
    }
    assert!(cut >= 4, "{cut} samples in several passes");
}

/// Per sample of `batches`: (dataset index, that image's output bytes).
fn per_sample(batches: &[Seen]) -> Vec<(usize, Vec<u8>)> {
    let mut out = Vec::new();
    for b in batches {
        let each = b.bytes.len() / b.indices.len().max(1);
        for (k, &i) in b.indices.iter().enumerate() {
            out.push((i, b.bytes[k * each..(k + 1) * each].to_vec()));
        }
    }
    out
}

/// An epoch preempted three times and resumed at world sizes 4 -> 3 -> 2 -> 4 (simulated
/// ranks, each stopping after its own number of batches): every sample comes exactly once,
/// apart from the repeats the last world pads its shares with, as DistributedSampler pads;
/// and each sample's image equals the uninterrupted epoch's (augmentations follow (seed,
/// epoch, sample), not the rank or the world).
#[test]
fn an_epoch_resumes_at_other_world_sizes_with_every_sample_once() {
    let build = |rank: usize, world: usize| {
        let mut sampler = Sampler::shuffled(21);
        if world > 1 {
            sampler = sampler.sharded(rank, world, false).unwrap();
        }
        Loader::builder(photos(3))
            .cpu()
            .sampler(sampler)
            .seed(5)
            .batch_size(3)
            .workers(2)
            .transforms(train_chain(24))
            .build()
            .unwrap()
    };
    let n = photos(3).len();
    let whole: std::collections::HashMap<usize, Vec<u8>> =
        per_sample(&run_epoch(&mut build(0, 1), 4))
            .into_iter()
            .collect();
    assert_eq!(whole.len(), n);
    let worlds = [4usize, 3, 2, 4];
    let stops = [[1usize, 2, 0, 3], [2, 1, 1, 0], [3, 2, 0, 0]];
    let mut merged: Option<LoaderState> = None;
    let mut count = vec![0usize; n];
    for (stage, &world) in worlds.iter().enumerate() {
        let mut states = Vec::new();
        for rank in 0..world {
            let mut loader = build(rank, world);
            let mut epoch = match &merged {
                None => loader.epoch(4),
                Some(m) => loader.resume(m).unwrap(),
            };
            let take = stops.get(stage).map_or(usize::MAX, |s| s[rank]);
            let mut got = Vec::new();
            for b in epoch.by_ref().take(take) {
                got.push(seen(&b.unwrap()));
            }
            for (i, bytes) in per_sample(&got) {
                count[i] += 1;
                assert!(
                    bytes == whole[&i],
                    "stage {stage} rank {rank}: sample {i} differs"
                );
            }
            states.push(LoaderState::from_json(&epoch.state().to_json()).unwrap());
        }
        // Ranks save in any order.
        states.reverse();
        let m = LoaderState::merge(&states).unwrap();
        if stage + 1 < worlds.len() {
            assert_eq!((m.epoch, m.reshards.len()), (4, stage + 1), "{m:?}");
            assert!(m.is_merged());
        } else {
            assert_eq!(m.epoch, 5, "all done: the next epoch");
            assert!(
                m.reshards
                    .iter()
                    .all(|r| r.consumed.iter().all(|&c| c == 0))
            );
        }
        merged = Some(LoaderState::from_json(&m.to_json()).unwrap());
    }
    let missed: Vec<usize> = (0..n).filter(|&i| count[i] == 0).collect();
    let repeats: usize = count.iter().map(|c| c.saturating_sub(1)).sum();
    assert!(missed.is_empty(), "never delivered: {missed:?}");
    assert!(
        repeats < 4,
        "{repeats} repeats (the last world pads at most 3)"
    );
}

trait WithEpoch {
    fn with_epoch(self, epoch: u64) -> Self;
}

impl WithEpoch for LoaderState {
    fn with_epoch(mut self, epoch: u64) -> Self {
        self.epoch = epoch;
        self
    }
}

#[test]
fn merging_states_refuses_what_cannot_be_merged() {
    let build = |rank: usize, world: usize, batch: usize| {
        Loader::builder(photos(1))
            .cpu()
            .sampler(Sampler::shuffled(1).sharded(rank, world, false).unwrap())
            .batch_size(batch)
            .transforms(eval_chain(16))
            .build()
            .unwrap()
    };
    let s = |rank, world, batch, next| build(rank, world, batch).state(2, next);
    let err = |states: &[LoaderState]| match LoaderState::merge(states) {
        Err(LoaderError::Resume(m)) => m,
        other => panic!("merged: {other:?}"),
    };
    assert!(err(&[s(0, 3, 2, 1), s(2, 3, 2, 1)]).contains("rank 1 of 3 is missing"));
    assert!(err(&[s(0, 2, 2, 1), s(0, 2, 2, 1)]).contains("two states of rank 0"));
    assert!(err(&[s(0, 2, 2, 1), s(1, 2, 3, 1)]).contains("different loader"));
    let mut later = s(1, 2, 2, 1);
    later.epoch = 3;
    assert!(err(&[s(0, 2, 2, 1), later]).contains("different epochs"));
    assert!(err(&[]).contains("no states"));
    // A rank that ran out of its share has moved to the next epoch's start (Python's state
    // after an iteration ends): it counts as having consumed all of it.
    let n = photos(1).len();
    let share = n.div_ceil(2);
    let m = LoaderState::merge(&[s(0, 2, 2, 1), s(1, 2, 2, 0).with_epoch(3)]).unwrap();
    assert_eq!((m.epoch, m.reshards.len()), (2, 1));
    assert_eq!(m.reshards[0].consumed, vec![2, share]);
    let m =
        LoaderState::merge(&[s(0, 2, 2, 0).with_epoch(3), s(1, 2, 2, 0).with_epoch(3)]).unwrap();
    assert_eq!(
        (m.epoch, m.reshards[0].consumed.as_slice()),
        (3, &[0, 0][..])
    );
    assert!(
        m.is_merged(),
        "a world of any size starts the next epoch from it"
    );
    assert!(build(1, 3, 2).resume(&m).is_ok());
    // A merged state resumes on a loader of another world, not on another configuration.
    let merged = LoaderState::merge(&[s(0, 2, 2, 1), s(1, 2, 2, 0)]).unwrap();
    assert!(build(2, 5, 2).resume(&merged).is_ok());
    assert!(matches!(
        build(0, 5, 4).resume(&merged),
        Err(LoaderError::Resume(_))
    ));
}
