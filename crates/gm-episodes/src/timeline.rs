//! A video's presentation timestamps.

use gm_demux::VideoIndex;

use crate::error::EpisodeError;

/// Presentation times of a video's frames in seconds, in presentation order (frame `i` is
/// the i-th frame after the edit list, as everywhere in this project).
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    times: Vec<f64>,
}

impl Timeline {
    /// From times in seconds; they must be finite and non-decreasing.
    pub fn new(times: Vec<f64>) -> Result<Timeline, EpisodeError> {
        if let Some(i) = times.iter().position(|t| !t.is_finite()) {
            return Err(EpisodeError::Invalid(format!(
                "frame {i}: time {}",
                times[i]
            )));
        }
        if let Some(i) = times.windows(2).position(|w| w[1] < w[0]) {
            return Err(EpisodeError::Invalid(format!(
                "frame {}: time {} is before frame {}'s {}",
                i + 1,
                times[i + 1],
                i,
                times[i]
            )));
        }
        Ok(Timeline { times })
    }

    /// The timestamps of an indexed video (exact ticks over the track timescale).
    pub fn from_index(index: &VideoIndex) -> Timeline {
        let times = index
            .presentation
            .iter()
            .map(|&d| index.time(index.packets[d as usize].pts).seconds())
            .collect();
        Timeline { times }
    }

    /// Times in seconds.
    pub fn times(&self) -> &[f64] {
        &self.times
    }

    /// Number of frames.
    pub fn len(&self) -> usize {
        self.times.len()
    }

    /// Whether there are no frames.
    pub fn is_empty(&self) -> bool {
        self.times.is_empty()
    }

    /// First and last frame times.
    pub fn range(&self) -> Option<(f64, f64)> {
        Some((*self.times.first()?, *self.times.last()?))
    }

    /// The frame nearest to `t` and its time (the earlier one on a tie).
    pub fn nearest(&self, t: f64) -> Option<(usize, f64)> {
        if self.times.is_empty() || !t.is_finite() {
            return None;
        }
        let i = self.times.partition_point(|&x| x < t);
        let pick = match (i.checked_sub(1), self.times.get(i)) {
            (None, _) => i,
            (Some(before), None) => before,
            (Some(before), Some(&after)) => {
                if t - self.times[before] <= after - t {
                    before
                } else {
                    i
                }
            }
        };
        Some((pick, self.times[pick]))
    }
}

/// Clips of `frames` samples at `fps`, one every `stride` seconds from `start`, that end by
/// `end` (a small epsilon lets a last sample that lands on `end` up to rounding count).
pub(crate) fn clip_count(start: f64, end: f64, frames: usize, fps: f64, stride: f64) -> usize {
    let room = end - start - (frames.saturating_sub(1)) as f64 / fps;
    if room < -1e-9 {
        return 0;
    }
    ((room + 1e-9) / stride).floor() as usize + 1
}

/// The sample times of clip `k` of such a schedule.
pub(crate) fn clip_times(start: f64, k: usize, frames: usize, fps: f64, stride: f64) -> Vec<f64> {
    let first = start + k as f64 * stride;
    (0..frames).map(|j| first + j as f64 / fps).collect()
}
