//! The order of samples in an epoch, and the share of one rank.

use gm_transforms::SampleRng;
use serde::{Deserialize, Serialize};

use crate::elastic::{Reshard, remainder, share};
use crate::error::LoaderError;

/// Order within an epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Order {
    /// 0, 1, 2, ...
    Sequential,
    /// A permutation drawn from `(seed, epoch)`: a new order each epoch, the same on every
    /// rank and in every run.
    Shuffled {
        /// The seed.
        seed: u64,
    },
}

/// One rank's share of a distributed job, like PyTorch's `DistributedSampler`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// This process's rank, `0..world_size`.
    pub rank: usize,
    /// Number of processes.
    pub world_size: usize,
    /// Drop the tail so every rank gets `len / world_size` samples; otherwise pad by repeating
    /// samples from the start so every rank gets `ceil(len / world_size)`.
    pub drop_last: bool,
}

/// What a launcher says about this process (`torchrun`: RANK, WORLD_SIZE, LOCAL_RANK; Slurm:
/// SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DistEnv {
    /// Global rank.
    pub rank: usize,
    /// Number of processes.
    pub world_size: usize,
    /// Rank on this node: the GPU ordinal to use.
    pub local_rank: usize,
}

impl DistEnv {
    /// Reads the process environment; `None` when no launcher variables are set.
    pub fn from_env() -> Result<Option<DistEnv>, LoaderError> {
        DistEnv::from_vars(|k| std::env::var(k).ok())
    }

    /// As [`DistEnv::from_env`], from any lookup (for tests and embedding).
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Option<DistEnv>, LoaderError> {
        let sets = [
            ("RANK", "WORLD_SIZE", "LOCAL_RANK"),
            ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"),
        ];
        for (r, w, l) in sets {
            let (Some(rank), Some(world)) = (var(r), var(w)) else {
                continue;
            };
            let num = |name: &str, v: String| {
                v.trim().parse::<usize>().map_err(|e| {
                    LoaderError::Config(format!("{name}={v:?} is not a non-negative integer: {e}"))
                })
            };
            let rank = num(r, rank)?;
            let world_size = num(w, world)?;
            let local_rank = match var(l) {
                Some(v) => num(l, v)?,
                None => 0,
            };
            if world_size == 0 || rank >= world_size {
                return Err(LoaderError::Config(format!(
                    "{r}={rank} is not below {w}={world_size}"
                )));
            }
            return Ok(Some(DistEnv {
                rank,
                world_size,
                local_rank,
            }));
        }
        Ok(None)
    }
}

/// Which samples an epoch visits, in which order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sampler {
    /// The order.
    pub order: Order,
    /// This rank's share, if distributed.
    pub shard: Option<Shard>,
}

impl Sampler {
    /// Every sample in index order.
    pub fn sequential() -> Sampler {
        Sampler {
            order: Order::Sequential,
            shard: None,
        }
    }

    /// Every sample, shuffled anew each epoch from `seed`.
    pub fn shuffled(seed: u64) -> Sampler {
        Sampler {
            order: Order::Shuffled { seed },
            shard: None,
        }
    }

    /// Only rank `rank`'s share of `world_size`.
    pub fn sharded(
        mut self,
        rank: usize,
        world_size: usize,
        drop_last: bool,
    ) -> Result<Sampler, LoaderError> {
        if world_size == 0 || rank >= world_size {
            return Err(LoaderError::Config(format!(
                "rank {rank} is not below world size {world_size}"
            )));
        }
        self.shard = Some(Shard {
            rank,
            world_size,
            drop_last,
        });
        Ok(self)
    }

    /// Sharded as the launcher's environment says ([`DistEnv::from_env`]); unchanged when the
    /// process was not started by a launcher.
    pub fn sharded_from_env(self, drop_last: bool) -> Result<Sampler, LoaderError> {
        match DistEnv::from_env()? {
            Some(e) => self.sharded(e.rank, e.world_size, drop_last),
            None => Ok(self),
        }
    }

    /// The dataset indices of `epoch` for a dataset of `len` samples.
    pub fn indices(&self, len: usize, epoch: u64) -> Vec<usize> {
        self.indices_after(len, epoch, &[])
    }

