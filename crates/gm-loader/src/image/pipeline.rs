//! The threads of an epoch: host workers read (and on the CPU path decode) whole batches;
//! stage threads (one per GPU stage: batches go to them in turn) finish them on the GPU (or
//! assemble them on the CPU) and hand them to the consumer through a queue of `prefetch`
//! batches; the consumer's side puts them back in order.

use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, SendTimeoutError, Sender, bounded, unbounded};
use gm_cuda::nvtx;
use parking_lot::Mutex;

use super::batch::Batch;
use super::context::Shared;
use super::gpu_stage::GpuStage;
use super::read::{Prepared, prepare_batch};
use super::stats::Stats;
use super::stream_feed::{Feed, Lead, StreamProgress, feed};
use crate::error::{LoaderError, panic_message};
use crate::state::{Cursor, LoaderState};

/// How often blocked threads look at the stop flag: bounds the time dropping takes.
const POLL: Duration = Duration::from_millis(20);

struct Job {
    position: usize,
    indices: Vec<usize>,
}

struct ReadBatch {
    position: usize,
    /// The samples, or the worker's panic.
    items: Result<Vec<(usize, Prepared)>, LoaderError>,
}

/// What a stage hands the consumer.
enum Delivery {
    /// Batch `position`: the batch, `None` when every sample of it was bad and skipped, or
    /// the error that ends the epoch (boxed: a batch is far larger than the other variant).
    Batch(usize, Box<Result<Option<Batch>, LoaderError>>),
    /// An error that belongs to no batch (a stage that panicked or could not start): it ends
    /// the epoch at once.
    Fatal(LoaderError),
}

/// Everything an epoch's threads need.
pub(crate) struct EpochPlan {
    pub(crate) shared: Arc<Shared>,
    /// One per stage thread; empty on the CPU path (one CPU stage).
    pub(crate) gpu: Vec<Arc<Mutex<GpuStage>>>,
    pub(crate) epoch: u64,
    /// The dataset indices of each batch (empty for a stream, whose feeder makes them).
    pub(crate) batches: Vec<Vec<usize>>,
    /// A streaming WebDataset's feeder and what it shares with the consumer.
    pub(crate) stream: Option<(Feed, Arc<StreamProgress>)>,
    pub(crate) first: usize,
    pub(crate) workers: usize,
    pub(crate) prefetch: usize,
    pub(crate) state: LoaderState,
}

impl EpochPlan {
    /// Batches in the epoch; for a stream, `usize::MAX` until its feeder reaches the end.
    fn end(&self) -> usize {
        self.stream
            .as_ref()
            .map_or(self.batches.len(), |(_, p)| p.total())
    }
}

/// The batches of one epoch, in sampler order: an iterator of `Result<Batch, LoaderError>`.
///
/// After an error (a bad sample under `Fail`, a worker panic, a GPU failure) it yields nothing
/// more. Dropping it stops and joins every thread of the epoch.
pub struct Epoch<'a> {
    rx: Option<Receiver<Delivery>>,
    stop: Arc<AtomicBool>,
    /// The position the consumer waits for: stages stay within a few batches of it.
    due: Arc<AtomicUsize>,
    threads: Vec<JoinHandle<()>>,
    shared: Arc<Shared>,
    cursor: Cursor,
    epoch: u64,
    /// A stream's progress and where its samples are parked.
    stream: Option<(Arc<StreamProgress>, Arc<super::stream_feed::StreamSlots>)>,
    /// Batches that arrived before the one due.
    early: BTreeMap<usize, Result<Option<Batch>, LoaderError>>,
    /// When the consumer first asked for a batch: an epoch started ahead of the running one
    /// counts its wall time from there, so that two overlapping epochs do not count it twice.
    started: Option<Instant>,
    done: bool,
    _loader: PhantomData<&'a mut ()>,
}

