//! What the clip loader yields.

use std::sync::Arc;

use gm_cuda::{CudaError, Event, Stream, Tensor};

use crate::error::LoaderError;
use crate::release::Release;

/// A batch of clips.
#[derive(Debug)]
pub struct ClipBatch {
    /// First: it must drop before `frames` (see `Release`).
    release: Release,
    /// `[B, T, C, H, W]` (or `[B, T, H, W, C]`); `[B, cameras, T, ...]` for multi-camera
    /// datasets; of the chain's output type.
    pub frames: Tensor,
    /// Dataset episode of each clip.
    pub episodes: Vec<usize>,
    /// Each clip's `(video, frame indices)`, one per camera.
    pub sources: Vec<Vec<(usize, Vec<usize>)>>,
    /// The epoch.
    pub epoch: u64,
    /// Position of the batch in the epoch.
    pub position: usize,
    /// Recorded when every frame is in place.
    ready_event: Arc<Event>,
}

impl ClipBatch {
    pub(crate) fn new(
        frames: Tensor,
        episodes: Vec<usize>,
        sources: Vec<Vec<(usize, Vec<usize>)>>,
        epoch: u64,
        position: usize,
        ready_event: Arc<Event>,
        stage: Stream,
    ) -> ClipBatch {
        ClipBatch {
            frames,
            episodes,
            sources,
            epoch,
            position,
            ready_event,
            release: Release::new(stage),
        }
    }

    /// The event the frames are ready on.
    pub fn ready_event(&self) -> &Arc<Event> {
        &self.ready_event
    }

    /// Makes `stream` wait (on the device) until the frames are in place.
    pub fn wait_on(&self, stream: &Stream) -> Result<(), LoaderError> {
        Ok(stream.wait(&self.ready_event)?)
    }

    /// Marks the frames as used by work queued on `stream` (PyTorch's `record_stream`): when
    /// the batch is dropped, its memory is reused only after that work.
    pub fn record_stream(&mut self, stream: &Stream) -> Result<(), CudaError> {
        self.release.record(stream)
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
