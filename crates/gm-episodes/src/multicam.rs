//! Several cameras of one scene, aligned by timestamp.

use crate::error::{EpisodeError, check_index};
use crate::timeline::{Timeline, clip_count, clip_times};

/// What an episode with a camera gap becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GapPolicy {
    /// The episode is an error ([`EpisodeError::Gap`]).
    #[default]
    Error,
    /// The episode is left out (`Ok(None)`).
    Skip,
}

/// Cameras aligned by timestamp: clips of `frames` samples at `fps`, one every `stride`
/// seconds over the time all cameras cover; each sample takes, from every camera, the frame
/// nearest to its time, which must lie within `tolerance`.
#[derive(Debug, Clone, PartialEq)]
pub struct MultiCamera {
    cameras: Vec<Timeline>,
    frames: usize,
    fps: f64,
    stride: f64,
    tolerance: f64,
    policy: GapPolicy,
}

impl MultiCamera {
    /// Clips of `seconds` at `fps` every `stride` seconds over `cameras`; tolerance: half a
    /// target frame period.
    pub fn new(
        cameras: Vec<Timeline>,
        seconds: f64,
        fps: f64,
        stride: f64,
    ) -> Result<MultiCamera, EpisodeError> {
        let ok = |x: f64| x.is_finite() && x > 0.0;
        if !ok(seconds) || !ok(fps) || !ok(stride) {
            return Err(EpisodeError::Invalid(format!(
                "duration {seconds} s, fps {fps} and stride {stride} s must be positive"
            )));
        }
        if cameras.is_empty() || cameras.iter().any(Timeline::is_empty) {
            return Err(EpisodeError::Invalid(
                "every camera needs at least one frame".into(),
            ));
        }
        Ok(MultiCamera {
            cameras,
            frames: ((seconds * fps).round() as usize).max(1),
            fps,
            stride,
            tolerance: 0.5 / fps,
            policy: GapPolicy::Error,
        })
    }

    /// How far (seconds) a camera's nearest frame may be from a wanted time.
    pub fn with_tolerance(mut self, tolerance: f64) -> Result<MultiCamera, EpisodeError> {
        if !(tolerance.is_finite() && tolerance >= 0.0) {
            return Err(EpisodeError::Invalid(format!("tolerance {tolerance}")));
        }
        self.tolerance = tolerance;
        Ok(self)
    }

    /// What a gap does.
    pub fn with_gap_policy(mut self, policy: GapPolicy) -> MultiCamera {
        self.policy = policy;
        self
    }

    /// The time every camera covers: the latest first frame to the earliest last frame.
    pub fn overlap(&self) -> Option<(f64, f64)> {
        let ranges: Vec<(f64, f64)> = self.cameras.iter().filter_map(Timeline::range).collect();
        let start = ranges.iter().map(|r| r.0).fold(f64::NEG_INFINITY, f64::max);
        let end = ranges.iter().map(|r| r.1).fold(f64::INFINITY, f64::min);
        (end >= start).then_some((start, end))
    }

    /// Samples per clip.
    pub fn frames(&self) -> usize {
        self.frames
    }

    /// Clips that fit in the overlap.
    pub fn episode_count(&self) -> usize {
        self.overlap().map_or(0, |(start, end)| {
            clip_count(start, end, self.frames, self.fps, self.stride)
        })
    }

    /// The wanted times of clip `k`, seconds.
    pub fn times(&self, k: usize) -> Vec<f64> {
        let start = self.overlap().map_or(0.0, |o| o.0);
        clip_times(start, k, self.frames, self.fps, self.stride)
    }

    /// Frame indices of clip `index`, `[camera][sample]`; `Ok(None)` when a camera has a gap
    /// and the policy is [`GapPolicy::Skip`].
    pub fn episode(&self, index: i64) -> Result<Option<Vec<Vec<usize>>>, EpisodeError> {
        let k = check_index(index, self.episode_count())?;
        let times = self.times(k);
        let mut out = Vec::with_capacity(self.cameras.len());
        for (c, cam) in self.cameras.iter().enumerate() {
            let mut frames = Vec::with_capacity(times.len());
            for &t in &times {
                let Some((i, at)) = cam.nearest(t) else {
                    return Err(EpisodeError::Invalid(format!("camera {c} has no frames")));
                };
                if (at - t).abs() > self.tolerance + 1e-9 {
                    return match self.policy {
                        GapPolicy::Skip => Ok(None),
                        GapPolicy::Error => Err(EpisodeError::Gap {
                            episode: k,
                            camera: c,
                            time: t,
                            nearest: at,
                            tolerance: self.tolerance,
                        }),
                    };
                }
                frames.push(i);
            }
            out.push(frames);
        }
        Ok(Some(out))
    }
}
