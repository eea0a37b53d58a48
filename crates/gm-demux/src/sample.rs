//! The values an index is made of: coded samples, their GOPs, exact times, and the position of
//! a presented frame.

use std::num::NonZeroU32;

use crate::picture::{Picture, RandomAccess};

/// A frame's position in presentation order. Samples that are not presented (before the edit
/// list's start) have none: [`Sample::presentation_index`] is `None`, and `Option<FrameIndex>`
/// takes 4 bytes like a plain `u32`.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FrameIndex(NonZeroU32);

impl FrameIndex {
    /// Frame `i`; `None` for `u32::MAX`, which no index reaches (tracks have fewer samples).
    pub fn new(i: u32) -> Option<FrameIndex> {
        i.checked_add(1).and_then(NonZeroU32::new).map(FrameIndex)
    }

    /// The position, from 0.
    pub fn get(self) -> u32 {
        self.0.get() - 1
    }

    /// The position as a `usize`, for indexing.
    pub fn as_usize(self) -> usize {
        self.get() as usize
    }
}

impl std::fmt::Debug for FrameIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FrameIndex({})", self.get())
    }
}

impl std::fmt::Display for FrameIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.get().fmt(f)
    }
}

impl From<FrameIndex> for u32 {
    fn from(i: FrameIndex) -> u32 {
        i.get()
    }
}

/// One coded sample (MP4's and re_video's term; a packet for a decoder), in the index's decode
/// order. Times are ticks of the track timescale after the edit list, as ffprobe reports them.
/// 56 bytes each: an hour at 30 fps takes 6 MB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// Presentation time.
    pub pts: i64,
    /// Decode time.
    pub dts: i64,
    /// Byte offset in the file.
    pub offset: u64,
    /// Duration in ticks.
    pub duration: u32,
    /// Size in bytes.
    pub size: u32,
    /// Position in decode order.
    pub decode_index: u32,
    /// Position in presentation order; `None` when the sample is not presented (it lies
    /// before the edit list's start, and only serves as a reference).
    pub presentation_index: Option<FrameIndex>,
    /// The GOP (in decode order) the sample belongs to.
    pub gop: u32,
    /// Decode index of the sample decoding must start from to reproduce this one exactly.
    pub decode_start: u32,
    /// The container's sync-sample flag (ffprobe's `K`).
    pub keyframe: bool,
    /// What the bitstream says, when it was read.
    pub picture: Option<Picture>,
}

impl Sample {
    /// Whether this sample is presented before `other`. A sample that is not presented counts
    /// as after every presented one.
    pub fn presented_before(&self, other: &Sample) -> bool {
        match (self.presentation_index, other.presentation_index) {
            (Some(a), Some(b)) => a < b,
            (Some(_), None) => true,
            (None, _) => false,
        }
    }
}

/// A group of pictures: samples in decode order from one random-access point to the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gop {
    /// Decode index of its first sample (a valid place to start decoding).
    pub start: u32,
    /// Decode index just past its last sample.
    pub end: u32,
    /// The first sample's random-access kind, when the bitstream was read.
    pub random_access: Option<RandomAccess>,
    /// Whether its leading pictures may need the previous GOP (open GOP, or not known).
    pub open: bool,
}

/// A sample whose container sync flag disagrees with its bitstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyncMismatch {
    /// Decode index.
    pub decode_index: u32,
    /// The container's flag.
    pub container_sync: bool,
    /// The bitstream's random-access kind.
    pub bitstream: RandomAccess,
}

/// An exact time: `num / den` seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rational {
    /// Ticks.
    pub num: i64,
    /// Ticks per second.
    pub den: u32,
}

impl Rational {
    /// The time in seconds, rounded to f64.
    pub fn seconds(self) -> f64 {
        self.num as f64 / f64::from(self.den)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_indices_round_trip_and_stay_four_bytes() {
        for i in [0, 1, 41, u32::MAX - 1] {
            assert_eq!(FrameIndex::new(i).map(FrameIndex::get), Some(i));
        }
        assert_eq!(FrameIndex::new(u32::MAX), None);
        assert!(FrameIndex::new(3) < FrameIndex::new(4));
        assert_eq!(std::mem::size_of::<Option<FrameIndex>>(), 4);
        assert_eq!(std::mem::size_of::<Sample>(), 56);
    }

    #[test]
    fn samples_not_presented_come_after_presented_ones() {
        let at = |i: Option<u32>| Sample {
            pts: 0,
            dts: 0,
            offset: 0,
            duration: 0,
            size: 0,
            decode_index: 0,
            presentation_index: i.and_then(FrameIndex::new),
            gop: 0,
            decode_start: 0,
            keyframe: false,
            picture: None,
        };
        assert!(at(Some(1)).presented_before(&at(Some(2))));
        assert!(!at(Some(2)).presented_before(&at(Some(1))));
        assert!(at(Some(7)).presented_before(&at(None)));
        assert!(!at(None).presented_before(&at(Some(0))));
        assert!(!at(None).presented_before(&at(None)));
    }
}
