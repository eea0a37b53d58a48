//! The video path: fixed-length clips (episodes) from many videos or multi-camera scenes,
//! decoded on a pool of NVDEC sessions and written by the fused kernel straight from each
//! mapped surface into `[B, T, C, H, W]` (or `[B, cameras, T, C, H, W]`) batch tensors.
//!
//! Batches go to the sessions in jobs of consecutive batches. One decode plan per video per
//! job requests every frame the job's clips need, so overlapping clips share decoding and
//! each run starts at the right keyframe (open-GOP leading pictures included: that is
//! `gm-demux`'s plan). With a sequential sampler (stream access) jobs span several batches,
//! so each GOP is decoded once per job rather than once per batch; with a shuffled sampler
//! (random access) a job is one batch and decodes only what its plan needs. A clip's frames
//! (every camera's) get the augmentation drawn from (seed, epoch, episode).

mod dataset;
mod decode;
mod stats;

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, SendTimeoutError, Sender, bounded};
use gm_codec::nvdec::DecoderPool;
use gm_cuda::{Device, DevicePool, PoolConfig};
use gm_transforms::{Compose, Transform};
use parking_lot::Mutex;

pub use dataset::{
    BadFiles, Clip, EpisodeSpec, VIDEO_EXTENSIONS, VideoDataset, VideoDatasetBuilder,
    index_file_name,
};
pub use decode::{ClipBatch, surface_source};
pub use stats::ClipStats;

use crate::builder::BadSamplePolicy;
use crate::error::LoaderError;
use crate::sampler::Sampler;
use crate::state::LoaderState;
use decode::{Outcome, Shared};

/// Settings of a [`ClipLoader`].
pub struct ClipLoaderBuilder {
    dataset: VideoDataset,
    device: Option<Device>,
    sessions: usize,
    chain: Vec<Box<dyn Transform>>,
    sampler: Sampler,
    batch_size: usize,
    drop_last: bool,
    seed: u64,
    policy: BadSamplePolicy,
    batches_per_job: Option<usize>,
}

impl ClipLoaderBuilder {
    /// The GPU (default: GPU 0).
    pub fn device(mut self, device: &Device) -> Self {
        self.device = Some(device.clone());
        self
    }

    /// NVDEC sessions, one thread each (default 7: the decode engines of an H100 or H200).
    pub fn sessions(mut self, n: usize) -> Self {
        self.sessions = n.max(1);
        self
    }

    /// The transform chain; it must end in a fixed output size.
    pub fn transforms(mut self, chain: Vec<Box<dyn Transform>>) -> Self {
        self.chain = chain;
        self
    }

    /// Which episodes, in which order (default: sequential, every episode).
    pub fn sampler(mut self, sampler: Sampler) -> Self {
        self.sampler = sampler;
        self
    }

    /// Clips per batch (default 8).
    pub fn batch_size(mut self, n: usize) -> Self {
        self.batch_size = n;
        self
    }

    /// Drop a short last batch.
    pub fn drop_last(mut self, yes: bool) -> Self {
        self.drop_last = yes;
        self
    }

