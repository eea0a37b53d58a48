//! What the bitstream says of each sample, read while indexing with small positioned reads:
//! slice headers of H.264/HEVC, the frame headers of a VP9 packet (through its superframe
//! index), the frame headers of an AV1 temporal unit (through its OBUs, skipping tile data).

use crate::av1::{self, SequenceHeader, SlotTypes};
use crate::codec::{Codec, CodecInfo};
use crate::error::{ParseError, ParseResult};
use crate::nal::PictureParser;
use crate::picture::Picture;
use crate::source::ByteSource;
use crate::tables::RawSample;
use crate::vp9;

/// Bytes first read from the start of an H.264/HEVC sample to find its slice headers.
pub(crate) const HEADER_WINDOW: usize = 1 << 10;

/// Why a sample could not be read.
#[derive(Debug)]
pub(crate) enum ScanError {
    /// Reading the file failed.
    Io(std::io::Error),
    /// The sample's bytes are not what its codec allows.
    Parse(ParseError),
}

impl From<ParseError> for ScanError {
    fn from(e: ParseError) -> Self {
        ScanError::Parse(e)
    }
}

impl From<std::io::Error> for ScanError {
    fn from(e: std::io::Error) -> Self {
        ScanError::Io(e)
    }
}

/// A parser of one track's samples, in decode order.
pub(crate) enum Scanner {
    /// H.264 and HEVC, with the buffer their windows are read into (reused across samples).
    Nal(Box<PictureParser>, Vec<u8>),
    /// VP9: every packet is read on its own.
    Vp9,
    /// AV1: frame headers depend on the sequence header and on the frames before.
    Av1 {
        seq: Option<SequenceHeader>,
        slots: SlotTypes,
    },
}

/// What one sample holds.
pub(crate) struct Scanned {
    /// The bitstream's view of the sample.
    pub picture: Picture,
    /// Parameter sets (or AV1 sequence headers) found inside it.
    pub in_band_sets: usize,
}

impl Scanner {
    /// A scanner for the track described by `codec`.
    pub fn new(codec: &CodecInfo) -> ParseResult<Scanner> {
        Ok(match codec.codec {
            Codec::H264 | Codec::Hevc => Scanner::Nal(
                Box::new(PictureParser::new(
                    codec.codec,
                    codec.nal_length_size,
                    &codec.parameter_sets,
                )),
                Vec::new(),
            ),
            Codec::Vp9 => Scanner::Vp9,
            Codec::Av1 => Scanner::Av1 {
                seq: match codec.parameter_sets.first() {
                    Some(obus) => av1::find_sequence_header(obus)?,
                    None => None,
                },
                slots: [None; 8],
            },
        })
    }

    /// Notes that samples were skipped: what AV1 knows of its reference slots is stale.
    pub fn skipped(&mut self) {
        if let Scanner::Av1 { slots, .. } = self {
            *slots = [None; 8];
        }
    }

    /// Reads the headers of sample `s`.
    pub fn sample(&mut self, src: &dyn ByteSource, s: &RawSample) -> Result<Scanned, ScanError> {
        match self {
            Scanner::Nal(parser, buf) => nal_sample(parser, buf, src, s),
            Scanner::Vp9 => Ok(Scanned {
                picture: vp9::packet_picture(&vp9_frames(src, s)?)?,
                in_band_sets: 0,
            }),
            Scanner::Av1 { seq, slots } => av1_unit(seq, slots, src, s),
        }
    }
}

/// The byte ranges the scan of sample `s` reads first, as a prefetch hint: its first
/// [`HEADER_WINDOW`] bytes, and for VP9 also its last bytes (a superframe index sits at the
/// end of the packet; without them in the hint, each keyframe's tail was a separate read, and
/// a remote source fetched a whole block for it).
pub(crate) fn header_windows(codec: Codec, s: &RawSample) -> Vec<std::ops::Range<u64>> {
    let size = u64::from(s.size);
    let head = s.offset..s.offset + size.min(HEADER_WINDOW as u64);
    if codec != Codec::Vp9 {
        return vec![head];
    }
    let tail = s.offset + size - size.min(vp9::MAX_INDEX_BYTES as u64)..s.offset + size;
    vec![head, tail]
}

/// Reads `len` bytes (at most what is left of the sample) at `at` inside sample `s` into `buf`.
fn read_into(
    src: &dyn ByteSource,
    s: &RawSample,
    at: u64,
    len: usize,
    buf: &mut Vec<u8>,
) -> Result<(), ScanError> {
    let left = u64::from(s.size).saturating_sub(at);
    buf.resize(len.min(left as usize), 0);
    src.read_exact_at(buf, s.offset + at)?;
    Ok(())
}

