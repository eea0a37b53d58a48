//! The video track's codec: the sample entry (`avc1`, `avc3`, `hvc1`, `hev1`), its
//! configuration record (`avcC`, `hvcC`) and what the sequence parameter set says.

use crate::bits::{BitReader, unescape};
use crate::boxes::{Children, FourCc, Reader, fourcc_str};
use crate::error::{ParseError, ParseResult, invalid};

/// The codecs we index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Codec {
    /// H.264 / AVC.
    H264,
    /// H.265 / HEVC.
    Hevc,
    /// VP9.
    Vp9,
    /// AV1.
    Av1,
}

impl Codec {
    /// Short name, as ffprobe prints it.
    pub fn name(self) -> &'static str {
        match self {
            Codec::H264 => "h264",
            Codec::Hevc => "hevc",
            Codec::Vp9 => "vp9",
            Codec::Av1 => "av1",
        }
    }

    /// Whether samples are NAL units (H.264, HEVC) rather than VP9 frames or AV1 OBUs.
    pub fn is_nal(self) -> bool {
        matches!(self, Codec::H264 | Codec::Hevc)
    }
}

/// What the track's sample entry and parameter sets say about the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodecInfo {
    /// The codec.
    pub codec: Codec,
    /// The sample entry's four-character code in MP4 (`avc1`, `avc3`, `hvc1`, `hev1`, `vp09`,
    /// `av01`); Matroska's `CodecID` (`V_VP9`, `V_AV1`, `V_MPEG4/ISO/AVC`, ...).
    pub fourcc: String,
    /// `profile_idc` (H.264), `general_profile_idc` (HEVC), `Profile` (VP9) or `seq_profile`
    /// (AV1).
    pub profile_idc: u8,
    /// Level: `level_idc` (H.264), `general_level_idc` (HEVC, 30 x level), the `vpcC` level
    /// (VP9 in MP4, else 0) or `seq_level_idx` (AV1).
    pub level_idc: u8,
    /// 0 monochrome, 1 4:2:0, 2 4:2:2, 3 4:4:4.
    pub chroma_format: u8,
    /// Luma bit depth.
    pub bit_depth: u8,
    /// Width from the sample entry (the display width).
    pub width: u32,
    /// Height from the sample entry.
    pub height: u32,
    /// Bytes of the length prefix of each NAL unit in a sample (1, 2 or 4; 0 for VP9 and AV1).
    pub nal_length_size: u8,
    /// Parameter sets from the configuration record, in decoding order (VPS, SPS, PPS), as NAL
    /// units without start codes; for AV1, the record's configuration OBUs (a sequence
    /// header) as one entry.
    pub parameter_sets: Vec<Vec<u8>>,
}

impl CodecInfo {
    /// A readable profile name.
    pub fn profile_name(&self) -> String {
        match (self.codec, self.profile_idc) {
            (Codec::H264, 66) => "Baseline".into(),
            (Codec::H264, 77) => "Main".into(),
            (Codec::H264, 88) => "Extended".into(),
            (Codec::H264, 100) => "High".into(),
            (Codec::H264, 110) => "High 10".into(),
            (Codec::H264, 122) => "High 4:2:2".into(),
            (Codec::H264, 244) => "High 4:4:4 Predictive".into(),
            (Codec::Hevc, 1) => "Main".into(),
            (Codec::Hevc, 2) => "Main 10".into(),
            (Codec::Hevc, 3) => "Main Still Picture".into(),
            (Codec::Hevc, 4) => "Range Extensions".into(),
            (Codec::Vp9, p) => format!("Profile {p}"),
            (Codec::Av1, 0) => "Main".into(),
            (Codec::Av1, 1) => "High".into(),
            (Codec::Av1, 2) => "Professional".into(),
            (_, p) => format!("profile {p}"),
        }
    }
}

/// Why a sample entry was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EntryError {
    /// A codec we do not index; carries its four-character code.
    #[error("unsupported codec {0}")]
    Unsupported(String),
    /// A damaged entry.
    #[error(transparent)]
    Malformed(#[from] ParseError),
}

/// Size of a VisualSampleEntry before its child boxes (ISO 14496-12, 12.1.3).
const VISUAL_ENTRY_LEN: usize = 78;

