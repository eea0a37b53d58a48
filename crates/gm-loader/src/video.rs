//! The video path: fixed-length clips from many videos, decoded on NVDEC and written by the
//! fused kernel straight from each mapped surface into a `[B, T, C, H, W]` batch tensor.
//!
//! Each batch's clips are grouped by video and all their frames are requested in one decode
//! plan per video, so overlapping clips share decoding and each run starts at the right
//! keyframe (open-GOP leading pictures included: that is `gm-demux`'s plan). A clip's frames
//! all get the augmentation drawn for the clip from (seed, epoch, clip index).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{Receiver, SendTimeoutError, Sender, bounded};
use gm_codec::nvdec::{DecoderPool, DecoderSession, SurfaceFormat};
use gm_cuda::{Device, DevicePool, Event, PoolConfig, Tensor};
use gm_demux::{IndexOptions, IndexingDemuxer};
use gm_episodes::EpisodeGenerator;
use gm_transforms::{
    Compose, FusedKernel, FusedOp, Matrix, OutputSpec, PixelFormat, SampleRng, SourceImage,
    Transform,
};
use parking_lot::Mutex;

use crate::error::{LoaderError, SampleError};
use crate::sampler::Sampler;

/// Many videos cut into episodes: episode `i` of the dataset is episode `k` of video `v`,
/// videos in the order given.
pub struct VideoDataset {
    videos: Vec<(PathBuf, IndexingDemuxer, EpisodeGenerator)>,
    /// First dataset episode of each video, plus the total at the end.
    starts: Vec<usize>,
}

impl VideoDataset {
    /// Indexes every file (no decoding) and cuts each into episodes of `length` frames every
    /// `stride` frames, taking every `step`-th frame.
    pub fn open(
        paths: &[PathBuf],
        length: usize,
        stride: usize,
        step: usize,
    ) -> Result<VideoDataset, LoaderError> {
        let mut videos = Vec::with_capacity(paths.len());
        let mut starts = vec![0];
        for p in paths {
            let demux = IndexingDemuxer::open(p, IndexOptions::default())
                .map_err(|e| LoaderError::Video(format!("{}: {e}", p.display())))?;
            let episodes = EpisodeGenerator::new(demux.index().frame_count(), length, stride)
                .and_then(|g| g.with_step(step))
                .map_err(|e| LoaderError::Config(e.to_string()))?;
            starts.push(starts[starts.len() - 1] + episodes.episode_count());
            videos.push((p.clone(), demux, episodes));
        }
        Ok(VideoDataset { videos, starts })
    }

    /// Episodes in all videos.
    pub fn len(&self) -> usize {
        self.starts[self.starts.len() - 1]
    }

    /// Whether there are no episodes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The video and its episode for dataset episode `i`.
    pub fn locate(&self, i: usize) -> Option<(usize, usize)> {
        if i >= self.len() {
            return None;
        }
        let v = self.starts.partition_point(|&s| s <= i) - 1;
        Some((v, i - self.starts[v]))
    }

    /// Frame indices (presentation order) of dataset episode `i`.
    pub fn frames(&self, i: usize) -> Option<Vec<usize>> {
        let (v, k) = self.locate(i)?;
        self.videos[v].2.episode(k as i64).ok()
    }

    /// The path of video `v`.
    pub fn path(&self, v: usize) -> &Path {
        &self.videos[v].0
    }
}

/// A batch of clips.
#[derive(Debug)]
pub struct ClipBatch {
    /// `[B, T, C, H, W]` (or `[B, T, H, W, C]`) of the chain's output type.
    pub frames: Tensor,
    /// Dataset episode of each clip.
    pub episodes: Vec<usize>,
    /// `(video, frame indices)` of each clip.
    pub sources: Vec<(usize, Vec<usize>)>,
    /// The epoch.
    pub epoch: u64,
    /// Position of the batch in the epoch.
    pub position: usize,
    /// Recorded when every frame is in place.
    pub ready_event: Arc<Event>,
}

/// Fused kernels shared by the decoding jobs (each job takes one while it runs).
type Kernels = Arc<Mutex<Vec<FusedKernel>>>;

/// Clips from a [`VideoDataset`] in batches on one GPU: batches go to a pool of NVDEC
/// sessions (one thread each), several at once, and come back in order.
pub struct ClipLoader {
    dataset: Arc<VideoDataset>,
    chain: Arc<Compose>,
    sampler: Sampler,
    batch_size: usize,
    seed: u64,
    decoders: Arc<DecoderPool>,
    kernels: Kernels,
    pool: DevicePool,
    device: Device,
}

