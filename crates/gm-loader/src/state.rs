//! Checkpoint and resume: where an epoch stands, saved next to a model.

use serde::{Deserialize, Serialize};

use crate::elastic::Reshard;
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
    /// The epoch's interruptions at other world sizes, oldest first: `next_batch` counts
    /// batches of what they left (see [`LoaderState::merge`]). Empty for an epoch run at one
    /// world size.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reshards: Vec<Reshard>,
    /// For batches grouped by aspect ratio ([`LoaderBuilder::batch_groups`]): a hash of the
    /// groups, so that a state resumes only a loader grouping the same way. Absent otherwise.
    ///
    /// [`LoaderBuilder::batch_groups`]: crate::LoaderBuilder::batch_groups
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub groups: Option<u64>,
    /// For grouped batches, in a state an epoch saved: the batches of this rank's epoch, so
    /// that [`LoaderState::merge`] knows which ranks had finished (grouped batches are not
    /// counted from samples alone). Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share_batches: Option<usize>,
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
    /// a saved state can be checked when it is loaded, before resuming from it. A merged
    /// state ([`LoaderState::merge`]: no rank, and the epoch's reshards) fits a loader of any
    /// rank and world size.
    pub fn check_same_loader(&self, other: &LoaderState) -> Result<(), LoaderError> {
        let mut a = self.clone();
        a.epoch = other.epoch;
        a.next_batch = other.next_batch;
        a.stream.clone_from(&other.stream);
        a.reshards.clone_from(&other.reshards);
        a.share_batches = other.share_batches;
        if other.is_merged() {
            a.sampler.shard = None;
        }
        if &a != other {
            return Err(LoaderError::Resume(format!(
                "the state was saved by a different loader: saved {other:?}, this one {a:?}"
            )));
        }
        Ok(())
    }
}

impl LoaderState {
    /// Whether this is a merged state (see [`LoaderState::merge`]), which any rank of any world
    /// size resumes from.
    pub fn is_merged(&self) -> bool {
        self.sampler.shard.is_none() && !self.reshards.is_empty()
    }

    /// The states every rank of a world saved (one each, any order) merged into one that a
    /// world of any size resumes from: the rest of the epoch, no sample repeated and none
    /// skipped, dealt to the new ranks as their sampler deals it (each rank resumes with
    /// [`Loader::resume`](crate::Loader::resume) or
    /// [`ClipLoader::resume`](crate::ClipLoader::resume) of the merged state). Augmentations
    /// stay tied to `(seed, epoch, sample)`. When every rank had finished the epoch, the
    /// merged state starts the next one. A rank whose state is the start of the next epoch
    /// (Python's state after an iteration ends) consumed its whole share. Batches grouped by
    /// aspect ratio merge too: the reshard counts each rank's batches, and the loader that
    /// resumes (grouping the same way) finds their samples again. A streaming WebDataset's
    /// states cannot be merged: its order depends on the world it read (an error says so).
    pub fn merge(states: &[LoaderState]) -> Result<LoaderState, LoaderError> {
        let Some(first) = states.first() else {
            return merge_error("no states".into());
        };
        if states.iter().any(|s| s.stream.is_some()) {
            return merge_error(
                "a streaming WebDataset resumes only at the world size it was saved at (its \
                 shards are dealt to ranks by that world); use indexed shards to change it"
                    .into(),
            );
        }
        let Some(shard) = first.sampler.shard else {
            return if states.len() == 1 {
                Ok(first.clone())
            } else {
                merge_error("states without a rank cannot be merged with others".into())
            };
        };
        let by_rank = by_rank(states, shard.world_size)?;
        // The epoch the ranks are in: a rank that ran out of its share has moved on to the
        // start of the next one (Python's state after an iteration ends).
        let epoch = states.iter().map(|s| s.epoch).min().unwrap_or(first.epoch);
        let Some(base) = states.iter().find(|s| s.epoch == epoch) else {
            return merge_error("no state of the running epoch".into());
        };
        let done =
            |s: &LoaderState| s.epoch == epoch + 1 && s.next_batch == 0 && s.reshards.is_empty();
        if let Some(s) = states
            .iter()
            .find(|s| !done(s) && (s.epoch, &s.reshards) != (epoch, &base.reshards))
        {
            return merge_error(format!(
                "ranks saved different epochs ({epoch} and {}) or histories",
                s.epoch
            ));
        }
        if base.groups.is_some() {
            return Ok(merge_grouped(base, &by_rank, epoch, done));
        }
        let left = crate::elastic::remainder(
            base.sampler.global_order(base.dataset_len, epoch),
            &base.reshards,
            &[],
        )
        .len();
        let per_rank = crate::elastic::share_len(left, shard.world_size, shard.drop_last);
        let batches = if base.drop_last {
            per_rank / base.batch_size.max(1)
        } else {
            per_rank.div_ceil(base.batch_size.max(1))
        };
        let finished = |s: &LoaderState| done(s) || s.next_batch >= batches;
        if by_rank.iter().all(|s| finished(s)) {
            return Ok(next_epoch(base, epoch));
        }
        let consumed = by_rank
            .iter()
            .map(|s| {
                if done(s) {
                    per_rank
                } else {
                    (s.next_batch * s.batch_size).min(per_rank)
                }
            })
            .collect();
        let mut merged = unranked(base);
        merged.reshards.push(Reshard {
            world_size: shard.world_size,
            consumed,
            drop_last: shard.drop_last,
            grouped_batch: None,
        });
        Ok(merged)
    }

