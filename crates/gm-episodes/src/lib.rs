//! Episodes (clips) from long and multi-camera videos: which frames each training sample
//! holds, decided from frame counts and timestamps alone (no decoding).
//!
//! - [`EpisodeGenerator`]: fixed-length episodes by frame index, with a stride and a frame
//!   step (dilation), with the Python Gradient Mechanics' semantics.
//! - [`Timeline`]: a video's presentation timestamps (from a `gm-demux` index) and the
//!   nearest-frame lookup.
//! - [`TimedEpisodes`]: clips of T seconds at a target frame rate, resampled from the
//!   timestamps, so variable-frame-rate video gives evenly timed clips.
//! - [`MultiCamera`]: N cameras of one scene aligned by timestamp into `[cameras][T]` frame
//!   indices, with a tolerance; a gap is an error or a skipped episode ([`GapPolicy`]).

mod error;
mod generator;
mod multicam;
mod timed;
mod timeline;

pub use error::EpisodeError;
pub use generator::EpisodeGenerator;
pub use multicam::{GapPolicy, MultiCamera};
pub use timed::TimedEpisodes;
pub use timeline::Timeline;