    /// The augmentation seed.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// What a clip that cannot be decoded does (default: left out of its batch).
    pub fn bad_samples(mut self, policy: BadSamplePolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Consecutive batches per decoding job (default: 8 with a sequential sampler, where
    /// consecutive batches continue the same videos, and 1 with a shuffled one).
    pub fn batches_per_job(mut self, n: usize) -> Self {
        self.batches_per_job = Some(n.max(1));
        self
    }

    /// Starts the decoder sessions.
    pub fn build(self) -> Result<ClipLoader, LoaderError> {
        if self.batch_size == 0 || self.dataset.is_empty() {
            return Err(LoaderError::Config(
                "a clip loader needs a batch size and at least one episode".into(),
            ));
        }
        if self.chain.is_empty() {
            return Err(LoaderError::Config(
                "a clip loader needs transforms ending in a fixed size".into(),
            ));
        }
        let device = match self.device {
            Some(d) => d,
            None => Device::new(0)?,
        };
        let decoders = DecoderPool::new(&device, self.sessions, None)
            .map_err(|e| LoaderError::Video(format!("NVDEC: {e}")))?;
        let batches_per_job = self.batches_per_job.unwrap_or(match self.sampler.order {
            crate::sampler::Order::Sequential => 8,
            crate::sampler::Order::Shuffled { .. } => 1,
        });
        Ok(ClipLoader {
            shared: Arc::new(Shared {
                dataset: Arc::new(self.dataset),
                chain: Compose(self.chain),
                kernels: Mutex::new(Vec::new()),
                pool: DevicePool::new(&device, PoolConfig::unbounded("gm-loader clips")),
                device,
                seed: self.seed,
                policy: self.policy,
                stats: Mutex::new(ClipStats::default()),
            }),
            sampler: self.sampler,
            batch_size: self.batch_size,
            drop_last: self.drop_last,
            batches_per_job,
            decoders: Arc::new(decoders),
        })
    }
}

/// Clips from a [`VideoDataset`] in batches on one GPU: jobs of consecutive batches go to a
/// pool of NVDEC sessions (one thread each), several at once, and come back in order.
pub struct ClipLoader {
    shared: Arc<Shared>,
    sampler: Sampler,
    batch_size: usize,
    drop_last: bool,
    batches_per_job: usize,
    decoders: Arc<DecoderPool>,
}

impl ClipLoader {
    /// Settings for a loader over `dataset`.
    pub fn builder(dataset: VideoDataset) -> ClipLoaderBuilder {
        ClipLoaderBuilder {
            dataset,
            device: None,
            sessions: 7,
            chain: Vec::new(),
            sampler: Sampler::sequential(),
            batch_size: 8,
            drop_last: false,
            seed: 0,
            policy: BadSamplePolicy::Skip,
            batches_per_job: None,
        }
    }

    /// A loader over `dataset` on `device` with `sessions` NVDEC sessions; the chain must end
    /// in a fixed output size. Shorthand for [`ClipLoader::builder`].
    pub fn new(
        dataset: VideoDataset,
        device: &Device,
        sessions: usize,
        chain: Vec<Box<dyn Transform>>,
        sampler: Sampler,
        batch_size: usize,
        seed: u64,
    ) -> Result<ClipLoader, LoaderError> {
        ClipLoader::builder(dataset)
            .device(device)
            .sessions(sessions)
            .transforms(chain)
            .sampler(sampler)
            .batch_size(batch_size)
            .seed(seed)
            .build()
    }

    /// The dataset.
    pub fn dataset(&self) -> &VideoDataset {
        &self.shared.dataset
    }

    /// Counters so far (all epochs).
    pub fn stats(&self) -> ClipStats {
        self.shared.stats.lock().clone()
    }

    /// The state before batch `next_batch` of `epoch`.
    pub fn state(&self, epoch: u64, next_batch: usize) -> LoaderState {
        LoaderState {
            epoch,
            next_batch,
            seed: self.shared.seed,
            sampler: self.sampler,
            dataset_len: self.shared.dataset.len(),
            batch_size: self.batch_size,
            drop_last: self.drop_last,
        }
    }

    /// The batches of `epoch` (the last one may be short unless dropped), decoded ahead on
    /// the session threads; dropping the iterator stops and joins its thread.
    pub fn epoch(&mut self, epoch: u64) -> ClipEpoch<'_> {
        self.start(epoch, 0)
    }

    /// The batches that follow a saved state.
    pub fn resume(&mut self, state: &LoaderState) -> Result<ClipEpoch<'_>, LoaderError> {
        self.state(0, 0).check_same_loader(state)?;
        Ok(self.start(state.epoch, state.next_batch))
    }

