//! When a batch's device memory may go back to the loader's pool: after the consumer's reads.
//!
//! Pooled buffers are fenced on the stream that filled them (the stage's, or the NVDEC
//! session's). A consumer whose reads are still queued on its own stream when it drops a batch
//! calls `record_stream` first (PyTorch's contract); on drop the filling stream then waits for
//! those reads, so the pool's fence, recorded after, covers them.
//!
//! A clip batch may be finished on another stream than the one its memory was taken for (a
//! job's last CPU part finishes it, see the clip loader's `parts`): the pool fences on the
//! stream of the taking, so that stream must first wait for the finishing stream's work, which
//! [`Rejoin`] does when it drops.

use gm_cuda::{CudaError, Event, Stream};

/// The stream a batch's memory goes back on, and the consumers' events it must wait for.
#[derive(Debug)]
pub(crate) struct Release {
    stage: Stream,
    after: Vec<Event>,
    /// Where the memory was taken on another stream than `stage`: ordered after it last.
    rejoin: Option<Rejoin>,
}

impl Release {
    /// Memory filled on `stage`.
    pub(crate) fn new(stage: Stream) -> Release {
        Release::rejoining(stage, None)
    }

    /// Memory filled on `stage`, and taken from the pool on another stream where `rejoin`
    /// (from `stage`) says so.
    pub(crate) fn rejoining(stage: Stream, rejoin: Option<Rejoin>) -> Release {
        Release {
            stage,
            after: Vec::new(),
            rejoin,
        }
    }

    /// Marks the memory as read by work queued on `stream` so far.
    pub(crate) fn record(&mut self, stream: &Stream) -> Result<(), CudaError> {
        let e = Event::new(stream.device())?;
        e.record(stream)?;
        self.after.push(e);
        Ok(())
    }
}

/// Makes the stage stream wait for the consumers' reads. A batch declares its `Release` before
/// its tensor, and fields drop in declaration order: the buffer then goes back to the pool
/// with a fence recorded after those reads. (A `Drop` on the batch itself would forbid moving
/// its fields out.)
impl Drop for Release {
    fn drop(&mut self) {
        for e in self.after.drain(..) {
            if let Err(err) = self.stage.wait(&e) {
                tracing::error!(error = %err, "could not order a batch's release after its consumer; synchronizing");
                let _ = e.synchronize();
            }
        }
        // After the consumers' reads: the pool's fence on the home stream then covers them.
        drop(self.rejoin.take());
    }
}

/// Orders a home stream (where pooled memory was taken, and where the pool fences it when it
/// goes back) after the work queued so far on another stream that wrote it, when dropped.
/// Declared before the memory it covers, so that it drops first; each clone orders again
/// when it drops (a batch's scratch goes back before its frames).
#[derive(Debug, Clone)]
pub(crate) struct Rejoin {
    from: Stream,
    home: Stream,
}

impl Rejoin {
    /// `home` will wait for `from`'s work at the time of the drop.
    pub(crate) fn new(from: Stream, home: Stream) -> Rejoin {
        Rejoin { from, home }
    }

    fn order(&self) -> Result<(), CudaError> {
        let e = Event::new(self.from.device())?;
        e.record(&self.from)?;
        if let Err(err) = self.home.wait(&e) {
            tracing::error!(error = %err, "could not order a batch's home stream after its finishing stream; synchronizing");
            e.synchronize()?;
        }
        Ok(())
    }
}

impl Drop for Rejoin {
    fn drop(&mut self) {
        if let Err(err) = self.order() {
            tracing::error!(error = %err, "could not order a batch's memory after its finishing stream; synchronizing the stream");
            let _ = self.from.synchronize();
        }
    }
}
