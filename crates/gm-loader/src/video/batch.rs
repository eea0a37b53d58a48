//! What the clip loader yields.

use std::sync::Arc;

use gm_cuda::{CudaError, Event, Stream};

use crate::error::LoaderError;
use crate::release::Release;
use crate::tensors::Images;

/// A batch of clips.
#[derive(Debug)]
pub struct ClipBatch {
    /// First: it must drop before `frames` (see `Release`); GPU only.
    release: Option<Release>,
    /// `[B, T, C, H, W]` (or `[B, T, H, W, C]`); `[B, cameras, T, ...]` for multi-camera
    /// datasets; of the chain's output type. In GPU memory, or in host memory where the
    /// loader runs on the CPU.
    pub frames: Images,
    /// Dataset episode of each clip.
    pub episodes: Vec<usize>,
    /// Each clip's `(video, frame indices)`, one per camera.
    pub sources: Vec<Vec<(usize, Vec<usize>)>>,
    /// The epoch.
    pub epoch: u64,
    /// Position of the batch in the epoch.
    pub position: usize,
    /// Recorded when every frame is in place (GPU only).
    ready_event: Option<Arc<Event>>,
}

impl ClipBatch {
    /// A batch; `gpu` is the ready event and how the memory goes back.
    pub(crate) fn new(
        frames: Images,
        episodes: Vec<usize>,
        sources: Vec<Vec<(usize, Vec<usize>)>>,
        epoch: u64,
        position: usize,
        gpu: Option<(Arc<Event>, Release)>,
    ) -> ClipBatch {
        let (ready_event, release) = match gpu {
            Some((event, release)) => (Some(event), Some(release)),
            None => (None, None),
        };
        ClipBatch {
            frames,
            episodes,
            sources,
            epoch,
            position,
            ready_event,
            release,
        }
    }

    /// The event the frames are ready on (GPU only).
    pub fn ready_event(&self) -> Option<&Arc<Event>> {
        self.ready_event.as_ref()
    }

    /// Makes `stream` wait (on the device) until the frames are in place; nothing to wait
    /// for on the CPU path.
    pub fn wait_on(&self, stream: &Stream) -> Result<(), LoaderError> {
        if let Some(e) = &self.ready_event {
            stream.wait(e)?;
        }
        Ok(())
    }

    /// Marks the frames as used by work queued on `stream` (PyTorch's `record_stream`): when
    /// the batch is dropped, its memory is reused only after that work.
    pub fn record_stream(&mut self, stream: &Stream) -> Result<(), CudaError> {
        match &mut self.release {
            Some(r) => r.record(stream),
            None => Ok(()),
        }
    }

    /// Clips in the batch.
    pub fn len(&self) -> usize {
        self.episodes.len()
    }

    /// Whether the batch holds no clip.
    pub fn is_empty(&self) -> bool {
        self.episodes.is_empty()
    }
}
