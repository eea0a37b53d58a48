//! `VideoIndex`: every frame of a video track, in presentation and decode order, with exact
//! timestamps, byte ranges, GOPs and where decoding must start to reproduce each frame.

use std::path::{Path, PathBuf};

use crate::boxes::{Reader, find, find_path, read_box, scan_top_level};
use crate::codec::{CodecInfo, EntryError, parse_stsd};
use crate::error::{DemuxError, ParseResult, Result};
use crate::nal::{Leading, Picture, PictureParser, RandomAccess};
use crate::source::{ByteSource, FileSource};
use crate::tables::{RawSample, TrackExtends, expand_fragment, expand_track, parse_trex};

/// Largest `moov` accepted (a 24-hour 240 fps track's tables take about 200 MiB).
const MAX_MOOV: u64 = 512 << 20;
/// Largest `moof` accepted.
const MAX_MOOF: u64 = 64 << 20;
/// Bytes first read from the start of a sample to find its slice headers.
pub(crate) const HEADER_WINDOW: usize = 1 << 10;

/// Which track to index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TrackSelect {
    /// The first video track.
    #[default]
    FirstVideo,
    /// The track with this `track_ID`.
    Id(u32),
}

/// How much of the bitstream to read while indexing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum BitstreamScan {
    /// Metadata boxes only. GOPs follow the container's sync flags, and every leading picture is
    /// assumed to need the previous GOP (exact, possibly more decoding than needed).
    None,
    /// Also the slice headers of sync samples (one small read per GOP): checks the sync flags
    /// against the bitstream and tells open GOPs from closed ones.
    #[default]
    Keyframes,
    /// The slice headers of every sample: picture types, reference flags, leading-picture kinds
    /// (lets plans skip non-reference pictures).
    Full,
}

/// Options of [`VideoIndex::open`].
#[derive(Debug, Clone, Copy, Default)]
pub struct IndexOptions {
    /// Which track.
    pub track: TrackSelect,
    /// How much of the bitstream to read.
    pub scan: BitstreamScan,
}

/// A frame's presentation index when it is not presented (before the edit list's start).
pub const NOT_PRESENTED: u32 = u32::MAX;

/// One packet (coded frame). Times are ticks of the track timescale after the edit list, as
/// ffprobe reports them. 56 bytes each: an hour at 30 fps takes 6 MB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame {
    /// Presentation time.
    pub pts: i64,
    /// Decode time.
    pub dts: i64,
    /// Byte offset in the file.
    pub offset: u64,
    /// Duration in ticks.
    pub duration: u32,
    /// Size in bytes.
    pub size: u32,
    /// Position in decode order.
    pub decode_index: u32,
    /// Position in presentation order, or [`NOT_PRESENTED`].
    pub presentation_index: u32,
    /// The GOP (in decode order) the packet belongs to.
    pub gop: u32,
    /// Decode index of the packet decoding must start from to reproduce this frame exactly.
    pub decode_start: u32,
    /// The container's sync-sample flag (ffprobe's `K`).
    pub keyframe: bool,
    /// What the bitstream says, when it was read.
    pub picture: Option<Picture>,
}

/// A group of pictures: packets in decode order from one random-access point to the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gop {
    /// Decode index of its first packet (a valid place to start decoding).
    pub start: u32,
    /// Decode index just past its last packet.
    pub end: u32,
    /// The first packet's random-access kind, when the bitstream was read.
    pub random_access: Option<RandomAccess>,
    /// Whether its leading pictures may need the previous GOP (open GOP, or not known).
    pub open: bool,
}

/// A sample whose container sync flag disagrees with its bitstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyncMismatch {
    /// Decode index.
    pub decode_index: u32,
    /// The container's flag.
    pub container_sync: bool,
    /// The bitstream's random-access kind.
    pub bitstream: RandomAccess,
}

/// An exact time: `num / den` seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rational {
    /// Ticks.
    pub num: i64,
    /// Ticks per second.
    pub den: u32,
}

