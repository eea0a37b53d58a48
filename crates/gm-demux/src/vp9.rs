//! VP9: superframes (one packet holding several frames, all but the last hidden) and the first
//! fields of each frame's uncompressed header (VP9 bitstream specification 6.2): profile, key
//! frame, which reference slots it refreshes, and on key frames the colour format and size.
//! Also the `vpcC` record of VP9 in MP4.

use crate::bits::BitReader;
use crate::boxes::Reader;
use crate::codec::{Codec, CodecInfo, empty};
use crate::error::{ParseResult, invalid};
use crate::picture::{Leading, Picture, RandomAccess, SliceType};

/// Bytes of a frame that hold every field [`parse_frame_header`] reads.
pub(crate) const HEADER_BYTES: usize = 16;
/// The largest superframe index: 2 marker bytes and 8 sizes of 4 bytes.
pub(crate) const MAX_INDEX_BYTES: usize = 2 + 8 * 4;

/// `frame_sync_code` of key and intra-only frames.
const SYNC_CODE: u32 = 0x49_83_42;
/// `color_space` value meaning RGB (no subsampling choice for profiles 0 and 2).
const CS_RGB: u32 = 7;

/// What one frame's uncompressed header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Vp9Frame {
    /// `Profile` (0 to 3).
    pub profile: u8,
    /// A one-byte frame that shows a frame decoded earlier.
    pub show_existing: bool,
    /// `frame_type == KEY_FRAME`: refreshes every reference slot; decoding can start here.
    pub key: bool,
    /// Intra-only (not a key frame, but no inter prediction).
    pub intra_only: bool,
    /// `show_frame`.
    pub show_frame: bool,
    /// `refresh_frame_flags`: the reference slots this frame replaces.
    pub refresh: u8,
    /// Colour format and size, on key frames (and intra-only frames of profiles above 0).
    pub format: Option<Vp9Format>,
}

/// The colour format and coded size a key frame declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Vp9Format {
    /// 8, 10 or 12.
    pub bit_depth: u8,
    /// Chroma is half width.
    pub subsampling_x: bool,
    /// Chroma is half height.
    pub subsampling_y: bool,
    /// `color_space` (7 is RGB).
    pub color_space: u8,
    /// `color_range`: full-range (0-255) samples; always for RGB.
    pub full_range: bool,
    /// Coded width.
    pub width: u32,
    /// Coded height.
    pub height: u32,
}

impl Vp9Format {
    /// The chroma format as [`CodecInfo::chroma_format`] counts it: 1 for 4:2:0, 2 for 4:2:2, 3
    /// for 4:4:4; 4:4:0 (half height only) has no number there and is refused.
    pub fn chroma_format(&self) -> ParseResult<u8> {
        match (self.subsampling_x, self.subsampling_y) {
            (true, true) => Ok(1),
            (true, false) => Ok(2),
            (false, false) => Ok(3),
            (false, true) => Err("VP9: 4:4:0 chroma is not supported".into()),
        }
    }
}

/// The sizes of the frames in a packet: several when it ends with a superframe index, else one
/// frame of the whole packet. `tail` is the packet's last bytes (up to [`MAX_INDEX_BYTES`]).
pub fn frame_sizes(tail: &[u8], packet_len: u64) -> ParseResult<Vec<u32>> {
    let whole = || -> ParseResult<Vec<u32>> {
        u32::try_from(packet_len)
            .map(|n| vec![n])
            .map_err(|_| invalid!("VP9 packet of {packet_len} bytes"))
    };
    let Some(&marker) = tail.last() else {
        return Err("empty VP9 packet".into());
    };
    if marker & 0xe0 != 0xc0 {
        return whole();
    }
    let frames = usize::from(marker & 7) + 1;
    let mag = usize::from((marker >> 3) & 3) + 1;
    let index_len = 2 + mag * frames;
    if index_len > tail.len() || tail[tail.len() - index_len] != marker {
        // The last byte only looks like a marker: the packet is one frame.
        return whole();
    }
    let index = &tail[tail.len() - index_len + 1..tail.len() - 1];
    let sizes: Vec<u32> = index
        .chunks_exact(mag)
        .map(|c| c.iter().rev().fold(0u32, |v, &b| v << 8 | u32::from(b)))
        .collect();
    let total: u64 = sizes.iter().map(|&s| u64::from(s)).sum();
    if total + index_len as u64 > packet_len || sizes.contains(&0) {
        return Err(invalid!(
            "VP9 superframe index: {frames} frames of {total} bytes in a {packet_len}-byte packet"
        ));
    }
    Ok(sizes)
}

