//! The seam between containers and decoders: a [`Packet`] of coded bytes, and
//! [`PacketSource`], what a decoder needs from any container (MP4, Matroska) to execute a
//! [`DecodePlan`](crate::DecodePlan): the codec's parameters, a name for errors, and the
//! packets of each planned run. A container plugs into every decoder by implementing it, as
//! symphonia's format readers and decoders meet at a packet.

use std::path::Path;

use crate::chroma_location::ChromaLocation;
use crate::codec::CodecInfo;
use crate::error::Result;
use crate::plan::DecodeRun;

/// One packet ready for a decoder: one coded sample as Annex-B (H.264, HEVC), as stored (a VP9
/// frame or superframe), or as stored in the low-overhead OBU format (an AV1 temporal unit).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet {
    /// Decode index.
    pub decode_index: u32,
    /// Presentation time (ticks); decoders hand it back with the decoded picture.
    pub pts: i64,
    /// The bytes; the first packet of a run starts with the parameter sets (H.264, HEVC) or the
    /// configuration OBUs (AV1).
    pub data: Vec<u8>,
}

/// Where a decoder gets its packets: a demuxer of some container, or packets in memory.
pub trait PacketSource: Send + Sync {
    /// A name for errors: the file or URL.
    fn name(&self) -> &Path;

    /// The codec and stream format, with the parameter sets of the configuration record.
    fn codec(&self) -> &CodecInfo;

    /// Where the decoded frames' chroma samples sit, as ffmpeg's decoders report it (see
    /// [`VideoIndex::chroma_location`](crate::VideoIndex::chroma_location)); by default what
    /// the parameter sets signal, with no container to fall back on.
    fn chroma_location(&self) -> ChromaLocation {
        self.codec().signalled_chroma_location().unwrap_or_default()
    }

    /// The packets of `run` (its `packets`, in that order), as [`Packet`] says; the first
    /// starts with the parameter sets, so that a decoder can start there.
    fn read_run(&self, run: &DecodeRun) -> Result<Vec<Packet>>;
}
