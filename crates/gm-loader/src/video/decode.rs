//! One decoding job: a run of consecutive batches on one NVDEC session. All frames of all
//! the job's clips are requested in one decode plan per video, so overlapping clips and
//! consecutive batches of a stream share decoding (each GOP is decoded once per job); every
//! decoded frame is written by the fused kernel from its mapped surface into each slot that
//! asked for it, and a batch is sent as soon as its last video is done.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crossbeam_channel::Sender;
use gm_codec::nvdec::{DecodedFrame, DecoderSession, FrameStatus, SurfaceFormat};
use gm_cuda::{Device, DeviceMemory, DevicePool, DevicePtr, Event, Tensor};
use gm_demux::DisplayOrientation;
use gm_transforms::{
    BatchOpsKernel, Blur, BlurKernel, Compose, FusedKernel, FusedOp, Layout, Matrix, Noise,
    Orientation, OutputSpec, Passes, PixelFormat, RandomErasing, SampleRng, SourceImage,
};
use parking_lot::Mutex;

use super::batch::ClipBatch;
use super::dataset::{Clip, VideoDataset};
use super::stats::ClipStats;
use crate::bad_samples::BadSamples;
use crate::error::{LoaderError, SampleError, SampleErrorKind};

/// What a job sends per batch: the batch, `None` when every clip of it was bad and skipped,
/// or the error that ends the epoch.
pub(crate) type Outcome = Result<Option<ClipBatch>, LoaderError>;

/// What decoding jobs share.
pub(crate) struct Shared {
    pub(crate) dataset: Arc<VideoDataset>,
    pub(crate) chain: Compose,
    pub(crate) kernels: Mutex<Vec<FusedKernel>>,
    pub(crate) pool: DevicePool,
    pub(crate) device: Device,
    pub(crate) seed: u64,
    /// RandomErasing after the chain, with an erasing kernel per session stream (a kernel
    /// shared by sessions would make each session's stream wait for another's last batch).
    pub(crate) erasing: Option<(RandomErasing, Mutex<HashMap<usize, BatchOpsKernel>>)>,
    /// The blur and noise passes' kernels, one per session stream (made on first use).
    pub(crate) post_kernels: Mutex<HashMap<usize, BlurKernel>>,
    pub(crate) bad: BadSamples,
    pub(crate) stats: Mutex<ClipStats>,
}

/// One batch being filled.
struct Filling {
    position: usize,
    episodes: Vec<usize>,
    clips: Vec<Clip>,
    plans: Vec<Vec<FusedOp>>,
    /// What runs after the fused kernel, per clip and camera (GaussianBlur, GaussianNoise).
    posts: Vec<Vec<Passes>>,
    flat: Tensor,
    /// With a blur in the chain: the fused kernel's u8 HWC frames, which the blur pass reads.
    scratch: Option<Tensor>,
    spec: OutputSpec,
    /// Videos of this batch not decoded yet.
    videos_left: usize,
    /// Reason per bad clip slot.
    bad: HashMap<usize, SampleErrorKind>,
}

impl Shared {
    /// Decodes `batches` (position, episodes) of `epoch` on `session`, sending one
    /// [`Outcome`] per batch, in order, to `out`.
    pub(crate) fn run_job(
        &self,
        session: &mut DecoderSession,
        epoch: u64,
        batches: Vec<(usize, Vec<usize>)>,
        out: &Sender<Outcome>,
        stop: &AtomicBool,
    ) {
        let mut kernel = match self.kernels.lock().pop() {
            Some(k) => Ok(k),
            None => FusedKernel::new(&self.device).map_err(LoaderError::from),
        };
        let r = match &mut kernel {
            Ok(k) => self.decode_job(session, k, epoch, batches, out, stop),
            Err(_) => Err(LoaderError::Config("no fused kernel".into())),
        };
        match kernel {
            Ok(k) => self.kernels.lock().push(k),
            Err(e) => {
                let _ = out.send(Err(e));
                return;
            }
        }
        if let Err(e) = r {
            let _ = out.send(Err(e));
        }
    }

