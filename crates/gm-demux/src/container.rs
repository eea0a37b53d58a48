//! Which container a file is (MP4/MOV or Matroska/WebM, told by its first bytes), and its
//! video track in the one form the index is built from.

use crate::chroma_location::ChromaLocation;
use crate::codec::{Codec, CodecInfo, h264_reorder_depth, parse_avcc, parse_hvcc};
use crate::error::{DemuxError, ParseError, Result};
use crate::mkv::MkvTrack;
use crate::options::TrackSelect;
use crate::orientation::DisplayOrientation;
use crate::scan::ScanError;
use crate::source::ByteSource;
use crate::tables::RawSample;

/// The container format of an indexed file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Container {
    /// ISO base media: MP4, MOV (and their fragmented forms).
    #[default]
    Mp4,
    /// Matroska, and WebM (its subset).
    Matroska,
}

impl Container {
    /// Short name, as ffprobe's `format_name` starts.
    pub fn name(self) -> &'static str {
        match self {
            Container::Mp4 => "mp4",
            Container::Matroska => "matroska",
        }
    }
}

/// One video track, before GOPs and presentation order.
pub(crate) struct Track {
    pub container: Container,
    /// MP4's `track_ID`, Matroska's `TrackNumber`.
    pub track_id: u32,
    /// Ticks per second of the samples' times.
    pub timescale: u32,
    pub codec: CodecInfo,
    /// Samples in decode order.
    pub samples: Vec<RawSample>,
    /// Ticks an MP4 edit list subtracts from composition times.
    pub edit_shift: Option<i64>,
    pub fragmented: bool,
    /// The display matrix's turn and mirror (MP4's `tkhd`, Matroska's rectangular Projection).
    pub orientation: DisplayOrientation,
    /// The container's chroma location (Matroska's Colour; MP4 has none).
    pub chroma_siting: ChromaLocation,
}

/// Reads the track `select` picks, in whichever container `src` is.
pub(crate) fn read_track(src: &dyn ByteSource, select: TrackSelect) -> Result<Track> {
    let mut head = [0u8; 4];
    let is_mkv =
        src.len() >= 4 && src.read_exact_at(&mut head, 0).is_ok() && crate::mkv::is_matroska(&head);
    if is_mkv {
        return matroska_track(src, select);
    }
    crate::mp4::read_track(src, select)
}

fn matroska_track(src: &dyn ByteSource, select: TrackSelect) -> Result<Track> {
    let mut t = crate::mkv::read_track(src, select)?;
    let file = src.name();
    if t.samples.is_empty() {
        return Err(DemuxError::malformed(
            file,
            format!("track {} has no frames", t.track_number),
        ));
    }
    let bad = |e: ParseError| DemuxError::malformed(file, format!("{}: {e}", t.codec_id));
    let mut codec = match t.codec_id.as_str() {
        "V_MPEG4/ISO/AVC" => parse_avcc(&t.codec_private).map_err(bad)?,
        "V_MPEGH/ISO/HEVC" => parse_hvcc(&t.codec_private).map_err(bad)?,
        "V_AV1" => crate::av1::parse_av1c(&t.codec_private).map_err(bad)?,
        "V_VP9" => vp9_from_first_frame(src, &t)?,
        other => {
            return Err(DemuxError::UnsupportedCodec {
                file: file.to_path_buf(),
                codec: other.to_string(),
            });
        }
    };
    // Matroska stores no decode times: `mkv::read_track` derived them from the presentation
    // times alone; ffmpeg also counts the decoder's reorder depth where the SPS states it, so
    // they are derived again only when that says more.
    let reorder = match codec.codec {
        Codec::H264 => codec
            .parameter_sets
            .first()
            .and_then(|sps| h264_reorder_depth(sps))
            .filter(|&d| d > 0),
        _ => None,
    };
    if let Some(depth) = reorder {
        crate::mkv::decode_times(&mut t.samples, depth as usize).map_err(bad)?;
    }
    codec.fourcc = t.codec_id.clone();
    codec.width = t.pixel_width;
    codec.height = t.pixel_height;
    Ok(Track {
        container: Container::Matroska,
        track_id: t.track_number,
        timescale: t.timescale,
        codec,
        samples: t.samples,
        edit_shift: None,
        fragmented: false,
        orientation: t.orientation,
        chroma_siting: t.chroma_siting,
    })
}

/// VP9 in Matroska has no configuration record that ffmpeg writes: the first key frame's
/// header says the profile, bit depth and chroma format.
fn vp9_from_first_frame(src: &dyn ByteSource, t: &MkvTrack) -> Result<CodecInfo> {
    let file = src.name();
    let first = t.samples.first().ok_or_else(|| DemuxError::NoTrack {
        file: file.to_path_buf(),
        reason: format!("track {} has no frames", t.track_number),
    })?;
    let frames = crate::scan::vp9_frames(src, first).map_err(|e| match e {
        ScanError::Io(source) => DemuxError::Io {
            file: file.to_path_buf(),
            source,
        },
        ScanError::Parse(e) => DemuxError::BadSample {
            file: file.to_path_buf(),
            sample: 0,
            reason: e.to_string(),
        },
    })?;
    let key = frames.iter().find(|f| f.format.is_some()).copied();
    key.ok_or_else(|| ParseError::from("the first frame is not a key frame"))
        .and_then(|f| crate::vp9::codec_info(&f))
        .map_err(|e| DemuxError::BadSample {
            file: file.to_path_buf(),
            sample: 0,
            reason: format!("VP9: {e}"),
        })
}
