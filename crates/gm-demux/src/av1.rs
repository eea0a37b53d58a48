//! AV1: OBUs (low-overhead format, as MP4 and Matroska store them), the sequence header and the
//! first fields of frame headers (AV1 specification 5.3, 5.5, 5.9): key frames, hidden frames,
//! `show_existing_frame`, and which reference slots a frame refreshes. Also the
//! `AV1CodecConfigurationRecord` (`av1C`, and Matroska's `V_AV1` CodecPrivate).

use crate::bits::BitReader;
use crate::boxes::Reader;
use crate::codec::{Codec, CodecInfo, empty};
use crate::error::{ParseError, ParseResult, invalid};
use crate::picture::{Leading, Picture, RandomAccess, SliceType};

/// OBU types (AV1 6.2.2).
pub(crate) mod obu {
    /// `OBU_SEQUENCE_HEADER`.
    pub const SEQUENCE_HEADER: u8 = 1;
    /// `OBU_FRAME_HEADER`.
    pub const FRAME_HEADER: u8 = 3;
    /// `OBU_FRAME`: a frame header followed by a tile group.
    pub const FRAME: u8 = 6;
}

/// Frame types (AV1 6.8.2).
const KEY_FRAME: u8 = 0;
const INTRA_ONLY_FRAME: u8 = 2;
const SWITCH_FRAME: u8 = 3;
/// `SELECT_SCREEN_CONTENT_TOOLS` and `SELECT_INTEGER_MV`.
const SELECT: u8 = 2;
/// Bytes of an OBU read to find its header and a frame header's first fields.
pub(crate) const OBU_PROBE_BYTES: usize = 64;
/// The largest sequence header read (many operating points make it long).
pub(crate) const MAX_SEQUENCE_HEADER: usize = 1 << 10;

/// One OBU's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ObuHeader {
    /// `obu_type`.
    pub kind: u8,
    /// `temporal_id` (0 without an extension).
    pub temporal_id: u8,
    /// `spatial_id` (0 without an extension).
    pub spatial_id: u8,
    /// Bytes of the header and the size field.
    pub header_len: usize,
    /// `obu_size`; `None` when the OBU runs to the end of the packet.
    pub payload_len: Option<u64>,
}

/// Parses the OBU header at the start of `bytes`.
pub fn parse_obu_header(bytes: &[u8]) -> ParseResult<ObuHeader> {
    let first = *bytes.first().ok_or(ParseError::BitstreamEnd)?;
    if first & 0x80 != 0 {
        return Err("AV1: obu_forbidden_bit set".into());
    }
    let kind = (first >> 3) & 0xf;
    let has_extension = first & 4 != 0;
    let has_size = first & 2 != 0;
    let mut at = 1;
    let (mut temporal_id, mut spatial_id) = (0, 0);
    if has_extension {
        let ext = *bytes.get(1).ok_or(ParseError::BitstreamEnd)?;
        temporal_id = ext >> 5;
        spatial_id = (ext >> 3) & 3;
        at = 2;
    }
    let payload_len = if has_size {
        let (v, n) = leb128(bytes.get(at..).unwrap_or_default())?;
        at += n;
        Some(v)
    } else {
        None
    };
    Ok(ObuHeader {
        kind,
        temporal_id,
        spatial_id,
        header_len: at,
        payload_len,
    })
}

/// `leb128()`: the value and the bytes it took (at most 8).
fn leb128(bytes: &[u8]) -> ParseResult<(u64, usize)> {
    let mut v = 0u64;
    for (i, &b) in bytes.iter().take(8).enumerate() {
        v |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Ok((v, i + 1));
        }
    }
    Err("AV1: leb128 size longer than 8 bytes or cut off".into())
}

/// An operating point's fields that frame headers depend on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct OperatingPoint {
    idc: u16,
    decoder_model_present: bool,
}

