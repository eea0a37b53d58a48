//! `DecoderPool`: decoder sessions on worker threads, so that every NVDEC engine works at once.

use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender, bounded, unbounded};
use gm_cuda::Device;

use super::budget::DecoderBudget;
use super::session::DecoderSession;
use crate::error::{CodecError, Result};
use crate::route::Routing;

type Job = Box<dyn FnOnce(&mut DecoderSession) + Send>;

/// A fixed set of decoder sessions, each on its own thread, taking jobs from one queue.
pub struct DecoderPool {
    jobs: Option<Sender<Job>>,
    workers: Vec<JoinHandle<()>>,
    budget: Option<Arc<DecoderBudget>>,
}

impl DecoderPool {
    /// `sessions` sessions on `device` (7 fill the NVDEC engines of an H100/H200); decoders of
    /// all sessions together hold at most `budget_bytes` of GPU memory when given.
    pub fn new(
        device: &Device,
        sessions: usize,
        budget_bytes: Option<usize>,
    ) -> Result<DecoderPool> {
        Self::routed(device, sessions, budget_bytes, Routing::default())
    }

    /// [`DecoderPool::new`] with every session routing streams as `routing` says (NVDEC, or
    /// libavcodec on the session's thread for what NVDEC cannot take).
    pub fn routed(
        device: &Device,
        sessions: usize,
        budget_bytes: Option<usize>,
        routing: Routing,
    ) -> Result<DecoderPool> {
        let budget = budget_bytes.map(DecoderBudget::new);
        let (tx, rx) = unbounded::<Job>();
        let mut workers = Vec::with_capacity(sessions);
        let (ready_tx, ready_rx) = bounded::<Result<()>>(sessions.max(1));
        for i in 0..sessions.max(1) {
            let rx: Receiver<Job> = rx.clone();
            let device = device.clone();
            let budget = budget.clone();
            let ready = ready_tx.clone();
            let handle = std::thread::Builder::new()
                .name(format!("gm-nvdec-{i}"))
                .spawn(move || {
                    let mut session = match DecoderSession::new(&device, budget) {
                        Ok(mut s) => {
                            s.set_routing(routing);
                            let _ = ready.send(Ok(()));
                            s
                        }
                        Err(e) => {
                            let _ = ready.send(Err(e));
                            return;
                        }
                    };
                    drop(ready);
                    while let Ok(job) = rx.recv() {
                        job(&mut session);
                    }
                })
                .map_err(|e| CodecError::Pool(format!("spawning a decoder thread: {e}")))?;
            workers.push(handle);
        }
        drop(ready_tx);
        for _ in 0..workers.len() {
            match ready_rx.recv() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err(e),
                Err(_) => {
                    return Err(CodecError::Pool(
                        "a decoder thread died while starting".into(),
                    ));
                }
            }
        }
        Ok(DecoderPool {
            jobs: Some(tx),
            workers,
            budget,
        })
    }

    /// Number of sessions.
    pub fn sessions(&self) -> usize {
        self.workers.len()
    }

    /// GPU memory held by the pool's decoders, when the pool has a budget.
    pub fn decoder_memory(&self) -> Option<usize> {
        self.budget.as_ref().map(|b| b.used())
    }

    /// Runs `job` on the next free session; its result arrives on the returned channel. A
    /// worker that panics yields an error there, not a hang.
    pub fn submit<R, F>(&self, job: F) -> Receiver<Result<R>>
    where
        R: Send + 'static,
        F: FnOnce(&mut DecoderSession) -> Result<R> + Send + 'static,
    {
        let (tx, rx) = bounded(1);
        let boxed: Job = Box::new(move |session: &mut DecoderSession| {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(session)))
                .unwrap_or_else(|_| Err(CodecError::Pool("a decoding job panicked".into())));
            let _ = tx.send(r);
        });
        if let Some(jobs) = &self.jobs
            && jobs.send(boxed).is_ok()
        {
            return rx;
        }
        let (etx, erx) = bounded(1);
        let _ = etx.send(Err(CodecError::Pool("the pool is shut down".into())));
        erx
    }
}

impl Drop for DecoderPool {
    fn drop(&mut self) {
        self.jobs = None;
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}