/// Parses the first fields of a frame's uncompressed header.
pub fn parse_frame_header(bytes: &[u8]) -> ParseResult<Vp9Frame> {
    let mut b = BitReader::new(bytes);
    if b.bits(2)? != 2 {
        return Err("VP9: frame_marker is not 2".into());
    }
    let low = b.bits(1)?;
    let profile = (b.bits(1)? << 1 | low) as u8;
    if profile == 3 && b.bit()? {
        return Err("VP9: reserved bit set in profile 3".into());
    }
    let mut frame = Vp9Frame {
        profile,
        show_existing: false,
        key: false,
        intra_only: false,
        show_frame: true,
        refresh: 0,
        format: None,
    };
    if b.bit()? {
        frame.show_existing = true;
        b.skip(3)?; // frame_to_show_map_idx
        return Ok(frame);
    }
    frame.key = !b.bit()?;
    frame.show_frame = b.bit()?;
    let error_resilient = b.bit()?;
    if frame.key {
        sync_code(&mut b)?;
        frame.format = Some(format(&mut b, profile)?);
        frame.refresh = 0xff;
        return Ok(frame);
    }
    frame.intra_only = if frame.show_frame { false } else { b.bit()? };
    if !error_resilient {
        b.skip(2)?; // reset_frame_context
    }
    if frame.intra_only {
        sync_code(&mut b)?;
        // Profile 0 intra-only frames carry no colour config: BT.601, limited range (spec
        // section 7.2).
        let (depth, sx, sy, cs, full) = if profile > 0 {
            color_config(&mut b, profile)?
        } else {
            (8, true, true, 1, false)
        };
        frame.refresh = b.bits(8)? as u8;
        let (width, height) = frame_size(&mut b)?;
        frame.format = Some(Vp9Format {
            bit_depth: depth,
            subsampling_x: sx,
            subsampling_y: sy,
            color_space: cs,
            full_range: full,
            width,
            height,
        });
    } else {
        frame.refresh = b.bits(8)? as u8;
    }
    Ok(frame)
}

fn sync_code(b: &mut BitReader<'_>) -> ParseResult<()> {
    match b.bits(24)? {
        SYNC_CODE => Ok(()),
        other => Err(invalid!("VP9: frame_sync_code {other:#08x}")),
    }
}

/// `color_config()` then `frame_size()` of a key frame.
fn format(b: &mut BitReader<'_>, profile: u8) -> ParseResult<Vp9Format> {
    let (bit_depth, subsampling_x, subsampling_y, color_space, full_range) =
        color_config(b, profile)?;
    let (width, height) = frame_size(b)?;
    Ok(Vp9Format {
        bit_depth,
        subsampling_x,
        subsampling_y,
        color_space,
        full_range,
        width,
        height,
    })
}

/// Bit depth, subsampling, colour space and full range.
fn color_config(b: &mut BitReader<'_>, profile: u8) -> ParseResult<(u8, bool, bool, u8, bool)> {
    let depth = if profile >= 2 {
        if b.bit()? { 12 } else { 10 }
    } else {
        8
    };
    let cs = b.bits(3)?;
    let odd_profile = profile == 1 || profile == 3;
    let mut full = true;
    let (sx, sy) = if cs != CS_RGB {
        full = b.bit()?;
        if odd_profile {
            let sub = (b.bit()?, b.bit()?);
            b.skip(1)?; // reserved_zero
            sub
        } else {
            (true, true)
        }
    } else if odd_profile {
        b.skip(1)?; // reserved_zero
        (false, false)
    } else {
        return Err("VP9: RGB needs profile 1 or 3".into());
    };
    Ok((depth, sx, sy, cs as u8, full))
}

