//! Aspect-ratio grouped batches against the detection references' GroupedBatchSampler and
//! create_aspect_ratio_groups (tests/media/grouped, make_references.py), and the sampler's
//! determinism, sharding and completeness.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use gm_loader::{GroupedBatchSampler, Sampler, aspect_ratio_groups};
use serde_json::Value;

fn media() -> PathBuf {
    std::env::var_os("GM_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/media"))
}

fn cases() -> Vec<Value> {
    let text = std::fs::read_to_string(media().join("grouped/cases.json")).unwrap();
    serde_json::from_str::<Value>(&text)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

fn usizes(v: &Value) -> Vec<usize> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as usize)
        .collect()
}

/// Groups and batches as torchvision's references make them, for the same order.
#[test]
fn grouped_batches_equal_torchvisions_references() {
    for (i, c) in cases().iter().enumerate() {
        let sizes: Vec<(u32, u32)> = c["sizes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| (s[0].as_u64().unwrap() as u32, s[1].as_u64().unwrap() as u32))
            .collect();
        let k = c["k"].as_u64().unwrap() as usize;
        let groups = aspect_ratio_groups(&sizes, k);
        assert_eq!(groups, usizes(&c["groups"]), "case {i}");
        // The reference's order, as the sampler's: relabel so that its order is 0..n.
        let order = usizes(&c["order"]);
        let relabelled: Vec<usize> = order.iter().map(|&j| groups[j]).collect();
        let bs = c["batch_size"].as_u64().unwrap() as usize;
        let s = GroupedBatchSampler::new(Sampler::sequential(), relabelled, bs).unwrap();
        let ours: Vec<Vec<usize>> = s
            .batches(0)
            .into_iter()
            .map(|b| b.into_iter().map(|p| order[p]).collect())
            .collect();
        let want: Vec<Vec<usize>> = c["batches"]
            .as_array()
            .unwrap()
            .iter()
            .map(usizes)
            .collect();
        assert_eq!(ours, want, "case {i}");
    }
}

#[test]
fn grouped_batches_are_deterministic_one_group_each_and_cover_every_sample() {
    let sizes: Vec<(u32, u32)> = (0..500u32)
        .map(|i| (300 + (i * 37) % 400, 300 + (i * 53) % 350))
        .collect();
    let groups = aspect_ratio_groups(&sizes, 3);
    let s = GroupedBatchSampler::new(Sampler::shuffled(9), groups.clone(), 8).unwrap();
    let (a, b) = (s.batches(2), s.batches(2));
    assert_eq!(a, b, "the same epoch twice");
    assert_ne!(a, s.batches(3), "another epoch, another order");
    assert_eq!(a.len(), 500 / 8);
    let mut seen = BTreeSet::new();
    for batch in &a {
        assert_eq!(batch.len(), 8);
        assert!(
            batch.iter().all(|&i| groups[i] == groups[batch[0]]),
            "{batch:?}"
        );
        seen.extend(batch.iter().copied());
    }
    // Every sample but those of leftover buffers past the last full batch.
    assert!(seen.len() >= 500 - 7 * 8, "{} samples", seen.len());
    // Ranks: each rank's batches come from its own share.
    for rank in 0..2 {
        let r = GroupedBatchSampler::new(
            Sampler::shuffled(9).sharded(rank, 2, false).unwrap(),
            groups.clone(),
            8,
        )
        .unwrap();
        let share: BTreeSet<usize> = Sampler::shuffled(9)
            .sharded(rank, 2, false)
            .unwrap()
            .indices(500, 2)
            .into_iter()
            .collect();
        assert!(r.batches(2).iter().flatten().all(|i| share.contains(i)));
    }
    assert!(GroupedBatchSampler::new(Sampler::sequential(), groups, 0).is_err());
}

/// `n` photos in memory: a CPU loader over them with `batch_groups`, flipped at random (so
/// each image depends on `(seed, epoch, sample)`).
fn loader_of(n: usize, groups: Vec<usize>, sampler: Sampler) -> gm_loader::Loader {
    use gm_transforms::{HorizontalFlip, Resize, ToDtype};
    let dir = media();
    let names = [
        "baboon-201x151-420.jpg",
        "baboon-201x151-422.jpg",
        "baboon-12x10-420.jpg",
    ];
    let samples = (0..n).map(|i| {
        let name = names[i % names.len()];
        let bytes = std::fs::read(dir.join("jpeg").join(name)).unwrap();
        (format!("{i}-{name}"), bytes, i as i64)
    });
    gm_loader::Loader::builder(gm_loader::InMemory::new(samples))
        .cpu()
        .workers(2)
        .batch_size(4)
        .sampler(sampler)
        .seed(3)
        .transform(Resize::Exact(16, 12))
        .transform(HorizontalFlip(0.5))
        .transform(ToDtype(gm_cuda::DType::U8, gm_transforms::Layout::Hwc))
        .batch_groups(groups)
        .build()
        .unwrap()
}

/// 23 photos in 3 groups.
fn grouped_loader(groups: Vec<usize>) -> gm_loader::Loader {
    loader_of(23, groups, Sampler::shuffled(9))
}

/// Each sample's image of a batch of 16x12 RGB images.
fn per_sample(b: &gm_loader::Batch) -> Vec<(usize, Vec<u8>)> {
    let bytes = b.images.to_host_bytes(None).unwrap();
    let each = bytes.len() / b.indices.len();
    b.indices
        .iter()
        .zip(bytes.chunks(each))
        .map(|(&i, px)| (i, px.to_vec()))
        .collect()
}

/// The loader's grouped batches are the sampler's (torchvision's batching, checked above),
/// one group each, whole, and resume exactly; a state of other groups is refused.
#[test]
fn the_loader_batches_one_group_at_a_time_and_resumes_exactly() {
    let groups: Vec<usize> = (0..23).map(|i| (i * 7 / 3) % 3).collect();
    let mut loader = grouped_loader(groups.clone());
    assert_eq!(loader.batches_per_epoch(), 23 / 4);
    let want = GroupedBatchSampler::new(Sampler::shuffled(9), groups.clone(), 4)
        .unwrap()
        .batches(2);
    let mut batches = Vec::new();
    for b in loader.epoch(2) {
        let b = b.unwrap();
        let g: BTreeSet<usize> = b.indices.iter().map(|&i| groups[i]).collect();
        assert_eq!(g.len(), 1, "batch {:?} mixes groups", b.indices);
        let labels: Vec<i64> = b.indices.iter().map(|&i| i as i64).collect();
        assert_eq!(b.labels, labels);
        batches.push((b.indices.clone(), b.images.to_host_bytes(None).unwrap()));
    }
    let indices: Vec<Vec<usize>> = batches.iter().map(|b| b.0.clone()).collect();
    assert_eq!(indices, want);
    // Resumed after the second batch: the same batches, pixels included.
    let state = loader.state(2, 2);
    let json = state.to_json();
    assert!(json.contains("\"groups\""), "{json}");
    let state = gm_loader::LoaderState::from_json(&json).unwrap();
    let rest: Vec<(Vec<usize>, Vec<u8>)> = loader
        .resume(&state)
        .unwrap()
        .map(|b| {
            let b = b.unwrap();
            (b.indices.clone(), b.images.to_host_bytes(None).unwrap())
        })
        .collect();
    assert_eq!(rest, batches[2..].to_vec());
    // Other groups: another loader.
    let mut other = grouped_loader((0..23).map(|i| i % 2).collect());
    let err = other.resume(&state).err().unwrap().to_string();
    assert!(err.contains("different loader"), "{err}");
    // One group per sample, or the loader is refused.
    let one = std::fs::read(media().join("jpeg/baboon-12x10-420.jpg")).unwrap();
    let err = gm_loader::Loader::builder(gm_loader::InMemory::new([("a".into(), one, 0)]))
        .cpu()
        .batch_groups(vec![0; 3])
        .transform(gm_transforms::Resize::Exact(8, 8))
        .build()
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("3 batch groups for a dataset of 1"), "{err}");
}