impl Epoch<'_> {
    pub(crate) fn spawn(plan: EpochPlan) -> Epoch<'static> {
        let stages = plan.gpu.len().max(1);
        let (job_tx, job_rx) = unbounded::<Job>();
        let (read_txs, read_rxs): (Vec<_>, Vec<_>) =
            (0..stages).map(|_| unbounded::<ReadBatch>()).unzip();
        let (out_tx, out_rx) = bounded::<Delivery>(plan.prefetch);
        let links = Links {
            jobs: job_tx,
            out: out_tx,
            stop: Arc::new(AtomicBool::new(false)),
            due: Arc::new(AtomicUsize::new(plan.first)),
        };
        let mut threads = Vec::new();
        for w in 0..plan.workers {
            let (shared, job_rx, read_txs, stop) = (
                plan.shared.clone(),
                job_rx.clone(),
                read_txs.clone(),
                links.stop.clone(),
            );
            let epoch = plan.epoch;
            let work = move || reader(&shared, epoch, &job_rx, &read_txs, &stop);
            start(
                format!("gm-loader-read-{w}"),
                "a host worker",
                plan.shared.node.as_ref(),
                &mut threads,
                work,
            );
        }
        drop((job_rx, read_txs));
        let cursor = Cursor::new(plan.state.clone(), plan.end());
        let (shared, epoch) = (plan.shared.clone(), plan.epoch);
        let stream = plan
            .stream
            .as_ref()
            .map(|(f, p)| (p.clone(), f.slots.clone()));
        let node = plan.shared.node.clone();
        let plan = Arc::new(plan);
        let mut started = true;
        if plan.stream.is_some() {
            let lead = plan.workers + plan.prefetch + stages;
            let (plan, l) = (plan.clone(), links.clone());
            let work = move || feeder(&plan, lead, &l.jobs, &l.out, &l.due, &l.stop);
            started &= start(
                "gm-loader-feed".into(),
                "a stream's feeder",
                node.as_ref(),
                &mut threads,
                work,
            );
        }
        for (s, read_rx) in read_rxs.into_iter().enumerate() {
            let (plan, l) = (plan.clone(), links.clone());
            let work = move || stage(&plan, s, l.jobs, read_rx, l.out, &l.stop, &l.due);
            let name = format!("gm-loader-stage-{s}");
            started &= start(
                name,
                "a loader stage thread",
                node.as_ref(),
                &mut threads,
                work,
            );
        }
        Epoch {
            rx: Some(out_rx),
            stop: links.stop,
            due: links.due,
            threads,
            shared,
            cursor,
            epoch,
            stream,
            early: BTreeMap::new(),
            started: None,
            done: !started,
            _loader: PhantomData,
        }
    }

    /// The state to save for resuming after the last batch yielded.
    pub fn state(&self) -> LoaderState {
        self.cursor.state()
    }

    /// Counters and stage times so far (all epochs of the loader).
    pub fn stats(&self) -> Stats {
        self.shared.stats.lock().clone()
    }

    /// Batches left in this epoch (skipped empty batches included). A streaming
    /// WebDataset's epoch without `epoch_batches` has `usize::MAX` until its last shards are
    /// read.
    pub fn remaining(&self) -> usize {
        match self.end() {
            usize::MAX => usize::MAX,
            end => end.saturating_sub(self.cursor.next_batch()),
        }
    }

    fn end(&self) -> usize {
        self.stream
            .as_ref()
            .map_or(self.cursor.end(), |(p, _)| p.total())
    }

    /// Moves the cursor past batch `position`, with a stream's state after it.
    fn pass(&mut self, position: usize) {
        self.cursor.passed(position);
        if let Some(state) = self.stream.as_ref().and_then(|(p, _)| p.passed(position)) {
            self.cursor.set_state(state);
        }
        self.due.store(position + 1, Ordering::Release);
    }

    fn shutdown(&mut self) {
        if !self.done
            && let Some(t) = self.started
        {
            self.shared.stats.lock().wall_us += t.elapsed().as_micros() as u64;
        }
        self.done = true;
        self.stop.store(true, Ordering::SeqCst);
        self.rx = None;
        for h in self.threads.drain(..) {
            if h.join().is_err() {
                tracing::error!("a loader thread panicked outside its guard");
            }
        }
        if let Some((_, slots)) = &self.stream {
            slots.release(self.epoch, usize::MAX);
        }
    }
}

