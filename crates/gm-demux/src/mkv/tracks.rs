//! The EBML header's DocType, Info's TimestampScale, and the chosen video track of Tracks.

use super::ebml::{Children, Header, Reader, float, string, uint};
use super::ids;
use crate::error::{DemuxError, ParseResult, Result, invalid};
use crate::options::TrackSelect;
use crate::orientation::DisplayOrientation;

/// TimestampScale when Info does not give one: ticks of one millisecond.
pub(crate) const DEFAULT_TIMESTAMP_SCALE: u64 = 1_000_000;
/// Largest CodecPrivate accepted.
pub(crate) const MAX_CODEC_PRIVATE: usize = 1 << 20;
/// TrackType of video tracks.
const VIDEO_TRACK: u64 = 1;

/// The DocType of the EBML header whose data is `data` (at file offset `base`), which must
/// be `webm` or `matroska`.
pub(crate) fn doc_type(data: &[u8], base: u64) -> ParseResult<String> {
    let mut doc = None;
    for child in Children::new(data, base) {
        let (h, d) = child?;
        if h.id == ids::DOC_TYPE {
            doc = Some(string(d));
        }
    }
    match doc {
        Some(d) if d == "webm" || d == "matroska" => Ok(d),
        Some(d) => Err(invalid!(
            "not a Matroska/WebM file: the EBML DocType is \"{}\"",
            d.escape_default()
        )),
        None => Err("not a Matroska/WebM file: the EBML header has no DocType".into()),
    }
}

/// The TimestampScale (nanoseconds per Segment tick) of Info's data; nonzero.
pub(crate) fn timestamp_scale(data: &[u8], base: u64) -> ParseResult<u64> {
    let mut scale = DEFAULT_TIMESTAMP_SCALE;
    for child in Children::new(data, base) {
        let (h, d) = child?;
        if h.id == ids::TIMESTAMP_SCALE {
            scale = uint(&h, d)?;
        }
    }
    if scale == 0 {
        return Err("Info's TimestampScale is 0".into());
    }
    Ok(scale)
}

/// What the walk needs of the chosen video track.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct VideoTrack {
    /// TrackNumber, which its blocks name.
    pub number: u32,
    /// CodecID.
    pub codec_id: String,
    /// CodecPrivate (empty if absent).
    pub codec_private: Vec<u8>,
    /// DefaultDuration in nanoseconds (0 if absent).
    pub default_duration: u64,
    /// CodecDelay in nanoseconds (0 if absent).
    pub codec_delay: u64,
    /// PixelWidth.
    pub width: u32,
    /// PixelHeight.
    pub height: u32,
    /// Colour's ChromaSitingHorz and ChromaSitingVert (0 where absent).
    pub chroma_siting: (u64, u64),
    /// The display orientation a rectangular Projection's pose gives (stored where absent).
    pub orientation: DisplayOrientation,
}

/// A Video element's Projection: its type and pose in degrees (0 where absent).
#[derive(Debug, Default, Clone, Copy)]
struct Projection {
    kind: u64,
    yaw: f64,
    pitch: f64,
    roll: f64,
}

/// One TrackEntry as read, before it is chosen and checked.
#[derive(Debug, Default)]
struct Entry<'a> {
    at: u64,
    number: Option<u64>,
    kind: Option<u64>,
    codec_id: Option<String>,
    codec_private: &'a [u8],
    default_duration: u64,
    codec_delay: u64,
    width: Option<u64>,
    height: Option<u64>,
    chroma_siting: (u64, u64),
    projection: Option<Projection>,
    encoded: bool,
}

/// Reads a TrackEntry's data.
fn parse_entry<'a>(h: &Header, data: &'a [u8]) -> ParseResult<Entry<'a>> {
    let mut e = Entry {
        at: h.at,
        ..Entry::default()
    };
    for child in Children::new(data, h.data) {
        let (c, d) = child?;
        match c.id {
            ids::TRACK_NUMBER => e.number = Some(uint(&c, d)?),
            ids::TRACK_TYPE => e.kind = Some(uint(&c, d)?),
            ids::CODEC_ID => e.codec_id = Some(string(d)),
            ids::CODEC_PRIVATE => e.codec_private = d,
            ids::DEFAULT_DURATION => e.default_duration = uint(&c, d)?,
            ids::CODEC_DELAY => e.codec_delay = uint(&c, d)?,
            ids::CONTENT_ENCODINGS => e.encoded = true,
            ids::VIDEO => parse_video(&c, d, &mut e)?,
            _ => {}
        }
    }
    Ok(e)
}

/// Reads PixelWidth, PixelHeight and Colour's chroma siting from a Video element's data.
fn parse_video(h: &Header, data: &[u8], e: &mut Entry) -> ParseResult<()> {
    for child in Children::new(data, h.data) {
        let (c, d) = child?;
        match c.id {
            ids::PIXEL_WIDTH => e.width = Some(uint(&c, d)?),
            ids::PIXEL_HEIGHT => e.height = Some(uint(&c, d)?),
            ids::COLOUR => {
                for colour in Children::new(d, c.data) {
                    let (k, v) = colour?;
                    match k.id {
                        ids::CHROMA_SITING_HORZ => e.chroma_siting.0 = uint(&k, v)?,
                        ids::CHROMA_SITING_VERT => e.chroma_siting.1 = uint(&k, v)?,
                        _ => {}
                    }
                }
            }
            ids::PROJECTION => e.projection = Some(parse_projection(&c, d)?),
            _ => {}
        }
    }
    Ok(())
}

