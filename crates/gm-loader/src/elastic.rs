//! Resuming an epoch at another world size. The global order of an epoch comes from the
//! sampler's order and `(seed, epoch)` alone, and each rank's share is a slice of it, so the
//! states every rank saved say exactly which samples were consumed; the rest of the epoch is
//! then dealt to the ranks of the new world, and may be resharded again.
//!
//! Batches grouped by aspect ratio take a rank's samples from anywhere in its share, so for
//! them a reshard counts batches, and what a rank consumed is recomputed: the samples of its
//! first batches, as [`crate::grouped`] forms them over its share.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

/// One interruption of an epoch: the world it ran at and how many samples of its share each
/// rank had consumed when every rank saved its state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reshard {
    /// Ranks of that world.
    pub world_size: usize,
    /// Samples each rank had consumed (batches passed x batch size, at most its share).
    pub consumed: Vec<usize>,
    /// Whether that world dropped the tail instead of padding (its shard's `drop_last`).
    pub drop_last: bool,
    /// For batches grouped by aspect ratio: their batch size, and then `consumed` counts each
    /// rank's batches, not samples; a count at or past the rank's batches (`usize::MAX` for a
    /// rank that had finished) is its whole share. Absent for plain batches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grouped_batch: Option<usize>,
}

/// One rank's share of `list` among `world_size` ranks, as PyTorch's `DistributedSampler`
/// deals it: padded by repeating from the start (or, with `drop_last`, cut) to a multiple of
/// the world size, then every `world_size`-th item from `rank`.
pub(crate) fn share(list: &[usize], rank: usize, world_size: usize, drop_last: bool) -> Vec<usize> {
    positions(list.len(), rank, world_size, drop_last)
        .map(|p| list[p % list.len()])
        .collect()
}

/// Positions in `0..len` (padding wraps around) of rank `rank`'s share.
fn positions(
    len: usize,
    rank: usize,
    world_size: usize,
    drop_last: bool,
) -> impl Iterator<Item = usize> {
    let world_size = world_size.max(1);
    let per_rank = match (len, drop_last) {
        (0, _) => 0,
        (_, true) => len / world_size,
        (_, false) => len.div_ceil(world_size),
    };
    (0..per_rank).map(move |j| rank + j * world_size)
}

/// Length of rank `rank`'s share of a list of `len` items.
pub(crate) fn share_len(len: usize, world_size: usize, drop_last: bool) -> usize {
    positions(len, 0, world_size, drop_last).count()
}

/// What is left of `order` (an epoch's global order) after `reshards`, in its order: every
/// item no rank consumed at any earlier world size, each once. `groups` are the samples'
/// groups, for reshards of grouped batches (see [`Reshard::grouped_batch`]).
pub(crate) fn remainder(order: Vec<usize>, reshards: &[Reshard], groups: &[usize]) -> Vec<usize> {
    let mut list = order;
    for r in reshards {
        let len = list.len();
        if len == 0 {
            break;
        }
        let mut taken = vec![false; len];
        for (rank, &consumed) in r.consumed.iter().enumerate() {
            let mine = positions(len, rank, r.world_size, r.drop_last);
            match r.grouped_batch {
                None => mine.take(consumed).for_each(|p| taken[p % len] = true),
                Some(batch_size) => {
                    let mine: Vec<usize> = mine.map(|p| p % len).collect();
                    for p in grouped_taken(&list, &mine, consumed, groups, batch_size) {
                        taken[p] = true;
                    }
                }
            }
        }
        list = list
            .into_iter()
            .zip(taken)
            .filter_map(|(item, t)| (!t).then_some(item))
            .collect();
    }
    list
}

