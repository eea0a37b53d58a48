//! The clip loader's settings and the loader they make.

use std::sync::Arc;

use std::collections::HashMap;

use gm_codec::avcodec::CpuDecoder;
use gm_codec::nvdec::{DecoderPool, DecoderSession};
use gm_codec::{DecoderChoice, Route, Routing, StreamKind, WorkerPool};
use gm_cuda::Device;
use gm_transforms::{Compose, RandomErasing, Transform};
use parking_lot::Mutex;

use super::dataset::VideoDataset;
use super::decode::{GpuShared, Shared};
use super::jobs::{cut, cut_by_key, job_sizes};
use super::order::Limits;
use super::pipeline::ClipEpoch;
use super::stats::ClipStats;
use super::worker::Decoders;
use crate::NodeCpus;
use crate::bad_samples::BadSamplePolicy;
use crate::elastic::Reshard;
use crate::error::LoaderError;
use crate::sampler::Sampler;
use crate::settings::{Placement, Settings, pick_device};
use crate::state::{Cursor, LoaderState};

/// Settings of a [`ClipLoader`].
pub struct ClipLoaderBuilder {
    dataset: VideoDataset,
    settings: Settings,
    sessions: Option<usize>,
    cpu_decoders: Option<usize>,
    chain: Compose,
    batches_per_job: Option<usize>,
    erasing: Option<RandomErasing>,
    routing: Routing,
    replicate_chroma: bool,
    jobs_in_flight: Option<usize>,
    numa: bool,
    nvdec_batch: Option<bool>,
}

impl ClipLoaderBuilder {
    /// Run on this GPU (default: GPU `LOCAL_RANK`, or 0, when there is one, else the CPU).
    pub fn device(mut self, device: &Device) -> Self {
        self.settings.placement = Placement::Gpu(device.clone());
        self
    }

    /// Run on the CPU: every video decoded on the host (libavcodec, the bundled AV1
    /// decoder), the transforms' CPU twins, host tensors out. The batches equal the GPU's
    /// within the twins' rounding.
    pub fn cpu(mut self) -> Self {
        self.settings.placement = Placement::Cpu;
        self
    }

    /// NVDEC sessions on a GPU, one thread each (default 7, the decode engines of an H100 or
    /// H200; where the dataset also has videos routed to the CPU, one per CPU decoder, at
    /// least 7). Where the loader runs on
    /// the CPU, the CPU decoders, unless [`ClipLoaderBuilder::cpu_decoders`] says otherwise.
    pub fn sessions(mut self, n: usize) -> Self {
        self.sessions = Some(n.max(1));
        self
    }

    /// Host threads decoding the videos routed to the CPU, each with its own decoder (and on a
    /// GPU its own stream, staging and fused kernel), beside the NVDEC sessions (default: the
    /// loader's core budget, the node's cores over the launcher's `LOCAL_WORLD_SIZE`). Created
    /// only where some video goes to the CPU.
    pub fn cpu_decoders(mut self, n: usize) -> Self {
        self.cpu_decoders = Some(n.max(1));
        self
    }

    /// Whether the loader's threads (NVDEC sessions, CPU decoders, the job thread) run on the
    /// CPUs of its GPU's NUMA node, their staging allocated from there, and the default CPU
    /// decoders are at most the node's share (default: on). Where the host has one node, or the
    /// process is already confined to fewer CPUs, this changes nothing; see [`NodeCpus`].
    pub fn numa_placement(mut self, on: bool) -> Self {
        self.numa = on;
        self
    }

    /// Whether the NVDEC sessions' threads run under Linux's `SCHED_BATCH`, so that their
    /// wake-ups to read a picture's status never preempt a running CPU decoder (default: where
    /// the dataset also has videos routed to the CPU, whose decoders then take every core).
    /// The sessions then wait for a free core or the scheduler's tick; turn it off where the
    /// CPU decoders are few and the engines bind. No effect off Linux.
    pub fn nvdec_batch_scheduling(mut self, on: bool) -> Self {
        self.nvdec_batch = Some(on);
        self
    }

    /// Which decoder takes each video (default [`DecoderChoice::Auto`]: NVDEC where the GPU's
    /// decoder takes the stream, else libavcodec or the bundled AV1 decoder on the
    /// [`ClipLoaderBuilder::cpu_decoders`], the frames then staged into the same pipeline). `Gpu` makes a stream NVDEC refuses a bad clip with
    /// NVDEC's reason; `Cpu` decodes everything on the host. Each video is routed on its own,
    /// so a dataset may mix both (see [`ClipLoader::route`]).
    pub fn decoder(mut self, choice: DecoderChoice) -> Self {
        self.routing.choice = choice;
        self
    }