    fn decode_job(
        &self,
        session: &mut DecoderSession,
        kernel: &mut FusedKernel,
        epoch: u64,
        batches: Vec<(usize, Vec<usize>)>,
        out: &Sender<Outcome>,
        stop: &AtomicBool,
    ) -> Result<(), LoaderError> {
        self.device.bind_to_thread()?;
        let started = Instant::now();
        let before = session.stats();
        let mut filling = Vec::with_capacity(batches.len());
        for (position, episodes) in batches {
            filling.push(Some(self.start_batch(session, epoch, position, episodes)?));
        }
        let started_us = started.elapsed().as_micros() as u64;
        let mut finish_us = 0;
        let (order, wanted) = requests(&mut filling);
        let mut next_to_send = 0;
        for v in order {
            if stop.load(Ordering::Relaxed) {
                return Ok(());
            }
            let slots = &wanted[&v];
            let failed = self.decode_video(session, kernel, v, slots, &filling);
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
            while let Some(Some(b)) = filling.get(next_to_send)
                && b.videos_left == 0
            {
                let Some(b) = filling[next_to_send].take() else {
                    break;
                };
                let t = Instant::now();
                let r = self.finish_batch(session, kernel, epoch, b);
                let fatal = r.is_err();
                let _ = out.send(r);
                finish_us += t.elapsed().as_micros() as u64;
                if fatal {
                    return Ok(());
                }
                next_to_send += 1;
            }
        }
        let mut s = self.stats.lock();
        s.decode_us += started.elapsed().as_micros() as u64;
        let after = session.stats();
        s.packets_decoded += after.packets - before.packets;
        s.decoders_created += after.decoders_created - before.decoders_created;
        s.decoders_destroyed += after.decoders_destroyed - before.decoders_destroyed;
        s.decoder_reuses += after.decoder_reuses - before.decoder_reuses;
        s.parsers_created += after.parsers_created - before.parsers_created;
        s.cpu_frames_decoded += after.cpu.frames - before.cpu.frames;
        s.cpu_runs += after.cpu.runs - before.cpu.runs;
        s.cpu_decode_us += (after.cpu.decode_ns - before.cpu.decode_ns) / 1000;
        s.runs += after.runs - before.runs;
        s.session_time.add(&after.time.since(&before.time));
        s.start_us += started_us;
        s.finish_us += finish_us;
        Ok(())
    }

