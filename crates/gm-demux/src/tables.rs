//! Expanding a track's sample tables (from mp4parse, or from movie fragments) into one entry
//! per sample in decode order, with every count and offset checked against the file.

use crate::boxes::{Children, Reader, find};
use crate::error::ParseResult;

/// One sample, in decode order, before presentation order and GOPs are worked out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawSample {
    /// Decode time in track ticks (before the edit list).
    pub dts: i64,
    /// Composition time in track ticks (before the edit list).
    pub cts: i64,
    /// Duration in ticks.
    pub duration: u32,
    /// Byte offset in the file.
    pub offset: u64,
    /// Size in bytes.
    pub size: u32,
    /// The container's sync flag.
    pub sync: bool,
}

/// The most samples a track may have: 24 hours at 240 fps. Tables that declare more are
/// rejected before anything is allocated for them.
pub const MAX_SAMPLES: u64 = 24 * 3600 * 240;

/// Expands mp4parse's tables of a track from a non-fragmented `moov`.
pub fn expand_track(track: &mp4parse::Track, file_len: u64) -> ParseResult<Vec<RawSample>> {
    let (Some(stts), Some(stsc), Some(stsz), Some(stco)) =
        (&track.stts, &track.stsc, &track.stsz, &track.stco)
    else {
        // A fragmented file's moov has empty or missing tables.
        return Ok(Vec::new());
    };
    let stts_total = stts
        .samples
        .iter()
        .try_fold(0u64, |a, s| a.checked_add(u64::from(s.sample_count)))
        .ok_or("'stts' sample counts overflow")?;
    let count = if stsz.sample_size == 0 {
        stsz.sample_sizes.len() as u64
    } else {
        stts_total
    };
    if count > MAX_SAMPLES {
        return Err(format!(
            "the track declares {count} samples, more than {MAX_SAMPLES}"
        ));
    }
    if stsz.sample_size != 0 && count.saturating_mul(u64::from(stsz.sample_size)) > file_len {
        return Err(format!(
            "{count} samples of {} bytes do not fit in the {file_len}-byte file",
            stsz.sample_size
        ));
    }
    if stts_total < count {
        return Err(format!(
            "'stts' gives times for {stts_total} samples, 'stsz' has {count}"
        ));
    }
    let count = count as usize;
    let mut out: Vec<RawSample> = Vec::with_capacity(count);

    // Offsets: chunks from stco, samples per chunk from stsc, sizes from stsz.
    let size_of = |i: usize| -> u32 {
        if stsz.sample_size != 0 {
            stsz.sample_size
        } else {
            stsz.sample_sizes[i]
        }
    };
    let chunks = stco.offsets.len();
    let runs = &stsc.samples;
    for (k, run) in runs.iter().enumerate() {
        if run.first_chunk == 0 || (k > 0 && run.first_chunk <= runs[k - 1].first_chunk) {
            return Err(format!(
                "'stsc' entry {k} has first chunk {}",
                run.first_chunk
            ));
        }
        let first = run.first_chunk as usize - 1;
        let last = match runs.get(k + 1) {
            Some(next) => (next.first_chunk as usize - 1).min(chunks),
            None => chunks,
        };
        for chunk in first..last.max(first) {
            if chunk >= chunks {
                break;
            }
            let mut offset = stco.offsets[chunk];
            for _ in 0..run.samples_per_chunk {
                if out.len() == count {
                    break;
                }
                let size = size_of(out.len());
                let end = offset
                    .checked_add(u64::from(size))
                    .filter(|&e| e <= file_len)
                    .ok_or_else(|| {
                        format!(
                            "sample {} ({size} bytes at offset {offset}) lies outside the {file_len}-byte file",
                            out.len()
                        )
                    })?;
                out.push(RawSample {
                    dts: 0,
                    cts: 0,
                    duration: 0,
                    offset,
                    size,
                    sync: track.stss.is_none(),
                });
                offset = end;
            }
        }
    }
    if out.len() != count {
        return Err(format!(
            "'stsc'/'stco' place {} samples, 'stsz' has {count}",
            out.len()
        ));
    }

    // Decode times.
    let mut i = 0usize;
    let mut dts: i64 = 0;
    'stts: for run in stts.samples.iter() {
        for _ in 0..run.sample_count {
            if i == count {
                break 'stts;
            }
            out[i].dts = dts;
            out[i].duration = run.sample_delta;
            dts = dts
                .checked_add(i64::from(run.sample_delta))
                .ok_or("decode times overflow")?;
            i += 1;
        }
    }

    // Composition offsets; version 0 offsets are read as signed, as ffmpeg does.
    let mut i = 0usize;
    if let Some(ctts) = &track.ctts {
        'ctts: for run in ctts.samples.iter() {
            let off = match run.time_offset {
                mp4parse::TimeOffsetVersion::Version0(v) => i64::from(v as i32),
                mp4parse::TimeOffsetVersion::Version1(v) => i64::from(v),
            };
            for _ in 0..run.sample_count {
                if i == count {
                    break 'ctts;
                }
                out[i].cts = out[i].dts + off;
                i += 1;
            }
        }
    }
    for s in &mut out[i..] {
        s.cts = s.dts;
    }

    if let Some(stss) = &track.stss {
        for &n in stss.samples.iter() {
            match (n as usize).checked_sub(1).and_then(|k| out.get_mut(k)) {
                Some(s) => s.sync = true,
                None => return Err(format!("'stss' names sample {n} of {count}")),
            }
        }
    }
    Ok(out)
}

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