    /// libavcodec threads per video a CPU decoder decodes (default 1; 0 lets libavcodec use
    /// every core). CPU decoders x threads is the host cores CPU decoding may take: give the
    /// loader more [`ClipLoaderBuilder::cpu_decoders`] rather than more threads.
    pub fn cpu_threads(mut self, n: usize) -> Self {
        self.routing.cpu_threads = n;
        self
    }

    /// Appends a step to the transform chain; the chain must end in a fixed output size.
    pub fn transform(mut self, step: impl Transform + 'static) -> Self {
        self.chain.push(step);
        self
    }

    /// Replaces the transform chain with a prepared one (a [`Compose`], or a
    /// `Vec<Box<dyn Transform>>`); see [`ClipLoaderBuilder::transform`].
    pub fn transforms(mut self, chain: impl Into<Compose>) -> Self {
        self.chain = chain.into();
        self
    }

    /// Which episodes, in which order (default: sequential, every episode).
    pub fn sampler(mut self, sampler: Sampler) -> Self {
        self.settings.sampler = sampler;
        self
    }

    /// Clips per batch (default 8).
    pub fn batch_size(mut self, n: usize) -> Self {
        self.settings.batch_size = n;
        self
    }

    /// Drop a short last batch.
    pub fn drop_last(mut self, yes: bool) -> Self {
        self.settings.drop_last = yes;
        self
    }

    /// The augmentation seed.
    pub fn seed(mut self, seed: u64) -> Self {
        self.settings.seed = seed;
        self
    }

    /// What a clip that cannot be decoded does (default: left out of its batch).
    pub fn bad_samples(mut self, policy: BadSamplePolicy) -> Self {
        self.settings.policy = policy;
        self
    }

    /// Consecutive batches per decoding job, at most (default: 8 with a sequential sampler,
    /// where consecutive batches continue the same videos, and 1 with a shuffled one). An
    /// epoch is cut into a multiple of the session count of jobs, as equal as the batches
    /// allow, so that no session idles through a last, partial round.
    pub fn batches_per_job(mut self, n: usize) -> Self {
        self.batches_per_job = Some(n.max(1));
        self
    }

    /// torchvision's RandomErasing after the chain, drawn once per clip from (seed, epoch,
    /// episode): every frame of a clip, and every camera of a scene, loses the same rectangle
    /// (with `value="random"`, the same noise, as torchvision broadcasts its noise over a
    /// video's frames).
    pub fn random_erasing(mut self, erasing: RandomErasing) -> Self {
        self.erasing = Some(erasing);
        self
    }

    /// Repeats each chroma sample of 4:2:0 and 4:2:2 video over the luma samples it covers
    /// (default `false`: chroma is interpolated at the stream's chroma location as ffmpeg's
    /// swscale does, so RGB is within one step of ffmpeg's). Faster where the kernel, not the
    /// decoder, limits the rate.
    pub fn replicate_chroma(mut self, yes: bool) -> Self {
        self.replicate_chroma = yes;
        self
    }

    /// Decoding jobs submitted and not yet delivered, at most (default: NVDEC sessions + 1;
    /// CPU decoders alone, 4 x the decoders in one-batch jobs (at least decoders + 1 jobs),
    /// since CPU jobs vary in length and the decoders idle behind a slow one at the head;
    /// where NVDEC and the CPU share the dataset, 4 x the decoders of both kinds, so that each
    /// kind keeps decoding past a slower job of the other). Each pool is kept fed with
    /// its sessions + 1 jobs within this bound. Batches are delivered in order whatever the
    /// value; a finished job holds its batches until then, so this bounds memory.
    pub fn jobs_in_flight(mut self, n: usize) -> Self {
        self.jobs_in_flight = Some(n.max(1));
        self
    }

