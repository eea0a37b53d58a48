//! Counters of a decoding session.

/// Counters of a session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SessionStats {
    /// Decoders created.
    pub decoders_created: u64,
    /// Decoders reconfigured for a new sequence instead of re-created.
    pub reconfigurations: u64,
    /// Packets fed to the parser.
    pub packets: u64,
    /// Frames handed to consumers.
    pub frames: u64,
    /// GPU memory of the current decoder (estimate), bytes.
    pub decoder_bytes: usize,
}