/// What the sequence header says, as far as the index and frame headers need it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SequenceHeader {
    /// `seq_profile` (0 Main, 1 High, 2 Professional).
    pub profile: u8,
    /// `seq_level_idx[0]`.
    pub level: u8,
    /// 8, 10 or 12.
    pub bit_depth: u8,
    /// No chroma planes.
    pub monochrome: bool,
    /// Chroma is half width.
    pub subsampling_x: bool,
    /// Chroma is half height.
    pub subsampling_y: bool,
    /// `max_frame_width_minus_1 + 1`.
    pub max_width: u32,
    /// `max_frame_height_minus_1 + 1`.
    pub max_height: u32,
    /// `film_grain_params_present`.
    pub film_grain: bool,
    /// `chroma_sample_position` of 4:2:0 streams (0 unknown, 1 vertical, 2 colocated).
    pub chroma_sample_position: u8,
    reduced_still_picture_header: bool,
    decoder_model_info_present: bool,
    equal_picture_interval: bool,
    frame_presentation_time_length: u32,
    buffer_removal_time_length: u32,
    operating_points: Vec<OperatingPoint>,
    /// `idLen` when frame ids are present.
    frame_id_length: Option<u32>,
    force_screen_content_tools: u8,
    force_integer_mv: u8,
    order_hint_bits: u32,
}

impl SequenceHeader {
    /// The chroma format as [`CodecInfo::chroma_format`] counts it.
    pub fn chroma_format(&self) -> u8 {
        match (self.monochrome, self.subsampling_x, self.subsampling_y) {
            (true, _, _) => 0,
            (false, true, true) => 1,
            (false, true, false) => 2,
            (false, false, _) => 3,
        }
    }
}

/// Parses a sequence header OBU's payload (AV1 5.5).
pub fn parse_sequence_header(payload: &[u8]) -> ParseResult<SequenceHeader> {
    let mut b = BitReader::new(payload);
    let mut s = SequenceHeader {
        profile: b.bits(3)? as u8,
        ..Default::default()
    };
    if s.profile > 2 {
        return Err(invalid!("AV1: seq_profile {}", s.profile));
    }
    b.skip(1)?; // still_picture
    s.reduced_still_picture_header = b.bit()?;
    if s.reduced_still_picture_header {
        s.level = b.bits(5)? as u8;
        s.operating_points.push(OperatingPoint::default());
    } else {
        timing_and_operating_points(&mut b, &mut s)?;
    }
    let width_bits = b.bits(4)? + 1;
    let height_bits = b.bits(4)? + 1;
    s.max_width = b.bits(width_bits)? + 1;
    s.max_height = b.bits(height_bits)? + 1;
    if !s.reduced_still_picture_header && b.bit()? {
        let delta = b.bits(4)? + 2;
        let additional = b.bits(3)? + 1;
        s.frame_id_length = Some(delta + additional);
    }
    b.skip(3)?; // use_128x128_superblock, enable_filter_intra, enable_intra_edge_filter
    tools(&mut b, &mut s)?;
    b.skip(3)?; // enable_superres, enable_cdef, enable_restoration
    color_config(&mut b, &mut s)?;
    s.film_grain = b.bit()?;
    Ok(s)
}

/// Timing info, the decoder model and the operating points.
fn timing_and_operating_points(b: &mut BitReader<'_>, s: &mut SequenceHeader) -> ParseResult<()> {
    let mut buffer_delay_length = 0;
    if b.bit()? {
        b.skip(64)?; // num_units_in_display_tick, time_scale
        s.equal_picture_interval = b.bit()?;
        if s.equal_picture_interval {
            uvlc(b)?;
        }
        s.decoder_model_info_present = b.bit()?;
        if s.decoder_model_info_present {
            buffer_delay_length = b.bits(5)? + 1;
            b.skip(32)?; // num_units_in_decoding_tick
            s.buffer_removal_time_length = b.bits(5)? + 1;
            s.frame_presentation_time_length = b.bits(5)? + 1;
        }
    }
    let initial_display_delay_present = b.bit()?;
    let count = b.bits(5)? + 1;
    for i in 0..count {
        let mut op = OperatingPoint {
            idc: b.bits(12)? as u16,
            decoder_model_present: false,
        };
        let level = b.bits(5)? as u8;
        if i == 0 {
            s.level = level;
        }
        if level > 7 {
            b.skip(1)?; // seq_tier
        }
        if s.decoder_model_info_present {
            op.decoder_model_present = b.bit()?;
            if op.decoder_model_present {
                b.skip(2 * buffer_delay_length as usize + 1)?;
            }
        }
        if initial_display_delay_present && b.bit()? {
            b.skip(4)?;
        }
        s.operating_points.push(op);
    }
    Ok(())
}