impl Vp9Format {
    /// The colour space as ISO/IEC 23091-4 `matrix_coefficients` (what H.264/HEVC VUI and AV1
    /// carry, and what colour conversion takes): BT.601 5 (6 for SMPTE 170M), BT.709 1,
    /// SMPTE 240M 7, BT.2020 9, RGB 0; unknown 2.
    pub fn matrix_coefficients(&self) -> u8 {
        match self.color_space {
            1 => 5,
            2 => 1,
            3 => 6,
            4 => 7,
            5 => 9,
            7 => 0,
            _ => 2,
        }
    }
}

/// The colour a VP9 packet's first frame signals when it is a key frame (or an intra-only
/// frame): (`matrix_coefficients` as ISO/IEC 23091-4 numbers them, full range). VP9 numbers
/// its colour spaces its own way, so a decoder that reports them as if they were ISO code
/// points (NVDEC's parser) would convert BT.709 as "unspecified".
pub fn key_frame_colour(packet: &[u8]) -> Option<(u8, bool)> {
    let f = parse_frame_header(packet).ok()?;
    let format = f.format?;
    Some((format.matrix_coefficients(), format.full_range))
}

fn frame_size(b: &mut BitReader<'_>) -> ParseResult<(u32, u32)> {
    Ok((b.bits(16)? + 1, b.bits(16)? + 1))
}

/// The bitstream's view of a packet from the headers of its frames (decode order): decoding
/// can start at it when its first frame is a key frame. Later packets depend on it unless it
/// only shows frames decoded before: a VP9 frame that refreshes no reference slot still saves
/// its probability context (`refresh_frame_context`) for later frames, so it is not droppable.
pub fn packet_picture(frames: &[Vp9Frame]) -> ParseResult<Picture> {
    let first = frames.first().ok_or("VP9 packet without frames")?;
    let intra = frames.iter().all(|f| f.key || f.intra_only);
    Ok(Picture {
        slice_type: Some(if intra { SliceType::I } else { SliceType::P }),
        random_access: if first.key {
            RandomAccess::Idr
        } else {
            RandomAccess::None
        },
        reference: frames.iter().any(|f| !f.show_existing),
        leading: Leading::No,
        temporal_id: 0,
    })
}

/// The codec fields from a key frame's header (VP9 in Matroska has no configuration record).
pub fn codec_info(frame: &Vp9Frame) -> ParseResult<CodecInfo> {
    let format = frame
        .format
        .ok_or("VP9: the first frame is not a key frame")?;
    Ok(CodecInfo {
        profile_idc: frame.profile,
        chroma_format: format.chroma_format()?,
        bit_depth: format.bit_depth,
        width: format.width,
        height: format.height,
        ..empty(Codec::Vp9)
    })
}

