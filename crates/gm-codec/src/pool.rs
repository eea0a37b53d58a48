//! `WorkerPool`: decoders of one kind, each living on its own thread, taking jobs from one
//! queue. NVDEC sessions (`nvdec::DecoderPool`) and the CPU video decoder use it, so a loader
//! runs the same jobs on either.

use std::sync::{Arc, Weak};
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender, bounded, unbounded};

use crate::error::{CodecError, Result};

type Job<S> = Box<dyn FnOnce(&mut S) + Send>;

/// A fixed set of decoders `S`, each made and kept on its own thread (so `S` need not be
/// `Send`), taking jobs from one queue.
pub struct WorkerPool<S: 'static> {
    jobs: Option<Arc<Sender<Job<S>>>>,
    workers: Vec<JoinHandle<()>>,
}

/// Submits jobs to a [`WorkerPool`] without keeping it alive: a job running on another
/// pool's thread can hand part of its work here, and the pool still shuts down when its owner
/// drops it (a submit after that gets an error, not a hang).
pub struct PoolHandle<S: 'static> {
    jobs: Weak<Sender<Job<S>>>,
}

impl<S: 'static> Clone for PoolHandle<S> {
    fn clone(&self) -> Self {
        PoolHandle {
            jobs: self.jobs.clone(),
        }
    }
}

impl<S: 'static> PoolHandle<S> {
    /// [`WorkerPool::submit`] on the pool this handle came from.
    pub fn submit<R, F>(&self, job: F) -> Receiver<Result<R>>
    where
        R: Send + 'static,
        F: FnOnce(&mut S) -> Result<R> + Send + 'static,
    {
        send_job(self.jobs.upgrade().as_deref(), job)
    }
}

/// Queues `job` on `jobs`, or answers at once that the pool is shut down.
fn send_job<S, R, F>(jobs: Option<&Sender<Job<S>>>, job: F) -> Receiver<Result<R>>
where
    S: 'static,
    R: Send + 'static,
    F: FnOnce(&mut S) -> Result<R> + Send + 'static,
{
    let (tx, rx) = bounded(1);
    let boxed: Job<S> = Box::new(move |decoder: &mut S| {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(decoder)))
            .unwrap_or_else(|_| Err(CodecError::Pool("a decoding job panicked".into())));
        let _ = tx.send(r);
    });
    if let Some(jobs) = jobs
        && jobs.send(boxed).is_ok()
    {
        return rx;
    }
    let (etx, erx) = bounded(1);
    let _ = etx.send(Err(CodecError::Pool("the pool is shut down".into())));
    erx
}

impl<S: 'static> WorkerPool<S> {
    /// `n` threads named `{name}-{i}`, each with the decoder `make(i)` returns; fails with
    /// the first thread's error when a decoder cannot be made.
    pub fn new<M>(n: usize, name: &str, make: M) -> Result<WorkerPool<S>>
    where
        M: Fn(usize) -> Result<S> + Send + Sync + Clone + 'static,
    {
        let (tx, rx) = unbounded::<Job<S>>();
        let mut workers = Vec::with_capacity(n.max(1));
        let (ready_tx, ready_rx) = bounded::<Result<()>>(n.max(1));
        for i in 0..n.max(1) {
            let (rx, ready, make) = (rx.clone(), ready_tx.clone(), make.clone());
            let handle = std::thread::Builder::new()
                .name(format!("{name}-{i}"))
                .spawn(move || {
                    let mut decoder = match make(i) {
                        Ok(d) => d,
                        Err(e) => {
                            let _ = ready.send(Err(e));
                            return;
                        }
                    };
                    let _ = ready.send(Ok(()));
                    drop(ready);
                    while let Ok(job) = rx.recv() {
                        job(&mut decoder);
                    }
                })
                .map_err(|e| CodecError::Pool(format!("spawning a decoder thread: {e}")))?;
            workers.push(handle);
        }
        drop(ready_tx);
        let pool = WorkerPool {
            jobs: Some(Arc::new(tx)),
            workers,
        };
        for _ in 0..pool.workers.len() {
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
        Ok(pool)
    }

    /// Number of decoders (threads).
    pub fn workers(&self) -> usize {
        self.workers.len()
    }

    /// Runs `job` on the next free decoder; its result arrives on the returned channel. A
    /// job that panics yields an error there, not a hang.
    pub fn submit<R, F>(&self, job: F) -> Receiver<Result<R>>
    where
        R: Send + 'static,
        F: FnOnce(&mut S) -> Result<R> + Send + 'static,
    {
        send_job(self.jobs.as_deref(), job)
    }

    /// A handle that submits to this pool without keeping it alive.
    pub fn handle(&self) -> PoolHandle<S> {
        PoolHandle {
            jobs: self.jobs.as_ref().map_or_else(Weak::new, Arc::downgrade),
        }
    }
}

impl<S: 'static> Drop for WorkerPool<S> {
    /// Closes the queue (jobs already queued still run) and joins the threads.
    fn drop(&mut self) {
        self.jobs = None;
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handle_submits_without_keeping_the_pool_alive() {
        let pool: WorkerPool<u32> = WorkerPool::new(2, "test", |i| Ok(i as u32 * 10)).unwrap();
        let handle = pool.handle();
        // A job on one worker hands a part to the pool through the handle and waits for it.
        let inner = handle.clone();
        let outer = pool.submit(move |me: &mut u32| {
            let part = inner.submit(|other: &mut u32| Ok(*other + 1));
            let part = part.recv().map_err(|_| CodecError::Pool("lost".into()))??;
            Ok((*me, part))
        });
        let (me, part) = outer.recv().unwrap().unwrap();
        assert!([0, 10].contains(&me) && [1, 11].contains(&part));
        // Dropping the pool joins its threads although a handle is still held, and the
        // handle then answers with an error instead of queueing forever.
        drop(pool);
        let late = handle.submit(|x: &mut u32| Ok(*x));
        let err = late.recv().unwrap().unwrap_err();
        assert!(err.to_string().contains("shut down"), "{err}");
    }
}