/// The positions (of `list`) a rank whose share sits at `mine` consumed with its first
/// `consumed` grouped batches. A rank that passed all its batches consumed its whole share:
/// the samples its last batches left out are the epoch's tail, as for an uninterrupted one.
fn grouped_taken(
    list: &[usize],
    mine: &[usize],
    consumed: usize,
    groups: &[usize],
    batch_size: usize,
) -> Vec<usize> {
    let share: Vec<usize> = mine.iter().map(|&p| list[p]).collect();
    let batches = crate::grouped::group_batches(&share, groups, batch_size);
    if consumed >= batches.len() {
        return mine.to_vec();
    }
    let used: HashSet<usize> = batches[..consumed].iter().flatten().copied().collect();
    mine.iter()
        .copied()
        .filter(|&p| used.contains(&list[p]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn shares_are_distributed_samplers() {
        let list: Vec<usize> = (10..20).collect();
        assert_eq!(share(&list, 0, 3, false), vec![10, 13, 16, 19]);
        assert_eq!(share(&list, 2, 3, false), vec![12, 15, 18, 11]);
        assert_eq!(share(&list, 2, 3, true), vec![12, 15, 18]);
        assert_eq!(share_len(10, 3, false), 4);
        assert_eq!(share(&[], 0, 3, false), Vec::<usize>::new());
    }

    proptest! {
        /// Ranks preempted at any point of any world, one world after another: every sample
        /// of the epoch is consumed exactly once, except the repeats the last world pads its
        /// shares with (at most `world_size - 1`, as DistributedSampler pads).
        #[test]
        fn every_sample_once_across_worlds(
            len in 0usize..300,
            worlds in prop::collection::vec((1usize..9, any::<bool>()), 1..5),
            cuts in prop::collection::vec(0.0f64..1.0, 40),
        ) {
            let order: Vec<usize> = (0..len).rev().collect();
            let mut reshards = Vec::new();
            let mut seen = vec![0usize; len];
            let mut cut = cuts.iter().cycle();
            for (i, &(world, drop_last)) in worlds.iter().enumerate() {
                let left = remainder(order.clone(), &reshards, &[]);
                let last = i + 1 == worlds.len();
                let per = share_len(left.len(), world, drop_last);
                let consumed: Vec<usize> = (0..world)
                    .map(|_| if last { per } else { (per as f64 * cut.next().unwrap()) as usize })
                    .collect();
                for (rank, &c) in consumed.iter().enumerate() {
                    for s in share(&left, rank, world, drop_last).into_iter().take(c) {
                        seen[s] += 1;
                    }
                }
                if last {
                    let (_, drop) = worlds[i];
                    let repeats: usize = seen.iter().map(|&n| n.saturating_sub(1)).sum();
                    let missed = seen.iter().filter(|&&n| n == 0).count();
                    if drop {
                        prop_assert_eq!(repeats, 0);
                        prop_assert!(missed < world, "{missed} left out by drop_last");
                    } else {
                        prop_assert_eq!(missed, 0);
                        prop_assert!(repeats < world, "{repeats} repeats");
                    }
                }
                reshards.push(Reshard { world_size: world, consumed, drop_last, grouped_batch: None });
            }
        }

        /// Grouped batches preempted at any point of any world: a sample is delivered in one
        /// world at most; what the next world gets is exactly what the last left (the samples
        /// of no rank's passed batches, and none of a rank that finished); and a world run to
        /// its end leaves out only the partial groups grouping leaves at the end of a share.
        #[test]
        fn grouped_batches_resume_across_worlds(
            len in 0usize..300,
            ngroups in 1usize..5,
            batch in 1usize..6,
            worlds in prop::collection::vec((1usize..6, any::<bool>()), 1..5),
            cuts in prop::collection::vec(0.0f64..1.2, 40),
            seed in any::<u64>(),
        ) {
            let groups: Vec<usize> = (0..len)
                .map(|i| ((i as u64 ^ seed).wrapping_mul(0x9e37_79b9) >> 7) as usize % ngroups)
                .collect();
            let order: Vec<usize> = (0..len).rev().collect();
            let mut reshards = Vec::new();
            let mut world_of: Vec<Option<usize>> = vec![None; len];
            let mut cut = cuts.iter().cycle();
            let mut left = remainder(order.clone(), &reshards, &groups);
            let mut allowed_missing = 0;
            for (i, &(world, drop_last)) in worlds.iter().enumerate() {
                let last = i + 1 == worlds.len();
                let mut consumed = Vec::new();
                let mut gone = HashSet::new();
                for rank in 0..world {
                    let mine = share(&left, rank, world, drop_last);
                    let batches = crate::grouped::group_batches(&mine, &groups, batch);
                    let k = if last { batches.len() } else {
                        (batches.len() as f64 * cut.next().unwrap()) as usize
                    };
                    for b in batches.iter().take(k) {
                        prop_assert!(b.iter().all(|&s| groups[s] == groups[b[0]]));
                        for &s in b {
                            prop_assert!(
                                world_of[s].is_none_or(|w| w == i),
                                "sample {} delivered in worlds {:?} and {}", s, world_of[s], i
                            );
                            world_of[s] = Some(i);
                            gone.insert(s);
                        }
                    }
                    if k >= batches.len() {
                        gone.extend(mine.iter().copied());
                        allowed_missing += ngroups * batch.saturating_sub(1);
                    }
                    consumed.push(if k >= batches.len() && !last { usize::MAX } else { k });
                }
                reshards.push(Reshard {
                    world_size: world,
                    consumed,
                    drop_last,
                    grouped_batch: Some(batch),
                });
                let next = remainder(order.clone(), &reshards, &groups);
                let want: Vec<usize> = left.iter().copied().filter(|s| !gone.contains(s)).collect();
                prop_assert_eq!(&next, &want);
                left = next;
                if drop_last {
                    allowed_missing += world;
                }
            }
            let (world, drop_last) = worlds[worlds.len() - 1];
            // The last world ran to its end: nothing is left but the tail drop_last cuts.
            prop_assert!(left.len() < if drop_last { world } else { 1 }, "{:?} left", left);
            let missed = world_of.iter().filter(|w| w.is_none()).count();
            prop_assert!(missed <= allowed_missing, "{} missed, {} allowed", missed, allowed_missing);
        }
    }
}