/// `VPCodecConfigurationRecord` (`vpcC`, VP9 in ISO BMFF 2.2): profile, level, bit depth and
/// chroma subsampling.
pub fn parse_vpcc(bytes: &[u8]) -> ParseResult<CodecInfo> {
    let mut r = Reader::new(bytes, "vpcC");
    r.skip(4)?; // version, flags
    let profile = r.u8()?;
    let level = r.u8()?;
    let packed = r.u8()?;
    let bit_depth = packed >> 4;
    let chroma_format = match (packed >> 1) & 7 {
        0 | 1 => 1,
        2 => 2,
        3 => 3,
        other => return Err(invalid!("vpcC: chromaSubsampling {other}")),
    };
    if !matches!(bit_depth, 8 | 10 | 12) || profile > 3 {
        return Err(invalid!("vpcC: profile {profile}, bit depth {bit_depth}"));
    }
    Ok(CodecInfo {
        profile_idc: profile,
        level_idc: level,
        chroma_format,
        bit_depth,
        ..empty(Codec::Vp9)
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A key frame header of profile `p` with the given colour config bits after the sync
    /// code, then a 320x180 size.
    fn key_frame(profile: u8, config: &[(u32, u32)]) -> Vec<u8> {
        let mut bits: Vec<(u32, u32)> = vec![(2, 2), (1, u32::from(profile & 1))];
        bits.push((1, u32::from(profile >> 1)));
        if profile == 3 {
            bits.push((1, 0));
        }
        bits.extend([(1, 0), (1, 0), (1, 1), (1, 0), (24, SYNC_CODE)]);
        bits.extend_from_slice(config);
        bits.extend([(16, 319), (16, 179)]);
        pack(&bits)
    }

    fn pack(fields: &[(u32, u32)]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut n = 0usize;
        for &(width, v) in fields {
            for i in (0..width).rev() {
                if n.is_multiple_of(8) {
                    out.push(0);
                }
                let last = out.len() - 1;
                out[last] |= (((v >> i) & 1) as u8) << (7 - n % 8);
                n += 1;
            }
        }
        out.extend([0; 4]);
        out
    }

    #[test]
    fn key_frames_give_format_and_size() {
        // Profile 0: color_space 1 (BT.601), color_range 0.
        let f = parse_frame_header(&key_frame(0, &[(3, 1), (1, 0)])).unwrap();
        assert!(f.key && f.show_frame && f.refresh == 0xff);
        let fmt = f.format.unwrap();
        assert_eq!((fmt.bit_depth, fmt.width, fmt.height), (8, 320, 180));
        assert_eq!(fmt.chroma_format().unwrap(), 1);
        // Profile 2, 10-bit.
        let f = parse_frame_header(&key_frame(2, &[(1, 0), (3, 2), (1, 0)])).unwrap();
        assert_eq!(f.format.unwrap().bit_depth, 10);
        // Profile 1, 4:4:4.
        let f =
            parse_frame_header(&key_frame(1, &[(3, 2), (1, 0), (1, 0), (1, 0), (1, 0)])).unwrap();
        assert_eq!(f.format.unwrap().chroma_format().unwrap(), 3);
    }

    #[test]
    fn show_existing_and_inter_frames() {
        // frame_marker, profile 0, show_existing_frame 1, index 5.
        let f = parse_frame_header(&pack(&[(2, 2), (2, 0), (1, 1), (3, 5)])).unwrap();
        assert!(f.show_existing && f.refresh == 0);
        // Inter, hidden, not error resilient, intra_only 0, reset 0, refresh 0b100.
        let f = parse_frame_header(&pack(&[
            (2, 2),
            (2, 0),
            (1, 0),
            (1, 1),
            (1, 0),
            (1, 0),
            (1, 0),
            (2, 0),
            (8, 4),
        ]))
        .unwrap();
        assert!(!f.key && !f.show_frame && f.refresh == 4);
        assert!(parse_frame_header(&[0x00]).is_err(), "bad frame marker");
        assert!(parse_frame_header(&[]).is_err());
    }

    #[test]
    fn superframe_index() {
        // Two frames of 3 and 2 bytes, 1-byte sizes: marker 0b11000_001.
        let packet = [1, 2, 3, 4, 5, 0xc1, 3, 2, 0xc1];
        assert_eq!(frame_sizes(&packet, 9).unwrap(), vec![3, 2]);
        // A last byte that looks like a marker without a matching first marker byte.
        assert_eq!(frame_sizes(&[9, 9, 0xc1], 3).unwrap(), vec![3]);
        // Sizes past the packet.
        assert!(frame_sizes(&[0xc1, 200, 2, 0xc1], 4).is_err());
        assert!(frame_sizes(&[], 0).is_err());
    }

    #[test]
    fn vpcc_record() {
        // version 1, flags, profile 2, level 31, 10-bit 4:2:0 colocated, colour fields.
        let rec = [1, 0, 0, 0, 2, 31, 10 << 4 | 1 << 1, 1, 1, 1, 0, 0];
        let info = parse_vpcc(&rec).unwrap();
        assert_eq!(
            (info.profile_idc, info.bit_depth, info.chroma_format),
            (2, 10, 1)
        );
        assert!(parse_vpcc(&rec[..6]).is_err());
    }
}
