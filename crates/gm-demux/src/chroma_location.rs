//! Where a stream's chroma samples sit relative to its luma samples, as its bitstream signals
//! it (H.264 and HEVC VUI `chroma_sample_loc_type_top_field`, AV1 `chroma_sample_position`),
//! with the defaults ffmpeg's decoders apply where nothing is signalled: RGB converted at this
//! location is what ffmpeg's swscale computes from the frame.

use crate::bits::{BitReader, unescape};
use crate::codec::{Codec, CodecInfo};
use crate::error::ParseResult;

/// A chroma sample location (ISO/IEC 23091-4 `ChromaSampleLocType`, numbered as FFmpeg's
/// `AVChromaLocation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ChromaLocation {
    /// Not signalled and no codec default.
    #[default]
    Unspecified,
    /// MPEG-2 and H.264/HEVC's default: co-sited horizontally, between rows vertically.
    Left,
    /// MPEG-1, JPEG: between columns and rows.
    Center,
    /// Co-sited with the top-left luma sample (AV1 "colocated", BT.2020 4:2:0).
    TopLeft,
    /// Between columns, co-sited with the top row.
    Top,
    /// Co-sited horizontally, with the bottom row.
    BottomLeft,
    /// Between columns, with the bottom row.
    Bottom,
}

impl ChromaLocation {
    /// The location of ISO/IEC 23091-4 `ChromaSampleLocType` `t` (0..=5).
    pub fn from_loc_type(t: u32) -> ChromaLocation {
        match t {
            0 => ChromaLocation::Left,
            1 => ChromaLocation::Center,
            2 => ChromaLocation::TopLeft,
            3 => ChromaLocation::Top,
            4 => ChromaLocation::BottomLeft,
            5 => ChromaLocation::Bottom,
            _ => ChromaLocation::Unspecified,
        }
    }

    /// FFmpeg's `AVChromaLocation` value `v` (what libavcodec sets on a frame).
    pub fn from_ffmpeg(v: i32) -> ChromaLocation {
        u32::try_from(v - 1).map_or(ChromaLocation::Unspecified, Self::from_loc_type)
    }

    /// FFmpeg's `AVChromaLocation` value (0 unspecified, 1 left, ... 6 bottom).
    pub fn to_ffmpeg(self) -> u8 {
        match self {
            ChromaLocation::Unspecified => 0,
            ChromaLocation::Left => 1,
            ChromaLocation::Center => 2,
            ChromaLocation::TopLeft => 3,
            ChromaLocation::Top => 4,
            ChromaLocation::BottomLeft => 5,
            ChromaLocation::Bottom => 6,
        }
    }

    /// Matroska's Colour `ChromaSitingHorz` and `ChromaSitingVert` (1 collocated, 2 half; 0
    /// or anything else unspecified), as ffmpeg's demuxer maps them.
    pub fn from_siting(horz: u64, vert: u64) -> ChromaLocation {
        match (horz, vert) {
            (1, 2) => ChromaLocation::Left,
            (2, 2) => ChromaLocation::Center,
            (1, 1) => ChromaLocation::TopLeft,
            (2, 1) => ChromaLocation::Top,
            _ => ChromaLocation::Unspecified,
        }
    }

    /// The first chroma sample's position right of and below the first luma sample, in 1/256
    /// of a luma sample, for 4:2:0 (ffmpeg's `in_h_chr_pos`, `in_v_chr_pos`); unspecified is
    /// swscale's assumption, the centre.
    pub fn position(self) -> (u16, u16) {
        match self {
            ChromaLocation::Left => (0, 128),
            ChromaLocation::Center | ChromaLocation::Unspecified => (128, 128),
            ChromaLocation::TopLeft => (0, 0),
            ChromaLocation::Top => (128, 0),
            ChromaLocation::BottomLeft => (0, 256),
            ChromaLocation::Bottom => (128, 256),
        }
    }

    /// ffprobe's name for it.
    pub fn name(self) -> &'static str {
        match self {
            ChromaLocation::Unspecified => "unspecified",
            ChromaLocation::Left => "left",
            ChromaLocation::Center => "center",
            ChromaLocation::TopLeft => "topleft",
            ChromaLocation::Top => "top",
            ChromaLocation::BottomLeft => "bottomleft",
            ChromaLocation::Bottom => "bottom",
        }
    }
}