    fn check_same_loader_but_rank(&self, other: &LoaderState) -> Result<(), LoaderError> {
        let mut a = self.clone();
        a.sampler.shard = other.sampler.shard;
        a.check_same_loader(other)
    }
}

/// `base` without its rank, from the start of what is left.
fn unranked(base: &LoaderState) -> LoaderState {
    let mut merged = base.clone();
    merged.sampler.shard = None;
    merged.next_batch = 0;
    merged.share_batches = None;
    merged
}

/// The start of the epoch after `epoch`, nothing of it consumed: a reshard that took nothing
/// keeps the state merged (any world resumes it) without changing the order.
fn next_epoch(base: &LoaderState, epoch: u64) -> LoaderState {
    let world = base.sampler.shard.map_or(1, |s| s.world_size);
    let mut merged = unranked(base);
    merged.epoch = epoch + 1;
    merged.reshards = vec![Reshard {
        world_size: world,
        consumed: vec![0; world],
        drop_last: base.sampler.shard.is_some_and(|s| s.drop_last),
        grouped_batch: None,
    }];
    merged
}

/// Grouped batches: each rank's passed batches are counted, and the samples they took are
/// found again when the state is resumed (by a loader that has the groups). A rank that had
/// finished its share passed all of its batches, however many they were.
fn merge_grouped(
    base: &LoaderState,
    by_rank: &[&LoaderState],
    epoch: u64,
    done: impl Fn(&LoaderState) -> bool,
) -> LoaderState {
    let finished = |s: &LoaderState| {
        done(s)
            || s.share_batches
                .is_some_and(|batches| s.next_batch >= batches)
    };
    if by_rank.iter().all(|s| finished(s)) {
        return next_epoch(base, epoch);
    }
    let shard = base.sampler.shard;
    let mut merged = unranked(base);
    merged.reshards.push(Reshard {
        world_size: by_rank.len(),
        consumed: by_rank
            .iter()
            .map(|s| {
                if finished(s) {
                    usize::MAX
                } else {
                    s.next_batch
                }
            })
            .collect(),
        drop_last: shard.is_some_and(|s| s.drop_last),
        grouped_batch: Some(base.batch_size.max(1)),
    });
    merged
}

fn merge_error<T>(why: String) -> Result<T, LoaderError> {
    Err(LoaderError::Resume(format!("merging states: {why}")))
}

/// `states` in rank order: one of each rank of `world`, all of the same loader.
fn by_rank(states: &[LoaderState], world: usize) -> Result<Vec<&LoaderState>, LoaderError> {
    let mut out: Vec<Option<&LoaderState>> = vec![None; world];
    for s in states {
        states[0].check_same_loader_but_rank(s)?;
        match s.sampler.shard {
            Some(r) if r.world_size == world && r.rank < world => {
                if out[r.rank].replace(s).is_some() {
                    return merge_error(format!("two states of rank {}", r.rank));
                }
            }
            other => return merge_error(format!("a state of {other:?} among world size {world}")),
        }
    }
    match out.iter().position(Option::is_none) {
        Some(missing) => merge_error(format!("rank {missing} of {world} is missing")),
        None => Ok(out.into_iter().flatten().collect()),
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
        let mut state = self.state.clone();
        if state.groups.is_some() {
            state.share_batches = Some(self.end);
        }
        state
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
