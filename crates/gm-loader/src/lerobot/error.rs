//! What can go wrong opening a LeRobot dataset.

use std::path::PathBuf;

/// A LeRobot dataset that cannot be opened or sampled as asked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LeRobotError {
    /// A file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The reason.
        source: std::io::Error,
    },
    /// `meta/info.json` is not what LeRobot writes.
    #[error("{path}: {reason}")]
    Info {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A parquet table could not be read, or lacks a column.
    #[error("{path}: {message}")]
    Table {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The tables disagree with each other or with the videos.
    #[error("{0}")]
    Inconsistent(String),
    /// A delta timestamp is not a whole number of frames at the dataset's fps (LeRobot's
    /// `check_delta_timestamps`).
    #[error(
        "delta_timestamps of {key}: {delta} s is not a multiple of 1/fps ({fps} fps) within tolerance_s {tolerance_s}"
    )]
    DeltaTimestamp {
        /// The feature.
        key: String,
        /// The offending delta, seconds.
        delta: f64,
        /// The dataset's frame rate.
        fps: f64,
        /// The tolerance.
        tolerance_s: f64,
    },
    /// The frame nearest to a query timestamp is further away than the tolerance (LeRobot's
    /// decoding assertion).
    #[error(
        "sample {sample} (episode {episode}), {key}: query timestamp {query:.6} s in {video} is {distance:.6} s from the nearest frame ({frame} at {found:.6} s), beyond tolerance_s {tolerance_s}: the video and the data's timestamps disagree"
    )]
    Tolerance {
        /// Dataset index of the sample.
        sample: usize,
        /// Its episode.
        episode: usize,
        /// The camera.
        key: String,
        /// The video file.
        video: PathBuf,
        /// Queried time in the file, seconds.
        query: f64,
        /// The nearest frame.
        frame: usize,
        /// Its time, seconds.
        found: f64,
        /// How far apart, seconds.
        distance: f64,
        /// The tolerance, seconds.
        tolerance_s: f64,
    },
}
