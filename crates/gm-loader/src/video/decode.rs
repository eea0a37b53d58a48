//! One decoding job: a run of consecutive batches on one decoder (an NVDEC session, or a CPU
//! decoder where the loader runs on the host). All frames of all the job's clips are
//! requested in one decode plan per video, so overlapping clips and consecutive batches of a
//! stream share decoding (each GOP is decoded once per job); every decoded frame is written
//! by the fused kernel from its mapped surface (or by its CPU twin from the host frame) into
//! each slot that asked for it, and a batch is sent as soon as its last video is done.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crossbeam_channel::Sender;
use gm_codec::PoolHandle;
use gm_codec::avcodec::CpuDecoder;
use gm_codec::nvdec::{DecodedFrame, DecoderSession, FrameStatus, SessionStats, SurfaceFormat};
use gm_cuda::{Device, DevicePool, Event, Stream, Tensor};
use gm_demux::{ChromaLocation, DisplayOrientation};
use gm_transforms::cpu::HostImage;
use gm_transforms::{
    BatchOpsKernel, Blur, BlurKernel, ChromaFilter, Compose, FusedKernel, FusedOp, Layout, Matrix,
    Orientation, OutputSpec, Passes, PixelFormat, RandomErasing, SampleRng, SourceImage,
};
use parking_lot::Mutex;

use super::batch::ClipBatch;
use super::dataset::{Clip, VideoDataset};
use super::stats::ClipStats;
use super::worker::{JobDecoder, PackedFrame, Slab, cpu_session_stats, write_host_slot};
use crate::bad_samples::BadSamples;
use crate::error::{LoaderError, SampleError, SampleErrorKind};
use crate::release::Rejoin;

mod board;
mod finish;
mod parts;

/// What a job sends per batch: the batch, `None` when every clip of it was bad and skipped,
/// or the error that ends the epoch.
pub(crate) type Outcome = Result<Option<ClipBatch>, LoaderError>;

/// What decoding jobs share.
pub(crate) struct Shared {
    pub(crate) dataset: Arc<VideoDataset>,
    pub(crate) chain: Compose,
    /// The GPU's kernels and memory; `None` where the loader runs on the CPU.
    pub(crate) gpu: Option<GpuShared>,
    pub(crate) seed: u64,
    /// RandomErasing after the chain.
    pub(crate) erasing: Option<RandomErasing>,
    /// Chroma repeated rather than interpolated ([`ClipLoaderBuilder::replicate_chroma`]).
    ///
    /// [`ClipLoaderBuilder::replicate_chroma`]: super::ClipLoaderBuilder::replicate_chroma
    pub(crate) replicate_chroma: bool,
    /// Per video: decoded on the CPU (its route), which decides where its jobs go.
    pub(crate) cpu_routed: Vec<bool>,
    /// The CPU-route sessions, where a job on an NVDEC session hands its CPU-routed videos
    /// (see [`parts`]); `None` unless the loader has both pools.
    pub(crate) cpu_sessions: Option<PoolHandle<DecoderSession>>,
    /// The NVDEC sessions, where a job on a CPU-route session hands its NVDEC-routed videos;
    /// `None` unless the loader has both pools.
    pub(crate) nvdec_sessions: Option<PoolHandle<DecoderSession>>,
    pub(crate) bad: BadSamples,
    pub(crate) stats: Mutex<ClipStats>,
    /// The NUMA node the loader's threads run on, where placing them changes anything.
    pub(crate) node: Option<Arc<crate::NodeCpus>>,
}

/// What jobs on a GPU share.
pub(crate) struct GpuShared {
    pub(crate) kernels: Mutex<Vec<FusedKernel>>,
    pub(crate) pool: DevicePool,
    pub(crate) device: Device,
    /// An erasing kernel per session stream (a kernel shared by sessions would make each
    /// session's stream wait for another's last batch).
    pub(crate) erase_kernels: Mutex<HashMap<usize, BatchOpsKernel>>,
    /// The blur and noise passes' kernels, one per session stream (made on first use).
    pub(crate) post_kernels: Mutex<HashMap<usize, BlurKernel>>,
}

