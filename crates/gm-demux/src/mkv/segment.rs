//! The file's top level: the EBML header, the Segment, and one linear pass over the Segment's
//! children (SeekHead, Info, Tracks, Cues, Clusters; anything else is skipped by its size).
//! Tracks (and Info) must precede the first Cluster or be listed in a SeekHead; SeekHeads are
//! followed only to find them, each read at most once.

use std::collections::HashSet;

use super::cluster::{BlockTiming, Frame, walk_cluster};
use super::ebml::{Children, Header, Reader, uint};
use super::ids;
use super::tracks::{DEFAULT_TIMESTAMP_SCALE, VideoTrack, choose, doc_type, timestamp_scale};
use crate::error::{ParseResult, Result, invalid};
use crate::options::TrackSelect;

/// Largest EBML header accepted.
const MAX_EBML_HEADER: u64 = 64 << 10;
/// Largest SeekHead read (a larger one is skipped).
const MAX_SEEK_HEAD: u64 = 1 << 20;
/// Largest Info accepted.
const MAX_INFO: u64 = 1 << 20;
/// Largest Cues read (larger ones are skipped).
const MAX_CUES: u64 = 64 << 20;
/// Largest Tracks accepted.
const MAX_TRACKS: u64 = 16 << 20;
/// Most SeekHeads read.
const MAX_SEEK_HEADS: usize = 64;

/// Where the Segment's children lie.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Segment {
    /// Offset of its data; SeekPositions count from here.
    pub data: u64,
    /// Where it ends: its declared end, or the end of the file for an unknown size.
    pub end: u64,
}

/// Checks the EBML header at offset 0 (DocType `webm` or `matroska`) and finds the first
/// Segment after it; returns the DocType and the Segment.
pub(crate) fn open(r: &Reader) -> Result<(String, Segment)> {
    let peek = r.peek(0)?;
    if !super::is_matroska(peek.bytes()) {
        return Err(r.bad("not a Matroska/WebM file: no EBML header"));
    }
    let (h, _) = r.header(0, r.len())?;
    let doc = doc_type(&r.data(&h, MAX_EBML_HEADER)?, h.data).map_err(|e| r.bad(e))?;
    let mut pos = h.known_end().map_err(|e| r.bad(e))?;
    while pos < r.len() {
        let (c, _) = r.header(pos, r.len())?;
        if c.id == ids::SEGMENT {
            let end = c.end().unwrap_or(r.len());
            return Ok((doc, Segment { data: c.data, end }));
        }
        pos = c.known_end().map_err(|e| r.bad(e))?;
    }
    Err(r.bad("no Segment after the EBML header"))
}

/// What the walk found of the chosen track.
pub(crate) struct Walked {
    /// The chosen track.
    pub track: VideoTrack,
    /// Nanoseconds per Segment tick.
    pub ts_scale: u64,
    /// Its frames in file order.
    pub frames: Vec<Frame>,
    /// Whether the Segment has Cues.
    pub has_cues: bool,
}

/// SeekHead entries read so far, and which SeekHeads were read.
#[derive(Default)]
struct Seeks {
    entries: Vec<(u32, u64)>,
    read: HashSet<u64>,
}

/// The walk's state.
struct Walk<'r, 'a> {
    r: &'r Reader<'a>,
    seg: Segment,
    select: TrackSelect,
    seeks: Seeks,
    ts_scale: Option<u64>,
    track: Option<VideoTrack>,
    timing: Option<BlockTiming>,
    frames: Vec<Frame>,
    /// (CueTrack, CueTime) of every cue.
    cues: Option<Vec<(u64, u64)>>,
}

/// Walks the Segment's children, reading the track `select` picks and its frames.
pub(crate) fn walk(r: &Reader, seg: Segment, select: TrackSelect) -> Result<Walked> {
    let mut w = Walk {
        r,
        seg,
        select,
        seeks: Seeks::default(),
        ts_scale: None,
        track: None,
        timing: None,
        frames: Vec::new(),
        cues: None,
    };
    let mut pos = seg.data;
    while pos < seg.end {
        let (h, _) = r.header(pos, seg.end)?;
        pos = if h.id == ids::CLUSTER {
            let timing = w.timing()?;
            walk_cluster(r, &h, seg.end, &timing, &mut w.frames)?
        } else {
            let end = h.known_end().map_err(|e| r.bad(e))?;
            w.top_level(&h)?;
            end
        };
    }
    w.timing()?;
    w.check_cues();
    let (Some(track), Some(ts_scale)) = (w.track, w.ts_scale) else {
        return Err(r.bad("no Tracks element"));
    };
    Ok(Walked {
        track,
        ts_scale,
        frames: w.frames,
        has_cues: w.cues.is_some(),
    })
}