    /// Starts the decoders (NVDEC sessions, or CPU decoders where the loader runs on the
    /// CPU).
    pub fn build(self) -> Result<ClipLoader, LoaderError> {
        if self.settings.batch_size == 0 || self.dataset.is_empty() {
            return Err(LoaderError::Config(
                "a clip loader needs a batch size and at least one episode".into(),
            ));
        }
        if self.chain.is_empty() {
            return Err(LoaderError::Config(
                "a clip loader needs transforms ending in a fixed size".into(),
            ));
        }
        let (device, mut placement) = pick_device(&self.settings.placement)?;
        let node = match &device {
            Some(d) if self.numa => d.info().ok().and_then(|i| NodeCpus::of_gpu(&i.pci_bus_id)),
            _ => None,
        };
        let (routes, decoders, gpu) = match &device {
            Some(device) => {
                let routes = routes(device, &self.dataset, self.routing)?;
                // Built on a thread pinned to the node: the sessions' threads inherit its CPUs.
                let (decoders, batch) = crate::numa::on_node(node.as_ref(), || {
                    self.gpu_decoders(device, &routes, node.as_ref())
                })?;
                if let Some(n) = &node {
                    append(&mut placement, &format!("threads on {}", n.describe()));
                }
                if batch {
                    append(&mut placement, "NVDEC threads under SCHED_BATCH");
                }
                (routes, decoders, Some(GpuShared::new(device)))
            }
            None => {
                let (routes, pool) = self.host_decoders(&placement)?;
                (routes, Decoders::Cpu(pool), None)
            }
        };
        let (nvdec, cpu) = decoders.split();
        let (nvdec_sessions, cpu_sessions) = match &decoders {
            Decoders::Gpu {
                nvdec: Some(nvdec),
                cpu: Some(cpu),
            } => (Some(nvdec.handle()), Some(cpu.handle())),
            _ => (None, None),
        };
        let cpu_routed = routes
            .iter()
            .map(|r| matches!(r, Ok(r) if r.is_cpu()))
            .collect();
        let batches_per_job = self
            .batches_per_job
            .unwrap_or(match self.settings.sampler.order {
                crate::sampler::Order::Sequential => 8,
                crate::sampler::Order::Shuffled { .. } => 1,
            });
        let jobs_in_flight = self
            .jobs_in_flight
            .unwrap_or_else(|| default_window(nvdec, cpu, batches_per_job));
        Ok(ClipLoader {
            shared: Arc::new(Shared {
                bad: self.settings.bad_samples(self.dataset.len()),
                dataset: Arc::new(self.dataset),
                chain: self.chain,
                gpu,
                seed: self.settings.seed,
                erasing: self.erasing,
                replicate_chroma: self.replicate_chroma,
                cpu_routed,
                cpu_sessions,
                nvdec_sessions,
                stats: Mutex::new(ClipStats::default()),
                node: node.map(Arc::new),
            }),
            settings: self.settings,
            batches_per_job,
            jobs_in_flight,
            decoders: Arc::new(decoders),
            routes,
            placement,
        })
    }

    /// A GPU's decoders for videos routed as `routes` say: NVDEC sessions where some video
    /// goes to NVDEC (or none can be decoded, so that the refusals come from NVDEC), and
    /// CPU-route sessions where some goes to the CPU; and whether the NVDEC sessions' threads
    /// run under `SCHED_BATCH` (see [`ClipLoaderBuilder::nvdec_batch_scheduling`]).
    fn gpu_decoders(
        &self,
        device: &Device,
        routes: &Routes,
        node: Option<&NodeCpus>,
    ) -> Result<(Decoders, bool), LoaderError> {
        let to_cpu = routes.iter().any(|r| matches!(r, Ok(r) if r.is_cpu()));
        let to_nvdec = routes.iter().any(|r| matches!(r, Ok(r) if !r.is_cpu()));
        let cpu_decoders = self.cpu_decoders.unwrap_or_else(|| {
            let budget = crate::default_core_budget();
            node.map_or(budget, |n| budget.min(n.budget(crate::local_loaders())))
        });
        let cpu = if to_cpu {
            Some(DecoderPool::routed_named(
                device,
                cpu_decoders,
                None,
                self.routing,
                "gm-cpu-route",
            )?)
        } else {
            None
        };
        let nvdec = if to_nvdec || !to_cpu {
            let n = self
                .sessions
                .unwrap_or_else(|| default_sessions(to_cpu.then_some(cpu_decoders)));
            let pool = || Ok(DecoderPool::routed(device, n, None, self.routing)?);
            Some(match self.nvdec_batch.unwrap_or(to_cpu) {
                true => crate::sched::on_batch_thread(pool)?,
                false => (pool()?, false),
            })
        } else {
            None
        };
        let batch = nvdec.as_ref().is_some_and(|(_, batch)| *batch);
        let nvdec = nvdec.map(|(pool, _)| pool);
        Ok((Decoders::Gpu { nvdec, cpu }, batch))
    }

