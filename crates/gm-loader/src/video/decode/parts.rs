//! A job's videos of the other route decoded beside it. Under random access a batch of
//! shuffled clips mixes routes, so a job on an NVDEC session holds a few videos that decode on
//! the CPU, and a job on a CPU-route session a few that decode on NVDEC. Decoded on the job's
//! own thread, a CPU-routed video would leave the session's NVDEC work waiting behind it and
//! the CPU-route sessions idle; an NVDEC-routed one would leave a CPU decoder's core idle while
//! the engine works (a tenth of the CPU decoders' time in a 3 AV1 : 5 H.264 mix). Instead
//! each such video goes, as a part, to the other pool at the start of the job: the part
//! writes its frames into the job's batch tensors (other slots than the job's own) on its
//! session's stream, and the stream that finishes a batch waits for the part's event first.
//! The frames and the bad clips are the same whichever thread decodes a video, so batches do
//! not change.
//!
//! A job whose own videos are decoded while parts are still out does not wait for them: it
//! leaves its [`Tail`] with the parts, and the last part to end finishes the job's batches on
//! its own session. Waiting, the NVDEC session would idle for as long as the CPU takes over
//! the job's AV1 (half its time in a 1:2 mix), and the CPU would idle in turn whenever every
//! session waited; freed, the session starts the next job, whose parts keep the other queue
//! fed. No session ever waits on another, so hand-outs both ways cannot deadlock. Jobs in
//! flight stay bounded by the loader's window.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crossbeam_channel::Sender;
use gm_codec::nvdec::DecoderSession;
use gm_cuda::{Event, Stream};
use parking_lot::Mutex;

use super::board::Board;
use super::{Filling, GpuShared, Outcome, Sent, Shared, Slot, Worker, video_done};
use crate::error::{LoaderError, SampleErrorKind};
use crate::release::Rejoin;
use crate::video::stats::ClipStats;
use crate::video::worker::Slab;

/// How a part ended.
enum PartEnd {
    /// Decoded: the slots that failed and why, and the event after its writes.
    Done {
        failed: Vec<(Slot, SampleErrorKind)>,
        written: Event,
    },
    /// Not decoded: the epoch stopped before the part began (nobody will send the batches it
    /// was for).
    Dropped,
    /// Could not run, and why: the job decodes the video itself.
    Failed(String),
}

/// A job's board: its parts' ends and its tail.
type JobBoard = Board<PartEnd, Tail>;

/// The parts a job handed out.
#[derive(Default)]
pub(super) struct Parts {
    /// Every video handed out, taken in or not: the job never decodes these itself.
    handed: Vec<usize>,
    /// Whether they went to the CPU-route sessions (else to NVDEC's): whose counters.
    to_cpu: bool,
    board: Arc<Mutex<JobBoard>>,
}

/// Which of [`ClipStats`]' part counters an event adds to.
#[derive(Clone, Copy)]
enum Count {
    Handed(u64),
    TakenBack,
    Dropped,
}

/// Adds `what` to the counters of parts sent to the CPU-route sessions (`to_cpu`) or to the
/// NVDEC sessions.
fn count(stats: &mut ClipStats, to_cpu: bool, what: Count) {
    let (handed, taken_back, dropped) = match to_cpu {
        true => (
            &mut stats.cpu_parts,
            &mut stats.cpu_parts_taken_back,
            &mut stats.cpu_parts_dropped,
        ),
        false => (
            &mut stats.nvdec_parts,
            &mut stats.nvdec_parts_taken_back,
            &mut stats.nvdec_parts_dropped,
        ),
    };
    match what {
        Count::Handed(n) => *handed += n,
        Count::TakenBack => *taken_back += 1,
        Count::Dropped => *dropped += 1,
    }
}

/// The rest of a job whose own videos are decoded and whose parts are still out: its
/// batches, and what finishing them takes on another session.
pub(super) struct Tail {
    pub(super) epoch: u64,
    pub(super) filling: Vec<Option<Filling>>,
    pub(super) wanted: HashMap<usize, Vec<Slot>>,
    pub(super) parts: Parts,
    pub(super) sent: Sent,
    pub(super) out: Sender<Outcome>,
    pub(super) stop: Arc<AtomicBool>,
    /// Recorded on the job's stream after its own writes.
    pub(super) own: Event,
    /// The job's stream, where its batches' memory was taken from the pool.
    pub(super) home: Stream,
}