impl CodecInfo {
    /// The chroma location the decoder sets from the configuration record's parameter sets,
    /// with ffmpeg's decoders' defaults (H.264 left; HEVC 4:2:0 left; AV1 4:2:0 where its
    /// sequence header states vertical or colocated); `None` where the decoder leaves the
    /// container's (VP9, HEVC other than 4:2:0, AV1 otherwise). A parameter set that does not parse is reported by decoding; here it
    /// gets the default.
    pub fn signalled_chroma_location(&self) -> Option<ChromaLocation> {
        let mut sets = self.parameter_sets.iter();
        match self.codec {
            Codec::H264 => Some(
                sets.find(|s| s.first().is_some_and(|h| h & 0x1f == 7))
                    .and_then(|sps| h264_chroma_loc_type(sps).ok().flatten())
                    .map_or(ChromaLocation::Left, ChromaLocation::from_loc_type),
            ),
            Codec::Hevc if self.chroma_format == 1 => Some(
                sets.find(|s| s.first().is_some_and(|h| (h >> 1) & 0x3f == 33))
                    .and_then(|sps| hevc_chroma_loc_type(sps).ok().flatten())
                    .map_or(ChromaLocation::Left, ChromaLocation::from_loc_type),
            ),
            Codec::Av1 => sets
                .find_map(|obus| crate::av1::find_sequence_header(obus).ok().flatten())
                .filter(|s| s.chroma_format() == 1)
                .and_then(|s| match s.chroma_sample_position {
                    1 => Some(ChromaLocation::Left),
                    2 => Some(ChromaLocation::TopLeft),
                    _ => None,
                }),
            _ => None,
        }
    }
}

/// `chroma_sample_loc_type_top_field` of an H.264 SPS's VUI, where present.
fn h264_chroma_loc_type(sps: &[u8]) -> ParseResult<Option<u32>> {
    let sps = crate::codec::parse_h264_sps(sps)?;
    Ok(sps
        .vui_parameters
        .and_then(|v| v.chroma_loc_info)
        .map(|c| c.chroma_sample_loc_type_top_field))
}

/// Signed exp-Golomb `se(v)`.
fn se(b: &mut BitReader<'_>) -> ParseResult<i64> {
    let k = i64::from(b.ue()?);
    Ok(if k % 2 == 1 { (k + 1) / 2 } else { -(k / 2) })
}

/// `chroma_sample_loc_type_top_field` of an HEVC SPS's VUI (H.265 7.3.2.2), where present:
/// everything before the VUI is walked through.
fn hevc_chroma_loc_type(nal: &[u8]) -> ParseResult<Option<u32>> {
    let rbsp = unescape(nal.get(2..).unwrap_or_default(), 4096);
    let mut b = BitReader::new(&rbsp);
    b.skip(4)?; // sps_video_parameter_set_id
    let sub_layers = b.bits(3)? as usize; // sps_max_sub_layers_minus1
    b.skip(1)?;
    profile_tier_level(&mut b, sub_layers)?;
    b.ue()?; // sps_seq_parameter_set_id
    if b.ue()? == 3 {
        b.skip(1)?; // separate_colour_plane_flag
    }
    b.ue()?;
    b.ue()?; // picture size
    if b.bit()? {
        for _ in 0..4 {
            b.ue()?; // conformance window
        }
    }
    b.ue()?;
    b.ue()?; // bit depths
    let poc_lsb_minus4 = b.ue()?;
    if poc_lsb_minus4 > 12 {
        return Err(crate::error::invalid!(
            "HEVC SPS: log2_max_pic_order_cnt_lsb_minus4 of {poc_lsb_minus4} (at most 12)"
        ));
    }
    let poc_lsb_bits = poc_lsb_minus4 + 4;
    let all = b.bit()?; // sps_sub_layer_ordering_info_present_flag
    for _ in (if all { 0 } else { sub_layers })..=sub_layers {
        for _ in 0..3 {
            b.ue()?;
        }
    }
    for _ in 0..6 {
        b.ue()?; // block sizes, transform hierarchy depths
    }
    if b.bit()? && b.bit()? {
        scaling_list_data(&mut b)?;
    }
    b.skip(2)?; // amp, sample_adaptive_offset
    if b.bit()? {
        b.skip(8)?; // pcm bit depths
        b.ue()?;
        b.ue()?;
        b.skip(1)?;
    }
    short_term_ref_pic_sets(&mut b)?;
    if b.bit()? {
        for _ in 0..b.ue()? {
            b.skip(poc_lsb_bits as usize + 1)?; // lt_ref_pic_poc_lsb_sps, used_by_curr
        }
    }
    b.skip(2)?; // temporal mvp, strong intra smoothing
    if !b.bit()? {
        return Ok(None); // no VUI
    }
    if b.bit()? && b.bits(8)? == 255 {
        b.skip(32)?; // sample aspect ratio
    }
    if b.bit()? {
        b.skip(1)?; // overscan_appropriate_flag
    }
    if b.bit()? {
        b.skip(4)?; // video_format, full range
        if b.bit()? {
            b.skip(24)?; // colour description
        }
    }
    Ok(if b.bit()? { Some(b.ue()?) } else { None })
}

