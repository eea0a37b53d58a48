//! When a clip epoch's jobs go to the decoders, and how their batches come back in order.
//!
//! Each pool (NVDEC sessions, CPU decoders) takes its own jobs in order of their first batch
//! and is kept fed on its own: a new job goes to a pool as soon as fewer than its sessions + 1
//! of its jobs run, whatever the other pool does. A single queue in epoch order would hold
//! the CPU decoders back behind NVDEC jobs (and the reverse): in a dataset of one AV1 video
//! (CPU) per four H.264 videos (NVDEC), sixteen running CPU jobs span hundreds of batches,
//! and submitting in order would mean buffering every NVDEC job between them. What bounds
//! memory is `in_flight`, the jobs submitted and not yet delivered (finished jobs wait there
//! with their batches until their turn).

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use crossbeam_channel::{Receiver, Sender, bounded, select, unbounded};

use super::decode::{Outcome, Shared};
use super::pipeline::send;
use super::worker::Decoders;
use crate::error::LoaderError;

/// How many jobs may be out at once.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Jobs submitted and not yet delivered, at most (a job due next is submitted anyway).
    pub(crate) in_flight: usize,
    /// Jobs running or queued per pool, at most: NVDEC's, the CPU's.
    pub(crate) per_pool: [usize; 2],
}

/// A job: its batches as (position in the epoch, episodes).
type Job = Vec<(usize, Vec<usize>)>;

/// A submitted job: its batches' channel and its end.
type Running = (Receiver<Outcome>, Receiver<gm_codec::Result<()>>);

/// Tells the scheduler that job `.1` stopped running, however it ends (a panic included).
struct Finished(Sender<usize>, usize);

impl Drop for Finished {
    fn drop(&mut self) {
        let _ = self.0.send(self.1);
    }
}

/// The jobs of an epoch (ordered by their first batch) and where each one stands.
struct Board {
    jobs: Vec<Option<Job>>,
    /// Per job: the CPU's pool (1) or NVDEC's (0).
    pool: Vec<usize>,
    /// Per pool, its jobs not yet submitted, in order.
    queued: [VecDeque<usize>; 2],
    running: Vec<Option<Running>>,
    /// Batches of each job not yet delivered.
    left: Vec<usize>,
    /// Jobs submitted and not fully delivered.
    undelivered: usize,
    /// Per pool, jobs submitted and not finished.
    busy: [usize; 2],
}

/// Submits jobs as [`Limits`] allow and forwards their batches in the epoch's order. A job's
/// batches need not be consecutive (jobs are cut per route where the dataset mixes them), but
/// each job sends its own in order, so the batch due next is always the next message of the
/// job that holds it.
pub(super) fn order_jobs(
    jobs: Vec<Job>,
    limits: Limits,
    shared: &Arc<Shared>,
    decoders: &Decoders,
    epoch: u64,
    tx: &Sender<Outcome>,
    stop: &Arc<AtomicBool>,
) {
    let mut due: Vec<(usize, usize)> = jobs
        .iter()
        .enumerate()
        .flat_map(|(j, job)| job.iter().map(move |(position, _)| (*position, j)))
        .collect();
    due.sort_unstable();
    let pool: Vec<usize> = jobs
        .iter()
        .map(|j| usize::from(shared.job_on_cpu(j)))
        .collect();
    let mut queued = [VecDeque::new(), VecDeque::new()];
    for (j, &p) in pool.iter().enumerate() {
        queued[p].push_back(j);
    }
    let mut board = Board {
        left: jobs.iter().map(Vec::len).collect(),
        running: (0..jobs.len()).map(|_| None).collect(),
        jobs: jobs.into_iter().map(Some).collect(),
        pool,
        queued,
        undelivered: 0,
        busy: [0, 0],
    };
    let (fin_tx, fin_rx) = unbounded();
    let submit = |board: &mut Board, j: usize| {
        let Some(job) = board.jobs[j].take() else {
            return;
        };
        let on_cpu = board.pool[j] == 1;
        board.running[j] = Some(submit(
            job, j, on_cpu, &fin_tx, shared, decoders, epoch, stop,
        ));
        board.undelivered += 1;
        board.busy[board.pool[j]] += 1;
    };
    for (_, j) in due {
        submit(&mut board, j);
        let r = loop {
            for p in 0..2 {
                while board.busy[p] < limits.per_pool[p] && board.undelivered < limits.in_flight {
                    let Some(next) = board.queued[p].pop_front() else {
                        break;
                    };
                    submit(&mut board, next);
                }
            }
            let Some((brx, done)) = &board.running[j] else {
                return;
            };
            select! {
                recv(brx) -> r => break r.map_err(|_| ended_early(done)),
                recv(fin_rx) -> k => {
                    if let Ok(k) = k {
                        board.busy[board.pool[k]] -= 1;
                    }
                }
            }
        };
        let r = r.unwrap_or_else(Err);
        board.left[j] -= 1;
        if board.left[j] == 0 {
            board.running[j] = None;
            board.undelivered -= 1;
        }
        let fatal = r.is_err();
        if !send(tx, r, stop) || fatal {
            return;
        }
    }
}

/// Why a job ended without sending its batches: it failed, or panicked, or its pool is gone.
fn ended_early(done: &Receiver<gm_codec::Result<()>>) -> LoaderError {
    match done.recv() {
        Ok(Err(e)) => LoaderError::Codec(e),
        _ => LoaderError::WorkerPanic {
            stage: "clip decoder",
            message: "a decoding job ended without its batches".into(),
        },
    }
}

/// Hands job `index` to the CPU's decoders (`on_cpu`) or NVDEC's.
#[allow(clippy::too_many_arguments)]
fn submit(
    job: Job,
    index: usize,
    on_cpu: bool,
    finished: &Sender<usize>,
    shared: &Arc<Shared>,
    decoders: &Decoders,
    epoch: u64,
    stop: &Arc<AtomicBool>,
) -> Running {
    let (btx, brx) = bounded(job.len() + 1);
    let (shared, stop) = (shared.clone(), stop.clone());
    let finished = Finished(finished.clone(), index);
    let done = decoders.submit(on_cpu, move |decoder| {
        let _finished = finished;
        shared.run_job(decoder, epoch, job, !on_cpu, &btx, &stop);
    });
    (brx, done)
}