impl GpuShared {
    /// Kernels and a batch pool on `device`.
    pub(crate) fn new(device: &Device) -> GpuShared {
        GpuShared {
            kernels: Mutex::new(Vec::new()),
            pool: DevicePool::new(device, gm_cuda::PoolConfig::unbounded("gm-loader clips")),
            device: device.clone(),
            erase_kernels: Mutex::new(HashMap::new()),
            post_kernels: Mutex::new(HashMap::new()),
        }
    }
}

/// Where a job decodes and writes: an NVDEC session and the fused kernel, or a CPU decoder
/// and the kernels' CPU twins.
enum Worker<'a> {
    Gpu {
        session: &'a mut DecoderSession,
        kernel: &'a mut FusedKernel,
        gpu: &'a GpuShared,
    },
    Cpu {
        decoder: &'a mut CpuDecoder,
        packed: PackedFrame,
    },
}

impl Worker<'_> {
    fn stats(&self) -> SessionStats {
        match self {
            Worker::Gpu { session, .. } => session.stats(),
            Worker::Cpu { decoder, .. } => cpu_session_stats(decoder),
        }
    }

    /// The session's stream; `None` on the CPU.
    fn stream(&self) -> Option<&Stream> {
        match self {
            Worker::Gpu { session, .. } => Some(session.stream()),
            Worker::Cpu { .. } => None,
        }
    }

    /// Memory for `n` frames of `spec`: from the GPU's pool, or on the host.
    fn slab(&self, n: usize, spec: &OutputSpec) -> Result<Slab, LoaderError> {
        match self {
            Worker::Gpu { session, gpu, .. } => Ok(Slab::Device(Tensor::empty(
                &gpu.pool,
                session.stream(),
                &with_item(n, spec),
                spec.dtype,
            )?)),
            Worker::Cpu { .. } => Ok(Slab::host(n, spec)),
        }
    }
}

/// One batch being filled.
struct Filling {
    position: usize,
    episodes: Vec<usize>,
    clips: Vec<Clip>,
    plans: Vec<Vec<FusedOp>>,
    /// What runs after the fused kernel, per clip and camera (GaussianBlur, GaussianNoise).
    posts: Vec<Vec<Passes>>,
    /// Where the batch is finished on another stream than its memory was taken on: orders
    /// that stream after the finishing one before `flat` and `scratch` go back to the pool
    /// (declared before them, so it drops first).
    rejoin: Option<Rejoin>,
    flat: Slab,
    /// With a blur in the chain: the fused kernel's u8 HWC frames, which the blur pass reads.
    scratch: Option<Slab>,
    spec: OutputSpec,
    /// Videos of this batch not decoded yet.
    videos_left: usize,
    /// Reason per bad clip slot.
    bad: HashMap<usize, SampleErrorKind>,
}

impl Shared {
    /// How to read chroma the stream's way (`stream`) under the loader's settings.
    fn chroma(&self, stream: ChromaFilter) -> ChromaFilter {
        if self.replicate_chroma {
            ChromaFilter::Replicate
        } else {
            stream
        }
    }

    /// Whether the dataset has videos routed to the CPU and videos routed to NVDEC.
    pub(crate) fn mixes_routes(&self) -> bool {
        self.cpu_routed.contains(&true) && self.cpu_routed.contains(&false)
    }