/// `profile_tier_level(1, sub_layers)`.
fn profile_tier_level(b: &mut BitReader<'_>, sub_layers: usize) -> ParseResult<()> {
    b.skip(96)?; // general profile, tier, flags and level
    let mut present = Vec::with_capacity(sub_layers);
    for _ in 0..sub_layers {
        present.push((b.bit()?, b.bit()?));
    }
    if sub_layers > 0 {
        b.skip(2 * (8 - sub_layers))?;
    }
    for (profile, level) in present {
        b.skip(if profile { 88 } else { 0 } + if level { 8 } else { 0 })?;
    }
    Ok(())
}

/// `scaling_list_data()`.
fn scaling_list_data(b: &mut BitReader<'_>) -> ParseResult<()> {
    for size in 0..4 {
        let step = if size == 3 { 3 } else { 1 };
        for _ in (0..6).step_by(step) {
            if !b.bit()? {
                b.ue()?; // scaling_list_pred_matrix_id_delta
                continue;
            }
            let coefs = 64.min(1 << (4 + (size << 1)));
            if size > 1 {
                se(b)?;
            }
            for _ in 0..coefs {
                se(b)?;
            }
        }
    }
    Ok(())
}

/// The SPS's `st_ref_pic_set`s: only their sizes matter here (H.265 7.3.7).
fn short_term_ref_pic_sets(b: &mut BitReader<'_>) -> ParseResult<()> {
    let count = b.ue()? as usize;
    if count > 64 {
        return Err(crate::error::invalid!(
            "HEVC SPS: {count} short-term reference picture sets"
        ));
    }
    let mut deltas: Vec<u32> = Vec::with_capacity(count);
    for i in 0..count {
        let predicted = i != 0 && b.bit()?;
        if predicted {
            b.skip(1)?; // delta_rps_sign
            b.ue()?; // abs_delta_rps_minus1
            let reference = deltas[i - 1];
            let mut n = 0;
            for _ in 0..=reference {
                let used = b.bit()?;
                if used || b.bit()? {
                    n += 1;
                }
            }
            deltas.push(n);
        } else {
            let negative = b.ue()?;
            let positive = b.ue()?;
            if negative > 16 || positive > 16 {
                return Err(crate::error::invalid!(
                    "HEVC SPS: a reference set too large"
                ));
            }
            for _ in 0..negative + positive {
                b.ue()?;
                b.skip(1)?;
            }
            deltas.push(negative + positive);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn loc_types_and_ffmpeg_values_map_to_positions() {
        assert_eq!(ChromaLocation::from_loc_type(0).position(), (0, 128));
        assert_eq!(ChromaLocation::from_loc_type(2).position(), (0, 0));
        assert_eq!(ChromaLocation::from_ffmpeg(2), ChromaLocation::Center);
        assert_eq!(ChromaLocation::from_ffmpeg(0), ChromaLocation::Unspecified);
        assert_eq!(ChromaLocation::from_ffmpeg(-3), ChromaLocation::Unspecified);
        assert_eq!(ChromaLocation::from_loc_type(9).position(), (128, 128));
    }

    #[test]
    fn hostile_hevc_sps_bytes_never_panic() {
        for n in 0..64u8 {
            let bytes: Vec<u8> = (0..n).map(|i| i.wrapping_mul(37) ^ n).collect();
            let _ = hevc_chroma_loc_type(&bytes);
        }
        let _ = hevc_chroma_loc_type(&[0x42, 0x01]);
    }
}
