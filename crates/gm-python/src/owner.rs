//! What keeps a tensor's memory alive, and how its release is ordered after the consumers
//! that read it on their own streams (PyTorch's `record_stream` contract, applied when a
//! DLPack consumer's deleter runs).

use gm_cuda::{Event, Stream};
use parking_lot::Mutex;

/// The owner of a tensor's memory.
pub(crate) enum Owner {
    /// A loader batch's images: dropping the batch orders the pool's reuse after the streams
    /// recorded on it.
    Batch(Box<Mutex<gm_loader::Batch>>),
    /// A clip batch's frames (the same contract).
    Clips(Mutex<gm_loader::ClipBatch>),
    /// Device memory from a pool fenced on `stream`.
    Fenced(Fenced),
    /// Host bytes.
    Host(Vec<u8>),
}

/// Device memory whose pool fences it on `stream`: on drop, `stream` first waits for the
/// consumers' reads, so the fence the pool records when the memory goes back covers them.
pub(crate) struct Fenced {
    /// Declared before `tensor`: the wait is queued before the memory goes back.
    release: FencedRelease,
    /// Holds the memory (never read: it is dropped after `release`).
    _memory: gm_cuda::Tensor,
}

struct FencedRelease {
    stream: Stream,
    after: Mutex<Vec<Event>>,
}

impl Drop for FencedRelease {
    fn drop(&mut self) {
        for e in self.after.get_mut().drain(..) {
            if let Err(err) = self.stream.wait(&e) {
                tracing::error!(error = %err, "could not order a tensor's release after its consumer; synchronizing");
                let _ = e.synchronize();
            }
        }
    }
}

impl Fenced {
    /// `tensor`'s memory, fenced on `stream`.
    pub(crate) fn new(tensor: gm_cuda::Tensor, stream: Stream) -> Fenced {
        Fenced {
            release: FencedRelease {
                stream,
                after: Mutex::new(Vec::new()),
            },
            _memory: tensor,
        }
    }
}

impl Owner {
    /// Marks the memory as read by the work queued on `stream` so far.
    pub(crate) fn record_stream(&self, stream: &Stream) -> Result<(), gm_cuda::CudaError> {
        match self {
            Owner::Batch(b) => b.lock().record_stream(stream),
            Owner::Clips(b) => b.lock().record_stream(stream),
            Owner::Fenced(f) => {
                let e = Event::new(stream.device())?;
                e.record(stream)?;
                f.release.after.lock().push(e);
                Ok(())
            }
            Owner::Host(_) => Ok(()),
        }
    }
}
