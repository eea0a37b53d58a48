//! Errors of episode generation.

/// Why an episode or a generator could not be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum EpisodeError {
    /// A negative episode index.
    #[error("episode index {0} is negative")]
    Negative(i64),
    /// An episode index at or past the count.
    #[error("episode index {index} is out of range: there are {count} episodes")]
    OutOfRange {
        /// The index asked for.
        index: i64,
        /// Episodes there are.
        count: usize,
    },
    /// Settings that make no episodes sense (zero length, non-finite times, ...).
    #[error("invalid episode settings: {0}")]
    Invalid(String),
    /// No frame of a camera lies within the tolerance of a wanted time.
    #[error(
        "episode {episode}: camera {camera} has no frame within {tolerance:.4} s of {time:.4} s \
         (nearest: {nearest:.4} s)"
    )]
    Gap {
        /// The episode.
        episode: usize,
        /// The camera (0 for a single video).
        camera: usize,
        /// The wanted time, seconds.
        time: f64,
        /// The nearest frame's time, seconds.
        nearest: f64,
        /// The tolerance, seconds.
        tolerance: f64,
    },
}

/// Checks an episode index against a count.
pub(crate) fn check_index(index: i64, count: usize) -> Result<usize, EpisodeError> {
    if index < 0 {
        return Err(EpisodeError::Negative(index));
    }
    match usize::try_from(index) {
        Ok(i) if i < count => Ok(i),
        _ => Err(EpisodeError::OutOfRange { index, count }),
    }
}
