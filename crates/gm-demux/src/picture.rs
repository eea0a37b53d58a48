//! What the bitstream says of one picture: slice type, random-access kind, whether other
//! pictures may reference it, and its leading-picture kind.

/// Slice type of a picture (the least intra of its slices).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SliceType {
    /// Intra only.
    I,
    /// Predicted from earlier pictures.
    P,
    /// Bi-predicted.
    B,
}

/// Whether decoding can start at this picture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RandomAccess {
    /// Not a random-access point.
    None,
    /// Instantaneous decoder refresh: nothing after it refers to anything before it.
    Idr,
    /// HEVC clean random access: leading pictures (RASL) may refer to the previous GOP.
    Cra,
    /// HEVC broken link access.
    Bla,
    /// H.264 intra picture with a recovery point SEI (x264's open GOP).
    RecoveryPoint,
}

impl RandomAccess {
    /// Whether leading pictures of this picture's GOP may need the previous GOP.
    pub fn is_open(self) -> bool {
        matches!(self, RandomAccess::Cra | RandomAccess::RecoveryPoint)
    }
}

/// HEVC leading-picture kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Leading {
    /// Not a leading picture (or H.264, which does not say).
    No,
    /// Random access decodable leading picture.
    Radl,
    /// Random access skipped leading picture: needs the previous GOP.
    Rasl,
}

/// The bitstream's view of one sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Picture {
    /// Slice type, if a slice header was read.
    pub slice_type: Option<SliceType>,
    /// Random-access kind.
    pub random_access: RandomAccess,
    /// Whether later pictures may use it as a reference (H.264 `nal_ref_idc != 0`; HEVC: not a
    /// sub-layer non-reference NAL type).
    pub reference: bool,
    /// HEVC leading-picture kind.
    pub leading: Leading,
    /// HEVC `TemporalId` (0 for H.264).
    pub temporal_id: u8,
}
