//! Episodes by frame index.

use crate::error::{EpisodeError, check_index};

/// Fixed-length episodes over `sample_count` frames: episode `k` holds frames
/// `k * stride + j * step` for `j` in `0..length`.
///
/// With `step` 1 this is the Python Gradient Mechanics' `EpisodeGenerator`: the count is
/// `samples / stride` when length equals stride, else `(samples - length) / stride + 1`
/// (both are the number of whole episodes that fit). Where the Python formula would go
/// negative (fewer samples than one episode) the count is 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpisodeGenerator {
    sample_count: usize,
    length: usize,
    stride: usize,
    step: usize,
}

impl EpisodeGenerator {
    /// Episodes of `length` frames every `stride` frames over `sample_count` frames.
    pub fn new(
        sample_count: usize,
        length: usize,
        stride: usize,
    ) -> Result<EpisodeGenerator, EpisodeError> {
        if length == 0 || stride == 0 {
            return Err(EpisodeError::Invalid(format!(
                "length {length} and stride {stride} must be at least 1"
            )));
        }
        Ok(EpisodeGenerator {
            sample_count,
            length,
            stride,
            step: 1,
        })
    }

    /// Takes every `step`-th frame within an episode (dilation); an episode then spans
    /// `(length - 1) * step + 1` frames.
    pub fn with_step(mut self, step: usize) -> Result<EpisodeGenerator, EpisodeError> {
        if step == 0 {
            return Err(EpisodeError::Invalid("step must be at least 1".into()));
        }
        self.step = step;
        Ok(self)
    }

    /// Frames covered by one episode, first to last.
    pub fn span(&self) -> usize {
        (self.length - 1) * self.step + 1
    }

    /// Frames per episode.
    pub fn length(&self) -> usize {
        self.length
    }

    /// Number of whole episodes.
    pub fn episode_count(&self) -> usize {
        if self.sample_count < self.span() {
            return 0;
        }
        (self.sample_count - self.span()) / self.stride + 1
    }

    /// Frame indices of episode `index` (errors for negative and out-of-range indices).
    pub fn episode(&self, index: i64) -> Result<Vec<usize>, EpisodeError> {
        let k = check_index(index, self.episode_count())?;
        let start = k * self.stride;
        Ok((0..self.length).map(|j| start + j * self.step).collect())
    }

    /// Every episode in order.
    pub fn iter(&self) -> impl Iterator<Item = Vec<usize>> + '_ {
        (0..self.episode_count()).map(move |k| {
            let start = k * self.stride;
            (0..self.length).map(|j| start + j * self.step).collect()
        })
    }
}
