//! Checkpoint and resume: where an epoch stands, saved next to a model.

use serde::{Deserialize, Serialize};

use crate::error::LoaderError;
use crate::sampler::Sampler;

/// The position of a loader: the next batch of an epoch, and what the order depends on.
///
/// Sample order comes from the sampler and `(seed, epoch)`; augmentations from
/// `(seed, epoch, index)`. So this is the whole state: resuming from it yields exactly the
/// batches that would have followed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoaderState {
    /// The epoch.
    pub epoch: u64,
    /// Position of the next batch within the epoch.
    pub next_batch: usize,
    /// The augmentation seed.
    pub seed: u64,
    /// The sampler.
    pub sampler: Sampler,
    /// Dataset size when saved.
    pub dataset_len: usize,
    /// Batch size.
    pub batch_size: usize,
    /// Whether a short last batch is dropped.
    pub drop_last: bool,
    /// The position of each stream, for a streaming WebDataset
    /// ([`WebDatasetStream`](crate::shards::WebDatasetStream)); absent otherwise and in
    /// states saved before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<crate::shards::StreamState>,
}

impl LoaderState {
    /// As JSON.
    pub fn to_json(&self) -> String {
        // A struct of numbers and enums always serializes.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// From [`LoaderState::to_json`]'s output.
    pub fn from_json(s: &str) -> Result<LoaderState, LoaderError> {
        serde_json::from_str(s).map_err(|e| LoaderError::Resume(format!("bad state: {e}")))
    }

    /// Whether `other` describes the same loader configuration (everything but the position):
    /// a saved state can be checked when it is loaded, before resuming from it.
    pub fn check_same_loader(&self, other: &LoaderState) -> Result<(), LoaderError> {
        let mut a = self.clone();
        a.epoch = other.epoch;
        a.next_batch = other.next_batch;
        a.stream.clone_from(&other.stream);
        if &a != other {
            return Err(LoaderError::Resume(format!(
                "the state was saved by a different loader: saved {other:?}, this one {a:?}"
            )));
        }
        Ok(())
    }
}

/// Where an epoch's consumer stands: shared by [`Epoch`](crate::Epoch) and
/// [`ClipEpoch`](crate::ClipEpoch).
#[derive(Debug, Clone)]
pub(crate) struct Cursor {
    state: LoaderState,
    /// Batches in the epoch.
    end: usize,
}

impl Cursor {
    pub(crate) fn new(state: LoaderState, end: usize) -> Cursor {
        Cursor { state, end }
    }

    /// The state to save for resuming after the last batch yielded.
    pub(crate) fn state(&self) -> LoaderState {
        self.state.clone()
    }

    /// Batches left in the epoch.
    pub(crate) fn remaining(&self) -> usize {
        self.end.saturating_sub(self.state.next_batch)
    }

    /// The position of the next batch.
    pub(crate) fn next_batch(&self) -> usize {
        self.state.next_batch
    }

    /// Batches in the epoch.
    pub(crate) fn end(&self) -> usize {
        self.end
    }

    /// Moves past the next batch.
    pub(crate) fn advance(&mut self) {
        self.state.next_batch += 1;
    }

    /// Moves past batch `position`.
    pub(crate) fn passed(&mut self, position: usize) {
        self.state.next_batch = position + 1;
    }

    /// Replaces the state to save (a stream's, after the batch passed).
    pub(crate) fn set_state(&mut self, state: LoaderState) {
        self.state = state;
    }
}
