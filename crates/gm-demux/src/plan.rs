//! Decode plans: which packets to feed a decoder, in which runs, to produce a set of frames.
//! Plain values, shared by indexes (which make them) and decoders (which execute them).

/// Frames to keep from one run, in display order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keep {
    /// The frame's presentation index.
    pub frame: u32,
    /// Its decode index (its packet).
    pub decode_index: u32,
    /// Its presentation time (ticks), which decoders report back with the decoded picture.
    pub pts: i64,
    /// Positions in the request list that want this frame (one frame may be asked for twice).
    pub slots: Vec<u32>,
}

/// Packets decoded in one go: starts at a GOP start (a valid decode start), ends with a flush.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeRun {
    /// Decode indices to feed, increasing; the first is a GOP start.
    pub packets: Vec<u32>,
    /// Frames to keep, in display order.
    pub keep: Vec<Keep>,
}

/// A plan for a list of requested frames.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DecodePlan {
    /// Runs in decode order of their first packet.
    pub runs: Vec<DecodeRun>,
    /// How many frames were requested (slots run from 0 to this).
    pub requested: usize,
}

impl DecodePlan {
    /// Packets to decode in all.
    pub fn packet_count(&self) -> usize {
        self.runs.iter().map(|r| r.packets.len()).sum()
    }
}
