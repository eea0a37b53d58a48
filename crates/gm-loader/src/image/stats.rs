//! Counters and stage times, for progress reports and for finding the bottleneck.

use crate::error::SampleError;

/// How many errors are kept with their details.
pub const FIRST_ERRORS: usize = 16;

/// Images per decode path.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PathTotals {
    /// NVJPG engines.
    pub hardware: u64,
    /// nvJPEG CUDA backend.
    pub cuda: u64,
    /// CPU.
    pub cpu: u64,
}

/// What a loader did so far (all epochs).
#[derive(Debug, Clone, Default)]
pub struct Stats {
    /// Batches delivered.
    pub batches: u64,
    /// Images delivered.
    pub samples: u64,
    /// Samples that failed to load.
    pub bad: u64,
    /// Bad samples left out of their batch.
    pub skipped: u64,
    /// Bad samples replaced by another sample.
    pub substituted: u64,
    /// The first distinct bad samples (up to 16), with file and reason.
    pub first_errors: Vec<SampleError>,
    /// Host workers' time reading files (and, on the CPU path, decoding and transforming), µs.
    pub read_us: u64,
    /// GPU stage's host time in the decoder, µs.
    pub decode_us: u64,
    /// Of `decode_us`: the decoder's planning (header parsing and routing), µs.
    pub decode_plan_us: u64,
    /// Of `decode_us`: the engines' thread (its batched calls and waits), µs.
    pub decode_hardware_us: u64,
    /// Of `decode_us`: the longest CUDA-backend worker of each batch, µs.
    pub decode_cuda_us: u64,
    /// GPU stage's host time planning and launching the transform, µs.
    pub transform_us: u64,
    /// Of `transform_us`: the masks' preparation ([`LoaderBuilder::masks`]: the objects the
    /// geometry drops, the taps, masks moved on the host through warps), µs.
    ///
    /// [`LoaderBuilder::masks`]: crate::LoaderBuilder::masks
    pub mask_prepare_us: u64,
    /// Of `transform_us`: the masks' staging and the upload calls, µs.
    pub mask_upload_us: u64,
    /// Stages' host time moving the samples' targets ([`LoaderBuilder::targets`]), µs.
    ///
    /// [`LoaderBuilder::targets`]: crate::LoaderBuilder::targets
    pub targets_us: u64,
    /// Samples whose masks went to the GPU as their spans of 1s (COCO's runs), a few bytes an
    /// object, and were written out there.
    pub masks_from_spans: u64,
    /// Time the consumer waited for a batch, µs.
    pub wait_us: u64,
    /// Wall time of the epochs (from starting each to its end or drop), µs.
    pub wall_us: u64,
    /// Images per decode path.
    pub paths: PathTotals,
    /// Of the images decoded on the GPU, those decoded only in the region their transform
    /// reads ([`crate::LoaderBuilder::region_decode`]).
    pub regions: u64,
    /// Most batches seen ready and waiting for the consumer.
    pub max_ready: usize,
    /// Most batches read ahead of the GPU stage.
    pub max_read_ahead: usize,
}

impl Stats {
    /// Images delivered per second of epoch wall time.
    pub fn images_per_second(&self) -> f64 {
        self.samples as f64 * 1e6 / self.wall_us.max(1) as f64
    }

    /// Share of the epochs' wall time the consumer spent waiting for batches: near 1, the
    /// loader is the bottleneck; near 0, the consumer is.
    pub fn wait_fraction(&self) -> f64 {
        self.wait_us as f64 / self.wall_us.max(1) as f64
    }

    /// Counts a bad sample; true when it is kept in `first_errors` (a sample not seen before,
    /// while there is room), so that a file failing every epoch is reported once.
    pub(crate) fn record_bad(&mut self, e: SampleError) -> bool {
        self.bad += 1;
        let new = self.first_errors.len() < FIRST_ERRORS
            && !self.first_errors.iter().any(|f| f.index == e.index);
        if new {
            self.first_errors.push(e);
        }
        new
    }
}
