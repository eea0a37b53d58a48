//! Counters of a decoding session.

/// Counters of a session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SessionStats {
    /// Decoders created.
    pub decoders_created: u64,
    /// Decoders destroyed to make room (a larger stream of the same kind, more kinds than the
    /// session keeps, the memory budget); not counting those of a session dropped.
    pub decoders_destroyed: u64,
    /// Sequences that switched to another live decoder instead of creating one (a session
    /// keeps one decoder per codec, chroma format and bit depth, up to three).
    pub decoder_reuses: u64,
    /// Parsers created (one per codec, and again after a decoding error).
    pub parsers_created: u64,
    /// Decoders reconfigured for a new sequence instead of re-created.
    pub reconfigurations: u64,
    /// Packets fed to the parser.
    pub packets: u64,
    /// Frames handed to consumers.
    pub frames: u64,
    /// GPU memory of the live decoders together (estimate), bytes.
    pub decoder_bytes: usize,
}