impl ClipLoader {
    /// A loader over `dataset` on `device` with `sessions` NVDEC sessions (the H100/H200 have
    /// 7 decode engines); the chain must end in a fixed output size.
    pub fn new(
        dataset: VideoDataset,
        device: &Device,
        sessions: usize,
        chain: Vec<Box<dyn Transform>>,
        sampler: Sampler,
        batch_size: usize,
        seed: u64,
    ) -> Result<ClipLoader, LoaderError> {
        if batch_size == 0 || dataset.is_empty() {
            return Err(LoaderError::Config(
                "a clip loader needs a batch size and at least one episode".into(),
            ));
        }
        let decoders = DecoderPool::new(device, sessions.max(1), None)
            .map_err(|e| LoaderError::Video(format!("NVDEC: {e}")))?;
        Ok(ClipLoader {
            dataset: Arc::new(dataset),
            chain: Arc::new(Compose(chain)),
            sampler,
            batch_size,
            seed,
            kernels: Arc::new(Mutex::new(Vec::new())),
            pool: DevicePool::new(device, PoolConfig::unbounded("gm-loader clips")),
            device: device.clone(),
            decoders: Arc::new(decoders),
        })
    }

    /// The dataset.
    pub fn dataset(&self) -> &VideoDataset {
        &self.dataset
    }

    /// The batches of `epoch` (the last one may be short), decoded ahead on the session
    /// threads; dropping the iterator stops and joins its thread.
    pub fn epoch(&mut self, epoch: u64) -> ClipEpoch<'_> {
        let order = self.sampler.indices(self.dataset.len(), epoch);
        let batches: Vec<Vec<usize>> = order
            .chunks(self.batch_size)
            .map(<[usize]>::to_vec)
            .collect();
        let in_flight = self.decoders.sessions() + 1;
        let (tx, rx) = bounded(2);
        let stop = Arc::new(AtomicBool::new(false));
        let job = Job {
            dataset: self.dataset.clone(),
            chain: self.chain.clone(),
            kernels: self.kernels.clone(),
            pool: self.pool.clone(),
            device: self.device.clone(),
            seed: self.seed,
            epoch,
        };
        let (decoders, stop2) = (self.decoders.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("gm-loader-clips".into())
            .spawn(move || {
                let mut pending = std::collections::VecDeque::new();
                let mut next = batches.into_iter().enumerate();
                loop {
                    while pending.len() < in_flight {
                        let Some((position, episodes)) = next.next() else {
                            break;
                        };
                        let job = job.clone();
                        pending.push_back(
                            decoders
                                .submit(move |session| Ok(job.run(session, position, episodes))),
                        );
                    }
                    let Some(rx) = pending.pop_front() else {
                        return;
                    };
                    let r = match rx.recv() {
                        Ok(Ok(r)) => r,
                        Ok(Err(e)) => Err(LoaderError::Video(format!("NVDEC: {e}"))),
                        Err(_) => Err(LoaderError::WorkerPanic {
                            stage: "clip decoder",
                            message: "a decoder thread went away".into(),
                        }),
                    };
                    let fatal = r.is_err();
                    if !send(&tx, r, &stop2) || fatal {
                        return;
                    }
                }
            })
            .ok();
        ClipEpoch {
            rx: Some(rx),
            stop,
            thread,
            _loader: std::marker::PhantomData,
        }
    }
}

/// What a decoding job needs besides its session.
#[derive(Clone)]
struct Job {
    dataset: Arc<VideoDataset>,
    chain: Arc<Compose>,
    kernels: Kernels,
    pool: DevicePool,
    device: Device,
    seed: u64,
    epoch: u64,
}

impl Job {
    fn run(
        &self,
        session: &mut DecoderSession,
        position: usize,
        episodes: Vec<usize>,
    ) -> Result<ClipBatch, LoaderError> {
        let kernel = self.kernels.lock().pop();
        let mut kernel = match kernel {
            Some(k) => k,
            None => FusedKernel::new(&self.device)?,
        };
        let r = decode_batch(session, &mut kernel, &self.pool, self, position, episodes);
        self.kernels.lock().push(kernel);
        r
    }
}

fn send(
    tx: &Sender<Result<ClipBatch, LoaderError>>,
    mut msg: Result<ClipBatch, LoaderError>,
    stop: &AtomicBool,
) -> bool {
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
    rx: Option<Receiver<Result<ClipBatch, LoaderError>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    _loader: std::marker::PhantomData<&'a mut ()>,
}