/// Appends the samples of `track_id` from one `moof` box (the whole box in `moof`, which starts
/// at `moof_offset` in the file). `next_dts` carries decode time across fragments without
/// `tfdt`.
pub fn expand_fragment(
    moof: &[u8],
    moof_offset: u64,
    track_id: u32,
    trex: TrackExtends,
    file_len: u64,
    next_dts: &mut i64,
    out: &mut Vec<RawSample>,
) -> ParseResult<()> {
    let header = crate::boxes::parse_header(moof, 0, moof.len() as u64)?;
    let content = &moof[header.header_len as usize..];
    let mut prev_data_end: Option<u64> = None;
    for child in Children::new(content) {
        let (h, traf) = child?;
        if &h.kind != b"traf" {
            continue;
        }
        let tfhd = find(traf, b"tfhd")?.ok_or("'traf' without 'tfhd'")?;
        let mut r = Reader::new(tfhd, "tfhd");
        let flags = r.u32()? & 0x00ff_ffff;
        if r.u32()? != track_id {
            continue;
        }
        let base_offset = if flags & 0x1 != 0 {
            Some(r.u64()?)
        } else {
            None
        };
        if flags & 0x2 != 0 {
            r.skip(4)?;
        }
        let default_duration = if flags & 0x8 != 0 {
            r.u32()?
        } else {
            trex.duration
        };
        let default_size = if flags & 0x10 != 0 {
            r.u32()?
        } else {
            trex.size
        };
        let default_flags = if flags & 0x20 != 0 {
            r.u32()?
        } else {
            trex.flags
        };
        let default_base_is_moof = flags & 0x2_0000 != 0;
        let base = match base_offset {
            Some(b) => b,
            None if default_base_is_moof => moof_offset,
            None => prev_data_end.unwrap_or(moof_offset),
        };
        if let Some(tfdt) = find(traf, b"tfdt")? {
            let mut r = Reader::new(tfdt, "tfdt");
            let version = r.u8()?;
            r.skip(3)?;
            let t = if version == 1 {
                r.u64()?
            } else {
                u64::from(r.u32()?)
            };
            *next_dts = i64::try_from(t).map_err(|_| "'tfdt' time out of range")?;
        }
        let mut data_pos = base;
        for trun in crate::boxes::find_all(traf, b"trun")? {
            let mut r = Reader::new(trun, "trun");
            let tflags = r.u32()? & 0x00ff_ffff;
            let count = r.u32()?;
            let per_sample = [0x100, 0x200, 0x400, 0x800]
                .iter()
                .filter(|&&f| tflags & f != 0)
                .count()
                * 4;
            if per_sample > 0 && (count as usize).saturating_mul(per_sample) > r.remaining() {
                return Err(format!(
                    "'trun' declares {count} samples but holds data for fewer"
                ));
            }
            if out.len() as u64 + u64::from(count) > MAX_SAMPLES {
                return Err(format!("fragments declare more than {MAX_SAMPLES} samples"));
            }
            if tflags & 0x1 != 0 {
                let off = r.u32()? as i32;
                data_pos = base
                    .checked_add_signed(i64::from(off))
                    .ok_or("'trun' data offset out of range")?;
            }
            let first_flags = if tflags & 0x4 != 0 {
                Some(r.u32()?)
            } else {
                None
            };
            for k in 0..count {
                let duration = if tflags & 0x100 != 0 {
                    r.u32()?
                } else {
                    default_duration
                };
                let size = if tflags & 0x200 != 0 {
                    r.u32()?
                } else {
                    default_size
                };
                let sflags = if tflags & 0x400 != 0 {
                    r.u32()?
                } else if k == 0 {
                    first_flags.unwrap_or(default_flags)
                } else {
                    default_flags
                };
                // Version 0 offsets are unsigned by the letter of the spec; like ffmpeg, read
                // them as signed, which is what muxers that write negative offsets mean.
                let cto = if tflags & 0x800 != 0 {
                    i64::from(r.u32()? as i32)
                } else {
                    0
                };
                let end = data_pos
                    .checked_add(u64::from(size))
                    .filter(|&e| e <= file_len)
                    .ok_or_else(|| {
                        format!(
                            "fragment sample ({size} bytes at offset {data_pos}) lies outside the {file_len}-byte file"
                        )
                    })?;
                out.push(RawSample {
                    dts: *next_dts,
                    cts: *next_dts + cto,
                    duration,
                    offset: data_pos,
                    size,
                    sync: sflags & SAMPLE_IS_NON_SYNC == 0,
                });
                *next_dts = next_dts
                    .checked_add(i64::from(duration))
                    .ok_or("decode times overflow")?;
                data_pos = end;
            }
        }
        prev_data_end = Some(data_pos);
    }
    Ok(())
}