/// Parses the content of an `stsd` box: the first sample entry.
pub fn parse_stsd(stsd: &[u8]) -> Result<CodecInfo, EntryError> {
    let mut r = Reader::new(stsd, "stsd");
    r.skip(4)?; // version, flags
    let count = r.u32()?;
    if count == 0 {
        return Err(EntryError::Malformed("'stsd' has no sample entry".into()));
    }
    let entries = r.rest();
    let (h, content) = Children::new(entries)
        .next()
        .ok_or_else(|| ParseError::from("'stsd' has no sample entry"))??;
    let codec = match &h.kind {
        b"avc1" | b"avc3" => Codec::H264,
        b"hvc1" | b"hev1" => Codec::Hevc,
        b"vp09" => Codec::Vp9,
        b"av01" => Codec::Av1,
        b"encv" => return Err(EntryError::Unsupported("encv (encrypted video)".into())),
        other => return Err(EntryError::Unsupported(fourcc_str(*other))),
    };
    if content.len() < VISUAL_ENTRY_LEN {
        return Err(EntryError::Malformed(invalid!(
            "'{}' sample entry truncated",
            fourcc_str(h.kind)
        )));
    }
    let mut v = Reader::new(content, "visual sample entry");
    v.skip(24)?;
    let width = u32::from(v.u16()?);
    let height = u32::from(v.u16()?);
    let children = &content[VISUAL_ENTRY_LEN..];
    let config_kind: &FourCc = match codec {
        Codec::H264 => b"avcC",
        Codec::Hevc => b"hvcC",
        Codec::Vp9 => b"vpcC",
        Codec::Av1 => b"av1C",
    };
    let config = crate::boxes::find(children, config_kind)?.ok_or_else(|| {
        invalid!(
            "'{}' sample entry has no '{}' box",
            fourcc_str(h.kind),
            fourcc_str(*config_kind)
        )
    })?;
    let mut info = match codec {
        Codec::H264 => parse_avcc(config)?,
        Codec::Hevc => parse_hvcc(config)?,
        Codec::Vp9 => crate::vp9::parse_vpcc(config)?,
        Codec::Av1 => crate::av1::parse_av1c(config)?,
    };
    info.fourcc = fourcc_str(h.kind);
    info.width = width;
    info.height = height;
    Ok(info)
}

/// The fields of `codec` before a configuration record fills them: 4:2:0, 8-bit, no size,
/// 4-byte NAL lengths for H.264/HEVC (none for VP9 and AV1).
pub(crate) fn empty(codec: Codec) -> CodecInfo {
    CodecInfo {
        codec,
        fourcc: String::new(),
        profile_idc: 0,
        level_idc: 0,
        chroma_format: 1,
        bit_depth: 8,
        width: 0,
        height: 0,
        nal_length_size: if codec.is_nal() { 4 } else { 0 },
        parameter_sets: Vec::new(),
    }
}

/// AVCDecoderConfigurationRecord (ISO 14496-15, 5.3.3).
pub fn parse_avcc(bytes: &[u8]) -> ParseResult<CodecInfo> {
    let mut r = Reader::new(bytes, "avcC");
    let mut info = empty(Codec::H264);
    let _version = r.u8()?;
    info.profile_idc = r.u8()?;
    let _compat = r.u8()?;
    info.level_idc = r.u8()?;
    info.nal_length_size = (r.u8()? & 3) + 1;
    if info.nal_length_size == 3 {
        return Err("avcC: a NAL length size of 3 bytes is not allowed".into());
    }
    let n_sps = r.u8()? & 0x1f;
    for _ in 0..n_sps {
        let len = usize::from(r.u16()?);
        info.parameter_sets.push(r.take(len)?.to_vec());
    }
    let n_pps = r.u8()?;
    for _ in 0..n_pps {
        let len = usize::from(r.u16()?);
        info.parameter_sets.push(r.take(len)?.to_vec());
    }
    if let Some(sps) = info.parameter_sets.first().filter(|_| n_sps > 0) {
        let (chroma, depth) = h264_sps_format(sps)?;
        info.chroma_format = chroma;
        info.bit_depth = depth;
    }
    Ok(info)
}

/// An H.264 SPS NAL unit, parsed by h264-reader.
pub(crate) fn parse_h264_sps(sps: &[u8]) -> ParseResult<h264_reader::nal::sps::SeqParameterSet> {
    // h264-reader's NAL decoder underflows on a unit shorter than its header and one byte.
    if sps.len() < 2 || sps[0] & 0x1f != 7 {
        return Err(invalid!(
            "H.264 SPS: not an SPS NAL unit ({} bytes)",
            sps.len()
        ));
    }
    let rbsp = h264_reader::rbsp::decode_nal(sps).map_err(|e| format!("H.264 SPS: {e}"))?;
    h264_reader::nal::sps::SeqParameterSet::from_bits(h264_reader::rbsp::BitReader::new(&rbsp[..]))
        .map_err(|e| format!("H.264 SPS: {e:?}").into())
}

