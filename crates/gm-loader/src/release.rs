//! When a batch's device memory may go back to the loader's pool: after the consumer's reads.
//!
//! Pooled buffers are fenced on the stream that filled them (the stage's, or the NVDEC
//! session's). A consumer whose reads are still queued on its own stream when it drops a batch
//! calls `record_stream` first (PyTorch's contract); on drop the filling stream then waits for
//! those reads, so the pool's fence, recorded after, covers them.

use gm_cuda::{CudaError, Event, Stream};

/// The stream a batch's memory goes back on, and the consumers' events it must wait for.
#[derive(Debug)]
pub(crate) struct Release {
    stage: Stream,
    after: Vec<Event>,
}

impl Release {
    /// Memory filled on `stage`.
    pub(crate) fn new(stage: Stream) -> Release {
        Release {
            stage,
            after: Vec::new(),
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
    }
}
