//! What the image pipeline's threads share: the dataset, the chain, the policy, the stats and
//! the read buffers.

use std::sync::Arc;

use gm_transforms::targets::TargetGeometry;
use gm_transforms::{
    BatchMix, Compose, FusedOp, OutputSpec, Passes, RandomErasing, SampleRng, Transform,
};
use parking_lot::Mutex;

use super::batch::MovedSample;
use super::cache::Cache;
use super::dataset::Dataset;
use super::stats::Stats;
use crate::bad_samples::BadSamples;
use crate::error::{LoaderError, SampleError, SampleErrorKind};

/// Settings shared by the pipeline's threads.
pub(crate) struct Shared {
    pub(crate) dataset: Arc<dyn Dataset>,
    pub(crate) transforms: Compose,
    pub(crate) seed: u64,
    pub(crate) bad: BadSamples,
    pub(crate) max_pixels: u64,
    pub(crate) apply_orientation: bool,
    /// JPEGs cut short: refused or decoded (the CPU path; the GPU stage has the decoder's).
    pub(crate) truncated: gm_codec::jpeg::Truncated,
    pub(crate) stats: Mutex<Stats>,
    /// Read buffers handed back by the stage, so reading allocates nothing in steady state.
    pub(crate) buffers: Mutex<Vec<Vec<u8>>>,
    pub(crate) cpu: bool,
    pub(crate) cache: Option<Arc<Cache>>,
    /// Decode only the pixels each sample's transform reads
    /// ([`LoaderBuilder::region_decode`](crate::LoaderBuilder::region_decode)).
    pub(crate) region_decode: bool,
    /// RandomErasing of each image after the chain (per sample: seed, epoch, dataset index).
    pub(crate) erasing: Option<RandomErasing>,
    /// MixUp/CutMix of each batch (per batch: seed, epoch, position).
    pub(crate) mix: Option<BatchMix>,
    /// How a batch holds images of many sizes.
    pub(crate) sizes: super::sizes::BatchSizes,
    /// Batches carry their samples' names (a stream's: its indices name nothing lasting).
    pub(crate) named: bool,
    /// Each sample's masks are read and moved with its pixels
    /// ([`LoaderBuilder::masks`](crate::LoaderBuilder::masks)).
    pub(crate) masks: bool,
    /// Each batch carries its samples' moved targets
    /// ([`LoaderBuilder::targets`](crate::LoaderBuilder::targets)).
    pub(crate) targets: bool,
    /// Where a GPU loader's host workers put the masks they read, for the stages to upload.
    pub(crate) mask_pinning: Option<super::masks::MaskPinning>,
    /// The NUMA node the loader's threads run on, where placing them changes anything.
    pub(crate) node: Option<Arc<crate::NodeCpus>>,
}

impl Shared {
    /// Counts a bad sample; `Err` under [`BadSamplePolicy::Fail`](crate::BadSamplePolicy).
    pub(crate) fn bad_sample(
        &self,
        index: usize,
        reason: SampleErrorKind,
    ) -> Result<(), LoaderError> {
        let e = SampleError {
            index,
            name: self.dataset.name(index),
            reason,
        };
        let first = self.stats.lock().record_bad(e.clone());
        self.bad.report(e, first)
    }

    /// Sample `index`'s plan for a `width` x `height` image, with its boxes where the chain
    /// draws from them (RandomIoUCrop).
    pub(crate) fn plan(
        &self,
        index: usize,
        (width, height): (u32, u32),
        rng: &mut SampleRng,
    ) -> Result<(FusedOp, OutputSpec, Passes), SampleErrorKind> {
        let boxes = if self.transforms.needs_boxes() {
            self.dataset.boxes(index)?
        } else {
            None
        };
        Ok(self
            .transforms
            .plan_with_boxes(width, height, boxes.as_ref(), rng)?)
    }

    /// The error for sample `index`, whose transform cannot stack with the batch's.
    pub(crate) fn plan_error(&self, index: usize, reason: SampleErrorKind) -> LoaderError {
        LoaderError::Plan(SampleError {
            index,
            name: self.dataset.name(index),
            reason,
        })
    }

    /// The names of samples `indices`, when batches carry them.
    pub(crate) fn names_of(&self, indices: &[usize]) -> Option<Vec<String>> {
        self.named
            .then(|| indices.iter().map(|&i| self.dataset.name(i)).collect())
    }

    /// The targets of samples `indices` moved through their `geometry`, when batches carry
    /// them and the dataset has them.
    pub(crate) fn moved_targets(
        &self,
        indices: &[usize],
        geometry: &[TargetGeometry],
    ) -> Option<Vec<MovedSample>> {
        if !self.targets {
            return None;
        }
        let t = std::time::Instant::now();
        let moved = indices
            .iter()
            .zip(geometry)
            .map(|(&i, g)| self.dataset.moved_targets(i, g))
            .collect();
        self.stats.lock().targets_us += t.elapsed().as_micros() as u64;
        moved
    }

    pub(crate) fn take_buffer(&self) -> Vec<u8> {
        self.buffers.lock().pop().unwrap_or_default()
    }

    pub(crate) fn give_buffer(&self, buf: Vec<u8>) {
        let mut b = self.buffers.lock();
        // Enough for a few batches in flight; beyond that, let them go.
        if b.len() < 4096 {
            b.push(buf);
        }
    }

    /// Reads samples `indices` into pooled buffers, through the dataset's batch read.
    pub(crate) fn read_batch(&self, indices: &[usize]) -> Vec<Result<Vec<u8>, SampleErrorKind>> {
        let mut bufs: Vec<Vec<u8>> = indices.iter().map(|_| self.take_buffer()).collect();
        let results = self.dataset.read_batch(indices, &mut bufs);
        bufs.into_iter()
            .zip(results)
            .map(|(buf, result)| match result {
                Ok(()) => Ok(buf),
                Err(e) => {
                    self.give_buffer(buf);
                    Err(SampleErrorKind::read(&e))
                }
            })
            .collect()
    }

    /// Reads sample `index` into a pooled buffer.
    pub(crate) fn read(&self, index: usize) -> Result<Vec<u8>, SampleErrorKind> {
        let mut buf = self.take_buffer();
        match self.dataset.read(index, &mut buf) {
            Ok(()) => Ok(buf),
            Err(e) => {
                self.give_buffer(buf);
                Err(SampleErrorKind::read(&e))
            }
        }
    }
}