    /// Whether a job of `batches` (position, episodes) goes to the CPU-route sessions: when
    /// more of its frames come from videos routed to the CPU than from NVDEC's. A job is the
    /// unit of scheduling, so a job that mixes routes is decoded where most of it belongs;
    /// in a dataset that mixes routes, jobs are cut per route (see
    /// [`cut_by_key`](super::jobs::cut_by_key)), each batch counted this way.
    pub(crate) fn job_on_cpu(&self, batches: &[(usize, Vec<usize>)]) -> bool {
        // One route for the whole dataset: no clip to look at (this runs for every job).
        if !self.mixes_routes() {
            return self.cpu_routed.contains(&true);
        }
        let (mut cpu, mut nvdec) = (0usize, 0usize);
        for (_, episodes) in batches {
            for clip in episodes.iter().filter_map(|&e| self.dataset.clip(e)) {
                for (v, frames) in &clip.cameras {
                    if self.cpu_routed.get(*v).copied().unwrap_or(false) {
                        cpu += frames.len();
                    } else {
                        nvdec += frames.len();
                    }
                }
            }
        }
        cpu > nvdec
    }

    /// Decodes `batches` (position, episodes) of `epoch` on `decoder`, sending one
    /// [`Outcome`] per batch, in order, to `out`. Where the loader has both pools, a job
    /// hands its videos of the other route to the other pool: a job on an NVDEC session
    /// (`on_nvdec`) its CPU-routed videos, a job on a CPU-route session its NVDEC ones.
    pub(crate) fn run_job(
        self: &Arc<Self>,
        decoder: JobDecoder<'_>,
        epoch: u64,
        batches: Vec<(usize, Vec<usize>)>,
        on_nvdec: bool,
        out: &Sender<Outcome>,
        stop: &Arc<AtomicBool>,
    ) {
        let r = match (decoder, &self.gpu) {
            (JobDecoder::Cpu(decoder), _) => {
                let mut w = Worker::Cpu {
                    decoder,
                    packed: PackedFrame::new(),
                };
                self.decode_job(&mut w, epoch, batches, false, out, stop)
            }
            (JobDecoder::Gpu(session), Some(gpu)) => self.with_kernel(gpu, session, |w| {
                self.decode_job(w, epoch, batches, on_nvdec, out, stop)
            }),
            (JobDecoder::Gpu(_), None) => Err(LoaderError::Config(
                "an NVDEC session in a loader that runs on the CPU".into(),
            )),
        };
        if let Err(e) = r {
            let _ = out.send(Err(e));
        }
    }