/// What the threads of an epoch share: the host workers' job queue, the consumer's queue, the
/// stop flag and the batch the consumer waits for.
#[derive(Clone)]
struct Links {
    jobs: Sender<Job>,
    out: Sender<Delivery>,
    stop: Arc<AtomicBool>,
    due: Arc<AtomicUsize>,
}

/// Starts thread `name` into `threads`, on `node`'s CPUs when there is one; false (and
/// logged) when it could not start.
fn start(
    name: String,
    what: &str,
    node: Option<&Arc<crate::NodeCpus>>,
    threads: &mut Vec<JoinHandle<()>>,
    work: impl FnOnce() + Send + 'static,
) -> bool {
    let node = node.cloned();
    let work = move || {
        if let Some(n) = node {
            n.pin_current_thread();
        }
        work()
    };
    match std::thread::Builder::new().name(name).spawn(work) {
        Ok(h) => {
            threads.push(h);
            true
        }
        Err(e) => {
            tracing::error!(error = %e, "could not start {what}");
            false
        }
    }
}

/// What [`Epoch::next_timeout`] found.
#[derive(Debug)]
pub enum Waited<T> {
    /// The next item, or `None` at the end of the epoch (as [`Iterator::next`]).
    Ready(Option<T>),
    /// Nothing arrived in time; ask again.
    Pending,
}

impl Epoch<'_> {
    /// [`Iterator::next`] that waits at most `timeout`, so that a caller can do something else
    /// between waits (the Python package looks for Ctrl-C).
    pub fn next_timeout(&mut self, timeout: Duration) -> Waited<Result<Batch, LoaderError>> {
        self.next_until(Some(Instant::now() + timeout))
    }

    fn next_until(&mut self, deadline: Option<Instant>) -> Waited<Result<Batch, LoaderError>> {
        self.started.get_or_insert_with(Instant::now);
        loop {
            if self.done {
                return Waited::Ready(None);
            }
            let due = self.cursor.next_batch();
            if due >= self.end() {
                self.shutdown();
                return Waited::Ready(None);
            }
            if let Some(r) = self.early.remove(&due) {
                // A failed batch is not passed: the saved state resumes at it.
                if r.is_ok() {
                    self.pass(due);
                }
                match r {
                    Ok(Some(batch)) => return Waited::Ready(Some(Ok(batch))),
                    // Every sample of the batch was bad and skipped.
                    Ok(None) => {}
                    Err(e) => {
                        self.shutdown();
                        return Waited::Ready(Some(Err(e)));
                    }
                }
                continue;
            }
            let Some(rx) = self.rx.as_ref() else {
                return Waited::Ready(None);
            };
            let t = Instant::now();
            let got = {
                let _nvtx = nvtx::range(c"gm-loader: consumer waits for a batch");
                match deadline {
                    None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
                    Some(d) => rx.recv_deadline(d),
                }
            };
            {
                let mut s = self.shared.stats.lock();
                s.wait_us += t.elapsed().as_micros() as u64;
                s.max_ready = s
                    .max_ready
                    .max(rx.len() + self.early.len() + usize::from(got.is_ok()));
            }
            match got {
                // A stage thread's panic has no position: report it at once.
                Ok(Delivery::Fatal(e)) => {
                    self.shutdown();
                    return Waited::Ready(Some(Err(e)));
                }
                Ok(Delivery::Batch(pos, r)) => {
                    self.early.insert(pos, *r);
                }
                Err(RecvTimeoutError::Timeout) => return Waited::Pending,
                Err(RecvTimeoutError::Disconnected) => {
                    self.shutdown();
                    return Waited::Ready(None);
                }
            }
        }
    }
}

impl Iterator for Epoch<'_> {
    type Item = Result<Batch, LoaderError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.next_until(None) {
            Waited::Ready(item) => item,
            Waited::Pending => None,
        }
    }
}

