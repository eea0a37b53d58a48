//! Expanding a track's sample tables (from mp4parse's reading of a non-fragmented `moov`)
//! into one entry per sample in decode order, with every count and offset checked against the
//! file. Movie fragments are expanded by the `fragment` module.

use crate::error::{ParseResult, invalid};

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
    let count = sample_count(stts, stsz, file_len)?;
    let mut out = place_samples(stsc, stco, stsz, count, file_len, track.stss.is_none())?;
    apply_decode_times(&mut out, stts)?;
    apply_composition_offsets(&mut out, track.ctts.as_ref());
    if let Some(stss) = &track.stss {
        apply_sync_samples(&mut out, stss)?;
    }
    Ok(out)
}

/// The number of samples `stsz` declares, checked against `stts` and the file's size before
/// anything is allocated for them.
fn sample_count(
    stts: &mp4parse::TimeToSampleBox,
    stsz: &mp4parse::SampleSizeBox,
    file_len: u64,
) -> ParseResult<usize> {
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
        return Err(invalid!(
            "the track declares {count} samples, more than {MAX_SAMPLES}"
        ));
    }
    if stsz.sample_size != 0 && count.saturating_mul(u64::from(stsz.sample_size)) > file_len {
        return Err(invalid!(
            "{count} samples of {} bytes do not fit in the {file_len}-byte file",
            stsz.sample_size
        ));
    }
    if stts_total < count {
        return Err(invalid!(
            "'stts' gives times for {stts_total} samples, 'stsz' has {count}"
        ));
    }
    Ok(count as usize)
}

/// Byte ranges of `count` samples: chunks from `stco`, samples per chunk from `stsc`, sizes
/// from `stsz`; every sample must lie inside the file. Times are filled in later.
fn place_samples(
    stsc: &mp4parse::SampleToChunkBox,
    stco: &mp4parse::ChunkOffsetBox,
    stsz: &mp4parse::SampleSizeBox,
    count: usize,
    file_len: u64,
    all_sync: bool,
) -> ParseResult<Vec<RawSample>> {
    let mut out: Vec<RawSample> = Vec::with_capacity(count);
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
            return Err(invalid!(
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
                        invalid!(
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
                    sync: all_sync,
                });
                offset = end;
            }
        }
    }
    if out.len() != count {
        return Err(invalid!(
            "'stsc'/'stco' place {} samples, 'stsz' has {count}",
            out.len()
        ));
    }
    Ok(out)
}

/// Decode times and durations from `stts`.
fn apply_decode_times(out: &mut [RawSample], stts: &mp4parse::TimeToSampleBox) -> ParseResult<()> {
    let mut samples = out.iter_mut();
    let mut dts: i64 = 0;
    for run in stts.samples.iter() {
        for _ in 0..run.sample_count {
            let Some(s) = samples.next() else {
                return Ok(());
            };
            s.dts = dts;
            s.duration = run.sample_delta;
            dts = dts
                .checked_add(i64::from(run.sample_delta))
                .ok_or("decode times overflow")?;
        }
    }
    Ok(())
}

/// Composition times: decode times plus `ctts` offsets (version 0 offsets are read as signed,
/// as ffmpeg does); samples `ctts` does not cover are composed at their decode time.
fn apply_composition_offsets(out: &mut [RawSample], ctts: Option<&mp4parse::CompositionOffsetBox>) {
    let mut i = 0usize;
    if let Some(ctts) = ctts {
        'ctts: for run in ctts.samples.iter() {
            let off = match run.time_offset {
                mp4parse::TimeOffsetVersion::Version0(v) => i64::from(v as i32),
                mp4parse::TimeOffsetVersion::Version1(v) => i64::from(v),
            };
            for _ in 0..run.sample_count {
                let Some(s) = out.get_mut(i) else {
                    break 'ctts;
                };
                s.cts = s.dts + off;
                i += 1;
            }
        }
    }
    for s in &mut out[i..] {
        s.cts = s.dts;
    }
}

/// Sync flags from `stss` (1-based sample numbers).
fn apply_sync_samples(out: &mut [RawSample], stss: &mp4parse::SyncSampleBox) -> ParseResult<()> {
    let count = out.len();
    for &n in stss.samples.iter() {
        match (n as usize).checked_sub(1).and_then(|k| out.get_mut(k)) {
            Some(s) => s.sync = true,
            None => return Err(invalid!("'stss' names sample {n} of {count}")),
        }
    }
    Ok(())
}