/// `uvlc()`.
fn uvlc(b: &mut BitReader<'_>) -> ParseResult<u32> {
    let mut zeros = 0;
    while !b.bit()? {
        zeros += 1;
        if zeros >= 32 {
            return Err("AV1: uvlc longer than 32 bits".into());
        }
    }
    Ok(((1u64 << zeros) - 1 + u64::from(b.bits(zeros)?)) as u32)
}

/// The coding tools' flags that frame headers depend on.
fn tools(b: &mut BitReader<'_>, s: &mut SequenceHeader) -> ParseResult<()> {
    if s.reduced_still_picture_header {
        s.force_screen_content_tools = SELECT;
        s.force_integer_mv = SELECT;
        return Ok(());
    }
    b.skip(4)?; // interintra, masked compound, warped motion, dual filter
    let order_hint = b.bit()?;
    if order_hint {
        b.skip(2)?; // enable_jnt_comp, enable_ref_frame_mvs
    }
    s.force_screen_content_tools = if b.bit()? { SELECT } else { b.bits(1)? as u8 };
    s.force_integer_mv = if s.force_screen_content_tools > 0 {
        if b.bit()? { SELECT } else { b.bits(1)? as u8 }
    } else {
        SELECT
    };
    if order_hint {
        s.order_hint_bits = b.bits(3)? + 1;
    }
    Ok(())
}

/// `color_config()` (AV1 5.5.2).
fn color_config(b: &mut BitReader<'_>, s: &mut SequenceHeader) -> ParseResult<()> {
    let high = b.bit()?;
    s.bit_depth = match (s.profile, high) {
        (2, true) => {
            if b.bit()? {
                12
            } else {
                10
            }
        }
        (_, true) => 10,
        (_, false) => 8,
    };
    s.monochrome = s.profile != 1 && b.bit()?;
    let (mut primaries, mut transfer, mut matrix) = (2, 2, 2);
    if b.bit()? {
        primaries = b.bits(8)?;
        transfer = b.bits(8)?;
        matrix = b.bits(8)?;
    }
    if s.monochrome {
        b.skip(1)?; // color_range
        (s.subsampling_x, s.subsampling_y) = (true, true);
        return Ok(());
    }
    if (primaries, transfer, matrix) == (1, 13, 0) {
        (s.subsampling_x, s.subsampling_y) = (false, false);
    } else {
        b.skip(1)?; // color_range
        (s.subsampling_x, s.subsampling_y) = match s.profile {
            0 => (true, true),
            1 => (false, false),
            _ if s.bit_depth == 12 => {
                let x = b.bit()?;
                (x, x && b.bit()?)
            }
            _ => (true, false),
        };
        if s.subsampling_x && s.subsampling_y {
            s.chroma_sample_position = b.bits(2)? as u8;
        }
    }
    b.skip(1) // separate_uv_delta_q
}

/// What one frame header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Av1Frame {
    /// Shows a frame decoded earlier.
    pub show_existing: bool,
    /// `frame_type` (for `show_existing_frame`, the shown frame's type where known).
    pub frame_type: Option<u8>,
    /// `show_frame` (true for `show_existing_frame`).
    pub show_frame: bool,
    /// `refresh_frame_flags`; `None` where it depends on a frame not seen.
    pub refresh: Option<u8>,
}

/// The reference slots' frame types, as far as the headers read so far tell.
pub type SlotTypes = [Option<u8>; 8];

/// Parses a frame header's first fields, up to `refresh_frame_flags` (AV1 5.9.2), and updates
/// `slots`.
pub fn parse_frame_header(
    payload: &[u8],
    seq: &SequenceHeader,
    obu: &ObuHeader,
    slots: &mut SlotTypes,
) -> ParseResult<Av1Frame> {
    let frame = frame_header_fields(&mut BitReader::new(payload), seq, obu, slots)?;
    match (frame.refresh, frame.frame_type) {
        (Some(refresh), Some(t)) => {
            for (i, slot) in slots.iter_mut().enumerate() {
                if refresh >> i & 1 != 0 {
                    *slot = Some(t);
                }
            }
        }
        (Some(0), None) => {}
        _ => *slots = [None; 8],
    }
    Ok(frame)
}