impl Drop for Epoch<'_> {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn reader(
    shared: &Shared,
    epoch: u64,
    jobs: &Receiver<Job>,
    stages: &[Sender<ReadBatch>],
    stop: &AtomicBool,
) {
    while let Ok(job) = jobs.recv() {
        let _span = tracing::debug_span!("gm_loader_read", batch = job.position).entered();
        let _nvtx = nvtx::range(c"gm-loader: read batch");
        let t = Instant::now();
        let items = catch_unwind(AssertUnwindSafe(|| {
            prepare_batch(shared, epoch, &job.indices, stop)
        }))
        .map_err(|p| LoaderError::WorkerPanic {
            stage: "host worker",
            message: panic_message(&*p),
        });
        shared.stats.lock().read_us += t.elapsed().as_micros() as u64;
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let msg = ReadBatch {
            position: job.position,
            items,
        };
        let stage = &stages[job.position % stages.len()];
        if stage.send(msg).is_err() {
            return;
        }
    }
}

fn stage(
    plan: &EpochPlan,
    index: usize,
    jobs: Sender<Job>,
    reads: Receiver<ReadBatch>,
    out: Sender<Delivery>,
    stop: &AtomicBool,
    due: &AtomicUsize,
) {
    let shared = plan.shared.clone();
    let run = catch_unwind(AssertUnwindSafe(|| {
        stage_loop(plan, index, &jobs, &reads, &out, stop, due);
    }));
    if let Err(p) = run {
        let e = LoaderError::WorkerPanic {
            stage: if shared.cpu { "CPU stage" } else { "GPU stage" },
            message: panic_message(&*p),
        };
        let _ = out.send_timeout(Delivery::Fatal(e), Duration::from_secs(1));
    }
}

/// Stage `index` of `n` finishes batches `index, index + n, ...` in order.
fn stage_loop(
    plan: &EpochPlan,
    index: usize,
    jobs: &Sender<Job>,
    reads: &Receiver<ReadBatch>,
    out: &Sender<Delivery>,
    stop: &AtomicBool,
    due: &AtomicUsize,
) {
    let shared = &plan.shared;
    let n = plan.gpu.len().max(1);
    let window = read_window(plan.workers, plan.prefetch, n);
    let first = plan.first + (index + n - plan.first % n) % n;
    let mut next_job = first;
    // An epoch started ahead of the running one sends its first reads before it waits for
    // its GPU stage, which the running epoch holds until its own last batch: the host
    // workers read on across the epochs' boundary.
    if !send_jobs(plan, jobs, &mut next_job, first + window, n) {
        return;
    }
    let mut gpu = match plan.gpu.get(index) {
        Some(g) => match lock_stage(g, stop) {
            Some(g) => Some(g),
            None => return,
        },
        None => None,
    };
    if let Some(g) = gpu.as_mut()
        && let Err(e) = g.bind()
    {
        let _ = out.send(Delivery::Fatal(e));
        return;
    }
    let mut arrived: BTreeMap<usize, ReadBatch> = BTreeMap::new();
    for position in (first..).step_by(n) {
        if position >= plan.end() {
            return;
        }
        if !send_jobs(plan, jobs, &mut next_job, position + window, n) {
            return;
        }
        // A stage may run ahead of the consumer by the ready queue and one batch per stage,
        // no more: batches finished early wait in memory until their turn.
        if !wait_for_consumer(position, plan.prefetch + n, due, stop) {
            return;
        }
        let waiting = nvtx::range(c"gm-loader: stage waits for its read");
        let Some(read) = wait_for_read(position, reads, &mut arrived, stop, plan) else {
            return;
        };
        {
            let mut s = shared.stats.lock();
            s.max_read_ahead = s.max_read_ahead.max(arrived.len() + 1);
        }
        drop(waiting);
        let _span =
            tracing::debug_span!("gm_loader_stage", batch = position, stage = index).entered();
        let _nvtx = nvtx::range(c"gm-loader: stage runs batch");
        let result = read.items.and_then(|items| match gpu.as_mut() {
            Some(g) => g.run_batch(shared, plan.epoch, position, items),
            None => super::cpu_stage::run_batch(shared, plan.epoch, position, items),
        });
        if let Ok(Some(b)) = &result {
            let mut s = shared.stats.lock();
            s.batches += 1;
            s.samples += b.len() as u64;
        }
        let fatal = result.is_err();
        if !deliver(out, Delivery::Batch(position, Box::new(result)), stop) || fatal {
            return;
        }
    }
}