    /// Plans every clip's geometry and takes the batch tensor from the pool.
    fn start_batch(
        &self,
        session: &DecoderSession,
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
        let flat = Tensor::empty(
            &self.pool,
            session.stream(),
            &with_item(n, &spec),
            spec.dtype,
        )?;
        // Substitutes are planned from the same chain: a blur in any clip means the chain
        // has one, so the scratch serves them too.
        let scratch = if posts.iter().flatten().any(|p| p.blur.is_some()) {
            let fspec = Blur::fused_spec(&spec);
            Some(Tensor::empty(
                &self.pool,
                session.stream(),
                &with_item(n, &fspec),
                fspec.dtype,
            )?)
        } else {
            None
        };
        Ok(Filling {
            position,
            episodes,
            clips,
            plans,
            posts,
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
        session: &mut DecoderSession,
        kernel: &mut FusedKernel,
        v: usize,
        slots: &[Slot],
        filling: &[Option<Filling>],
    ) -> Vec<(Slot, SampleErrorKind)> {
        let failed = self.decode_slots(session, kernel, v, slots, filling);
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
            out.extend(self.decode_slots(session, kernel, v, &mine, filling));
        }
        out
    }

    fn decode_slots(
        &self,
        session: &mut DecoderSession,
        kernel: &mut FusedKernel,
        v: usize,
        slots: &[Slot],
        filling: &[Option<Filling>],
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
        let r = session.decode(demux, &plan, &mut |f| {
            if f.status != FrameStatus::Ok {
                for &r in f.slots {
                    concealed.push((
                        slots[r as usize],
                        SampleErrorKind::FrameStatus {
                            frame: f.frame,
                            status: f.status,
                        },
                    ));
                }
            }
            let src = surface_source(f).oriented(shown);
            for &r in f.slots {
                let s = slots[r as usize];
                let Some(b) = &filling[s.batch] else { continue };
                let op = b.plans[s.clip][s.camera];
                let pre = [b.posts[s.clip][s.camera].pre.as_slice()];
                // With a blur the fused pass writes the pre-blur u8 image into the scratch.
                let (spec, out) = match &b.scratch {
                    Some(scratch) => (Blur::fused_spec(&b.spec), scratch),
                    None => (b.spec, &b.flat),
                };
                kernel.run_passes(f.stream, &[src], &pre, &[op], &spec, out, s.slot)?;
            }
            Ok(())
        });
        if let Err(e) = r {
            let reason = SampleErrorKind::Codec {
                message: format!("{}: {e}", d.path(v).display()),
            };
            return slots.iter().map(|s| (*s, reason.clone())).collect();
        }
        concealed
    }

    /// Replaces or drops the bad clips of a finished batch, then records its ready event.
    fn finish_batch(
        &self,
        session: &mut DecoderSession,
        kernel: &mut FusedKernel,
        epoch: u64,
        mut b: Filling,
    ) -> Outcome {
        let mut attempt = 0;
        while !b.bad.is_empty() {
            let mut bad: Vec<(usize, SampleErrorKind)> = b.bad.drain().collect();
            bad.sort_unstable_by_key(|(c, _)| *c);
            for (c, reason) in &bad {
                self.bad_clip(b.episodes[*c], reason.clone())?;
            }
            // Every bad clip of this round has failed `attempt + 1` times.
            if !self.bad.may_substitute(attempt + 1) {
                return self.compact(session, epoch, b, &bad);
            }
            attempt += 1;
            // The clip path numbers its draws from 1: kept so that batches repeat.
            for (c, _) in &bad {
                self.substitute_clip(&mut b, epoch, *c, attempt)?;
            }
            b = self.decode_replacements(session, kernel, b, &bad)?;
        }
        self.ready(session, epoch, b)
    }

    /// Puts the substitute drawn for clip `c` (draw `attempt`) in its place, or marks the
    /// clip bad again when the substitute has another number of cameras.
    fn substitute_clip(
        &self,
        b: &mut Filling,
        epoch: u64,
        c: usize,
        attempt: u32,
    ) -> Result<(), LoaderError> {
        let e = self.bad.substitute(epoch, b.position, c, attempt);
        let clip = match self.dataset.clip(e) {
            Some(clip) if clip.cameras.len() == b.clips[c].cameras.len() => clip,
            _ => {
                b.bad.insert(c, SampleErrorKind::SubstituteShape(e));
                return Ok(());
            }
        };
        let mut ops = Vec::with_capacity(clip.cameras.len());
        let mut posts = Vec::with_capacity(clip.cameras.len());
        for (v, _) in &clip.cameras {
            let (op, s, post) = self.plan(&self.dataset, *v, epoch, e)?;
            if s != b.spec {
                return Err(LoaderError::Plan(SampleError {
                    index: e,
                    name: self.dataset.name(e),
                    reason: SampleErrorKind::OutputSize {
                        got: s,
                        want: b.spec,
                    },
                }));
            }
            ops.push(op);
            posts.push(post);
        }
        b.episodes[c] = e;
        b.clips[c] = clip;
        b.plans[c] = ops;
        b.posts[c] = posts;
        self.stats.lock().substituted += 1;
        Ok(())
    }

    /// Decodes the clips now in the `bad` slots, video by video, into the same slots; the
    /// ones that fail again are marked bad.
    fn decode_replacements(
        &self,
        session: &mut DecoderSession,
        kernel: &mut FusedKernel,
        b: Filling,
        bad: &[(usize, SampleErrorKind)],
    ) -> Result<Filling, LoaderError> {
        let mut per_video: HashMap<usize, Vec<Slot>> = HashMap::new();
        for (c, _) in bad {
            clip_slots(0, *c, &b.clips[*c], |v, slot| {
                per_video.entry(v).or_default().push(slot);
            });
        }
        let mut videos: Vec<usize> = per_video.keys().copied().collect();
        videos.sort_unstable();
        let mut one = [Some(b)];
        for v in videos {
            let failed = self.decode_video(session, kernel, v, &per_video[&v], &one);
            for (slot, reason) in failed {
                if let Some(b) = &mut one[0] {
                    b.bad.entry(slot.clip).or_insert(reason);
                }
            }
        }
        let [Some(back)] = one else {
            return Err(LoaderError::Config("a batch went missing".into()));
        };
        Ok(back)
    }

    /// Counts a bad clip; `Err` under [`BadSamplePolicy::Fail`](crate::BadSamplePolicy).
    fn bad_clip(&self, episode: usize, reason: SampleErrorKind) -> Result<(), LoaderError> {
        let e = SampleError {
            index: episode,
            name: self.dataset.name(episode),
            reason,
        };
        let first = self.stats.lock().record_bad(e.clone());
        self.bad.report(e, first)
    }

    /// Drops the bad clips: the good ones move down, in order, on the session's stream.
    fn compact(
        &self,
        session: &DecoderSession,
        epoch: u64,
        mut b: Filling,
        bad: &[(usize, SampleErrorKind)],
    ) -> Outcome {
        let clips = b.episodes.len().max(1);
        let mut keep = 0;
        for c in 0..b.episodes.len() {
            if bad.iter().any(|(x, _)| *x == c) {
                continue;
            }
            if keep != c {
                for t in std::iter::once(&b.flat).chain(&b.scratch) {
                    move_clip(session, t, clips, c, keep)?;
                }
            }
            b.episodes.swap(keep, c);
            b.clips.swap(keep, c);
            b.posts.swap(keep, c);
            keep += 1;
        }
        self.stats.lock().skipped += bad.len() as u64;
        if keep == 0 {
            return Ok(None);
        }
        b.episodes.truncate(keep);
        b.clips.truncate(keep);
        self.ready(session, epoch, b)
    }

    fn ready(&self, session: &DecoderSession, epoch: u64, b: Filling) -> Outcome {
        let d = &*self.dataset;
        let spec = b.spec;
        self.post_passes(session, &b)?;
        self.erase(session, epoch, &b)?;
        let event = Arc::new(Event::new(&self.device)?);
        event.record(session.stream())?;
        let t = d.frames_per_clip();
        let mut shape = vec![b.episodes.len()];
        if d.is_multi_camera() {
            shape.push(d.cameras());
        }
        shape.push(t);
        shape.extend_from_slice(&with_item(0, &spec)[1..]);
        let mut frames = b.flat.view(0, &shape, spec.dtype)?;
        frames.set_ready_event(event.clone());
        {
            let mut s = self.stats.lock();
            s.batches += 1;
            s.clips += b.episodes.len() as u64;
            s.frames += (b.episodes.len() * slots_per_clip(d)) as u64;
        }
        Ok(Some(ClipBatch::new(
            frames,
            b.episodes,
            b.clips.into_iter().map(|c| c.cameras).collect(),
            epoch,
            b.position,
            event,
            session.stream().clone(),
        )))
    }
}

impl Shared {
    /// RandomErasing on the clips of a finished batch: one draw per clip (seed, epoch,
    /// episode), the same rectangle on each of its frames and cameras.
    fn erase(&self, session: &DecoderSession, epoch: u64, b: &Filling) -> Result<(), LoaderError> {
        let Some((erasing, kernels)) = &self.erasing else {
            return Ok(());
        };
        let per_clip = slots_per_clip(&self.dataset);
        let mut erases = Vec::with_capacity(b.episodes.len() * per_clip);
        for &e in &b.episodes {
            let mut rng = RandomErasing::rng(self.seed, epoch, e as u64);
            let drawn = erasing.draw(&b.spec, &mut rng).map_err(|reason| {
                LoaderError::Plan(SampleError {
                    index: e,
                    name: self.dataset.name(e),
                    reason: SampleErrorKind::Transform(reason),
                })
            })?;
            erases.extend(std::iter::repeat_n(drawn, per_clip));
        }
        if erases.iter().any(Option::is_some) {
            let mut kernels = kernels.lock();
            let kernel = match kernels.entry(session.stream().raw() as usize) {
                std::collections::hash_map::Entry::Occupied(k) => k.into_mut(),
                std::collections::hash_map::Entry::Vacant(v) => {
                    v.insert(BatchOpsKernel::new(&self.device)?)
                }
            };
            kernel.erase(session.stream(), &b.spec, &b.flat, &erases)?;
        }
        Ok(())
    }
}

impl Shared {
    /// The blur pass (scratch to batch) and the noise pass of a finished batch: each clip's
    /// draws on every one of its frames; the noise's key differs per frame and camera, as
    /// torchvision's noise is independent across a video's elements.
    fn post_passes(&self, session: &DecoderSession, b: &Filling) -> Result<(), LoaderError> {
        let noisy = b.posts.iter().flatten().any(|p| p.noise.is_some());
        if b.scratch.is_none() && !noisy {
            return Ok(());
        }
        let t = self.dataset.frames_per_clip();
        let per_slot: Vec<&Passes> = b
            .posts
            .iter()
            .flat_map(|cams| cams.iter().flat_map(|p| std::iter::repeat_n(p, t)))
            .collect();
        let mut kernels = self.post_kernels.lock();
        let kernel = match kernels.entry(session.stream().raw() as usize) {
            std::collections::hash_map::Entry::Occupied(k) => k.into_mut(),
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(BlurKernel::new(&self.device)?)
            }
        };
        if let Some(scratch) = &b.scratch {
            let blurs: Vec<Option<Blur>> = per_slot.iter().map(|p| p.blur).collect();
            kernel.run(session.stream(), scratch, &b.spec, &blurs, &b.flat)?;
        }
        if noisy {
            let noises: Vec<Option<Noise>> = per_slot
                .iter()
                .enumerate()
                .map(|(slot, p)| p.noise.map(|n| frame_noise(n, slot % (t * max_cams(b)))))
                .collect();
            kernel.noise(session.stream(), &b.spec, &b.flat, &noises)?;
        }
        Ok(())
    }
}

