//! Reading one video track of an MP4/MOV file: the `moov` box, the chosen track's codec,
//! timescale and edit list, and its samples from the sample tables and any movie fragments.

use std::path::Path;

use crate::boxes::{Reader, TopLevel, find, find_path, read_box, scan_top_level};
use crate::codec::{CodecInfo, EntryError, parse_stsd};
use crate::container::{Container, Track};
use crate::error::{DemuxError, ParseError, ParseResult, Result, invalid};
use crate::fragment::{Fragment, TrackExtends, expand_fragment, parse_trex};
use crate::options::TrackSelect;
use crate::orientation::DisplayOrientation;
use crate::source::ByteSource;
use crate::tables::{RawSample, expand_track};

/// Largest `moov` accepted (a 24-hour 240 fps track's tables take about 200 MiB).
const MAX_MOOV: u64 = 512 << 20;
/// Largest `moof` accepted.
const MAX_MOOF: u64 = 64 << 20;

/// The `moov` box in memory, the top-level boxes around it, and mp4parse's reading of it.
struct Moov {
    top: TopLevel,
    bytes: Vec<u8>,
    header_len: usize,
    ctx: mp4parse::MediaContext,
}

impl Moov {
    fn content(&self) -> &[u8] {
        &self.bytes[self.header_len..]
    }
}

/// Reads the track `select` picks from `src`.
pub(crate) fn read_track(src: &dyn ByteSource, select: TrackSelect) -> Result<Track> {
    let file = src.name();
    let bad = |e: ParseError| DemuxError::malformed(file, e);
    let moov = read_moov(src).map_err(bad)?;
    let traks = crate::boxes::find_all(moov.content(), b"trak").map_err(bad)?;
    if traks.len() != moov.ctx.tracks.len() {
        return Err(bad(invalid!(
            "{} 'trak' boxes but {} tracks parsed",
            traks.len(),
            moov.ctx.tracks.len()
        )));
    }
    let ti = select_track(file, &moov.ctx.tracks, select)?;
    let (track, trak) = (&moov.ctx.tracks[ti], traks[ti]);
    let track_id = track.track_id.unwrap_or(0);
    let codec = track_codec(file, trak, track_id)?;
    let timescale = track
        .timescale
        .map(|t| t.0)
        .filter(|&t| t > 0 && t <= u64::from(u32::MAX))
        .ok_or_else(|| bad(invalid!("track {track_id} has no valid timescale")))?
        as u32;
    let samples = read_samples(src, &moov, track, track_id)?;
    let movie_timescale = moov
        .ctx
        .timescale
        .map(|t| t.0)
        .unwrap_or(u64::from(timescale));
    let edit = find_path(trak, &[b"edts", b"elst"])
        .and_then(|elst| {
            elst.map(|e| parse_elst(e, movie_timescale, u64::from(timescale)))
                .transpose()
        })
        .map_err(bad)?
        .flatten();
    let orientation = display_orientation(file, track);
    Ok(Track {
        container: Container::Mp4,
        track_id,
        timescale,
        codec,
        samples,
        edit_shift: edit,
        fragmented: !moov.top.moofs.is_empty(),
        orientation,
        chroma_siting: crate::chroma_location::ChromaLocation::Unspecified,
    })
}

/// The track header's display matrix as a turn and mirror; a matrix that turns by another
/// angle (or shears) is shown as stored, as ffmpeg's autorotation leaves it, with a warning.
fn display_orientation(file: &Path, track: &mp4parse::Track) -> DisplayOrientation {
    let Some(m) = track.tkhd.as_ref().map(|t| &t.matrix) else {
        return DisplayOrientation::STORED;
    };
    DisplayOrientation::from_matrix(m.a, m.b, m.c, m.d).unwrap_or_else(|| {
        tracing::warn!(
            file = %file.display(),
            matrix = ?(m.a, m.b, m.c, m.d),
            "display matrix is not a multiple of 90 degrees: frames are shown as stored"
        );
        DisplayOrientation::STORED
    })
}

/// Finds the `moov` box, reads it, checks its tables' declared counts and has mp4parse read
/// the boxes it needs.
fn read_moov(src: &dyn ByteSource) -> ParseResult<Moov> {
    let top = scan_top_level(src)?;
    let moov_h = top
        .moov
        .ok_or("no 'moov' box: the file is truncated or was never finalized")?;
    let bytes = read_box(src, &moov_h, MAX_MOOV)?;
    let header_len = moov_h.header_len as usize;
    crate::boxes::check_table_counts(&bytes[header_len..])?;
    let mut for_mp4parse = bytes.clone();
    crate::boxes::hide_from_mp4parse(&mut for_mp4parse)?;
    let ctx = mp4parse::read_mp4(&mut std::io::Cursor::new(&for_mp4parse[..]))
        .map_err(|e| invalid!("the 'moov' box could not be parsed: {e:?}"))?;
    Ok(Moov {
        top,
        bytes,
        header_len,
        ctx,
    })
}

