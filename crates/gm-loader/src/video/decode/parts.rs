//! A job's CPU-routed videos decoded beside it. Under random access a batch of shuffled
//! clips mixes routes, so a job on an NVDEC session holds a few videos that decode on the
//! CPU; decoded on the session's own thread they would leave its NVDEC work waiting behind
//! them and the CPU-route sessions idle. Instead each such video goes, as a part, to the
//! CPU-route sessions at the start of the job: the part writes its frames into the job's
//! batch tensors (other slots than the job's own) on its session's stream, and the job's
//! stream waits for the part's event before it finishes a batch. The frames and the bad
//! clips are the same whichever thread decodes a video, so batches do not change.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crossbeam_channel::{Receiver, TryRecvError};
use gm_codec::nvdec::DecoderSession;
use gm_cuda::Event;

use super::{Filling, Shared, Slot, Worker, video_done};
use crate::error::{LoaderError, SampleErrorKind};
use crate::video::worker::Slab;

/// What a part sends back: the slots that failed and why, and the event after its writes.
pub(super) struct PartDone {
    failed: Vec<(Slot, SampleErrorKind)>,
    written: Event,
}

/// A part's outcome; `None` when the epoch stopped before the part began (nobody will send
/// the batches it was for).
type PartResult = gm_codec::Result<Result<Option<PartDone>, LoaderError>>;

/// The parts a job handed out, by video.
#[derive(Default)]
pub(super) struct Parts {
    /// Every video handed out, collected or not: the job never decodes these itself.
    handed: Vec<usize>,
    /// The parts not collected yet.
    waiting: Vec<(usize, Receiver<PartResult>)>,
}

impl Parts {
    /// Whether video `v` was handed out as a part (the job leaves it alone, also once the
    /// part is collected: its video already counts as done).
    pub(super) fn holds(&self, v: usize) -> bool {
        self.handed.contains(&v)
    }

    /// Whether parts are still out.
    pub(super) fn waiting(&self) -> bool {
        !self.waiting.is_empty()
    }

    /// Takes in the parts that are done (with `block`, waits for the oldest when none is):
    /// the job's stream waits for each part's writes and its video counts as done. A part
    /// that could not run is decoded by the job itself.
    pub(super) fn collect(
        &mut self,
        shared: &Shared,
        w: &mut Worker<'_>,
        wanted: &HashMap<usize, Vec<Slot>>,
        filling: &mut [Option<Filling>],
        block: bool,
    ) -> Result<(), LoaderError> {
        let mut k = 0;
        while k < self.waiting.len() {
            let got = match self.waiting[k].1.try_recv() {
                Err(TryRecvError::Empty) if !(block && k == 0) => {
                    k += 1;
                    continue;
                }
                Err(TryRecvError::Empty) => self.waiting[k].1.recv().ok(),
                Err(TryRecvError::Disconnected) => None,
                Ok(r) => Some(r),
            };
            let (v, _) = self.waiting.remove(k);
            let slots = &wanted[&v];
            match got {
                Some(Ok(Ok(Some(done)))) => {
                    if let Some(stream) = w.stream() {
                        stream.wait(&done.written)?;
                    }
                    video_done(filling, slots, done.failed);
                }
                // The epoch stopped: the video stays undone, so its batches are never sent.
                Some(Ok(Ok(None))) => {}
                other => {
                    let why = match other {
                        Some(Ok(Err(e))) => e.to_string(),
                        Some(Err(e)) => e.to_string(),
                        _ => "the part's session is gone".into(),
                    };
                    tracing::warn!(video = v, %why, "a CPU-route part failed; decoding it in the job");
                    shared.stats.lock().cpu_parts_taken_back += 1;
                    let failed = shared.decode_video(w, v, slots, filling);
                    video_done(filling, slots, failed);
                }
            }
        }
        Ok(())
    }
}