fn frame_header_fields(
    b: &mut BitReader<'_>,
    seq: &SequenceHeader,
    obu: &ObuHeader,
    slots: &SlotTypes,
) -> ParseResult<Av1Frame> {
    if seq.reduced_still_picture_header {
        return Ok(Av1Frame {
            show_existing: false,
            frame_type: Some(KEY_FRAME),
            show_frame: true,
            refresh: Some(0xff),
        });
    }
    if b.bit()? {
        let slot = b.bits(3)? as usize;
        let frame_type = slots.get(slot).copied().flatten();
        // Showing a key frame again refreshes every slot with it (a forward key frame).
        let refresh = frame_type.map(|t| if t == KEY_FRAME { 0xff } else { 0 });
        return Ok(Av1Frame {
            show_existing: true,
            frame_type,
            show_frame: true,
            refresh,
        });
    }
    let frame_type = b.bits(2)? as u8;
    let show_frame = b.bit()?;
    let intra = frame_type == KEY_FRAME || frame_type == INTRA_ONLY_FRAME;
    if show_frame && seq.decoder_model_info_present && !seq.equal_picture_interval {
        b.skip(seq.frame_presentation_time_length as usize)?;
    }
    if !show_frame {
        b.skip(1)?; // showable_frame
    }
    let all_refreshed = frame_type == SWITCH_FRAME || (frame_type == KEY_FRAME && show_frame);
    let error_resilient = all_refreshed || b.bit()?;
    b.skip(1)?; // disable_cdf_update
    let screen_content = if seq.force_screen_content_tools == SELECT {
        b.bit()?
    } else {
        seq.force_screen_content_tools != 0
    };
    if screen_content && seq.force_integer_mv == SELECT {
        b.skip(1)?; // force_integer_mv
    }
    if let Some(n) = seq.frame_id_length {
        b.skip(n as usize)?; // current_frame_id
    }
    if frame_type != SWITCH_FRAME {
        b.skip(1)?; // frame_size_override_flag (its fields come after refresh_frame_flags)
    }
    b.skip(seq.order_hint_bits as usize)?;
    if !(intra || error_resilient) {
        b.skip(3)?; // primary_ref_frame
    }
    if seq.decoder_model_info_present {
        buffer_removal_times(b, seq, obu)?;
    }
    let refresh = if all_refreshed {
        0xff
    } else {
        b.bits(8)? as u8
    };
    Ok(Av1Frame {
        show_existing: false,
        frame_type: Some(frame_type),
        show_frame,
        refresh: Some(refresh),
    })
}

/// Skips `buffer_removal_time` of each operating point the OBU belongs to.
fn buffer_removal_times(
    b: &mut BitReader<'_>,
    seq: &SequenceHeader,
    obu: &ObuHeader,
) -> ParseResult<()> {
    if !b.bit()? {
        return Ok(());
    }
    for op in seq
        .operating_points
        .iter()
        .filter(|o| o.decoder_model_present)
    {
        let in_temporal = (op.idc >> obu.temporal_id) & 1 != 0;
        let in_spatial = (op.idc >> (u16::from(obu.spatial_id) + 8)) & 1 != 0;
        if op.idc == 0 || (in_temporal && in_spatial) {
            b.skip(seq.buffer_removal_time_length as usize)?;
        }
    }
    Ok(())
}

/// The bitstream's view of a temporal unit from its frame headers (decode order): decoding can
/// start at it when its first frame is a shown key frame (a hidden key frame, or an intra-only
/// frame, keeps references to earlier frames alive); other TUs may reference it when any of its
/// frames refreshes a slot, or might (a refresh that depends on frames not read).
pub fn unit_picture(frames: &[Av1Frame]) -> ParseResult<Picture> {
    let first = frames
        .first()
        .ok_or("AV1 temporal unit without a frame header")?;
    let shown_key = !first.show_existing && first.frame_type == Some(KEY_FRAME) && first.show_frame;
    let intra = frames
        .iter()
        .all(|f| matches!(f.frame_type, Some(KEY_FRAME | INTRA_ONLY_FRAME)));
    Ok(Picture {
        slice_type: Some(if intra { SliceType::I } else { SliceType::P }),
        random_access: if shown_key {
            RandomAccess::Idr
        } else {
            RandomAccess::None
        },
        reference: frames.iter().any(|f| f.refresh != Some(0)),
        leading: Leading::No,
        temporal_id: 0,
    })
}