impl Rational {
    /// The time in seconds, rounded to f64.
    pub fn seconds(self) -> f64 {
        self.num as f64 / f64::from(self.den)
    }
}

/// The index of one video track.
#[derive(Debug, Clone, PartialEq)]
pub struct VideoIndex {
    /// The file.
    pub path: PathBuf,
    /// Its size in bytes when indexed.
    pub file_size: u64,
    /// Its modification time when indexed, where known.
    pub modified: Option<std::time::SystemTime>,
    /// The track's `track_ID`.
    pub track_id: u32,
    /// Ticks per second of the track.
    pub timescale: u32,
    /// Codec and stream format.
    pub codec: CodecInfo,
    /// Ticks subtracted from composition and decode times by the edit list.
    pub edit_shift: i64,
    /// Whether an edit list applies (frames before its start are not presented).
    pub has_edit: bool,
    /// Whether samples came from movie fragments.
    pub fragmented: bool,
    /// How much of the bitstream was read.
    pub scan: BitstreamScan,
    /// Packets in decode order.
    pub packets: Vec<Frame>,
    /// Decode indices in presentation order.
    pub presentation: Vec<u32>,
    /// GOPs in decode order.
    pub gops: Vec<Gop>,
    /// Sync flags that disagree with the bitstream (a flagged sync sample that is not a
    /// random-access point is not used as one).
    pub sync_mismatches: Vec<SyncMismatch>,
    /// Parameter sets found inside samples (avc3/hev1 streams carry them in-band).
    pub in_band_parameter_sets: usize,
    /// Bytes read from the file to build the index.
    pub bytes_read: u64,
}

impl VideoIndex {
    /// Indexes the file at `path`.
    pub fn open(path: &Path, options: IndexOptions) -> Result<VideoIndex> {
        let src = FileSource::open(path).map_err(|source| DemuxError::Io {
            file: path.to_path_buf(),
            source,
        })?;
        let mut index = Self::from_source(&src, options)?;
        index.modified = src.modified();
        Ok(index)
    }

