//! `DecoderPool`: decoder sessions on worker threads, so that every NVDEC engine works at once.

use std::sync::Arc;

use crossbeam_channel::Receiver;
use gm_cuda::Device;

use super::budget::DecoderBudget;
use super::session::DecoderSession;
use crate::error::Result;
use crate::pool::WorkerPool;
use crate::route::Routing;

/// A fixed set of decoder sessions, each on its own thread, taking jobs from one queue.
pub struct DecoderPool {
    workers: WorkerPool<DecoderSession>,
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
        Self::routed_named(device, sessions, budget_bytes, routing, "gm-nvdec")
    }

    /// [`DecoderPool::routed`] with threads named `{name}-{i}` (Linux keeps 15 bytes of a
    /// name), so that profiles and per-thread CPU time tell a loader's two pools apart.
    pub fn routed_named(
        device: &Device,
        sessions: usize,
        budget_bytes: Option<usize>,
        routing: Routing,
        name: &str,
    ) -> Result<DecoderPool> {
        let budget = budget_bytes.map(DecoderBudget::new);
        let (device, b) = (device.clone(), budget.clone());
        let workers = WorkerPool::new(sessions, name, move |_| {
            let mut s = DecoderSession::new(&device, b.clone())?;
            s.set_routing(routing);
            Ok(s)
        })?;
        Ok(DecoderPool { workers, budget })
    }

    /// Number of sessions.
    pub fn sessions(&self) -> usize {
        self.workers.workers()
    }

    /// GPU memory held by the pool's decoders, when the pool has a budget.
    pub fn decoder_memory(&self) -> Option<usize> {
        self.budget.as_ref().map(|b| b.used())
    }

    /// A handle that submits to these sessions without keeping the pool alive.
    pub fn handle(&self) -> crate::PoolHandle<DecoderSession> {
        self.workers.handle()
    }

    /// Runs `job` on the next free session; its result arrives on the returned channel. A
    /// worker that panics yields an error there, not a hang.
    pub fn submit<R, F>(&self, job: F) -> Receiver<Result<R>>
    where
        R: Send + 'static,
        F: FnOnce(&mut DecoderSession) -> Result<R> + Send + 'static,
    {
        self.workers.submit(job)
    }
}