    /// The CPU path's routes (every video on the CPU, `why` the loader runs there) and its
    /// decoders: the core budget unless [`ClipLoaderBuilder::cpu_decoders`] (or
    /// [`ClipLoaderBuilder::sessions`]) says otherwise.
    /// `decoder = gpu` is refused: it asks for NVDEC.
    fn host_decoders(&self, why: &str) -> Result<(Routes, WorkerPool<CpuDecoder>), LoaderError> {
        if self.routing.choice == DecoderChoice::Gpu {
            return Err(LoaderError::Config(format!(
                "decoder = gpu asks for NVDEC, but the clip loader runs on the {why}"
            )));
        }
        let route = Route::Cpu {
            reason: format!("the loader runs on the {why}"),
        };
        let routes = vec![Ok(route); self.dataset.videos.len()];
        let n = self
            .cpu_decoders
            .or(self.sessions)
            .unwrap_or_else(crate::default_core_budget);
        let threads = self.routing.cpu_threads;
        let pool = WorkerPool::new(n, "gm-clips-cpu", move |_| CpuDecoder::new(threads))?;
        Ok((routes, pool))
    }
}

/// Adds `what` to a placement's words, after a comma where there are some already.
fn append(placement: &mut String, what: &str) {
    if !placement.is_empty() {
        placement.push_str(", ");
    }
    placement.push_str(what);
}

/// NVDEC sessions when the user sets none: 7, the decode engines of an H100 or H200; where
/// the dataset also has videos routed to the CPU (`cpu_decoders` of them), as many as the CPU
/// decoders, at least 7. An NVDEC job hands its CPU-routed videos to the CPU decoders and,
/// when they are slower than its own, leaves its last batches to them and goes on (see
/// `decode/parts.rs`), so sessions no longer wait for the cores; more of them only take cores
/// from the CPU decoders. On a 2 AV1 : 3 H.264 mix on an H200 host with 16 CPU
/// decoders: 2,248 frames/s with 7 sessions, 2,319-2,391 with 16 and 2,157 with 32
/// (bench/results/2026-11-30-h200-parked-jobs). Before jobs left their tails, sessions waited
/// and 32 was best.
fn default_sessions(cpu_decoders: Option<usize>) -> usize {
    cpu_decoders.map_or(7, |n| n.max(7))
}

/// Jobs in flight when the user sets none. NVDEC jobs take about as long as one another, so
/// decoders + 1 keeps the sessions fed. CPU jobs do not: a random clip of AV1 may need a GOP
/// decoded before it or nothing, so the decoders idled behind the slowest job at the head of
/// the order (13.4 of 16 cores busy, 738 AV1 frames/s against 843-874 with 64-146 jobs out on
/// an H200 host). CPU decoders therefore get 4 x the decoders' jobs, counted in batches of
/// one-batch jobs so that long stream jobs do not buffer several times as much memory; and a
/// dataset mixing both kinds keeps each kind decoding past the other's slow jobs.
fn default_window(nvdec: usize, cpu: usize, batches_per_job: usize) -> usize {
    let decoders = nvdec + cpu;
    match (nvdec, cpu) {
        (_, 0) => decoders + 1,
        (0, _) => (4 * decoders)
            .div_ceil(batches_per_job.max(1))
            .max(decoders + 1),
        _ => 4 * decoders,
    }
}

/// Each video's route, or under `decoder = gpu` NVDEC's refusal in words.
type Routes = Vec<Result<Route, String>>;