    /// Indexes any byte source (a file, or memory).
    pub fn from_source(src: &dyn ByteSource, options: IndexOptions) -> Result<VideoIndex> {
        let file = src.name().to_path_buf();
        let bad = |reason: String| DemuxError::malformed(&file, reason);
        let top = scan_top_level(src).map_err(bad)?;
        let moov_h = top.moov.ok_or_else(|| {
            bad("no 'moov' box: the file is truncated or was never finalized".into())
        })?;
        let moov = read_box(src, &moov_h, MAX_MOOV).map_err(bad)?;
        let moov_content = &moov[moov_h.header_len as usize..];

        crate::boxes::check_table_counts(moov_content).map_err(bad)?;
        let mut for_mp4parse = moov.clone();
        crate::boxes::hide_from_mp4parse(&mut for_mp4parse).map_err(bad)?;
        let ctx = mp4parse::read_mp4(&mut std::io::Cursor::new(&for_mp4parse[..]))
            .map_err(|e| bad(format!("the 'moov' box could not be parsed: {e:?}")))?;
        let traks = crate::boxes::find_all(moov_content, b"trak").map_err(bad)?;
        if traks.len() != ctx.tracks.len() {
            return Err(bad(format!(
                "{} 'trak' boxes but {} tracks parsed",
                traks.len(),
                ctx.tracks.len()
            )));
        }
        let pick = ctx.tracks.iter().position(|t| match options.track {
            TrackSelect::FirstVideo => t.track_type == mp4parse::TrackType::Video,
            TrackSelect::Id(id) => t.track_id == Some(id),
        });
        let Some(ti) = pick else {
            let have: Vec<String> = ctx
                .tracks
                .iter()
                .map(|t| format!("{} ({:?})", t.track_id.unwrap_or(0), t.track_type))
                .collect();
            return Err(DemuxError::NoTrack {
                file,
                reason: format!(
                    "no {} among tracks [{}]",
                    match options.track {
                        TrackSelect::FirstVideo => "video track".to_string(),
                        TrackSelect::Id(id) => format!("track {id}"),
                    },
                    have.join(", ")
                ),
            });
        };
        let track = &ctx.tracks[ti];
        let trak = traks[ti];
        if track.track_type != mp4parse::TrackType::Video {
            return Err(DemuxError::NoTrack {
                file,
                reason: format!(
                    "track {} is {:?}, not video",
                    track.track_id.unwrap_or(0),
                    track.track_type
                ),
            });
        }
        let track_id = track.track_id.unwrap_or(0);
        let stsd = find_path(trak, &[b"mdia", b"minf", b"stbl", b"stsd"])
            .map_err(bad)?
            .ok_or_else(|| bad(format!("track {track_id} has no 'stsd'")))?;
        let codec = parse_stsd(stsd).map_err(|e| match e {
            EntryError::Unsupported(codec) => DemuxError::UnsupportedCodec {
                file: file.clone(),
                codec,
            },
            EntryError::Malformed(m) => bad(m),
        })?;
        let timescale = track
            .timescale
            .map(|t| t.0)
            .filter(|&t| t > 0 && t <= u64::from(u32::MAX))
            .ok_or_else(|| bad(format!("track {track_id} has no valid timescale")))?
            as u32;

        let mut samples = expand_track(track, src.len()).map_err(bad)?;
        let fragmented = !top.moofs.is_empty();
        if fragmented {
            let trex = match find(moov_content, b"mvex").map_err(bad)? {
                Some(mvex) => parse_trex(mvex, track_id).map_err(bad)?,
                None => None,
            }
            .unwrap_or(TrackExtends::default());
            let mut next_dts = samples
                .last()
                .map(|s| s.dts + i64::from(s.duration))
                .unwrap_or(0);
            for h in &top.moofs {
                let moof = read_box(src, h, MAX_MOOF).map_err(bad)?;
                expand_fragment(
                    &moof,
                    h.offset,
                    track_id,
                    trex,
                    src.len(),
                    &mut next_dts,
                    &mut samples,
                )
                .map_err(|e| bad(format!("'moof' at offset {}: {e}", h.offset)))?;
            }
        }
        if samples.is_empty() {
            return Err(bad(format!("track {track_id} has no samples")));
        }
        if samples.len() > u32::MAX as usize - 1 {
            return Err(bad("too many samples".into()));
        }

        let movie_timescale = ctx.timescale.map(|t| t.0).unwrap_or(u64::from(timescale));
        let edit = find_path(trak, &[b"edts", b"elst"])
            .map_err(bad)?
            .map(|elst| parse_elst(elst, movie_timescale, u64::from(timescale)))
            .transpose()
            .map_err(bad)?
            .flatten();
        let edit_shift = edit.map(|e| e.shift).unwrap_or(0);

        let mut index = VideoIndex {
            path: file.clone(),
            file_size: src.len(),
            modified: None,
            track_id,
            timescale,
            codec,
            edit_shift,
            has_edit: edit.is_some(),
            fragmented,
            scan: options.scan,
            packets: Vec::new(),
            presentation: Vec::new(),
            gops: Vec::new(),
            sync_mismatches: Vec::new(),
            in_band_parameter_sets: 0,
            bytes_read: 0,
        };
        let pictures = index.scan_bitstream(src, &samples, options.scan)?;
        index.assemble(&samples, &pictures);
        index.bytes_read = src.bytes_read();
        Ok(index)
    }