/// Reads a Projection element's type and pose.
fn parse_projection(h: &Header, data: &[u8]) -> ParseResult<Projection> {
    let mut p = Projection::default();
    for child in Children::new(data, h.data) {
        let (k, v) = child?;
        match k.id {
            ids::PROJECTION_TYPE => p.kind = uint(&k, v)?,
            ids::PROJECTION_POSE_YAW => p.yaw = float(&k, v)?,
            ids::PROJECTION_POSE_PITCH => p.pitch = float(&k, v)?,
            ids::PROJECTION_POSE_ROLL => p.roll = float(&k, v)?,
            _ => {}
        }
    }
    Ok(p)
}

/// The orientation of a track's Projection, as ffmpeg reads it: only a rectangular
/// projection turns frames (spherical ones are left to the application); a pose that is not
/// a mirror and quarter turn is shown as stored, with a warning.
fn orientation(file: &std::path::Path, projection: Option<Projection>) -> DisplayOrientation {
    let Some(p) = projection.filter(|p| p.kind == 0) else {
        return DisplayOrientation::STORED;
    };
    DisplayOrientation::from_projection_pose(p.yaw, p.pitch, p.roll).unwrap_or_else(|| {
        tracing::warn!(
            file = %file.display(),
            pose = ?(p.yaw, p.pitch, p.roll),
            "the Projection's pose is not a quarter turn or mirror: frames are shown as stored"
        );
        DisplayOrientation::STORED
    })
}

/// A TrackType's name.
fn kind_name(kind: Option<u64>) -> String {
    match kind {
        Some(1) => "video".into(),
        Some(2) => "audio".into(),
        Some(3) => "complex".into(),
        Some(0x10) => "logo".into(),
        Some(0x11) => "subtitle".into(),
        Some(0x12) => "buttons".into(),
        Some(0x20) => "control".into(),
        Some(0x21) => "metadata".into(),
        Some(k) => format!("type {k}"),
        None => "untyped".into(),
    }
}

/// The video track `select` picks from the data of the Tracks element (at file offset `base`).
pub(crate) fn choose(
    r: &Reader,
    data: &[u8],
    base: u64,
    select: TrackSelect,
) -> Result<VideoTrack> {
    let mut entries = Vec::new();
    for child in Children::new(data, base) {
        let (h, d) = child.map_err(|e| r.bad(e))?;
        if h.id == ids::TRACK_ENTRY {
            entries.push(parse_entry(&h, d).map_err(|e| r.bad(e))?);
        }
    }
    let pick = entries.iter().find(|e| match select {
        TrackSelect::FirstVideo => e.kind == Some(VIDEO_TRACK),
        TrackSelect::Id(n) => e.number == Some(u64::from(n)),
    });
    let no_track = |reason: String| DemuxError::NoTrack {
        file: r.file().to_path_buf(),
        reason,
    };
    let Some(e) = pick else {
        let have: Vec<String> = entries
            .iter()
            .map(|e| format!("{} ({})", e.number.unwrap_or(0), kind_name(e.kind)))
            .collect();
        let wanted = match select {
            TrackSelect::FirstVideo => "video track".to_string(),
            TrackSelect::Id(n) => format!("track {n}"),
        };
        return Err(no_track(format!(
            "no {wanted} among tracks [{}]",
            have.join(", ")
        )));
    };
    if e.kind != Some(VIDEO_TRACK) {
        return Err(no_track(format!(
            "track {} is a {} track, not video",
            e.number.unwrap_or(0),
            kind_name(e.kind)
        )));
    }
    let mut track = check_entry(e).map_err(|e| r.bad(e))?;
    track.orientation = orientation(r.file(), e.projection);
    Ok(track)
}

/// The chosen entry, checked: a track number, a codec, a picture size, no content encoding.
fn check_entry(e: &Entry) -> ParseResult<VideoTrack> {
    let number = e
        .number
        .filter(|&n| n > 0)
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| invalid!("the TrackEntry at offset {} has no valid TrackNumber", e.at))?;
    if e.encoded {
        return Err(invalid!(
            "track {number} has a ContentEncoding: header stripping/compression/encryption not supported"
        ));
    }
    let codec_id = e
        .codec_id
        .clone()
        .ok_or_else(|| invalid!("track {number} has no CodecID"))?;
    if e.codec_private.len() > MAX_CODEC_PRIVATE {
        return Err(invalid!(
            "track {number}'s CodecPrivate has {} bytes, more than the {MAX_CODEC_PRIVATE} accepted",
            e.codec_private.len()
        ));
    }
    let dimension = |v: Option<u64>, name: &str| {
        v.filter(|&v| v > 0)
            .and_then(|v| u32::try_from(v).ok())
            .ok_or_else(|| invalid!("track {number} has no valid {name}"))
    };
    Ok(VideoTrack {
        number,
        codec_id,
        codec_private: e.codec_private.to_vec(),
        default_duration: e.default_duration,
        codec_delay: e.codec_delay,
        width: dimension(e.width, "PixelWidth")?,
        height: dimension(e.height, "PixelHeight")?,
        chroma_siting: e.chroma_siting,
        orientation: DisplayOrientation::STORED,
    })
}