    /// Runs `f` on a worker of `session` and a fused kernel from the shared ones (made when
    /// none is free), which goes back after.
    fn with_kernel<T>(
        &self,
        gpu: &GpuShared,
        session: &mut DecoderSession,
        f: impl FnOnce(&mut Worker<'_>) -> Result<T, LoaderError>,
    ) -> Result<T, LoaderError> {
        let mut kernel = match gpu.kernels.lock().pop() {
            Some(k) => k,
            None => FusedKernel::new(&gpu.device)?,
        };
        let mut w = Worker::Gpu {
            session,
            kernel: &mut kernel,
            gpu,
        };
        let r = f(&mut w);
        gpu.kernels.lock().push(kernel);
        r
    }

    fn decode_job(
        self: &Arc<Self>,
        w: &mut Worker<'_>,
        epoch: u64,
        batches: Vec<(usize, Vec<usize>)>,
        on_nvdec: bool,
        out: &Sender<Outcome>,
        stop: &Arc<AtomicBool>,
    ) -> Result<(), LoaderError> {
        if let Some(gpu) = &self.gpu {
            gpu.device.bind_to_thread()?;
        }
        let started = Instant::now();
        let before = w.stats();
        let mut filling = Vec::with_capacity(batches.len());
        for (position, episodes) in batches {
            filling.push(Some(self.start_batch(w, epoch, position, episodes)?));
        }
        let started_us = started.elapsed().as_micros() as u64;
        let (order, mut wanted) = requests(&mut filling);
        let mut parts = self.hand_out(w, on_nvdec, &order, &wanted, &filling, stop)?;
        let mut sent = Sent::default();
        for v in order {
            if stop.load(Ordering::Relaxed) {
                return Ok(());
            }
            if !parts.holds(v) {
                let slots = &wanted[&v];
                let failed = self.decode_video(w, v, slots, &mut filling);
                video_done(&mut filling, slots, failed);
            }
            parts.collect(self, w, &wanted, &mut filling)?;
            if !self.send_ready(w, epoch, &mut filling, &mut sent, out) {
                return Ok(());
            }
        }
        let parked = self.park(
            w,
            epoch,
            &mut parts,
            &mut filling,
            &mut wanted,
            &mut sent,
            out,
            stop,
        )?;
        let mut s = self.stats.lock();
        s.decode_us += started.elapsed().as_micros() as u64;
        s.count_sessions(&before, &w.stats());
        s.start_us += started_us;
        s.finish_us += sent.finish_us;
        s.parked_jobs += u64::from(parked);
        Ok(())
    }

    /// Once the job's own videos are decoded: takes in its parts as they end, or, while some
    /// are out, leaves the rest of the job to them (true) so the session can go on.
    #[allow(clippy::too_many_arguments)]
    fn park(
        &self,
        w: &mut Worker<'_>,
        epoch: u64,
        parts: &mut parts::Parts,
        filling: &mut Vec<Option<Filling>>,
        wanted: &mut HashMap<usize, Vec<Slot>>,
        sent: &mut Sent,
        out: &Sender<Outcome>,
        stop: &Arc<AtomicBool>,
    ) -> Result<bool, LoaderError> {
        while parts.pending() {
            if stop.load(Ordering::Relaxed) {
                return Ok(false);
            }
            if let (Some(home), Some(gpu)) = (w.stream(), &self.gpu) {
                let own = Event::new(&gpu.device)?;
                own.record(home)?;
                let parked = parts.park(|parts| parts::Tail {
                    epoch,
                    filling: std::mem::take(filling),
                    wanted: std::mem::take(wanted),
                    parts,
                    // The time spent sending so far stays with the job's counters.
                    sent: Sent {
                        next: sent.next,
                        finish_us: 0,
                    },
                    out: out.clone(),
                    stop: stop.clone(),
                    own,
                    home: home.clone(),
                });
                if parked {
                    return Ok(true);
                }
            }
            parts.collect(self, w, wanted, filling)?;
            if !self.send_ready(w, epoch, filling, sent, out) {
                return Ok(false);
            }
        }
        Ok(false)
    }

    /// Finishes and sends the job's batches whose videos are all decoded, in order; false
    /// when the epoch must end (a fatal error was sent).
    fn send_ready(
        &self,
        w: &mut Worker<'_>,
        epoch: u64,
        filling: &mut [Option<Filling>],
        sent: &mut Sent,
        out: &Sender<Outcome>,
    ) -> bool {
        while let Some(Some(b)) = filling.get(sent.next)
            && b.videos_left == 0
        {
            let Some(b) = filling[sent.next].take() else {
                break;
            };
            let t = Instant::now();
            let r = self.finish_batch(w, epoch, b);
            let fatal = r.is_err();
            let _ = out.send(r);
            sent.finish_us += t.elapsed().as_micros() as u64;
            if fatal {
                return false;
            }
            sent.next += 1;
        }
        true
    }

    /// Plans every clip's geometry and takes the batch tensor from the pool.
    fn start_batch(
        &self,
        w: &Worker<'_>,
        epoch: u64,
        position: usize,
        episodes: Vec<usize>,
    ) -> Result<Filling, LoaderError> {
        let d = &*self.dataset;
        let mut clips = Vec::with_capacity(episodes.len());
        let mut plans = Vec::with_capacity(episodes.len());
        let mut posts = Vec::with_capacity(episodes.len());
        let mut spec: Option<OutputSpec> = None;
        for &e in &episodes {
            let clip = d
                .clip(e)
                .ok_or_else(|| LoaderError::Config(format!("episode {e} is not in the dataset")))?;
            let mut ops = Vec::with_capacity(clip.cameras.len());
            let mut post = Vec::with_capacity(clip.cameras.len());
            for (v, _) in &clip.cameras {
                let (op, s, p) = self.plan(d, *v, epoch, e)?;
                if let Some(want) = spec.filter(|first| *first != s) {
                    return Err(LoaderError::Plan(SampleError {
                        index: e,
                        name: d.name(e),
                        reason: SampleErrorKind::OutputSize { got: s, want },
                    }));
                }
                spec = Some(s);
                ops.push(op);
                post.push(p);
            }
            clips.push(clip);
            plans.push(ops);
            posts.push(post);
        }
        let spec = spec.ok_or_else(|| LoaderError::Config("an empty batch".into()))?;
        let n = slots_per_clip(d) * episodes.len();
        let flat = w.slab(n, &spec)?;
        // Substitutes are planned from the same chain: a blur in any clip means the chain
        // has one, so the scratch serves them too.
        let scratch = if posts.iter().flatten().any(|p| p.blur.is_some()) {
            Some(w.slab(n, &Blur::fused_spec(&spec))?)
        } else {
            None
        };
        Ok(Filling {
            position,
            episodes,
            clips,
            plans,
            posts,
            rejoin: None,
            flat,
            scratch,
            spec,
            videos_left: 0,
            bad: HashMap::new(),
        })
    }

    /// A clip's geometry on one camera: the same random draws for every camera of a clip.
    fn plan(
        &self,
        d: &VideoDataset,
        v: usize,
        epoch: u64,
        episode: usize,
    ) -> Result<(FusedOp, OutputSpec, Passes), LoaderError> {
        let (width, height) = d.frame_size(v);
        let mut rng = SampleRng::new(self.seed, epoch, episode as u64);
        self.chain
            .plan_post(width, height, &mut rng)
            .map_err(|err| {
                LoaderError::Plan(SampleError {
                    index: episode,
                    name: d.path(v).display().to_string(),
                    reason: err.into(),
                })
            })
    }

    /// Decodes video `v`'s requested frames into their slots; returns the slots that failed
    /// and why. When the plan as a whole fails (a packet cannot be read, the decoder gives
    /// up), each clip is decoded alone, so only the clips that need the damaged part are bad.
    fn decode_video(
        &self,
        w: &mut Worker<'_>,
        v: usize,
        slots: &[Slot],
        filling: &mut [Option<Filling>],
    ) -> Vec<(Slot, SampleErrorKind)> {
        let failed = self.decode_slots(w, v, slots, filling);
        if failed.is_empty() || failed.len() < slots.len() {
            return failed;
        }
        let mut groups: Vec<(usize, usize, usize)> =
            slots.iter().map(|s| (s.batch, s.clip, s.camera)).collect();
        groups.sort_unstable();
        groups.dedup();
        if groups.len() < 2 {
            return failed;
        }
        tracing::debug!(
            video = v,
            clips = groups.len(),
            "decoding clip by clip after a failure"
        );
        let mut out = Vec::new();
        for g in groups {
            let mine: Vec<Slot> = slots
                .iter()
                .filter(|s| (s.batch, s.clip, s.camera) == g)
                .copied()
                .collect();
            out.extend(self.decode_slots(w, v, &mine, filling));
        }
        out
    }

    fn decode_slots(
        &self,
        w: &mut Worker<'_>,
        v: usize,
        slots: &[Slot],
        filling: &mut [Option<Filling>],
    ) -> Vec<(Slot, SampleErrorKind)> {
        let d = &*self.dataset;
        let demux = &d.videos[v].demux;
        let frames: Vec<usize> = slots.iter().map(|s| s.frame).collect();
        let plan = match demux.plan(&frames) {
            Ok(p) => p,
            Err(e) => {
                let reason = SampleErrorKind::Demux {
                    message: e.to_string(),
                };
                return slots.iter().map(|s| (*s, reason.clone())).collect();
            }
        };
        let mut concealed: Vec<(Slot, SampleErrorKind)> = Vec::new();
        let shown = kernel_orientation(d.orientation(v));
        let r = match w {
            Worker::Gpu {
                session, kernel, ..
            } => session.decode(demux, &plan, &mut |f| {
                conceal(f.status, f.frame, f.slots, slots, &mut concealed);
                let src = surface_source(f).oriented(shown);
                let src = src.with_chroma(self.chroma(src.chroma_filter));
                for &r in f.slots {
                    let s = slots[r as usize];
                    let Some(b) = &filling[s.batch] else { continue };
                    let (spec, out) = b.target();
                    let Slab::Device(out) = out else { continue };
                    let pre = [b.posts[s.clip][s.camera].pre.as_slice()];
                    let op = b.plans[s.clip][s.camera];
                    kernel.run_passes(f.stream, &[src], &pre, &[op], &spec, out, s.slot)?;
                }
                Ok(())
            }),
            Worker::Cpu { decoder, packed } => decoder.decode(demux, &plan, &mut |f| {
                conceal(f.status, f.frame, f.slots, slots, &mut concealed);
                let src = packed.pack(f, shown)?;
                let src = src.with_chroma(self.chroma(src.chroma_filter));
                for &r in f.slots {
                    let s = slots[r as usize];
                    if let Some(b) = &mut filling[s.batch] {
                        b.write_host(&src, s);
                    }
                }
                Ok(())
            }),
        };
        if let Err(e) = r {
            let reason = SampleErrorKind::Codec {
                message: format!("{}: {e}", d.path(v).display()),
            };
            return slots.iter().map(|s| (*s, reason.clone())).collect();
        }
        concealed
    }
}

/// Marks the slots of a frame the decoder reported damaged (`status` not Ok).
fn conceal(
    status: FrameStatus,
    frame: u32,
    asked: &[u32],
    slots: &[Slot],
    concealed: &mut Vec<(Slot, SampleErrorKind)>,
) {
    if status == FrameStatus::Ok {
        return;
    }
    for &r in asked {
        concealed.push((
            slots[r as usize],
            SampleErrorKind::FrameStatus { frame, status },
        ));
    }
}

impl Filling {
    /// Where the fused pass writes, and its output: the scratch (u8 HWC for the blur pass)
    /// when the chain blurs, else the batch.
    fn target(&self) -> (OutputSpec, &Slab) {
        match &self.scratch {
            Some(scratch) => (Blur::fused_spec(&self.spec), scratch),
            None => (self.spec, &self.flat),
        }
    }