    /// Reads slice headers as `scan` asks; `None` where a sample was not read.
    fn scan_bitstream(
        &mut self,
        src: &dyn ByteSource,
        samples: &[RawSample],
        scan: BitstreamScan,
    ) -> Result<Vec<Option<Picture>>> {
        let mut pictures = vec![None; samples.len()];
        if scan == BitstreamScan::None {
            return Ok(pictures);
        }
        let mut parser = PictureParser::new(
            self.codec.codec,
            self.codec.nal_length_size,
            &self.codec.parameter_sets,
        );
        let mut buf = Vec::new();
        for (i, s) in samples.iter().enumerate() {
            if scan == BitstreamScan::Keyframes && !s.sync {
                continue;
            }
            // Slice headers follow any SEI and parameter sets: a small read usually holds
            // them; when it does not (a large SEI), read more.
            let mut window = HEADER_WINDOW.min(s.size as usize);
            let (pic, sets) = loop {
                buf.resize(window, 0);
                src.read_exact_at(&mut buf, s.offset)
                    .map_err(|source| DemuxError::Io {
                        file: self.path.clone(),
                        source,
                    })?;
                let truncated = window < s.size as usize;
                match parser.parse_window(&buf, truncated) {
                    Ok(found) => break found,
                    Err(_) if truncated => window = (window * 8).min(s.size as usize),
                    Err(reason) => {
                        return Err(DemuxError::BadSample {
                            file: self.path.clone(),
                            sample: i,
                            reason,
                        });
                    }
                }
            };
            self.in_band_parameter_sets += sets.len();
            pictures[i] = Some(pic);
        }
        Ok(pictures)
    }

    /// Works out GOPs, decode starts and presentation order from the samples (decode order)
    /// and what the bitstream said of them.
    pub(crate) fn assemble(&mut self, samples: &[RawSample], pictures: &[Option<Picture>]) {
        let shift = self.edit_shift;
        let has_edit = self.has_edit;
        self.sync_mismatches.clear();
        // GOP starts: the first packet, then sync packets the bitstream does not contradict,
        // and IDR pictures the container forgot to flag.
        let mut starts = vec![0u32];
        for (i, (s, p)) in samples.iter().zip(pictures).enumerate().skip(1) {
            let bitstream = p.map(|p| p.random_access);
            let start = match (s.sync, bitstream) {
                (true, None) => true,
                (true, Some(RandomAccess::None)) => false,
                (true, Some(_)) => true,
                (false, Some(RandomAccess::Idr)) => true,
                (false, _) => false,
            };
            if let Some(b) = bitstream {
                let agrees = (b != RandomAccess::None) == s.sync;
                if !agrees {
                    self.sync_mismatches.push(SyncMismatch {
                        decode_index: i as u32,
                        container_sync: s.sync,
                        bitstream: b,
                    });
                }
            }
            if start {
                starts.push(i as u32);
            }
        }
        if let (Some(b), true) = (pictures[0].map(|p| p.random_access), samples[0].sync)
            && b == RandomAccess::None
        {
            self.sync_mismatches.push(SyncMismatch {
                decode_index: 0,
                container_sync: true,
                bitstream: b,
            });
        }
        self.gops = starts
            .iter()
            .enumerate()
            .map(|(g, &start)| {
                let end = starts.get(g + 1).copied().unwrap_or(samples.len() as u32);
                let ra = pictures[start as usize].map(|p| p.random_access);
                Gop {
                    start,
                    end,
                    random_access: ra,
                    open: ra.is_none_or(|r| r.is_open() || r == RandomAccess::None),
                }
            })
            .collect();

        self.packets = Vec::with_capacity(samples.len());
        for (g, gop) in self.gops.iter().enumerate() {
            let start_pts = samples[gop.start as usize].cts - shift;
            for i in gop.start..gop.end {
                let s = &samples[i as usize];
                let pts = s.cts - shift;
                let picture = pictures[i as usize];
                let leading = i != gop.start && pts < start_pts;
                let decodable_alone = picture.is_some_and(|p| p.leading == Leading::Radl);
                // HEVC forbids trailing pictures to reference leading ones, so only leading
                // pictures of an open GOP need the previous GOP. H.264 has no such rule: after
                // an x264 open-GOP I frame (recovery point, recovery_frame_cnt 0) ffmpeg
                // decodes some trailing pictures differently when it starts at that I frame,
                // so every picture of an open (or unknown) H.264 GOP starts at the previous GOP.
                let h264_open = self.codec.codec == crate::codec::Codec::H264 && gop.open;
                let needs_previous = g > 0
                    && i != gop.start
                    && (h264_open || (leading && gop.open && !decodable_alone));
                self.packets.push(Frame {
                    pts,
                    dts: s.dts - shift,
                    offset: s.offset,
                    duration: s.duration,
                    size: s.size,
                    decode_index: i,
                    presentation_index: NOT_PRESENTED,
                    gop: g as u32,
                    decode_start: if needs_previous {
                        self.gops[g - 1].start
                    } else {
                        gop.start
                    },
                    keyframe: s.sync,
                    picture,
                });
            }
        }
        let mut order: Vec<u32> = (0..samples.len() as u32)
            .filter(|&i| !has_edit || self.packets[i as usize].pts >= 0)
            .collect();
        order.sort_by_key(|&i| (self.packets[i as usize].pts, i));
        for (p, &d) in order.iter().enumerate() {
            self.packets[d as usize].presentation_index = p as u32;
        }
        self.presentation = order;
    }

