//! Aspect-ratio grouped batches against the detection references' GroupedBatchSampler and
//! create_aspect_ratio_groups (tests/media/grouped, make_references.py), and the sampler's
//! determinism, sharding and completeness.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use gm_loader::{GroupedBatchSampler, Sampler, aspect_ratio_groups};
use serde_json::Value;

fn cases() -> Vec<Value> {
    let dir = std::env::var_os("GM_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/media"));
    let text = std::fs::read_to_string(dir.join("grouped/cases.json")).unwrap();
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