/// Where each video of `dataset` is decoded under `routing`, asked once per kind of stream
/// (codec, profile, chroma format, bit depth, size). Warns once when videos fall back to the
/// CPU. A stream NVDEC refuses under `decoder = gpu` keeps the refusal as its route's error.
fn routes(
    device: &Device,
    dataset: &VideoDataset,
    routing: Routing,
) -> Result<Routes, LoaderError> {
    let mut session = DecoderSession::new(device, None)?;
    session.set_routing(routing);
    let mut by_kind: HashMap<StreamKind, Result<Route, String>> = HashMap::new();
    let mut out = Vec::with_capacity(dataset.videos.len());
    for v in 0..dataset.videos.len() {
        let c = &dataset.video_index(v).codec;
        let kind = StreamKind::of(c);
        let route = match by_kind.get(&kind) {
            Some(r) => r.clone(),
            None => {
                let r = match session.route(dataset.path(v), c) {
                    Ok(r) => Ok(r),
                    Err(e @ gm_codec::CodecError::Unsupported(_)) => Err(e.to_string()),
                    Err(e) => return Err(e.into()),
                };
                by_kind.insert(kind, r.clone());
                r
            }
        };
        out.push(route);
    }
    let cpu = out
        .iter()
        .filter(|r| matches!(r, Ok(r) if r.is_cpu()))
        .count();
    if cpu > 0 && routing.choice == DecoderChoice::Auto {
        let reason = out
            .iter()
            .find_map(|r| match r {
                Ok(Route::Cpu { reason }) => Some(reason.clone()),
                _ => None,
            })
            .unwrap_or_default();
        tracing::warn!(
            videos = cpu,
            of = out.len(),
            %reason,
            "some videos decode on the CPU (FFmpeg's libavcodec, or the bundled AV1 decoder): NVDEC cannot take them"
        );
    }
    Ok(out)
}

/// Clips from a [`VideoDataset`] in batches on one GPU: jobs of consecutive batches go to a
/// pool of NVDEC sessions (one thread each), several at once, and come back in order. On a
/// machine without a GPU (or asked with [`ClipLoaderBuilder::cpu`]) the same jobs run on CPU
/// decoders and the transforms' CPU twins, and batches hold host tensors.
pub struct ClipLoader {
    shared: Arc<Shared>,
    settings: Settings,
    batches_per_job: usize,
    jobs_in_flight: usize,
    decoders: Arc<Decoders>,
    routes: Routes,
    placement: String,
}

impl ClipLoader {
    /// Where video `v` of the dataset is decoded (`nvdec`, or `cpu` with the reason), or,
    /// under `decoder = gpu`, NVDEC's refusal.
    pub fn route(&self, v: usize) -> Result<&Route, &str> {
        match self.routes.get(v) {
            Some(Ok(r)) => Ok(r),
            Some(Err(e)) => Err(e),
            None => Err("no such video"),
        }
    }

    /// Where the loader runs, in words: `CPU (...)` with the reason (asked for, or why no GPU
    /// was found); on a GPU empty, or how its threads are placed (`threads on` a NUMA node's
    /// CPUs, `NVDEC threads under SCHED_BATCH`).
    pub fn placement(&self) -> &str {
        &self.placement
    }

    /// Whether the loader runs on the CPU (host tensors out).
    pub fn on_cpu(&self) -> bool {
        self.shared.gpu.is_none()
    }

    /// How many of the dataset's videos decode on the CPU.
    pub fn cpu_videos(&self) -> usize {
        self.routes
            .iter()
            .filter(|r| matches!(r, Ok(r) if r.is_cpu()))
            .count()
    }

    /// The loader's decoding threads: NVDEC sessions, and CPU decoders for the videos routed
    /// to the CPU (on a machine without a GPU, none and the CPU decoders). A pool no video
    /// needs is not started.
    pub fn decoder_threads(&self) -> (usize, usize) {
        self.decoders.split()
    }

    /// Settings for a loader over `dataset`.
    pub fn builder(dataset: VideoDataset) -> ClipLoaderBuilder {
        ClipLoaderBuilder {
            dataset,
            settings: Settings::new(8),
            sessions: None,
            cpu_decoders: None,
            chain: Compose::new(),
            batches_per_job: None,
            erasing: None,
            routing: Routing::default(),
            replicate_chroma: false,
            jobs_in_flight: None,
            numa: true,
            nvdec_batch: None,
        }
    }

    /// A loader over `dataset` on `device` with `sessions` NVDEC sessions; the chain must end
    /// in a fixed output size. Shorthand for [`ClipLoader::builder`].
    pub fn new(
        dataset: VideoDataset,
        device: &Device,
        sessions: usize,
        chain: impl Into<Compose>,
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

    /// Batches in an epoch.
    pub fn batches_per_epoch(&self) -> usize {
        self.settings.batches_per_epoch(self.shared.dataset.len())
    }

    /// Counters so far (all epochs).
    pub fn stats(&self) -> ClipStats {
        self.shared.stats.lock().clone()
    }

    /// The state before batch `next_batch` of `epoch`.
    pub fn state(&self, epoch: u64, next_batch: usize) -> LoaderState {
        self.settings
            .state(epoch, next_batch, self.shared.dataset.len())
    }

    /// The batches of `epoch` (the last one may be short unless dropped), decoded ahead on
    /// the session threads; dropping the iterator stops and joins its thread.
    pub fn epoch(&mut self, epoch: u64) -> ClipEpoch<'_> {
        self.start(epoch, 0)
    }