    /// Frames in presentation order.
    pub fn frame_count(&self) -> usize {
        self.presentation.len()
    }

    /// Frame `i` in presentation order.
    pub fn frame(&self, i: usize) -> Result<&Frame> {
        self.presentation
            .get(i)
            .map(|&d| &self.packets[d as usize])
            .ok_or_else(|| DemuxError::FrameOutOfRange {
                file: self.path.clone(),
                frame: i,
                count: self.frame_count(),
            })
    }

    /// A tick count as an exact time of this track.
    pub fn time(&self, ticks: i64) -> Rational {
        Rational {
            num: ticks,
            den: self.timescale,
        }
    }

    /// Frames per second when every frame has the same duration, `None` for variable frame
    /// rate.
    pub fn constant_fps(&self) -> Option<f64> {
        let mut pts: Vec<i64> = self
            .presentation
            .iter()
            .map(|&d| self.packets[d as usize].pts)
            .collect();
        pts.dedup();
        let d = pts.windows(2).map(|w| w[1] - w[0]).collect::<Vec<_>>();
        let first = *d.first()?;
        (first > 0 && d.iter().all(|&x| x == first))
            .then(|| f64::from(self.timescale) / first as f64)
    }

    /// Whether presentation order differs from decode order (B-frames or reordering).
    pub fn has_reordering(&self) -> bool {
        self.presentation.windows(2).any(|w| w[0] > w[1])
    }
}

/// The edit list's effect: ticks to subtract from composition times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Edit {
    shift: i64,
}

/// Reads `elst`: leading empty edits delay the start, the first media edit says where the
/// presentation starts in media time. Like ffmpeg, later edits are not applied.
fn parse_elst(elst: &[u8], movie_ts: u64, track_ts: u64) -> ParseResult<Option<Edit>> {
    let mut r = Reader::new(elst, "elst");
    let version = r.u8()?;
    r.skip(3)?;
    let count = r.u32()?;
    let entry_len = if version == 1 { 20 } else { 12 };
    if (count as usize).saturating_mul(entry_len) > r.remaining() {
        return Err(format!("'elst' declares {count} entries but holds fewer"));
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
        return Ok(Some(Edit {
            shift: media_time.saturating_sub(empty_ticks),
        }));
    }
    Ok((empty_ticks != 0).then_some(Edit {
        shift: -empty_ticks,
    }))
}

impl std::fmt::Display for VideoIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} track {}: {} {} {}x{}, {} frames",
            self.path.display(),
            self.track_id,
            self.codec.codec.name(),
            self.codec.profile_name(),
            self.codec.width,
            self.codec.height,
            self.frame_count()
        )
    }
}