impl Shared {
    /// Hands the job's CPU-routed videos (of `order`, each with its `wanted` slots) to the
    /// CPU-route sessions, when the loader has them and this job runs on an NVDEC session.
    pub(super) fn hand_out(
        self: &Arc<Self>,
        w: &Worker<'_>,
        order: &[usize],
        wanted: &HashMap<usize, Vec<Slot>>,
        filling: &[Option<Filling>],
        stop: &Arc<AtomicBool>,
    ) -> Result<Parts, LoaderError> {
        let (Some(sessions), Some(gpu), Some(stream)) = (&self.cpu_sessions, &self.gpu, w.stream())
        else {
            return Ok(Parts::default());
        };
        let theirs: Vec<usize> = order
            .iter()
            .copied()
            .filter(|&v| self.cpu_routed.get(v).copied().unwrap_or(false))
            .collect();
        if theirs.is_empty() {
            return Ok(Parts::default());
        }
        // The batch tensors came from the pool ordered on the job's stream; a part's stream
        // starts after that point.
        let taken = Arc::new(Event::new(&gpu.device)?);
        taken.record(stream)?;
        let mut parts = Parts::default();
        for v in theirs {
            let slots = wanted[&v].clone();
            let shares: Vec<Option<Filling>> = filling
                .iter()
                .enumerate()
                .map(|(k, b)| match b {
                    Some(b) if slots.iter().any(|s| s.batch == k) => b.share(),
                    _ => None,
                })
                .collect();
            let (shared, taken, stop) = (self.clone(), taken.clone(), stop.clone());
            let rx = sessions.submit(move |session: &mut DecoderSession| {
                // Parts queue behind one another: one left from an epoch the consumer
                // dropped would take the cores from the next.
                if stop.load(Ordering::Relaxed) {
                    shared.stats.lock().cpu_parts_dropped += 1;
                    return Ok(Ok(None));
                }
                Ok(shared
                    .decode_part(session, &taken, v, &slots, shares)
                    .map(Some))
            });
            parts.handed.push(v);
            parts.waiting.push((v, rx));
        }
        self.stats.lock().cpu_parts += parts.waiting.len() as u64;
        Ok(parts)
    }

    /// Decodes video `v`'s `slots` into the job's batch tensors (`shares`) on a CPU-route
    /// session, after the job's `taken` event.
    fn decode_part(
        &self,
        session: &mut DecoderSession,
        taken: &Event,
        v: usize,
        slots: &[Slot],
        mut shares: Vec<Option<Filling>>,
    ) -> Result<PartDone, LoaderError> {
        let gpu = self.gpu.as_ref().ok_or_else(|| {
            LoaderError::Config("a CPU-route part in a loader that runs on the CPU".into())
        })?;
        gpu.device.bind_to_thread()?;
        session.stream().wait(taken)?;
        let done = self.with_kernel(gpu, session, |w| {
            let before = w.stats();
            let failed = self.decode_video(w, v, slots, &mut shares);
            self.stats.lock().count_sessions(&before, &w.stats());
            let written = Event::new(&gpu.device)?;
            if let Some(stream) = w.stream() {
                written.record(stream)?;
            }
            Ok(PartDone { failed, written })
        });
        // The job's tensors outlive these views: it waits for this result before it
        // finishes a batch, so the pool's fence is recorded on the job's stream.
        drop(shares);
        done
    }
}

impl Filling {
    /// The batch with its device memory shared (the tensors are views of the same
    /// buffers), for a part to write its own slots; `None` for host memory.
    fn share(&self) -> Option<Filling> {
        let device = |s: &Slab| match s {
            Slab::Device(t) => Some(Slab::Device(t.clone())),
            Slab::Host(_) => None,
        };
        let scratch = match &self.scratch {
            Some(s) => Some(device(s)?),
            None => None,
        };
        Some(Filling {
            position: self.position,
            episodes: self.episodes.clone(),
            clips: self.clips.clone(),
            plans: self.plans.clone(),
            posts: self.posts.clone(),
            flat: device(&self.flat)?,
            scratch,
            spec: self.spec,
            videos_left: 0,
            bad: HashMap::new(),
        })
    }
}