    /// The twin of the fused passes for slot `s` from a host frame.
    fn write_host(&mut self, src: &HostImage<'_>, s: Slot) {
        let (spec, out) = match &mut self.scratch {
            Some(scratch) => (Blur::fused_spec(&self.spec), scratch),
            None => (self.spec, &mut self.flat),
        };
        if let Slab::Host(out) = out {
            let pre = &self.posts[s.clip][s.camera].pre;
            write_host_slot(src, pre, &self.plans[s.clip][s.camera], &spec, out, s.slot);
        }
    }
}

/// How far a job has sent its batches.
#[derive(Default)]
struct Sent {
    /// The job's next batch to send.
    next: usize,
    /// Time spent finishing and sending them, microseconds.
    finish_us: u64,
}

/// Counts video `slots`' video as done for each batch it served, and its `failed` slots as
/// bad clips.
fn video_done(
    filling: &mut [Option<Filling>],
    slots: &[Slot],
    failed: Vec<(Slot, SampleErrorKind)>,
) {
    let mut touched: Vec<usize> = slots.iter().map(|s| s.batch).collect();
    touched.dedup();
    for &k in &touched {
        if let Some(b) = &mut filling[k] {
            b.videos_left -= 1;
        }
    }
    for (slot, reason) in failed {
        if let Some(b) = &mut filling[slot.batch] {
            b.bad.entry(slot.clip).or_insert(reason);
        }
    }
}

/// Where one requested frame goes.
#[derive(Debug, Clone, Copy)]
struct Slot {
    batch: usize,
    clip: usize,
    camera: usize,
    /// Index in the batch's flat `[n, ...]` tensor.
    slot: usize,
    frame: usize,
}

/// Each frame of clip `c` of batch `batch` with its video, camera by camera.
fn clip_slots(batch: usize, c: usize, clip: &Clip, mut each: impl FnMut(usize, Slot)) {
    let cams = clip.cameras.len();
    for (cam, (v, frames)) in clip.cameras.iter().enumerate() {
        let t = frames.len();
        for (j, &f) in frames.iter().enumerate() {
            each(
                *v,
                Slot {
                    batch,
                    clip: c,
                    camera: cam,
                    slot: (c * cams + cam) * t + j,
                    frame: f,
                },
            );
        }
    }
}

/// The frames each video must give the job's batches, and the videos in order of first use
/// (so early batches finish early); counts each batch's videos.
fn requests(filling: &mut [Option<Filling>]) -> (Vec<usize>, HashMap<usize, Vec<Slot>>) {
    let mut order: Vec<usize> = Vec::new();
    let mut wanted: HashMap<usize, Vec<Slot>> = HashMap::new();
    for (k, b) in filling.iter_mut().enumerate() {
        let Some(b) = b else { continue };
        let mut used = Vec::new();
        for (c, clip) in b.clips.iter().enumerate() {
            clip_slots(k, c, clip, |v, slot| {
                wanted
                    .entry(v)
                    .or_insert_with(|| {
                        order.push(v);
                        Vec::new()
                    })
                    .push(slot);
                used.push(v);
            });
        }
        used.sort_unstable();
        used.dedup();
        b.videos_left = used.len();
    }
    (order, wanted)
}

fn slots_per_clip(d: &VideoDataset) -> usize {
    d.cameras() * d.frames_per_clip()
}

/// `[n, C, H, W]` or `[n, H, W, C]` for `spec`.
fn with_item(n: usize, spec: &OutputSpec) -> Vec<usize> {
    let (h, w, c) = (spec.height as usize, spec.width as usize, spec.channels());
    match spec.layout {
        Layout::Chw => vec![n, c, h, w],
        Layout::Hwc => vec![n, h, w, c],
    }
}

/// The fused kernel's orientation for a track's display orientation: what to pass to
/// [`SourceImage::oriented`] so that frames come out as the display matrix shows them.
pub fn kernel_orientation(o: DisplayOrientation) -> Orientation {
    Orientation::rotated(u32::from(o.rotation), o.mirror).unwrap_or(Orientation::STORED)
}

/// How the fused kernel and its twin read chroma sited at `location`: interpolated there as
/// ffmpeg's swscale does.
pub fn chroma_filter(location: ChromaLocation) -> ChromaFilter {
    let (x, y) = location.position();
    ChromaFilter::Cubic { x, y }
}

/// The fused kernel's pixel format of a decoder surface of `bit_depth` bits.
pub fn surface_format(format: SurfaceFormat, bit_depth: u8) -> PixelFormat {
    match format {
        SurfaceFormat::Nv12 => PixelFormat::Nv12,
        SurfaceFormat::P016 => PixelFormat::P016 { bit_depth },
        SurfaceFormat::Nv16 => PixelFormat::Nv16,
        SurfaceFormat::P216 => PixelFormat::P216 { bit_depth },
        SurfaceFormat::Nv24 => PixelFormat::Nv24,
        SurfaceFormat::P416 => PixelFormat::P416 { bit_depth },
    }
}

/// The fused kernel's view of a mapped NVDEC surface (NV12 or P016, or a CPU-decoded frame
/// staged as NV16/P216/NV24/P416, with its colour matrix and range): what to pass to
/// `FusedKernel::run` inside a `DecoderSession::decode` consumer.
pub fn surface_source(f: &DecodedFrame<'_>) -> SourceImage {
    let format = surface_format(f.format, f.bit_depth);
    SourceImage {
        data: f.luma,
        chroma: f.chroma,
        pitch: f.pitch,
        width: f.width,
        height: f.height,
        format,
        matrix: Matrix::from_code(f.colour.matrix_coefficients, f.height),
        full_range: f.colour.full_range,
        orientation: Orientation::STORED,
        chroma_filter: chroma_filter(f.colour.chroma_location),
    }
}
