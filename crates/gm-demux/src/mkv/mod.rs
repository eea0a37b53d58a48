//! Reading one video track of a Matroska/WebM file: the EBML header, the Segment's Info and
//! Tracks, and the headers of every block of the chosen track in its Clusters, by positioned
//! reads; frame payloads are never read. The Matroska counterpart of `mp4::read_track`.
//!
//! Times follow ffmpeg's Matroska demuxer: presentation time = Cluster Timestamp + block
//! time − CodecDelay; a block's duration is its BlockDuration or DefaultDuration (truncated
//! to Segment ticks); lace k of n starts k/n of the way through the block's duration and only
//! lace 0 can be a keyframe. Matroska stores no decode times: they are derived (see
//! [`read_track`]).
//!
//! Hostile files: every element ends inside its parent and the file, the walk follows a
//! fixed schema at most four levels deep (Segment, Cluster, BlockGroup, Block) and skips
//! anything else by its size, every loop advances, SeekHeads are read at most once each,
//! nothing is allocated by a declared size beyond the file, and timestamps use checked
//! arithmetic.

mod cluster;
mod ebml;
mod ids;
mod segment;
mod tracks;

#[cfg(test)]
mod tests;

use crate::error::{ParseResult, Result};
use crate::options::TrackSelect;
use crate::source::ByteSource;
use crate::tables::RawSample;
use cluster::Frame;
use ebml::Reader;

use crate::chroma_location::ChromaLocation;

/// Nanoseconds per second.
const NS: u64 = 1_000_000_000;

/// What a Matroska file says of one video track, before GOPs and presentation order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MkvTrack {
    /// TrackNumber.
    pub track_number: u32,
    /// Ticks per second of the samples' times: 1e9/TimestampScale when that divides exactly,
    /// else 1e9 (nanoseconds).
    pub timescale: u32,
    /// CodecID, e.g. `V_VP9`, `V_AV1`, `V_MPEG4/ISO/AVC`, `V_MPEGH/ISO/HEVC`.
    pub codec_id: String,
    /// CodecPrivate (empty if absent; at most 1 MiB).
    pub codec_private: Vec<u8>,
    /// PixelWidth.
    pub pixel_width: u32,
    /// PixelHeight.
    pub pixel_height: u32,
    /// The chroma location Colour's ChromaSitingHorz/Vert give (unspecified unless both do).
    pub chroma_siting: ChromaLocation,
    /// The display orientation of the track's rectangular Projection (stored where absent).
    pub orientation: crate::orientation::DisplayOrientation,
    /// Every frame of the track in file (decode) order.
    pub samples: Vec<RawSample>,
    /// The EBML DocType: `webm` or `matroska`.
    pub doc_type: String,
    /// Whether the Segment has Cues.
    pub has_cues: bool,
}

/// Whether these first bytes start an EBML file (`1A 45 DF A3`).
pub(crate) fn is_matroska(head: &[u8]) -> bool {
    head.starts_with(&[0x1A, 0x45, 0xDF, 0xA3])
}

/// Reads the track `select` picks from `src`: `FirstVideo` is the first TrackEntry of
/// TrackType 1, `Id(n)` the one of TrackNumber `n`.
///
/// Decode times are derived by [`decode_times`] with no reorder depth (the smallest delay
/// the timestamps allow). A frame without any duration gets the gap to the next presentation
/// time (0 for the last).
pub(crate) fn read_track(src: &dyn ByteSource, select: TrackSelect) -> Result<MkvTrack> {
    let r = Reader::new(src);
    let (doc_type, seg) = segment::open(&r)?;
    let walked = segment::walk(&r, seg, select)?;
    let (timescale, factor) = timescale(walked.ts_scale);
    let samples = to_samples(&walked.frames, factor).map_err(|e| r.bad(e))?;
    let t = walked.track;
    Ok(MkvTrack {
        track_number: t.number,
        timescale,
        codec_id: t.codec_id,
        codec_private: t.codec_private,
        pixel_width: t.width,
        pixel_height: t.height,
        chroma_siting: ChromaLocation::from_siting(t.chroma_siting.0, t.chroma_siting.1),
        orientation: t.orientation,
        samples,
        doc_type,
        has_cues: walked.has_cues,
    })
}