/// Grouped batches resume at other world sizes: 4 -> 3 -> 2 -> 4 ranks, each stopped
/// anywhere, states saved as JSON and merged in any order. Every batch holds one group, no
/// sample comes in two worlds, each image is the one an uninterrupted loader makes of it, and
/// only the partial groups at the ends of the last shares are left out.
#[test]
fn grouped_batches_resume_at_other_world_sizes() {
    use gm_loader::LoaderState;
    use std::collections::HashMap;
    let n = 96;
    let groups: Vec<usize> = (0..n).map(|i| (i * 7 / 3) % 3).collect();
    let build = |rank: usize, world: usize| {
        let sampler = Sampler::shuffled(9).sharded(rank, world, false).unwrap();
        loader_of(n, groups.clone(), sampler)
    };
    // Every sample's image at epoch 4, from single loaders: each grouping leaves out some
    // samples at its end, four different ones leave out none.
    let mut whole: HashMap<usize, Vec<u8>> = HashMap::new();
    for offset in 0..4 {
        let shifted = (0..n).map(|i| groups[(i + offset) % n]).collect();
        let mut l = loader_of(n, shifted, Sampler::sequential());
        for b in l.epoch(4) {
            whole.extend(per_sample(&b.unwrap()));
        }
    }
    let worlds = [4usize, 3, 2, 4];
    let stops = [[1usize, 5, 0, 3], [2, 1, 6, 0], [3, 2, 0, 0]];
    let mut merged: Option<LoaderState> = None;
    let mut world_of: Vec<Option<usize>> = vec![None; n];
    for (stage, &world) in worlds.iter().enumerate() {
        let mut states = Vec::new();
        for rank in 0..world {
            let mut loader = build(rank, world);
            let mut epoch = match &merged {
                None => loader.epoch(4),
                Some(m) => loader.resume(m).unwrap(),
            };
            let take = stops.get(stage).map_or(usize::MAX, |s| s[rank]);
            for b in epoch.by_ref().take(take) {
                let b = b.unwrap();
                let g: BTreeSet<usize> = b.indices.iter().map(|&i| groups[i]).collect();
                assert_eq!(g.len(), 1, "stage {stage}: {:?} mixes groups", b.indices);
                for (i, px) in per_sample(&b) {
                    assert!(
                        world_of[i].is_none_or(|w| w == stage),
                        "sample {i} in worlds {:?} and {stage}",
                        world_of[i]
                    );
                    world_of[i] = Some(stage);
                    assert!(
                        px == whole[&i],
                        "stage {stage} rank {rank}: sample {i} differs"
                    );
                }
            }
            states.push(LoaderState::from_json(&epoch.state().to_json()).unwrap());
        }
        states.reverse();
        let m = LoaderState::merge(&states).unwrap();
        if stage + 1 < worlds.len() {
            assert_eq!((m.epoch, m.reshards.len()), (4, stage + 1), "{m:?}");
            assert!(m.is_merged());
        } else {
            assert_eq!(m.epoch, 5, "all done: the next epoch, {m:?}");
        }
        merged = Some(LoaderState::from_json(&m.to_json()).unwrap());
    }
    assert_eq!(whole.len(), n);
    let delivered = world_of.iter().filter(|w| w.is_some()).count();
    // At most 3 groups x 3 samples left in each last share's partial buffers.
    assert!(delivered >= n - 4 * 3 * 3, "{delivered} of {n} delivered");
    eprintln!("{delivered} of {n} samples delivered across 4 worlds");
}