/// `AV1CodecConfigurationRecord` (`av1C`; also Matroska's `V_AV1` CodecPrivate): profile,
/// level, bit depth and chroma, and the configuration OBUs (a sequence header), kept as the one
/// parameter set.
pub fn parse_av1c(bytes: &[u8]) -> ParseResult<CodecInfo> {
    let mut r = Reader::new(bytes, "av1C");
    let marker = r.u8()?;
    if marker != 0x81 {
        return Err(invalid!(
            "av1C: marker and version {marker:#04x}, expected 0x81"
        ));
    }
    let b1 = r.u8()?;
    let b2 = r.u8()?;
    r.skip(1)?; // initial presentation delay
    let profile = b1 >> 5;
    let bit_depth = match (b2 & 0x40 != 0, b2 & 0x20 != 0) {
        (true, true) => 12,
        (true, false) => 10,
        (false, _) => 8,
    };
    let seq = SequenceHeader {
        profile,
        monochrome: b2 & 0x10 != 0,
        subsampling_x: b2 & 0x08 != 0,
        subsampling_y: b2 & 0x04 != 0,
        ..Default::default()
    };
    let config_obus = r.rest();
    Ok(CodecInfo {
        profile_idc: profile,
        level_idc: b1 & 0x1f,
        chroma_format: seq.chroma_format(),
        bit_depth,
        parameter_sets: if config_obus.is_empty() {
            Vec::new()
        } else {
            vec![config_obus.to_vec()]
        },
        ..empty(Codec::Av1)
    })
}

/// The sequence header among `obus` (a configuration record's OBUs), if any.
pub fn find_sequence_header(mut obus: &[u8]) -> ParseResult<Option<SequenceHeader>> {
    while !obus.is_empty() {
        let h = parse_obu_header(obus)?;
        let rest = &obus[h.header_len.min(obus.len())..];
        let len = h.payload_len.map_or(rest.len(), |n| n as usize);
        let payload = rest.get(..len).ok_or("AV1: OBU runs past its record")?;
        if h.kind == obu::SEQUENCE_HEADER {
            return parse_sequence_header(payload).map(Some);
        }
        obus = &rest[len..];
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn obu_headers() {
        // OBU_FRAME with a size field of 300 (leb128 0xac 0x02).
        let h = parse_obu_header(&[6 << 3 | 2, 0xac, 0x02]).unwrap();
        assert_eq!((h.kind, h.header_len, h.payload_len), (6, 3, Some(300)));
        // With an extension: temporal_id 2, spatial_id 1; no size field.
        let h = parse_obu_header(&[3 << 3 | 4, 2 << 5 | 1 << 3]).unwrap();
        assert_eq!(
            (h.kind, h.temporal_id, h.spatial_id, h.payload_len),
            (3, 2, 1, None)
        );
        assert!(parse_obu_header(&[0x80]).is_err(), "forbidden bit");
        assert!(parse_obu_header(&[2, 0x80, 0x80]).is_err(), "cut-off size");
        assert!(parse_obu_header(&[]).is_err());
    }

    #[test]
    fn av1c_record() {
        // 0x81, profile 0 level 8, 10-bit 4:2:0, then a sequence header OBU of 0 bytes.
        let rec = [0x81, 8, 0x40 | 0x08 | 0x04, 0, 1 << 3 | 2, 0];
        let info = parse_av1c(&rec).unwrap();
        assert_eq!((info.profile_idc, info.level_idc), (0, 8));
        assert_eq!((info.bit_depth, info.chroma_format), (10, 1));
        assert_eq!(info.parameter_sets, vec![vec![1 << 3 | 2, 0]]);
        assert!(parse_av1c(&[0x80, 0, 0, 0]).is_err());
    }
}