/// The cameras per clip of a batch.
fn max_cams(b: &Filling) -> usize {
    b.posts.first().map_or(1, |c| c.len().max(1))
}

/// Clip `noise` for the frame at `offset` in its clip (camera-major): a key of its own, so
/// frames do not share noise.
fn frame_noise(noise: Noise, offset: usize) -> Noise {
    let mut z = (offset as u64 + 1).wrapping_mul(0xd6e8_feb8_6659_fd93);
    z ^= z >> 32;
    Noise {
        key: noise.key ^ z,
        ..noise
    }
}

/// Moves clip `from`'s slab of `t` (a batch of `clips` equal slabs) to clip `to`'s place on
/// the session's stream; slabs of different clips never overlap, so in place is safe.
fn move_clip(
    session: &DecoderSession,
    t: &Tensor,
    clips: usize,
    from: usize,
    to: usize,
) -> Result<(), LoaderError> {
    let per_clip = t.numel() / clips * t.dtype().size();
    let storage = t.storage();
    let mut dst = InPlace(storage.device_ptr(), storage.byte_len());
    let base = t.byte_offset();
    session.stream().copy_on_device(
        storage,
        base + from * per_clip,
        &mut dst,
        base + to * per_clip,
        per_clip,
    )?;
    Ok(())
}

/// The batch tensor's own memory as a copy destination.
struct InPlace(DevicePtr, usize);

impl DeviceMemory for InPlace {
    fn device_ptr(&self) -> DevicePtr {
        self.0
    }
    fn byte_len(&self) -> usize {
        self.1
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

/// The fused kernel's view of a mapped NVDEC surface (NV12 or P016, with its colour matrix
/// and range): what to pass to `FusedKernel::run` inside a `DecoderSession::decode` consumer.
pub fn surface_source(f: &DecodedFrame<'_>) -> SourceImage {
    let format = match f.format {
        SurfaceFormat::Nv12 => PixelFormat::Nv12,
        SurfaceFormat::P016 => PixelFormat::P016 {
            bit_depth: f.bit_depth,
        },
    };
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
    }
}
