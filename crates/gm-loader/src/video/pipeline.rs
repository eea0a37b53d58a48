//! The threads of a clip epoch: jobs of consecutive batches go to the decoders (NVDEC
//! sessions, sessions for CPU-routed videos, or CPU decoders), a few at once (see
//! [`order`](super::order)), and their batches come back to the consumer in order.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, SendTimeoutError, Sender, bounded};

use super::batch::ClipBatch;
use super::decode::{Outcome, Shared};
use super::order::{Limits, order_jobs};
use super::worker::Decoders;
use crate::error::LoaderError;
use crate::image::Waited;
use crate::state::{Cursor, LoaderState};

pub(super) fn send(tx: &Sender<Outcome>, mut msg: Outcome, stop: &AtomicBool) -> bool {
    loop {
        match tx.send_timeout(msg, Duration::from_millis(20)) {
            Ok(()) => return true,
            Err(SendTimeoutError::Timeout(m)) if !stop.load(Ordering::Relaxed) => msg = m,
            Err(_) => return false,
        }
    }
}

/// The batches of one epoch of a [`ClipLoader`](crate::ClipLoader).
pub struct ClipEpoch<'a> {
    rx: Option<Receiver<Outcome>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    cursor: Cursor,
    shared: Arc<Shared>,
    _loader: std::marker::PhantomData<&'a mut ()>,
}

impl ClipEpoch<'_> {
    /// Starts the thread that submits `jobs` of `epoch` and forwards their batches in order.
    pub(crate) fn spawn(
        jobs: Vec<Vec<(usize, Vec<usize>)>>,
        limits: Limits,
        shared: &Arc<Shared>,
        decoders: &Arc<Decoders>,
        epoch: u64,
        cursor: Cursor,
    ) -> ClipEpoch<'static> {
        let (tx, rx) = bounded(2);
        let stop = Arc::new(AtomicBool::new(false));
        let (shared2, decoders, stop2) = (shared.clone(), decoders.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("gm-loader-clips".into())
            .spawn(move || {
                if let Some(n) = &shared2.node {
                    n.pin_current_thread();
                }
                order_jobs(jobs, limits, &shared2, &decoders, epoch, &tx, &stop2)
            })
            .ok();
        ClipEpoch {
            rx: Some(rx),
            stop,
            thread,
            cursor,
            shared: shared.clone(),
            _loader: std::marker::PhantomData,
        }
    }

    /// The state to save for resuming after the last batch yielded.
    pub fn state(&self) -> LoaderState {
        self.cursor.state()
    }

    /// Batches left in this epoch (batches whose every clip was bad included).
    pub fn remaining(&self) -> usize {
        self.cursor.remaining()
    }
}

impl ClipEpoch<'_> {
    /// [`Iterator::next`] that waits at most `timeout` (see
    /// [`Epoch::next_timeout`](crate::Epoch::next_timeout)).
    pub fn next_timeout(&mut self, timeout: Duration) -> Waited<Result<ClipBatch, LoaderError>> {
        self.next_until(Some(Instant::now() + timeout))
    }

    fn next_until(&mut self, deadline: Option<Instant>) -> Waited<Result<ClipBatch, LoaderError>> {
        loop {
            let Some(rx) = self.rx.as_ref() else {
                return Waited::Ready(None);
            };
            let waited = Instant::now();
            let got = match deadline {
                None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
                Some(d) => rx.recv_deadline(d),
            };
            self.shared.stats.lock().wait_us += waited.elapsed().as_micros() as u64;
            let r = match got {
                Ok(r) => r,
                Err(RecvTimeoutError::Timeout) => return Waited::Pending,
                Err(RecvTimeoutError::Disconnected) => return Waited::Ready(None),
            };
            match r {
                Ok(Some(b)) => {
                    self.cursor.passed(b.position);
                    return Waited::Ready(Some(Ok(b)));
                }
                // Every clip of that batch was bad and skipped.
                Ok(None) => self.cursor.advance(),
                Err(e) => {
                    self.rx = None;
                    return Waited::Ready(Some(Err(e)));
                }
            }
        }
    }
}

impl Iterator for ClipEpoch<'_> {
    type Item = Result<ClipBatch, LoaderError>;
    fn next(&mut self) -> Option<Self::Item> {
        match self.next_until(None) {
            Waited::Ready(item) => item,
            Waited::Pending => None,
        }
    }
}

impl Drop for ClipEpoch<'_> {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.rx = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