impl Walk<'_, '_> {
    /// Reads a Segment-level element other than a Cluster, if it is one the walk needs.
    fn top_level(&mut self, h: &Header) -> Result<()> {
        match h.id {
            ids::SEEK_HEAD if self.seeks.read.insert(h.at) => self.read_seek_head(h),
            ids::INFO if self.ts_scale.is_none() => self.read_info(h),
            ids::TRACKS if self.track.is_none() => self.read_tracks(h),
            ids::CUES if self.cues.is_none() => {
                self.read_cues(h);
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn read_info(&mut self, h: &Header) -> Result<()> {
        let data = self.r.data(h, MAX_INFO)?;
        let scale = timestamp_scale(&data, h.data).map_err(|e| self.r.bad(e))?;
        self.ts_scale = Some(scale);
        Ok(())
    }

    fn read_tracks(&mut self, h: &Header) -> Result<()> {
        let data = self.r.data(h, MAX_TRACKS)?;
        self.track = Some(choose(self.r, &data, h.data, self.select)?);
        Ok(())
    }

    fn read_seek_head(&mut self, h: &Header) -> Result<()> {
        let size = h.known_end().map_err(|e| self.r.bad(e))? - h.data;
        if size > MAX_SEEK_HEAD {
            tracing::debug!("{}: skipped, {size} bytes", h.what());
            return Ok(());
        }
        let data = self.r.data(h, MAX_SEEK_HEAD)?;
        let entries = seek_entries(&data, h.data).map_err(|e| self.r.bad(e))?;
        self.seeks.entries.extend(entries);
        Ok(())
    }

    /// Reads the Cues' (CueTrack, CueTime) pairs, to cross-check keyframes; Cues that are too
    /// large or damaged are only logged, as they are not needed.
    fn read_cues(&mut self, h: &Header) {
        let size = h.end().unwrap_or(h.data) - h.data;
        let cues = if size > MAX_CUES {
            Err(invalid!("{size} bytes"))
        } else {
            self.r
                .data(h, MAX_CUES)
                .map_err(|e| invalid!("{e}"))
                .and_then(|data| cue_times(&data, h.data))
        };
        match cues {
            Ok(c) => self.cues = Some(c),
            Err(e) => {
                tracing::debug!("{}: not used: {e}", h.what());
                self.cues = Some(Vec::new());
            }
        }
    }

    /// The block timing, worked out at the first Cluster: Tracks and Info must come before
    /// it or be found through a SeekHead.
    fn timing(&mut self) -> Result<BlockTiming> {
        if let Some(t) = self.timing {
            return Ok(t);
        }
        if self.track.is_none() {
            let h = self.seek(ids::TRACKS)?.ok_or_else(|| {
                self.r
                    .bad("no Tracks element before the first Cluster, nor a SeekHead entry for one")
            })?;
            self.read_tracks(&h)?;
        }
        if self.ts_scale.is_none() {
            match self.seek(ids::INFO)? {
                Some(h) => self.read_info(&h)?,
                None => self.ts_scale = Some(DEFAULT_TIMESTAMP_SCALE),
            }
        }
        let (Some(track), Some(ts_scale)) = (&self.track, self.ts_scale) else {
            return Err(self.r.bad("no Tracks element"));
        };
        let t = BlockTiming {
            track: u64::from(track.number),
            ts_scale,
            default_duration: track.default_duration,
            codec_delay: ticks_rounded(track.codec_delay, ts_scale)
                .ok_or_else(|| self.r.bad("CodecDelay overflows"))?,
        };
        self.timing = Some(t);
        Ok(t)
    }

    /// The header of the element with ID `want` that a SeekHead lists, following SeekHeads
    /// listed in SeekHeads, each read at most once.
    fn seek(&mut self, want: u32) -> Result<Option<Header>> {
        loop {
            if let Some(&(_, p)) = self.seeks.entries.iter().find(|e| e.0 == want) {
                return self.seek_target(want, p).map(Some);
            }
            let next = self
                .seeks
                .entries
                .iter()
                .filter(|e| e.0 == ids::SEEK_HEAD)
                .filter_map(|e| self.seg.data.checked_add(e.1))
                .find(|at| !self.seeks.read.contains(at));
            let Some(at) = next else {
                return Ok(None);
            };
            if self.seeks.read.len() >= MAX_SEEK_HEADS {
                return Err(self.r.bad(invalid!("more than {MAX_SEEK_HEADS} SeekHeads")));
            }
            self.seeks.read.insert(at);
            let h = self.seek_target(ids::SEEK_HEAD, at - self.seg.data)?;
            self.read_seek_head(&h)?;
        }
    }

    /// The header of the element with ID `want` that a SeekHead places at `position`.
    fn seek_target(&self, want: u32, position: u64) -> Result<Header> {
        let at = self
            .seg
            .data
            .checked_add(position)
            .filter(|&at| at < self.seg.end)
            .ok_or_else(|| {
                self.r.bad(invalid!(
                    "a SeekHead places {} at position {position}, outside the Segment",
                    ids::describe(want)
                ))
            })?;
        let (h, _) = self.r.header(at, self.seg.end)?;
        if h.id != want {
            return Err(self.r.bad(invalid!(
                "a SeekHead places {} at offset {at}, where there is {}",
                ids::describe(want),
                ids::describe(h.id)
            )));
        }
        Ok(h)
    }

    /// Logs cues of the chosen track that name no keyframe's time.
    fn check_cues(&self) {
        let (Some(cues), Some(t)) = (&self.cues, &self.timing) else {
            return;
        };
        let keys: HashSet<i64> = self
            .frames
            .iter()
            .filter(|f| f.key)
            .filter_map(|f| f.pts.checked_add(t.codec_delay))
            .collect();
        let ours = cues.iter().filter(|c| c.0 == t.track);
        let (mut count, mut missing) = (0usize, 0usize);
        for &(_, time) in ours {
            count += 1;
            if !i64::try_from(time).is_ok_and(|t| keys.contains(&t)) {
                missing += 1;
            }
        }
        if missing > 0 {
            tracing::debug!(
                "{}: {missing} of {count} cues name no keyframe",
                self.r.file().display()
            );
        }
    }
}

/// `ns` nanoseconds in ticks of `ts_scale` nanoseconds, rounded to nearest (half away from
/// zero), as ffmpeg's `av_rescale_q` does.
fn ticks_rounded(ns: u64, ts_scale: u64) -> Option<i64> {
    let t = (u128::from(ns) * 2 + u128::from(ts_scale)) / (u128::from(ts_scale) * 2);
    i64::try_from(t).ok()
}

/// (ID, SeekPosition) of each Seek in a SeekHead's data.
fn seek_entries(data: &[u8], base: u64) -> ParseResult<Vec<(u32, u64)>> {
    let mut out = Vec::new();
    for child in Children::new(data, base) {
        let (h, d) = child?;
        if h.id != ids::SEEK {
            continue;
        }
        let (mut id, mut position) = (None, None);
        for field in Children::new(d, h.data) {
            let (f, v) = field?;
            match f.id {
                ids::SEEK_ID if v.len() <= 4 => {
                    id = Some(v.iter().fold(0u32, |a, &b| (a << 8) | u32::from(b)))
                }
                ids::SEEK_POSITION => position = Some(uint(&f, v)?),
                _ => {}
            }
        }
        if let (Some(id), Some(p)) = (id, position) {
            out.push((id, p));
        }
    }
    Ok(out)
}

/// (CueTrack, CueTime) of every CueTrackPositions in a Cues element's data.
fn cue_times(data: &[u8], base: u64) -> ParseResult<Vec<(u64, u64)>> {
    let mut out = Vec::new();
    for child in Children::new(data, base) {
        let (h, d) = child?;
        if h.id != ids::CUE_POINT {
            continue;
        }
        let (mut time, mut tracks) = (None, Vec::new());
        for field in Children::new(d, h.data) {
            let (f, v) = field?;
            match f.id {
                ids::CUE_TIME => time = Some(uint(&f, v)?),
                ids::CUE_TRACK_POSITIONS => {
                    for pos in Children::new(v, f.data) {
                        let (p, pv) = pos?;
                        if p.id == ids::CUE_TRACK {
                            tracks.push(uint(&p, pv)?);
                        }
                    }
                }
                _ => {}
            }
        }
        if let Some(time) = time {
            out.extend(tracks.into_iter().map(|t| (t, time)));
        }
    }
    Ok(out)
}