impl Parts {
    /// Whether video `v` was handed out as a part (the job leaves it alone, also once the
    /// part is taken in: its video already counts as done).
    pub(super) fn holds(&self, v: usize) -> bool {
        self.handed.contains(&v)
    }

    /// Whether parts are out or ended and not taken in.
    pub(super) fn pending(&self) -> bool {
        self.board.lock().pending()
    }

    /// Leaves the job's rest (made by `tail` from these parts) to its last part: true when
    /// parts are still out and none ended untaken, false (`tail` not called) when the job
    /// must take them in.
    pub(super) fn park(&self, tail: impl FnOnce(Parts) -> Tail) -> bool {
        let parts = || Parts {
            handed: self.handed.clone(),
            to_cpu: self.to_cpu,
            board: self.board.clone(),
        };
        self.board.lock().park(|| tail(parts()))
    }

    /// Takes in the parts that ended: the worker's stream waits for each part's writes and
    /// its video counts as done. A part that could not run is decoded on `w`.
    pub(super) fn collect(
        &mut self,
        shared: &Shared,
        w: &mut Worker<'_>,
        wanted: &HashMap<usize, Vec<Slot>>,
        filling: &mut [Option<Filling>],
    ) -> Result<(), LoaderError> {
        let ended = self.board.lock().take_ended();
        for (v, end) in ended {
            let slots = &wanted[&v];
            match end {
                PartEnd::Done { failed, written } => {
                    if let Some(stream) = w.stream() {
                        stream.wait(&written)?;
                    }
                    video_done(filling, slots, failed);
                }
                // The epoch stopped: the video stays undone, so its batches are never sent.
                PartEnd::Dropped => {}
                PartEnd::Failed(why) => {
                    tracing::warn!(video = v, %why, to_cpu = self.to_cpu, "a part failed; decoding it in the job");
                    count(&mut shared.stats.lock(), self.to_cpu, Count::TakenBack);
                    let failed = shared.decode_video(w, v, slots, filling);
                    video_done(filling, slots, failed);
                }
            }
        }
        Ok(())
    }
}

/// A handed-out part's place on its job's board: it posts how the part ended exactly once,
/// when the part runs or, dropped unrun (its pool is gone), as a failure.
struct Post {
    board: Option<Arc<Mutex<JobBoard>>>,
    v: usize,
}

impl Post {
    /// Posts `end`; the job's tail when this was its last part and the job left it.
    fn end(mut self, end: PartEnd) -> Option<Tail> {
        self.board.take()?.lock().post(self.v, end)
    }
}

impl Drop for Post {
    fn drop(&mut self) {
        let gone = PartEnd::Failed("the part's session is gone".into());
        if let Some(board) = self.board.take()
            && board.lock().post(self.v, gone).is_some()
        {
            // Only when the loader shuts down: the tail's batches are dropped unsent, which
            // the epoch reports as a job that ended without them.
            tracing::error!(
                video = self.v,
                "a job's last part never ran; its batches are lost"
            );
        }
    }
}