/// [`read_into`] a new buffer.
fn read_in(src: &dyn ByteSource, s: &RawSample, at: u64, len: usize) -> Result<Vec<u8>, ScanError> {
    let mut buf = Vec::new();
    read_into(src, s, at, len, &mut buf)?;
    Ok(buf)
}

/// Slice headers follow any SEI and parameter sets: a small read usually holds them; when it
/// does not (a large SEI), read more.
fn nal_sample(
    parser: &mut PictureParser,
    buf: &mut Vec<u8>,
    src: &dyn ByteSource,
    s: &RawSample,
) -> Result<Scanned, ScanError> {
    let mut window = HEADER_WINDOW.min(s.size as usize);
    loop {
        read_into(src, s, 0, window, buf)?;
        let truncated = window < s.size as usize;
        match parser.parse_window(buf, truncated) {
            Ok((picture, sets)) => {
                return Ok(Scanned {
                    picture,
                    in_band_sets: sets.len(),
                });
            }
            Err(_) if truncated => window = (window * 8).min(s.size as usize),
            Err(e) => return Err(e.into()),
        }
    }
}

/// The headers of the frames in VP9 packet `s`, in decode order.
pub(crate) fn vp9_frames(
    src: &dyn ByteSource,
    s: &RawSample,
) -> Result<Vec<vp9::Vp9Frame>, ScanError> {
    let size = u64::from(s.size);
    let tail_len = vp9::MAX_INDEX_BYTES.min(s.size as usize);
    let tail = read_in(src, s, size - tail_len as u64, tail_len)?;
    let mut frames = Vec::new();
    let mut at = 0u64;
    for frame_size in vp9::frame_sizes(&tail, size)? {
        let header = read_in(src, s, at, vp9::HEADER_BYTES.min(frame_size as usize))?;
        frames.push(vp9::parse_frame_header(&header)?);
        at += u64::from(frame_size);
    }
    Ok(frames)
}

/// Walks the OBUs of AV1 temporal unit `s`, reading only OBU headers, sequence headers and
/// the first bytes of frame headers.
fn av1_unit(
    seq: &mut Option<SequenceHeader>,
    slots: &mut SlotTypes,
    src: &dyn ByteSource,
    s: &RawSample,
) -> Result<Scanned, ScanError> {
    let size = u64::from(s.size);
    let (mut at, mut frames, mut sets) = (0u64, Vec::new(), 0);
    while at < size {
        let probe = read_in(src, s, at, av1::OBU_PROBE_BYTES)?;
        let obu = av1::parse_obu_header(&probe)?;
        let start = at + obu.header_len as u64;
        let len = obu.payload_len.unwrap_or(size.saturating_sub(start));
        let end = start
            .checked_add(len)
            .filter(|&e| e <= size)
            .ok_or_else(|| {
                ParseError::from(format!(
                    "AV1: an OBU of {len} bytes at {at} runs past the end of the {size}-byte sample"
                ))
            })?;
        match obu.kind {
            av1::obu::SEQUENCE_HEADER => {
                let bytes = read_in(src, s, start, (len as usize).min(av1::MAX_SEQUENCE_HEADER))?;
                *seq = Some(av1::parse_sequence_header(&bytes)?);
                sets += 1;
            }
            av1::obu::FRAME_HEADER | av1::obu::FRAME => {
                let header = seq.as_ref().ok_or_else(|| {
                    ParseError::from("AV1: a frame header before any sequence header")
                })?;
                let from = obu.header_len.min(probe.len());
                let payload = &probe[from..(from + len as usize).min(probe.len())];
                frames.push(av1::parse_frame_header(payload, header, &obu, slots)?);
            }
            _ => {}
        }
        at = end;
    }
    Ok(Scanned {
        picture: av1::unit_picture(&frames)?,
        in_band_sets: sets,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(offset: u64, size: u32) -> RawSample {
        RawSample {
            dts: 0,
            cts: 0,
            duration: 1,
            offset,
            size,
            sync: true,
        }
    }

    #[test]
    #[allow(clippy::single_range_in_vec_init)] // the expected list of one window
    fn header_windows_are_the_head_and_for_vp9_the_superframe_index_too() {
        let s = sample(100, 5000);
        assert_eq!(header_windows(Codec::H264, &s), [100..1124]);
        assert_eq!(header_windows(Codec::Vp9, &s), [100..1124, 5066..5100]);
        let tiny = sample(100, 10);
        assert_eq!(header_windows(Codec::Hevc, &tiny), [100..110]);
        assert_eq!(header_windows(Codec::Vp9, &tiny), [100..110, 100..110]);
    }
}
