//! What to index: the track, and how much of the bitstream to read.

/// Which track to index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TrackSelect {
    /// The first video track.
    #[default]
    FirstVideo,
    /// The track with this `track_ID`.
    Id(u32),
}

/// How much of the bitstream to read while indexing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum BitstreamScan {
    /// Metadata boxes only. GOPs follow the container's sync flags, and every leading picture is
    /// assumed to need the previous GOP (exact, possibly more decoding than needed).
    None,
    /// Also the slice headers of sync samples (one small read per GOP): checks the sync flags
    /// against the bitstream and tells open GOPs from closed ones.
    #[default]
    Keyframes,
    /// The slice headers of every sample: picture types, reference flags, leading-picture kinds
    /// (lets plans skip non-reference pictures).
    Full,
}

/// Options of [`VideoIndex::open`](crate::VideoIndex::open).
#[derive(Debug, Clone, Copy, Default)]
pub struct IndexOptions {
    /// Which track.
    pub track: TrackSelect,
    /// How much of the bitstream to read.
    pub scan: BitstreamScan,
}