/// Ticks per second, and ticks per Segment tick, for a TimestampScale (nonzero).
fn timescale(ts_scale: u64) -> (u32, u64) {
    match u32::try_from(NS / ts_scale) {
        Ok(t) if NS.is_multiple_of(ts_scale) => (t, 1),
        _ => (NS as u32, ts_scale),
    }
}

/// The frames as samples in ticks (`factor` per Segment tick), with durations and decode times.
fn to_samples(frames: &[Frame], factor: u64) -> ParseResult<Vec<RawSample>> {
    let factor = i64::try_from(factor).map_err(|_| "TimestampScale overflows")?;
    let mut out = Vec::with_capacity(frames.len());
    for f in frames {
        let cts = f.pts.checked_mul(factor).ok_or("timestamps overflow")?;
        let duration = f.duration.saturating_mul(factor as u64);
        out.push(RawSample {
            dts: cts,
            cts,
            duration: u32::try_from(duration).unwrap_or(u32::MAX),
            offset: f.offset,
            size: f.size,
            sync: f.key,
        });
    }
    fill_durations(&mut out, frames);
    decode_times(&mut out, 0)?;
    Ok(out)
}

/// Gives frames the file gives no duration the gap to the next presentation time.
fn fill_durations(out: &mut [RawSample], frames: &[Frame]) {
    if frames.iter().all(|f| f.duration > 0) {
        return;
    }
    let mut order: Vec<usize> = (0..out.len()).collect();
    order.sort_by_key(|&i| (out.get(i).map(|s| s.cts), i));
    for (k, &i) in order.iter().enumerate() {
        if frames.get(i).is_none_or(|f| f.duration > 0) {
            continue;
        }
        let next = order.get(k + 1).and_then(|&j| out.get(j)).map(|s| s.cts);
        if let Some(s) = out.get_mut(i) {
            let gap = next.map_or(0, |n| n.saturating_sub(s.cts));
            s.duration = u32::try_from(gap).unwrap_or(u32::MAX);
        }
    }
}

/// Sets decode times from presentation times: where these never decrease in file order they
/// are the decode times; otherwise `dts[i] = sorted_pts[i − d]`, the first `d` extrapolated
/// back from the earliest by the first frame's duration, with `d` the larger of `reorder` and
/// the smallest delay that keeps every `dts[i] ≤ pts[i]`.
///
/// [`read_track`] passes `reorder = 0`. ffmpeg uses the codec's reorder depth (its
/// `has_b_frames`: H.264 `max_num_reorder_frames`, HEVC `sps_max_num_reorder_pics`), which
/// the timestamps alone do not always show; passing it gives ffprobe's decode times where
/// ffprobe prints them (it prints N/A for the first `d`).
pub(crate) fn decode_times(out: &mut [RawSample], reorder: usize) -> ParseResult<()> {
    if out
        .windows(2)
        .all(|w| matches!(w, [a, b] if a.cts <= b.cts))
    {
        out.iter_mut().for_each(|s| s.dts = s.cts);
        return Ok(());
    }
    let mut sorted: Vec<i64> = out.iter().map(|s| s.cts).collect();
    sorted.sort_unstable();
    let delay = out
        .iter()
        .enumerate()
        .map(|(i, s)| (i + 1).saturating_sub(sorted.partition_point(|&p| p <= s.cts)))
        .max()
        .unwrap_or(0)
        .max(reorder.min(out.len()));
    let first = sorted.first().copied().unwrap_or(0);
    let step = out.first().map_or(0, |s| i64::from(s.duration));
    for (i, s) in out.iter_mut().enumerate() {
        s.dts = match i.checked_sub(delay) {
            Some(j) => sorted.get(j).copied().unwrap_or(s.cts),
            None => i64::try_from(delay - i)
                .ok()
                .and_then(|back| back.checked_mul(step))
                .and_then(|back| first.checked_sub(back))
                .ok_or("decode times overflow")?,
        };
    }
    Ok(())
}