    fn start(&mut self, epoch: u64, first: usize) -> ClipEpoch<'_> {
        let order = self.sampler.indices(self.shared.dataset.len(), epoch);
        let mut batches: Vec<(usize, Vec<usize>)> = order
            .chunks(self.batch_size)
            .map(<[usize]>::to_vec)
            .enumerate()
            .collect();
        if self.drop_last && batches.last().is_some_and(|b| b.1.len() < self.batch_size) {
            batches.pop();
        }
        let end = batches.len();
        let jobs: Vec<Vec<(usize, Vec<usize>)>> = batches
            .into_iter()
            .skip(first)
            .collect::<Vec<_>>()
            .chunks(self.batches_per_job)
            .map(<[_]>::to_vec)
            .collect();
        let in_flight = self.decoders.sessions() + 1;
        let (tx, rx) = bounded(2);
        let stop = Arc::new(AtomicBool::new(false));
        let (shared, decoders, stop2) = (self.shared.clone(), self.decoders.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("gm-loader-clips".into())
            .spawn(move || order_jobs(jobs, in_flight, &shared, &decoders, epoch, &tx, &stop2))
            .ok();
        ClipEpoch {
            rx: Some(rx),
            stop,
            thread,
            state: self.state(epoch, first),
            end,
            shared: self.shared.clone(),
            _loader: std::marker::PhantomData,
        }
    }
}

/// Submits jobs, at most `in_flight` at once, and forwards their batches in order.
fn order_jobs(
    jobs: Vec<Vec<(usize, Vec<usize>)>>,
    in_flight: usize,
    shared: &Arc<Shared>,
    decoders: &DecoderPool,
    epoch: u64,
    tx: &Sender<Outcome>,
    stop: &Arc<AtomicBool>,
) {
    let mut pending: VecDeque<(usize, Receiver<Outcome>, Receiver<gm_codec::Result<()>>)> =
        VecDeque::new();
    let mut next = jobs.into_iter();
    loop {
        while pending.len() < in_flight {
            let Some(job) = next.next() else { break };
            let count = job.len();
            let (btx, brx) = bounded(count + 1);
            let (shared, stop) = (shared.clone(), stop.clone());
            let done = decoders.submit(move |session| {
                shared.run_job(session, epoch, job, &btx, &stop);
                Ok(())
            });
            pending.push_back((count, brx, done));
        }
        let Some((count, brx, done)) = pending.pop_front() else {
            return;
        };
        for _ in 0..count {
            let r = match brx.recv() {
                Ok(r) => r,
                // The job ended without sending: it panicked, or the pool is gone.
                Err(_) => Err(match done.recv() {
                    Ok(Err(e)) => LoaderError::Video(format!("NVDEC: {e}")),
                    _ => LoaderError::WorkerPanic {
                        stage: "clip decoder",
                        message: "a decoding job ended without its batches".into(),
                    },
                }),
            };
            let fatal = r.is_err();
            if !send(tx, r, stop) || fatal {
                return;
            }
        }
    }
}

fn send(tx: &Sender<Outcome>, mut msg: Outcome, stop: &AtomicBool) -> bool {
    loop {
        match tx.send_timeout(msg, Duration::from_millis(20)) {
            Ok(()) => return true,
            Err(SendTimeoutError::Timeout(m)) if !stop.load(Ordering::Relaxed) => msg = m,
            Err(_) => return false,
        }
    }
}

/// The batches of one epoch of a [`ClipLoader`].
pub struct ClipEpoch<'a> {
    rx: Option<Receiver<Outcome>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    state: LoaderState,
    end: usize,
    shared: Arc<Shared>,
    _loader: std::marker::PhantomData<&'a mut ()>,
}

impl ClipEpoch<'_> {
    /// The state to save for resuming after the last batch yielded.
    pub fn state(&self) -> LoaderState {
        self.state.clone()
    }

    /// Batches left in this epoch (batches whose every clip was bad included).
    pub fn remaining(&self) -> usize {
        self.end.saturating_sub(self.state.next_batch)
    }
}

impl Iterator for ClipEpoch<'_> {
    type Item = Result<ClipBatch, LoaderError>;
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let waited = Instant::now();
            let r = self.rx.as_ref()?.recv().ok()?;
            self.shared.stats.lock().wait_us += waited.elapsed().as_micros() as u64;
            match r {
                Ok(Some(b)) => {
                    self.state.next_batch = b.position + 1;
                    return Some(Ok(b));
                }
                // Every clip of that batch was bad and skipped.
                Ok(None) => self.state.next_batch += 1,
                Err(e) => {
                    self.rx = None;
                    return Some(Err(e));
                }
            }
        }
    }
}

impl Drop for ClipEpoch<'_> {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.rx = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
