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
//!
//! ```
//! use gm_episodes::EpisodeGenerator;
//!
//! # fn main() -> Result<(), gm_episodes::EpisodeError> {
//! // 8 frames every 8 frames of a 100-frame video, every 2nd frame within an episode.
//! let episodes = EpisodeGenerator::new(100, 8, 8)?.with_step(2)?;
//! assert_eq!(episodes.episode(0)?, vec![0, 2, 4, 6, 8, 10, 12, 14]);
//! # Ok(())
//! # }
//! ```

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