impl Iterator for ClipEpoch<'_> {
    type Item = Result<ClipBatch, LoaderError>;
    fn next(&mut self) -> Option<Self::Item> {
        let r = self.rx.as_ref()?.recv().ok()?;
        if r.is_err() {
            self.rx = None;
        }
        Some(r)
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

/// One batch: a decode plan per video for all its clips' frames, each decoded frame written
/// into every slot that asked for it.
fn decode_batch(
    session: &mut DecoderSession,
    kernel: &mut FusedKernel,
    pool: &DevicePool,
    job: &Job,
    position: usize,
    episodes: Vec<usize>,
) -> Result<ClipBatch, LoaderError> {
    let (dataset, chain, seed, epoch) = (&*job.dataset, &*job.chain, job.seed, job.epoch);
    job.device.bind_to_thread()?;
    let mut sources = Vec::with_capacity(episodes.len());
    for &e in &episodes {
        let (v, _) = dataset
            .locate(e)
            .ok_or_else(|| LoaderError::Config(format!("episode {e}")))?;
        let frames = dataset.frames(e).unwrap_or_default();
        sources.push((v, frames));
    }
    let t = sources.first().map_or(0, |s| s.1.len());
    // Each clip's geometry, planned on its video's display size.
    let mut plans: Vec<(FusedOp, OutputSpec)> = Vec::with_capacity(episodes.len());
    for (b, &e) in episodes.iter().enumerate() {
        let idx = dataset.videos[sources[b].0].1.index();
        let (w, h) = (idx.codec.width, idx.codec.height);
        let mut rng = SampleRng::new(seed, epoch, e as u64);
        let plan = chain.plan_image(w, h, &mut rng).map_err(|err| {
            LoaderError::Plan(SampleError {
                index: e,
                name: dataset.path(sources[b].0).display().to_string(),
                reason: err.to_string(),
            })
        })?;
        if let Some(first) = plans.first()
            && first.1 != plan.1
        {
            return Err(LoaderError::Plan(SampleError {
                index: e,
                name: dataset.path(sources[b].0).display().to_string(),
                reason: "clips of one batch must have the same output size".into(),
            }));
        }
        plans.push(plan);
    }
    let spec = plans[0].1;
    let (h, w, c) = (spec.height as usize, spec.width as usize, spec.channels());
    let per = match spec.layout {
        gm_transforms::Layout::Chw => [c, h, w],
        gm_transforms::Layout::Hwc => [h, w, c],
    };
    let n = episodes.len() * t;
    let stream = session.stream().clone();
    let flat = Tensor::empty(pool, &stream, &[n, per[0], per[1], per[2]], spec.dtype)?;
    let mut videos: Vec<usize> = sources.iter().map(|s| s.0).collect();
    videos.sort_unstable();
    videos.dedup();
    for v in videos {
        // Requests of this video: (slot in the batch tensor, frame).
        let wanted: Vec<(usize, usize)> = sources
            .iter()
            .enumerate()
            .filter(|(_, s)| s.0 == v)
            .flat_map(|(b, s)| s.1.iter().enumerate().map(move |(j, &f)| (b * t + j, f)))
            .collect();
        let frames: Vec<usize> = wanted.iter().map(|w| w.1).collect();
        let demux = &dataset.videos[v].1;
        let plan = demux
            .plan(&frames)
            .map_err(|e| LoaderError::Video(format!("{}: {e}", dataset.path(v).display())))?;
        session
            .decode(demux, &plan, &mut |f| {
                let format = match f.format {
                    SurfaceFormat::Nv12 => PixelFormat::Nv12,
                    SurfaceFormat::P016 => PixelFormat::P016 {
                        bit_depth: f.bit_depth,
                    },
                };
                let src = SourceImage {
                    data: f.luma,
                    chroma: f.chroma,
                    pitch: f.pitch,
                    width: f.width,
                    height: f.height,
                    format,
                    matrix: Matrix::from_code(f.colour.matrix_coefficients, f.height),
                    full_range: f.colour.full_range,
                };
                for &r in f.slots {
                    let (slot, _) = wanted[r as usize];
                    let op = plans[slot / t.max(1)].0;
                    kernel.run(f.stream, &[src], &[op], &spec, &flat, slot)?;
                }
                Ok(())
            })
            .map_err(|e| LoaderError::Video(format!("{}: {e}", dataset.path(v).display())))?;
    }
    let event = Arc::new(Event::new(&job.device)?);
    event.record(&stream)?;
    let mut shape = vec![episodes.len(), t];
    shape.extend_from_slice(&per);
    let mut frames = flat.view(0, &shape, spec.dtype)?;
    frames.set_ready_event(event.clone());
    Ok(ClipBatch {
        frames,
        episodes,
        sources,
        epoch,
        position,
        ready_event: event,
    })
}
