//! Expanding movie fragments (`moof`/`traf`/`trun`) into one entry per sample in decode order,
//! with every count and offset checked against the file.

use crate::boxes::{Children, Reader, find};
use crate::error::{ParseResult, invalid};
use crate::tables::{MAX_SAMPLES, RawSample};

/// Defaults for a track's fragments, from `moov/mvex/trex`.
#[derive(Debug, Clone, Copy, Default)]
pub struct TrackExtends {
    /// `default_sample_duration`.
    pub duration: u32,
    /// `default_sample_size`.
    pub size: u32,
    /// `default_sample_flags`.
    pub flags: u32,
}

/// Reads the `trex` of `track_id` from the content of `mvex`.
pub fn parse_trex(mvex: &[u8], track_id: u32) -> ParseResult<Option<TrackExtends>> {
    for child in Children::new(mvex) {
        let (h, content) = child?;
        if &h.kind != b"trex" {
            continue;
        }
        let mut r = Reader::new(content, "trex");
        r.skip(4)?;
        if r.u32()? != track_id {
            continue;
        }
        r.skip(4)?; // default_sample_description_index
        return Ok(Some(TrackExtends {
            duration: r.u32()?,
            size: r.u32()?,
            flags: r.u32()?,
        }));
    }
    Ok(None)
}

const SAMPLE_IS_NON_SYNC: u32 = 0x0001_0000;

/// Where a fragment's samples are and what they default to.
pub struct Fragment<'a> {
    /// The whole `moof` box.
    pub moof: &'a [u8],
    /// Its offset in the file.
    pub offset: u64,
    /// The track whose samples are wanted.
    pub track_id: u32,
    /// The track's defaults.
    pub trex: TrackExtends,
    /// The file's length, which every sample must lie within.
    pub file_len: u64,
}

/// A track fragment's header (`tfhd`): its data's base offset and sample defaults.
#[derive(Debug, Clone, Copy)]
struct TrackFragmentHeader {
    base: u64,
    duration: u32,
    size: u32,
    flags: u32,
}

/// Where the next sample's bytes and time are: carried from `trun` to `trun`, and the decode
/// time from fragment to fragment.
struct Cursor<'o> {
    data_pos: u64,
    next_dts: &'o mut i64,
    out: &'o mut Vec<RawSample>,
}

/// Appends the samples of `frag.track_id` from one `moof` box. `next_dts` carries decode
/// time across fragments without `tfdt`.
pub fn expand_fragment(
    frag: &Fragment<'_>,
    next_dts: &mut i64,
    out: &mut Vec<RawSample>,
) -> ParseResult<()> {
    let header = crate::boxes::parse_header(frag.moof, 0, frag.moof.len() as u64)?;
    let content = &frag.moof[header.header_len as usize..];
    let mut prev_data_end: Option<u64> = None;
    for child in Children::new(content) {
        let (h, traf) = child?;
        if &h.kind != b"traf" {
            continue;
        }
        let Some(tfhd) = parse_tfhd(traf, frag, prev_data_end)? else {
            continue;
        };
        if let Some(t) = parse_tfdt(traf)? {
            *next_dts = t;
        }
        let mut cursor = Cursor {
            data_pos: tfhd.base,
            next_dts: &mut *next_dts,
            out: &mut *out,
        };
        for trun in crate::boxes::find_all(traf, b"trun")? {
            expand_trun(trun, &tfhd, frag.file_len, &mut cursor)?;
        }
        prev_data_end = Some(cursor.data_pos);
    }
    Ok(())
}

