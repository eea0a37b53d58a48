//! The settings both loaders share: batching, order, seed, bad samples and where they run.

use std::sync::Arc;

use gm_cuda::Device;

use crate::bad_samples::{BadSamplePolicy, BadSamples};
use crate::elastic::Reshard;
use crate::error::LoaderError;
use crate::sampler::{DistEnv, Sampler};
use crate::state::LoaderState;

/// Where a loader runs.
#[derive(Debug, Clone)]
pub(crate) enum Placement {
    /// GPU `LOCAL_RANK` (or 0) when there is one, else the CPU where the loader has a CPU
    /// path.
    Auto,
    /// This GPU.
    Gpu(Device),
    /// The CPU.
    Cpu,
}

/// The GPU a loader picks when none is given: `LOCAL_RANK` (torchrun, Slurm), or 0.
pub(crate) fn default_gpu() -> Result<Device, LoaderError> {
    let ordinal = DistEnv::from_env()?.map_or(0, |e| e.local_rank);
    Ok(Device::new(ordinal)?)
}

/// The GPU to run on, or `None` and why the loader runs on the CPU.
pub(crate) fn pick_device(placement: &Placement) -> Result<(Option<Device>, String), LoaderError> {
    Ok(match placement {
        Placement::Gpu(d) => (Some(d.clone()), String::new()),
        Placement::Cpu => (None, "CPU (asked for)".to_string()),
        Placement::Auto => match gm_cuda::available() {
            Ok(_) => (Some(default_gpu()?), String::new()),
            Err(e) => {
                tracing::info!(reason = %e, "no GPU: the loader runs on the CPU");
                (None, format!("CPU ({e})"))
            }
        },
    })
}

/// What [`LoaderBuilder`](crate::LoaderBuilder) and
/// [`ClipLoaderBuilder`](crate::ClipLoaderBuilder) both take.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) sampler: Sampler,
    pub(crate) batch_size: usize,
    pub(crate) drop_last: bool,
    pub(crate) seed: u64,
    pub(crate) policy: BadSamplePolicy,
    pub(crate) placement: Placement,
    /// Each sample's group when batches take one group at a time
    /// ([`crate::GroupedBatchSampler`]'s batching over the sampler's order).
    pub(crate) groups: Option<Arc<[usize]>>,
}

impl Settings {
    /// Sequential, seed 0, bad samples skipped, short last batch kept, default device.
    pub(crate) fn new(batch_size: usize) -> Settings {
        Settings {
            sampler: Sampler::sequential(),
            batch_size,
            drop_last: false,
            seed: 0,
            policy: BadSamplePolicy::Skip,
            placement: Placement::Auto,
            groups: None,
        }
    }

    /// The bad-sample routine over a dataset of `len` samples.
    pub(crate) fn bad_samples(&self, len: usize) -> BadSamples {
        BadSamples::new(self.policy, self.seed, len)
    }

    /// The state before batch `next_batch` of `epoch` over `dataset_len` samples.
    pub(crate) fn state(&self, epoch: u64, next_batch: usize, dataset_len: usize) -> LoaderState {
        LoaderState {
            epoch,
            next_batch,
            seed: self.seed,
            sampler: self.sampler,
            dataset_len,
            batch_size: self.batch_size,
            drop_last: self.drop_last,
            stream: None,
            reshards: Vec::new(),
            share_batches: None,
            groups: self.groups.as_deref().map(crate::grouped::groups_hash),
        }
    }

    /// The dataset indices of each batch of what is left of `epoch` after `reshards` (none: the
    /// whole epoch; see [`crate::Reshard`]), in order.
    pub(crate) fn batches_after(
        &self,
        dataset_len: usize,
        epoch: u64,
        reshards: &[Reshard],
    ) -> Vec<Vec<usize>> {
        let groups = self.groups.as_deref().unwrap_or(&[]);
        let order = self
            .sampler
            .indices_after_grouped(dataset_len, epoch, reshards, groups);
        if let Some(groups) = &self.groups {
            return crate::grouped::group_batches(&order, groups, self.batch_size);
        }
        order
            .chunks(self.batch_size)
            .filter(|c| !self.drop_last || c.len() == self.batch_size)
            .map(<[usize]>::to_vec)
            .collect()
    }

    /// Samples in an epoch (for this rank, after `drop_last`), bad samples counted.
    pub(crate) fn samples_per_epoch(&self, dataset_len: usize) -> usize {
        let n = self.sampler.indices(dataset_len, 0).len();
        if self.drop_last || self.groups.is_some() {
            n - n % self.batch_size
        } else {
            n
        }
    }

    /// Batches in an epoch.
    pub(crate) fn batches_per_epoch(&self, dataset_len: usize) -> usize {
        let n = self.sampler.indices(dataset_len, 0).len();
        // Grouped batches are whole: len / batch_size of them, as torchvision's sampler.
        if self.drop_last || self.groups.is_some() {
            n / self.batch_size
        } else {
            n.div_ceil(self.batch_size)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_chunk_the_order_and_drop_a_short_last_one_when_asked() {
        let mut s = Settings::new(4);
        assert_eq!(
            s.batches_after(10, 0, &[]),
            vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7], vec![8, 9]]
        );
        assert_eq!(s.batches_per_epoch(10), 3);
        assert_eq!(s.samples_per_epoch(10), 10);
        s.drop_last = true;
        assert_eq!(s.batches_after(10, 0, &[]).len(), 2);
        assert_eq!(s.batches_per_epoch(10), 2);
        let kept: usize = s.batches_after(10, 0, &[]).iter().map(Vec::len).sum();
        assert_eq!(s.samples_per_epoch(10), kept);
    }
}
