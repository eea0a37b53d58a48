//! Clips of a fixed duration at a target frame rate, from timestamps.

use crate::error::{EpisodeError, check_index};
use crate::timeline::{Timeline, clip_count, clip_times};

/// Clips of `frames` samples at `fps` (T seconds = frames / fps), one starting every `stride`
/// seconds from the first frame. Sample `j` of clip `k` is the source frame nearest to
/// `start + k * stride + j / fps`, which must lie within `tolerance`: on variable-frame-rate
/// video the samples are evenly timed even though the frames are not.
#[derive(Debug, Clone, PartialEq)]
pub struct TimedEpisodes {
    timeline: Timeline,
    frames: usize,
    fps: f64,
    stride: f64,
    tolerance: f64,
}

impl TimedEpisodes {
    /// Clips of `seconds` at `fps` (rounded to whole samples, at least one), a new one every
    /// `stride` seconds. The tolerance starts at one target frame period.
    pub fn new(
        timeline: Timeline,
        seconds: f64,
        fps: f64,
        stride: f64,
    ) -> Result<TimedEpisodes, EpisodeError> {
        let ok = |x: f64| x.is_finite() && x > 0.0;
        if !ok(seconds) || !ok(fps) || !ok(stride) {
            return Err(EpisodeError::Invalid(format!(
                "duration {seconds} s, fps {fps} and stride {stride} s must be positive"
            )));
        }
        Ok(TimedEpisodes {
            timeline,
            frames: ((seconds * fps).round() as usize).max(1),
            fps,
            stride,
            tolerance: 1.0 / fps,
        })
    }

    /// How far (seconds) the nearest frame may be from a wanted time.
    pub fn with_tolerance(mut self, tolerance: f64) -> Result<TimedEpisodes, EpisodeError> {
        if !(tolerance.is_finite() && tolerance >= 0.0) {
            return Err(EpisodeError::Invalid(format!("tolerance {tolerance}")));
        }
        self.tolerance = tolerance;
        Ok(self)
    }

    /// Samples per clip.
    pub fn frames(&self) -> usize {
        self.frames
    }

    /// The wanted times of clip `k`, seconds.
    pub fn times(&self, k: usize) -> Vec<f64> {
        let start = self.timeline.range().map_or(0.0, |r| r.0);
        clip_times(start, k, self.frames, self.fps, self.stride)
    }

    /// Clips whose every wanted time lies within the video (first to last frame time).
    pub fn episode_count(&self) -> usize {
        self.timeline.range().map_or(0, |(first, last)| {
            clip_count(first, last, self.frames, self.fps, self.stride)
        })
    }

    /// Frame indices of clip `index` (a frame may repeat when `fps` exceeds the source's).
    pub fn episode(&self, index: i64) -> Result<Vec<usize>, EpisodeError> {
        let k = check_index(index, self.episode_count())?;
        self.times(k)
            .into_iter()
            .map(|t| {
                let (i, at) = self
                    .timeline
                    .nearest(t)
                    .ok_or_else(|| EpisodeError::Invalid("no frames".into()))?;
                if (at - t).abs() > self.tolerance + 1e-9 {
                    return Err(EpisodeError::Gap {
                        episode: k,
                        camera: 0,
                        time: t,
                        nearest: at,
                        tolerance: self.tolerance,
                    });
                }
                Ok(i)
            })
            .collect()
    }
}