/// `max_num_reorder_frames` of an H.264 SPS's VUI, where it says: how many frames a decoder
/// holds back before output (ffmpeg's `has_b_frames`).
pub fn h264_reorder_depth(sps: &[u8]) -> Option<u32> {
    let sps = parse_h264_sps(sps).ok()?;
    Some(
        sps.vui_parameters?
            .bitstream_restrictions?
            .max_num_reorder_frames,
    )
}

/// Chroma format and luma bit depth from an H.264 SPS NAL unit (h264-reader does the parsing).
pub fn h264_sps_format(sps: &[u8]) -> ParseResult<(u8, u8)> {
    use h264_reader::nal::sps::ChromaFormat;
    let sps = parse_h264_sps(sps)?;
    let chroma = match sps.chroma_info.chroma_format {
        ChromaFormat::Monochrome => 0,
        ChromaFormat::YUV420 => 1,
        ChromaFormat::YUV422 => 2,
        ChromaFormat::YUV444 => 3,
        ChromaFormat::Invalid(v) => return Err(invalid!("H.264 SPS: chroma_format_idc {v}")),
    };
    Ok((chroma, sps.chroma_info.bit_depth_luma_minus8 + 8))
}

/// HEVCDecoderConfigurationRecord (ISO 14496-15, 8.3.3).
pub fn parse_hvcc(bytes: &[u8]) -> ParseResult<CodecInfo> {
    let mut r = Reader::new(bytes, "hvcC");
    let mut info = empty(Codec::Hevc);
    let _version = r.u8()?;
    info.profile_idc = r.u8()? & 0x1f;
    r.skip(4 + 6)?; // compatibility and constraint flags
    info.level_idc = r.u8()?;
    r.skip(2 + 1)?; // min_spatial_segmentation, parallelismType
    info.chroma_format = r.u8()? & 3;
    info.bit_depth = (r.u8()? & 7) + 8;
    r.skip(1 + 2)?; // bit depth chroma, avgFrameRate
    info.nal_length_size = (r.u8()? & 3) + 1;
    if info.nal_length_size == 3 {
        return Err("hvcC: a NAL length size of 3 bytes is not allowed".into());
    }
    let arrays = r.u8()?;
    let mut sets: Vec<(u8, Vec<u8>)> = Vec::new();
    for _ in 0..arrays {
        let nal_type = r.u8()? & 0x3f;
        let n = r.u16()?;
        for _ in 0..n {
            let len = usize::from(r.u16()?);
            sets.push((nal_type, r.take(len)?.to_vec()));
        }
    }
    // Decoders need VPS, SPS, PPS in that order; SEI arrays come last.
    sets.sort_by_key(|(t, _)| match t {
        32 => 0,
        33 => 1,
        34 => 2,
        _ => 3,
    });
    info.parameter_sets = sets.into_iter().map(|(_, s)| s).collect();
    Ok(info)
}

/// `num_extra_slice_header_bits` and `dependent_slice_segments_enabled_flag` of an HEVC PPS,
/// which come before `slice_type` in a slice header; keyed by the PPS id.
pub fn hevc_pps_slice_fields(pps: &[u8]) -> ParseResult<(u32, HevcPpsFields)> {
    let rbsp = unescape(pps.get(2..).unwrap_or_default(), 64);
    let mut b = BitReader::new(&rbsp);
    let id = b.ue()?;
    let _sps_id = b.ue()?;
    let dependent_slice_segments_enabled = b.bit()?;
    let output_flag_present = b.bit()?;
    let num_extra_slice_header_bits = b.bits(3)?;
    Ok((
        id,
        HevcPpsFields {
            dependent_slice_segments_enabled,
            output_flag_present,
            num_extra_slice_header_bits,
        },
    ))
}

/// The PPS fields an HEVC slice header's first bits depend on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HevcPpsFields {
    /// `dependent_slice_segments_enabled_flag`.
    pub dependent_slice_segments_enabled: bool,
    /// `output_flag_present_flag`.
    pub output_flag_present: bool,
    /// `num_extra_slice_header_bits`.
    pub num_extra_slice_header_bits: u32,
}
