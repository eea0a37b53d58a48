//! Finishing a batch: bad clips replaced by substitutes (decoded into the same slots) or
//! dropped, then the blur, noise and erasing passes, and the ready event (GPU) or the host
//! tensor (CPU).

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::Arc;

use gm_cuda::{DeviceMemory, DevicePtr, Event};
use gm_transforms::{BatchOpsKernel, Blur, BlurKernel, Noise, Passes, RandomErasing};

use super::{Filling, Outcome, Shared, Slot, Worker, clip_slots, slots_per_clip, with_item};
use crate::error::{LoaderError, SampleError, SampleErrorKind};
use crate::release::Release;
use crate::tensors::{HostTensor, Images};
use crate::video::batch::ClipBatch;
use crate::video::worker::Slab;

impl Shared {
    /// Replaces or drops the bad clips of a finished batch, then records its ready event.
    pub(super) fn finish_batch(&self, w: &mut Worker<'_>, epoch: u64, mut b: Filling) -> Outcome {
        let mut attempt = 0;
        while !b.bad.is_empty() {
            let mut bad: Vec<(usize, SampleErrorKind)> = b.bad.drain().collect();
            bad.sort_unstable_by_key(|(c, _)| *c);
            for (c, reason) in &bad {
                self.bad_clip(b.episodes[*c], reason.clone())?;
            }
            // Every bad clip of this round has failed `attempt + 1` times.
            if !self.bad.may_substitute(attempt + 1) {
                return self.compact(w, epoch, b, &bad);
            }
            attempt += 1;
            // The clip path numbers its draws from 1: kept so that batches repeat.
            for (c, _) in &bad {
                self.substitute_clip(&mut b, epoch, *c, attempt)?;
            }
            b = self.decode_replacements(w, b, &bad)?;
        }
        self.ready(w, epoch, b)
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
        w: &mut Worker<'_>,
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
            let failed = self.decode_video(w, v, &per_video[&v], &mut one);
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
        w: &Worker<'_>,
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
                for t in std::iter::once(&mut b.flat).chain(&mut b.scratch) {
                    move_clip(w, t, clips, c, keep)?;
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
        self.ready(w, epoch, b)
    }

    fn ready(&self, w: &Worker<'_>, epoch: u64, mut b: Filling) -> Outcome {
        let d = &*self.dataset;
        let spec = b.spec;
        self.post_passes(w, &mut b)?;
        self.erase(w, epoch, &mut b)?;
        let t = d.frames_per_clip();
        let mut shape = vec![b.episodes.len()];
        if d.is_multi_camera() {
            shape.push(d.cameras());
        }
        shape.push(t);
        shape.extend_from_slice(&with_item(0, &spec)[1..]);
        {
            let mut s = self.stats.lock();
            s.batches += 1;
            s.clips += b.episodes.len() as u64;
            s.frames += (b.episodes.len() * slots_per_clip(d)) as u64;
        }
        let sources = b.clips.into_iter().map(|c| c.cameras).collect();
        let (frames, gpu) = match (b.flat, w) {
            (Slab::Device(flat), Worker::Gpu { session, gpu, .. }) => {
                let event = Arc::new(Event::new(&gpu.device)?);
                event.record(session.stream())?;
                let mut frames = flat.view(0, &shape, spec.dtype)?;
                frames.set_ready_event(event.clone());
                let stage = session.stream().clone();
                let release = Release::rejoining(stage, b.rejoin.clone());
                (Images::Device(frames), Some((event, release)))
            }
            (Slab::Host(mut data), _) => {
                data.truncate(shape.iter().product::<usize>() * spec.dtype.size());
                let host = HostTensor {
                    shape,
                    dtype: spec.dtype,
                    data,
                };
                (Images::Host(host), None)
            }
            (Slab::Device(_), Worker::Cpu { .. }) => {
                return Err(LoaderError::Config("device frames on the CPU path".into()));
            }
        };
        Ok(Some(ClipBatch::new(
            frames, b.episodes, sources, epoch, b.position, gpu,
        )))
    }
}

impl Shared {
    /// RandomErasing on the clips of a finished batch: one draw per clip (seed, epoch,
    /// episode), the same rectangle on each of its frames and cameras.
    fn erase(&self, w: &Worker<'_>, epoch: u64, b: &mut Filling) -> Result<(), LoaderError> {
        let Some(erasing) = &self.erasing else {
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
        if erases.iter().all(Option::is_none) {
            return Ok(());
        }
        match (&mut b.flat, w) {
            (Slab::Host(data), _) => gm_transforms::erase_batch(data, &b.spec, &erases),
            (Slab::Device(flat), Worker::Gpu { session, gpu, .. }) => {
                let mut kernels = gpu.erase_kernels.lock();
                let kernel = match kernels.entry(session.stream().raw() as usize) {
                    Entry::Occupied(k) => k.into_mut(),
                    Entry::Vacant(v) => v.insert(BatchOpsKernel::new(&gpu.device)?),
                };
                kernel.erase(session.stream(), &b.spec, flat, &erases)?;
            }
            (Slab::Device(_), Worker::Cpu { .. }) => {}
        }
        Ok(())
    }
}

impl Shared {
    /// The blur pass (scratch to batch) and the noise pass of a finished batch: each clip's
    /// draws on every one of its frames; the noise's key differs per frame and camera, as
    /// torchvision's noise is independent across a video's elements.
    fn post_passes(&self, w: &Worker<'_>, b: &mut Filling) -> Result<(), LoaderError> {
        let noisy = b.posts.iter().flatten().any(|p| p.noise.is_some());
        if b.scratch.is_none() && !noisy {
            return Ok(());
        }
        let t = self.dataset.frames_per_clip();
        let cams = max_cams(b);
        let per_slot: Vec<&Passes> = b
            .posts
            .iter()
            .flat_map(|cams| cams.iter().flat_map(|p| std::iter::repeat_n(p, t)))
            .collect();
        let blurs: Vec<Option<Blur>> = per_slot.iter().map(|p| p.blur).collect();
        let noises: Vec<Option<Noise>> = per_slot
            .iter()
            .enumerate()
            .map(|(slot, p)| p.noise.map(|n| frame_noise(n, slot % (t * cams))))
            .collect();
        match (&mut b.flat, &b.scratch, w) {
            (Slab::Host(flat), scratch, _) => {
                if let Some(Slab::Host(scratch)) = scratch {
                    gm_transforms::blur_batch(scratch, &b.spec, &blurs, flat);
                }
                if noisy {
                    gm_transforms::noise_batch(flat, &b.spec, &noises);
                }
            }
            (Slab::Device(flat), scratch, Worker::Gpu { session, gpu, .. }) => {
                let mut kernels = gpu.post_kernels.lock();
                let kernel = match kernels.entry(session.stream().raw() as usize) {
                    Entry::Occupied(k) => k.into_mut(),
                    Entry::Vacant(v) => v.insert(BlurKernel::new(&gpu.device)?),
                };
                if let Some(Slab::Device(scratch)) = scratch {
                    kernel.run(session.stream(), scratch, &b.spec, &blurs, flat)?;
                }
                if noisy {
                    kernel.noise(session.stream(), &b.spec, flat, &noises)?;
                }
            }
            (Slab::Device(_), _, Worker::Cpu { .. }) => {}
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

/// Moves clip `from`'s slab of `t` (a batch of `clips` equal slabs) to clip `to`'s place (on
/// the session's stream for device memory); slabs of different clips never overlap, so in
/// place is safe.
fn move_clip(
    w: &Worker<'_>,
    t: &mut Slab,
    clips: usize,
    from: usize,
    to: usize,
) -> Result<(), LoaderError> {
    let (t, stream) = match (t, w.stream()) {
        (Slab::Device(t), Some(stream)) => (t, stream),
        (t, _) => {
            t.move_host_clip(clips, from, to);
            return Ok(());
        }
    };
    let per_clip = t.numel() / clips * t.dtype().size();
    let storage = t.storage();
    let mut dst = InPlace(storage.device_ptr(), storage.byte_len());
    let base = t.byte_offset();
    stream.copy_on_device(
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
