//! Where the CPU decoder's fields of `AVFrame` lie in each supported libavutil major, since
//! FFmpeg's structure layout changes between majors (fields removed at each bump) and no
//! headers are compiled in. Each row was read with `offsetof` from that release's own
//! headers (x86_64 and aarch64 Linux share them: LP64); the head of the structure (planes,
//! strides, size, format) never moved.

/// Byte offsets of the `AVFrame` fields the decoder reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FrameLayout {
    pub(super) data: usize,
    pub(super) linesize: usize,
    pub(super) width: usize,
    pub(super) height: usize,
    pub(super) format: usize,
    pub(super) pts: usize,
    pub(super) flags: usize,
    pub(super) color_range: usize,
    pub(super) colorspace: usize,
    pub(super) best_effort_timestamp: usize,
    pub(super) decode_error_flags: usize,
}

const HEAD: FrameLayout = FrameLayout {
    data: 0,
    linesize: 64,
    width: 104,
    height: 108,
    format: 116,
    pts: 136,
    flags: 0,
    color_range: 0,
    colorspace: 0,
    best_effort_timestamp: 0,
    decode_error_flags: 0,
};

/// The layout of libavutil `major`, or `None` for a major gm does not know.
pub(super) fn frame_layout(major: u32) -> Option<FrameLayout> {
    let (flags, color_range, colorspace, best_effort_timestamp, decode_error_flags) = match major {
        // (flags, color_range, colorspace, best_effort_timestamp, decode_error_flags)
        // FFmpeg 4.4 (libavutil 56.70).
        56 => (380, 384, 396, 408, 440),
        // FFmpeg 5.1 (57.28; also Debian 12's libavutil-dev 5.1.9) and 6.1 (58.29): the
        // same offsets.
        57 | 58 => (316, 320, 332, 344, 376),
        // FFmpeg 7.1 (59.39): frame and picture numbers gone.
        59 => (292, 296, 308, 320, 344),
        // FFmpeg 8.0 (60.8): key_frame, interlacing fields and pkt_duration gone.
        60 => (276, 280, 292, 304, 320),
        _ => return None,
    };
    Some(FrameLayout {
        flags,
        color_range,
        colorspace,
        best_effort_timestamp,
        decode_error_flags,
        ..HEAD
    })
}