/// The position of the track `select` picks among `tracks`; it must be a video track.
fn select_track(file: &Path, tracks: &[mp4parse::Track], select: TrackSelect) -> Result<usize> {
    let pick = tracks.iter().position(|t| match select {
        TrackSelect::FirstVideo => t.track_type == mp4parse::TrackType::Video,
        TrackSelect::Id(id) => t.track_id == Some(id),
    });
    let Some(ti) = pick else {
        let have: Vec<String> = tracks
            .iter()
            .map(|t| format!("{} ({:?})", t.track_id.unwrap_or(0), t.track_type))
            .collect();
        return Err(DemuxError::NoTrack {
            file: file.to_path_buf(),
            reason: format!(
                "no {} among tracks [{}]",
                match select {
                    TrackSelect::FirstVideo => "video track".to_string(),
                    TrackSelect::Id(id) => format!("track {id}"),
                },
                have.join(", ")
            ),
        });
    };
    let track = &tracks[ti];
    if track.track_type != mp4parse::TrackType::Video {
        return Err(DemuxError::NoTrack {
            file: file.to_path_buf(),
            reason: format!(
                "track {} is {:?}, not video",
                track.track_id.unwrap_or(0),
                track.track_type
            ),
        });
    }
    Ok(ti)
}

/// The codec of a track, from its sample description (`trak` is the box's content).
fn track_codec(file: &Path, trak: &[u8], track_id: u32) -> Result<CodecInfo> {
    let bad = |e| DemuxError::malformed(file, e);
    let stsd = find_path(trak, &[b"mdia", b"minf", b"stbl", b"stsd"])
        .map_err(bad)?
        .ok_or_else(|| bad(invalid!("track {track_id} has no 'stsd'")))?;
    parse_stsd(stsd).map_err(|e| match e {
        EntryError::Unsupported(codec) => DemuxError::UnsupportedCodec {
            file: file.to_path_buf(),
            codec,
        },
        EntryError::Malformed(m) => bad(m),
    })
}

/// The track's samples in decode order: those of its sample tables, then those of every
/// movie fragment.
fn read_samples(
    src: &dyn ByteSource,
    moov: &Moov,
    track: &mp4parse::Track,
    track_id: u32,
) -> Result<Vec<RawSample>> {
    let file = src.name();
    let bad = |e: ParseError| DemuxError::malformed(file, e);
    let mut samples = expand_track(track, src.len()).map_err(bad)?;
    if !moov.top.moofs.is_empty() {
        let trex = match find(moov.content(), b"mvex").map_err(bad)? {
            Some(mvex) => parse_trex(mvex, track_id).map_err(bad)?,
            None => None,
        }
        .unwrap_or(TrackExtends::default());
        let mut next_dts = samples
            .last()
            .map(|s| s.dts + i64::from(s.duration))
            .unwrap_or(0);
        for h in &moov.top.moofs {
            let moof = read_box(src, h, MAX_MOOF).map_err(bad)?;
            let frag = Fragment {
                moof: &moof,
                offset: h.offset,
                track_id,
                trex,
                file_len: src.len(),
            };
            expand_fragment(&frag, &mut next_dts, &mut samples)
                .map_err(|e| bad(invalid!("'moof' at offset {}: {e}", h.offset)))?;
        }
    }
    if samples.is_empty() {
        return Err(bad(invalid!("track {track_id} has no samples")));
    }
    if samples.len() > u32::MAX as usize - 1 {
        return Err(bad("too many samples".into()));
    }
    Ok(samples)
}

/// Reads `elst` into the ticks to subtract from composition times: leading empty edits delay
/// the start, the first media edit says where the presentation starts in media time. Like
/// ffmpeg, later edits are not applied.
fn parse_elst(elst: &[u8], movie_ts: u64, track_ts: u64) -> ParseResult<Option<i64>> {
    let mut r = Reader::new(elst, "elst");
    let version = r.u8()?;
    r.skip(3)?;
    let count = r.u32()?;
    let entry_len = if version == 1 { 20 } else { 12 };
    if (count as usize).saturating_mul(entry_len) > r.remaining() {
        return Err(invalid!("'elst' declares {count} entries but holds fewer"));
    }
    let mut empty_ticks: i64 = 0;
    for _ in 0..count {
        let (duration, media_time) = if version == 1 {
            (r.u64()?, r.u64()? as i64)
        } else {
            (u64::from(r.u32()?), i64::from(r.u32()? as i32))
        };
        r.skip(4)?; // media rate
        if media_time == -1 {
            let ticks = u128::from(duration) * u128::from(track_ts) / u128::from(movie_ts.max(1));
            empty_ticks = empty_ticks.saturating_add(i64::try_from(ticks).unwrap_or(i64::MAX));
            continue;
        }
        return Ok(Some(media_time.saturating_sub(empty_ticks)));
    }
    Ok((empty_ticks != 0).then_some(-empty_ticks))
}