    /// Epochs `epochs` back to back, each item tagged with its epoch, the next epoch started
    /// behind the last batches of the running one (see [`crate::Epochs`]).
    pub fn epochs(&mut self, epochs: std::ops::Range<u64>) -> crate::Epochs<'_, ClipLoader> {
        crate::Epochs::new(self, epochs)
    }

    /// The batches that follow a saved state.
    pub fn resume(&mut self, state: &LoaderState) -> Result<ClipEpoch<'_>, LoaderError> {
        self.resume_owned(state)
    }

    /// [`ClipLoader::epoch`] as an iterator that does not borrow the loader (for bindings
    /// that cannot express the borrow, like the Python package); run one epoch at a time.
    pub fn epoch_owned(&mut self, epoch: u64) -> ClipEpoch<'static> {
        self.start(epoch, 0)
    }

    /// [`ClipLoader::resume`] as an iterator that does not borrow the loader.
    pub fn resume_owned(&mut self, state: &LoaderState) -> Result<ClipEpoch<'static>, LoaderError> {
        self.state(0, 0).check_same_loader(state)?;
        Ok(self.start_after(state.epoch, state.next_batch, &state.reshards))
    }

    fn start(&mut self, epoch: u64, first: usize) -> ClipEpoch<'static> {
        self.start_after(epoch, first, &[])
    }

    /// What is left of `epoch` after `reshards` (a merged state's), from batch `first`.
    fn start_after(
        &mut self,
        epoch: u64,
        first: usize,
        reshards: &[Reshard],
    ) -> ClipEpoch<'static> {
        let batches = self
            .settings
            .batches_after(self.shared.dataset.len(), epoch, reshards);
        let end = batches.len();
        let todo: Vec<(usize, Vec<usize>)> = batches.into_iter().enumerate().skip(first).collect();
        let (nvdec, cpu) = self.decoders.split();
        let jobs = if self.shared.mixes_routes() {
            let shared = &self.shared;
            let on_cpu = |b: &(usize, Vec<usize>)| shared.job_on_cpu(std::slice::from_ref(b));
            cut_by_key(&todo, on_cpu, (nvdec, cpu), self.batches_per_job)
        } else {
            cut(
                &todo,
                &job_sizes(todo.len(), nvdec + cpu, self.batches_per_job),
            )
        };
        ClipEpoch::spawn(
            jobs,
            Limits {
                in_flight: self.jobs_in_flight,
                per_pool: [nvdec + 1, cpu + 1],
            },
            &self.shared,
            &self.decoders,
            epoch,
            Cursor::new(
                LoaderState {
                    reshards: reshards.to_vec(),
                    ..self.state(epoch, first)
                },
                end,
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::{default_sessions, default_window};

    #[test]
    fn mixed_datasets_get_a_session_per_cpu_decoder() {
        // NVDEC alone: the engines of an H100 or H200.
        assert_eq!(default_sessions(None), 7);
        // Beside CPU decoders: as many, never fewer than alone.
        assert_eq!(default_sessions(Some(16)), 16);
        assert_eq!(default_sessions(Some(2)), 7);
    }

    #[test]
    fn cpu_decoders_get_a_wider_window_in_batches_not_jobs() {
        // NVDEC alone: sessions + 1, whatever the job length.
        assert_eq!(default_window(7, 0, 1), 8);
        assert_eq!(default_window(7, 0, 8), 8);
        // CPU decoders alone: 64 one-batch jobs for 16 decoders; stream jobs of 8 batches
        // keep decoders + 1 jobs rather than 64 x 8 batches.
        assert_eq!(default_window(0, 16, 1), 64);
        assert_eq!(default_window(0, 16, 2), 32);
        assert_eq!(default_window(0, 16, 8), 17);
        // Both kinds: 4 x all decoders.
        assert_eq!(default_window(16, 16, 1), 128);
    }
}
