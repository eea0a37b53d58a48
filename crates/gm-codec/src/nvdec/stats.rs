//! Counters of a decoding session.

use std::time::Instant;

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
    /// Runs decoded (each ends with an end-of-stream flush of the parser).
    pub runs: u64,
    /// Decode-status reads while sleeping for pictures to decode (`cuvidGetDecodeStatus`;
    /// 0 where nvcuvid waits itself, `GM_NVDEC_WAIT=nvcuvid`): each is a thread woken.
    pub status_reads: u64,
    /// GPU memory of the live decoders together (estimate), bytes.
    pub decoder_bytes: usize,
    /// Where the session thread's time went, nanoseconds.
    pub time: SessionTime,
    /// The session's CPU decoder (streams routed to libavcodec).
    pub cpu: crate::avcodec::CpuDecoderStats,
}

/// Where a session thread's time went while it decoded, nanoseconds. The parse total holds
/// the callbacks (submit, map, consumer, retire) that nvcuvid runs inside it; what is left
/// is the parser's own bitstream work. Counted with two clock reads per call: tens of
/// nanoseconds against a frame's hundreds of microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SessionTime {
    /// Reading a run's packets from their source (file, object store, GOP cache).
    pub read_ns: u64,
    /// Inside `cuvidParseVideoData`, callbacks included.
    pub parse_ns: u64,
    /// Submitting pictures (`cuvidDecodePicture`: blocks while the engine's queue is full).
    pub submit_ns: u64,
    /// Mapping displayed pictures (`cuvidMapVideoFrame`: waits for the picture's decode).
    pub map_ns: u64,
    /// In the consumer (enqueuing its GPU work for a frame).
    pub consume_ns: u64,
    /// Waiting for consumers' work on the oldest mapped frame to finish, and unmapping it,
    /// when a newly mapped frame needs its place.
    pub retire_ns: u64,
    /// The same at the end of each plan, for every frame still mapped.
    pub drain_ns: u64,
    /// Sleeping while pictures decode: before submitting one more than a session keeps out,
    /// and before mapping one (0 where nvcuvid waits itself, `GM_NVDEC_WAIT=nvcuvid`).
    pub decoded_wait_ns: u64,
}

impl SessionTime {
    /// The parser's own time: the parse total less the callbacks inside it.
    pub fn parser_ns(&self) -> u64 {
        self.parse_ns.saturating_sub(
            self.submit_ns + self.map_ns + self.consume_ns + self.retire_ns + self.decoded_wait_ns,
        )
    }

    /// `self - earlier`, field by field (counters only grow).
    pub fn since(&self, earlier: &SessionTime) -> SessionTime {
        SessionTime {
            read_ns: self.read_ns.saturating_sub(earlier.read_ns),
            parse_ns: self.parse_ns.saturating_sub(earlier.parse_ns),
            submit_ns: self.submit_ns.saturating_sub(earlier.submit_ns),
            map_ns: self.map_ns.saturating_sub(earlier.map_ns),
            consume_ns: self.consume_ns.saturating_sub(earlier.consume_ns),
            retire_ns: self.retire_ns.saturating_sub(earlier.retire_ns),
            drain_ns: self.drain_ns.saturating_sub(earlier.drain_ns),
            decoded_wait_ns: self.decoded_wait_ns.saturating_sub(earlier.decoded_wait_ns),
        }
    }

    /// Adds `other` field by field.
    pub fn add(&mut self, other: &SessionTime) {
        self.read_ns += other.read_ns;
        self.parse_ns += other.parse_ns;
        self.submit_ns += other.submit_ns;
        self.map_ns += other.map_ns;
        self.consume_ns += other.consume_ns;
        self.retire_ns += other.retire_ns;
        self.drain_ns += other.drain_ns;
        self.decoded_wait_ns += other.decoded_wait_ns;
    }
}

/// Runs `f`, adding its wall time to `acc` (nanoseconds).
pub(super) fn timed<T>(acc: &mut u64, f: impl FnOnce() -> T) -> T {
    let t = Instant::now();
    let r = f();
    *acc += t.elapsed().as_nanos() as u64;
    r
}