    /// The epoch's global order: every index, in order or permuted from `(seed, epoch)`; the
    /// same at every world size.
    pub fn global_order(&self, len: usize, epoch: u64) -> Vec<usize> {
        let mut all: Vec<usize> = (0..len).collect();
        if let Order::Shuffled { seed } = self.order {
            // Fisher-Yates with the same generator as the augmentations; `u64::MAX` as the
            // index keeps it apart from every sample's own stream.
            let mut rng = SampleRng::new(seed, epoch, u64::MAX);
            for i in (1..len).rev() {
                let j = rng.below(i as u64 + 1) as usize;
                all.swap(i, j);
            }
        }
        all
    }

    /// The indices of `epoch` left after `reshards` (the epoch interrupted at other world
    /// sizes), dealt to this rank: its share of what no rank consumed yet. For batches grouped
    /// by aspect ratio, see [`Sampler::indices_after_grouped`].
    pub fn indices_after(&self, len: usize, epoch: u64, reshards: &[Reshard]) -> Vec<usize> {
        self.indices_after_grouped(len, epoch, reshards, &[])
    }

    /// As [`Sampler::indices_after`], where the reshards may have counted batches grouped by
    /// aspect ratio: `groups[i]` is sample `i`'s group, as the loader grouped them.
    pub fn indices_after_grouped(
        &self,
        len: usize,
        epoch: u64,
        reshards: &[Reshard],
        groups: &[usize],
    ) -> Vec<usize> {
        let left = remainder(self.global_order(len, epoch), reshards, groups);
        match self.shard {
            None => left,
            Some(s) => share(&left, s.rank, s.world_size, s.drop_last),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_are_disjoint_and_cover_the_dataset() {
        for len in [0usize, 1, 7, 10, 11, 64] {
            for world in 1..=5 {
                for drop_last in [false, true] {
                    let base = Sampler::shuffled(3);
                    let shards: Vec<Vec<usize>> = (0..world)
                        .map(|r| {
                            base.sharded(r, world, drop_last)
                                .map(|s| s.indices(len, 2))
                                .unwrap_or_default()
                        })
                        .collect();
                    let per = shards[0].len();
                    assert!(shards.iter().all(|s| s.len() == per), "equal shares");
                    let mut seen: Vec<usize> = shards.concat();
                    seen.sort_unstable();
                    let mut uniq = seen.clone();
                    uniq.dedup();
                    if drop_last {
                        assert_eq!(per, len / world);
                        assert_eq!(uniq.len(), seen.len(), "no repeats with drop_last");
                    } else {
                        assert_eq!(per, len.div_ceil(world));
                        assert_eq!(uniq, (0..len).collect::<Vec<_>>(), "every sample visited");
                        assert_eq!(seen.len() - uniq.len(), per * world - len, "pad count");
                    }
                }
            }
        }
    }

    #[test]
    fn shuffles_differ_by_epoch_and_repeat_by_seed() {
        let s = Sampler::shuffled(7);
        let a = s.indices(100, 0);
        assert_eq!(a, s.indices(100, 0));
        assert_ne!(a, s.indices(100, 1));
        assert_ne!(a, Sampler::shuffled(8).indices(100, 0));
        let mut sorted = a.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..100).collect::<Vec<_>>());
        assert_eq!(Sampler::sequential().indices(4, 9), vec![0, 1, 2, 3]);
    }

    #[test]
    fn launcher_variables_are_read() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| pairs.iter().find(|p| p.0 == k).map(|p| p.1.to_string())
        };
        let t = DistEnv::from_vars(env(&[
            ("RANK", "3"),
            ("WORLD_SIZE", "8"),
            ("LOCAL_RANK", "1"),
        ]));
        assert_eq!(
            t.ok().flatten(),
            Some(DistEnv {
                rank: 3,
                world_size: 8,
                local_rank: 1
            })
        );
        let s = DistEnv::from_vars(env(&[
            ("SLURM_PROCID", "5"),
            ("SLURM_NTASKS", "6"),
            ("SLURM_LOCALID", "2"),
        ]));
        assert_eq!(
            s.ok().flatten(),
            Some(DistEnv {
                rank: 5,
                world_size: 6,
                local_rank: 2
            })
        );
        assert!(matches!(DistEnv::from_vars(env(&[])), Ok(None)));
        assert!(DistEnv::from_vars(env(&[("RANK", "8"), ("WORLD_SIZE", "8")])).is_err());
        assert!(DistEnv::from_vars(env(&[("RANK", "x"), ("WORLD_SIZE", "8")])).is_err());
    }
}