/// The `tfhd` of a `traf`, or `None` when the `traf` is another track's.
fn parse_tfhd(
    traf: &[u8],
    frag: &Fragment<'_>,
    prev_data_end: Option<u64>,
) -> ParseResult<Option<TrackFragmentHeader>> {
    let tfhd = find(traf, b"tfhd")?.ok_or("'traf' without 'tfhd'")?;
    let mut r = Reader::new(tfhd, "tfhd");
    let flags = r.u32()? & 0x00ff_ffff;
    if r.u32()? != frag.track_id {
        return Ok(None);
    }
    let base_offset = if flags & 0x1 != 0 {
        Some(r.u64()?)
    } else {
        None
    };
    if flags & 0x2 != 0 {
        r.skip(4)?;
    }
    let mut field = |bit: u32, default: u32| -> ParseResult<u32> {
        if flags & bit != 0 {
            r.u32()
        } else {
            Ok(default)
        }
    };
    let duration = field(0x8, frag.trex.duration)?;
    let size = field(0x10, frag.trex.size)?;
    let sample_flags = field(0x20, frag.trex.flags)?;
    let default_base_is_moof = flags & 0x2_0000 != 0;
    let base = match base_offset {
        Some(b) => b,
        None if default_base_is_moof => frag.offset,
        None => prev_data_end.unwrap_or(frag.offset),
    };
    Ok(Some(TrackFragmentHeader {
        base,
        duration,
        size,
        flags: sample_flags,
    }))
}

/// The decode time `tfdt` gives the fragment's first sample, if present.
fn parse_tfdt(traf: &[u8]) -> ParseResult<Option<i64>> {
    let Some(tfdt) = find(traf, b"tfdt")? else {
        return Ok(None);
    };
    let mut r = Reader::new(tfdt, "tfdt");
    let version = r.u8()?;
    r.skip(3)?;
    let t = if version == 1 {
        r.u64()?
    } else {
        u64::from(r.u32()?)
    };
    let t = i64::try_from(t).map_err(|_| "'tfdt' time out of range")?;
    Ok(Some(t))
}

/// Appends the samples of one `trun`.
fn expand_trun(
    trun: &[u8],
    tfhd: &TrackFragmentHeader,
    file_len: u64,
    cur: &mut Cursor<'_>,
) -> ParseResult<()> {
    let mut r = Reader::new(trun, "trun");
    let tflags = r.u32()? & 0x00ff_ffff;
    let count = r.u32()?;
    let per_sample = [0x100, 0x200, 0x400, 0x800]
        .iter()
        .filter(|&&f| tflags & f != 0)
        .count()
        * 4;
    if per_sample > 0 && (count as usize).saturating_mul(per_sample) > r.remaining() {
        return Err(invalid!(
            "'trun' declares {count} samples but holds data for fewer"
        ));
    }
    if cur.out.len() as u64 + u64::from(count) > MAX_SAMPLES {
        return Err(invalid!(
            "fragments declare more than {MAX_SAMPLES} samples"
        ));
    }
    if tflags & 0x1 != 0 {
        let off = r.u32()? as i32;
        cur.data_pos = tfhd
            .base
            .checked_add_signed(i64::from(off))
            .ok_or("'trun' data offset out of range")?;
    }
    let first_flags = if tflags & 0x4 != 0 {
        Some(r.u32()?)
    } else {
        None
    };
    for k in 0..count {
        let mut field = |bit: u32, default: u32| -> ParseResult<u32> {
            if tflags & bit != 0 {
                r.u32()
            } else {
                Ok(default)
            }
        };
        let duration = field(0x100, tfhd.duration)?;
        let size = field(0x200, tfhd.size)?;
        let sample_default = match (k, first_flags) {
            (0, Some(f)) => f,
            _ => tfhd.flags,
        };
        let sflags = field(0x400, sample_default)?;
        // Version 0 offsets are unsigned by the letter of the spec; like ffmpeg, read them as
        // signed, which is what muxers that write negative offsets mean.
        let cto = i64::from(field(0x800, 0)? as i32);
        let data_pos = cur.data_pos;
        let end = data_pos
            .checked_add(u64::from(size))
            .filter(|&e| e <= file_len)
            .ok_or_else(|| {
                invalid!(
                    "fragment sample ({size} bytes at offset {data_pos}) lies outside the {file_len}-byte file"
                )
            })?;
        let dts = *cur.next_dts;
        cur.out.push(RawSample {
            dts,
            cts: dts + cto,
            duration,
            offset: data_pos,
            size,
            sync: sflags & SAMPLE_IS_NON_SYNC == 0,
        });
        *cur.next_dts = dts
            .checked_add(i64::from(duration))
            .ok_or("decode times overflow")?;
        cur.data_pos = end;
    }
    Ok(())
}