impl Shared {
    /// Hands the job's videos of the other route (of `order`, each with its `wanted` slots)
    /// to the other pool, when the loader has both: a job on an NVDEC session (`on_nvdec`)
    /// its CPU-routed videos to the CPU-route sessions, a job on a CPU-route session its
    /// NVDEC-routed ones to the NVDEC sessions.
    pub(super) fn hand_out(
        self: &Arc<Self>,
        w: &Worker<'_>,
        on_nvdec: bool,
        order: &[usize],
        wanted: &HashMap<usize, Vec<Slot>>,
        filling: &[Option<Filling>],
        stop: &Arc<AtomicBool>,
    ) -> Result<Parts, LoaderError> {
        let sessions = match on_nvdec {
            true => &self.cpu_sessions,
            false => &self.nvdec_sessions,
        };
        let (Some(sessions), Some(gpu), Some(stream)) = (sessions, &self.gpu, w.stream()) else {
            return Ok(Parts::default());
        };
        let theirs: Vec<usize> = order
            .iter()
            .copied()
            .filter(|&v| self.cpu_routed.get(v).copied().unwrap_or(false) == on_nvdec)
            .collect();
        if theirs.is_empty() {
            return Ok(Parts::default());
        }
        // The batch tensors came from the pool ordered on the job's stream; a part's stream
        // starts after that point.
        let taken = Arc::new(Event::new(&gpu.device)?);
        taken.record(stream)?;
        let parts = Parts {
            handed: theirs.clone(),
            to_cpu: on_nvdec,
            board: Arc::new(Mutex::new(Board::new(theirs.len()))),
        };
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
            let post = Post {
                board: Some(parts.board.clone()),
                v,
            };
            // The pool's own answer is not needed: the part posts on the board.
            let _ = sessions.submit(move |session: &mut DecoderSession| {
                // Parts queue behind one another: one left from an epoch the consumer
                // dropped would take the cores from the next.
                let end = if stop.load(Ordering::Relaxed) {
                    count(&mut shared.stats.lock(), on_nvdec, Count::Dropped);
                    PartEnd::Dropped
                } else {
                    match shared.decode_part(session, &taken, v, &slots, shares) {
                        Ok((failed, written)) => PartEnd::Done { failed, written },
                        Err(e) => PartEnd::Failed(e.to_string()),
                    }
                };
                if let Some(tail) = post.end(end) {
                    shared.finish_tail(session, tail);
                }
                Ok(())
            });
        }
        let handed = Count::Handed(parts.handed.len() as u64);
        count(&mut self.stats.lock(), on_nvdec, handed);
        Ok(parts)
    }

    /// Decodes video `v`'s `slots` into the job's batch tensors (`shares`) on a session of
    /// the other pool, after the job's `taken` event: the slots that failed, and the event
    /// after the writes.
    fn decode_part(
        &self,
        session: &mut DecoderSession,
        taken: &Event,
        v: usize,
        slots: &[Slot],
        mut shares: Vec<Option<Filling>>,
    ) -> Result<(Vec<(Slot, SampleErrorKind)>, Event), LoaderError> {
        let gpu = self
            .gpu
            .as_ref()
            .ok_or_else(|| LoaderError::Config("a part in a loader that runs on the CPU".into()))?;
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
            Ok((failed, written))
        });
        // The job's tensors outlive these views: whoever finishes a batch waits for this
        // part's event first, and its memory goes back fenced after that.
        drop(shares);
        done
    }

    /// Finishes a job's `tail` on the session of its last part, sending its batches.
    fn finish_tail(&self, session: &mut DecoderSession, mut tail: Tail) {
        let Some(gpu) = &self.gpu else {
            return;
        };
        let started = Instant::now();
        let r = self.with_kernel(gpu, session, |w| {
            let before = w.stats();
            let r = self.run_tail(gpu, w, &mut tail);
            self.stats.lock().count_sessions(&before, &w.stats());
            r
        });
        if let Err(e) = r {
            let _ = tail.out.send(Err(e));
        }
        let us = started.elapsed().as_micros() as u64;
        let mut s = self.stats.lock();
        s.decode_us += us;
        s.finish_us += us;
    }

    fn run_tail(
        &self,
        gpu: &GpuShared,
        w: &mut Worker<'_>,
        tail: &mut Tail,
    ) -> Result<(), LoaderError> {
        let Some(stream) = w.stream().cloned() else {
            return Err(LoaderError::Config("a job's tail on the CPU".into()));
        };
        gpu.device.bind_to_thread()?;
        // Set first, so that whatever happens next the memory goes back after this stream.
        if stream.raw() != tail.home.raw() {
            for b in tail.filling.iter_mut().flatten() {
                b.rejoin = Some(Rejoin::new(stream.clone(), tail.home.clone()));
            }
        }
        stream.wait(&tail.own)?;
        tail.parts
            .collect(self, w, &tail.wanted, &mut tail.filling)?;
        if !tail.stop.load(Ordering::Relaxed) {
            self.send_ready(w, tail.epoch, &mut tail.filling, &mut tail.sent, &tail.out);
        }
        Ok(())
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
            rejoin: None,
            flat: device(&self.flat)?,
            scratch,
            spec: self.spec,
            videos_left: 0,
            bad: HashMap::new(),
        })
    }
}
