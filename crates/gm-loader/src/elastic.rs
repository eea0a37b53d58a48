//! Resuming an epoch at another world size. The global order of an epoch comes from the
//! sampler's order and `(seed, epoch)` alone, and each rank's share is a slice of it, so the
//! states every rank saved say exactly which samples were consumed; the rest of the epoch is
//! then dealt to the ranks of the new world, and may be resharded again.

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
/// item no rank consumed at any earlier world size, each once.
pub(crate) fn remainder(order: Vec<usize>, reshards: &[Reshard]) -> Vec<usize> {
    let mut list = order;
    for r in reshards {
        let len = list.len();
        if len == 0 {
            break;
        }
        let mut taken = vec![false; len];
        for (rank, &consumed) in r.consumed.iter().enumerate() {
            for p in positions(len, rank, r.world_size, r.drop_last).take(consumed) {
                taken[p % len] = true;
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
                let left = remainder(order.clone(), &reshards);
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
                reshards.push(Reshard { world_size: world, consumed, drop_last });
            }
        }
    }
}