/// Batches read ahead of the one in a stage: enough to keep every worker busy and the ready
/// queue full, and no more, whatever order the workers finish in.
pub(crate) fn read_window(workers: usize, prefetch: usize, stages: usize) -> usize {
    (workers + prefetch).div_ceil(stages) * stages
}

/// Sends the jobs of this stage's batches from `next_job` up to `until` (every `n`th);
/// false when the workers are gone. A stream's feeder sends its jobs itself.
fn send_jobs(
    plan: &EpochPlan,
    jobs: &Sender<Job>,
    next_job: &mut usize,
    until: usize,
    n: usize,
) -> bool {
    while *next_job < plan.batches.len() && *next_job < until {
        let job = Job {
            position: *next_job,
            indices: plan.batches[*next_job].clone(),
        };
        if jobs.send(job).is_err() {
            return false;
        }
        *next_job += n;
    }
    true
}

/// The GPU stage, once the epoch before has left it; `None` when this epoch stops first (an
/// epoch started ahead and dropped must not wait for the running one's end).
fn lock_stage<'a>(
    stage: &'a Mutex<GpuStage>,
    stop: &AtomicBool,
) -> Option<parking_lot::MutexGuard<'a, GpuStage>> {
    loop {
        if let Some(g) = stage.try_lock_for(POLL) {
            return Some(g);
        }
        if stop.load(Ordering::Relaxed) {
            return None;
        }
    }
}

/// Waits until batch `position` is within `lead` batches of the one the consumer waits for;
/// false when the epoch stops.
fn wait_for_consumer(position: usize, lead: usize, due: &AtomicUsize, stop: &AtomicBool) -> bool {
    let held = (position >= due.load(Ordering::Acquire) + lead)
        .then(|| nvtx::range(c"gm-loader: stage waits for the consumer"));
    while position >= due.load(Ordering::Acquire) + lead {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    drop(held);
    true
}

/// The read of batch `position`, keeping reads of later batches that come first in
/// `arrived`; `None` when the epoch stops or (a stream) turns out to end before it.
fn wait_for_read(
    position: usize,
    reads: &Receiver<ReadBatch>,
    arrived: &mut BTreeMap<usize, ReadBatch>,
    stop: &AtomicBool,
    plan: &EpochPlan,
) -> Option<ReadBatch> {
    loop {
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        if let Some(r) = arrived.remove(&position) {
            return Some(r);
        }
        if position >= plan.end() {
            return None;
        }
        match reads.recv_timeout(POLL) {
            Ok(r) => {
                arrived.insert(r.position, r);
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return None,
        }
    }
}

/// A stream's feeder thread: its jobs go to the host workers; a failure to start (a state
/// that does not resume) or a panic ends the epoch.
fn feeder(
    plan: &EpochPlan,
    lead: usize,
    jobs: &Sender<Job>,
    out: &Sender<Delivery>,
    due: &AtomicUsize,
    stop: &Arc<AtomicBool>,
) {
    let Some((source, progress)) = &plan.stream else {
        return;
    };
    let lead = Lead {
        epoch: plan.epoch,
        batches: lead,
    };
    let send = |position, indices| jobs.send(Job { position, indices }).is_ok();
    let run = catch_unwind(AssertUnwindSafe(|| {
        feed(source, &lead, progress, send, due, stop)
    }));
    let failed = match run {
        Ok(Ok(())) => return,
        Ok(Err(e)) => e,
        Err(p) => LoaderError::WorkerPanic {
            stage: "stream feeder",
            message: panic_message(&*p),
        },
    };
    let _ = deliver(out, Delivery::Fatal(failed), stop);
}

/// Hands a batch to the consumer's queue; false when the epoch stops.
fn deliver(out: &Sender<Delivery>, mut msg: Delivery, stop: &AtomicBool) -> bool {
    loop {
        match out.send_timeout(msg, POLL) {
            Ok(()) => return true,
            Err(SendTimeoutError::Timeout(m)) => {
                if stop.load(Ordering::Relaxed) {
                    return false;
                }
                msg = m;
            }
            Err(SendTimeoutError::Disconnected(_)) => return false,
        }
    }
}
