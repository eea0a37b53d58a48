//! `VideoIndex`: every frame of a video track, in presentation and decode order, with exact
//! timestamps, byte ranges, GOPs and where decoding must start to reproduce each frame.

use std::path::{Path, PathBuf};

use crate::chroma_location::ChromaLocation;
use crate::codec::CodecInfo;
use crate::container::Container;
use crate::error::{DemuxError, Result};
use crate::options::{BitstreamScan, IndexOptions};
use crate::orientation::DisplayOrientation;
use crate::picture::{Leading, Picture, RandomAccess};
use crate::sample::{FrameIndex, Gop, Rational, Sample, SyncMismatch};
use crate::scan::{ScanError, Scanner};
use crate::source::{ByteSource, FileSource};
use crate::tables::RawSample;

/// The index of one video track.
#[derive(Debug, Clone, PartialEq)]
pub struct VideoIndex {
    /// The file.
    pub path: PathBuf,
    /// Its size in bytes when indexed.
    pub file_size: u64,
    /// Its modification time when indexed, where known.
    pub modified: Option<std::time::SystemTime>,
    /// Its entity tag when indexed (remote objects), which a saved index must match.
    pub etag: Option<String>,
    /// The container format.
    pub container: Container,
    /// The track's `track_ID` (MP4) or `TrackNumber` (Matroska).
    pub track_id: u32,
    /// Ticks per second of the track.
    pub timescale: u32,
    /// Codec and stream format (`width` and `height` are the stored frame's).
    pub codec: CodecInfo,
    /// How the frames are shown (the track's display matrix): the loaders turn them upright.
    pub orientation: DisplayOrientation,
    /// The chroma location the container states (Matroska's Colour), which decoders keep
    /// where the bitstream says nothing; see [`VideoIndex::chroma_location`].
    pub container_chroma: ChromaLocation,
    /// Ticks subtracted from composition and decode times by the edit list.
    pub edit_shift: i64,
    /// Whether an edit list applies (frames before its start are not presented).
    pub has_edit: bool,
    /// Whether samples came from movie fragments.
    pub fragmented: bool,
    /// How much of the bitstream was read.
    pub scan: BitstreamScan,
    /// Samples in decode order.
    pub packets: Vec<Sample>,
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
    /// Requests sent to build the index (remote sources; 0 for local files).
    pub requests: u64,
}

impl VideoIndex {
    /// Where the decoded frames' chroma samples sit, as ffmpeg's decoders report it: the
    /// bitstream's signalling (or the codec's default), else the container's.
    pub fn chroma_location(&self) -> ChromaLocation {
        self.codec
            .signalled_chroma_location()
            .unwrap_or(self.container_chroma)
    }

    /// Indexes the file at `path`.
    pub fn open(path: &Path, options: IndexOptions) -> Result<VideoIndex> {
        let src = FileSource::open(path).map_err(|source| DemuxError::Io {
            file: path.to_path_buf(),
            source,
        })?;
        Self::from_source(&src, options)
    }

    /// Indexes any byte source (a file, memory, or a remote object).
    pub fn from_source(src: &dyn ByteSource, options: IndexOptions) -> Result<VideoIndex> {
        let track = crate::container::read_track(src, options.track)?;
        let version = src.version();
        let mut index = VideoIndex {
            path: src.name().to_path_buf(),
            file_size: version.size,
            modified: version.modified,
            etag: version.etag,
            container: track.container,
            track_id: track.track_id,
            timescale: track.timescale,
            codec: track.codec,
            orientation: track.orientation,
            container_chroma: track.chroma_siting,
            edit_shift: track.edit_shift.unwrap_or(0),
            has_edit: track.edit_shift.is_some(),
            fragmented: track.fragmented,
            scan: options.scan,
            packets: Vec::new(),
            presentation: Vec::new(),
            gops: Vec::new(),
            sync_mismatches: Vec::new(),
            in_band_parameter_sets: 0,
            bytes_read: 0,
            requests: 0,
        };
        let pictures = index.scan_bitstream(src, &track.samples, options.scan)?;
        index.assemble(&track.samples, &pictures);
        index.bytes_read = src.bytes_read();
        index.requests = src.requests();
        Ok(index)
    }

    /// Reads the bitstream's headers as `scan` asks; `None` where a sample was not read.
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
        // One hint with every header window the scan reads: a remote source fetches them
        // concurrently instead of one round trip per GOP.
        let windows: Vec<_> = samples
            .iter()
            .filter(|s| scan == BitstreamScan::Full || s.sync)
            .flat_map(|s| crate::scan::header_windows(self.codec.codec, s))
            .collect();
        src.prefetch(&windows);
        let mut scanner = Scanner::new(&self.codec)
            .map_err(|e| DemuxError::malformed(&self.path, format!("codec configuration: {e}")))?;
        for (i, s) in samples.iter().enumerate() {
            if scan == BitstreamScan::Keyframes && !s.sync {
                scanner.skipped();
                continue;
            }
            let scanned = scanner.sample(src, s).map_err(|e| match e {
                ScanError::Io(source) => DemuxError::Io {
                    file: self.path.clone(),
                    source,
                },
                ScanError::Parse(e) => DemuxError::BadSample {
                    file: self.path.clone(),
                    sample: i,
                    reason: e.to_string(),
                },
            })?;
            self.in_band_parameter_sets += scanned.in_band_sets;
            pictures[i] = Some(scanned.picture);
        }
        Ok(pictures)
    }

    /// Works out GOPs, decode starts and presentation order from the samples (decode order)
    /// and what the bitstream said of them.
    pub(crate) fn assemble(&mut self, samples: &[RawSample], pictures: &[Option<Picture>]) {
        let starts = self.gop_starts(samples, pictures);
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
        for g in 0..self.gops.len() {
            self.push_gop(g, samples, pictures);
        }
        self.order_presentation();
    }

    /// Where GOPs start: the first sample, then sync samples the bitstream does not
    /// contradict, and IDR pictures the container forgot to flag. Records the disagreements.
    fn gop_starts(&mut self, samples: &[RawSample], pictures: &[Option<Picture>]) -> Vec<u32> {
        self.sync_mismatches.clear();
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
        starts
    }

    /// Appends the samples of GOP `g`, each with the sample decoding must start from.
    fn push_gop(&mut self, g: usize, samples: &[RawSample], pictures: &[Option<Picture>]) {
        let shift = self.edit_shift;
        let gop = self.gops[g];
        let start_pts = samples[gop.start as usize].cts - shift;
        // HEVC forbids trailing pictures to reference leading ones, so only leading pictures
        // of an open GOP need the previous GOP. H.264 has no such rule: after an x264 open-GOP
        // I frame (recovery point, recovery_frame_cnt 0) ffmpeg decodes some trailing pictures
        // differently when it starts at that I frame, so every picture of an open (or
        // unknown) H.264 GOP starts at the previous GOP.
        let h264_open = self.codec.codec == crate::codec::Codec::H264 && gop.open;
        for i in gop.start..gop.end {
            let s = &samples[i as usize];
            let pts = s.cts - shift;
            let picture = pictures[i as usize];
            let leading = i != gop.start && pts < start_pts;
            let decodable_alone = picture.is_some_and(|p| p.leading == Leading::Radl);
            let needs_previous =
                g > 0 && i != gop.start && (h264_open || (leading && gop.open && !decodable_alone));
            self.packets.push(Sample {
                pts,
                dts: s.dts - shift,
                offset: s.offset,
                duration: s.duration,
                size: s.size,
                decode_index: i,
                presentation_index: None,
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

    /// Presentation order: samples by presentation time (before the edit list's start, not
    /// presented), ties in decode order.
    fn order_presentation(&mut self) {
        let has_edit = self.has_edit;
        let mut order: Vec<u32> = (0..self.packets.len() as u32)
            .filter(|&i| !has_edit || self.packets[i as usize].pts >= 0)
            .collect();
        order.sort_by_key(|&i| (self.packets[i as usize].pts, i));
        for (p, &d) in order.iter().enumerate() {
            self.packets[d as usize].presentation_index = FrameIndex::new(p as u32);
        }
        self.presentation = order;
    }

    /// Frames in presentation order.
    pub fn frame_count(&self) -> usize {
        self.presentation.len()
    }

    /// The sample shown as frame `i` (presentation order).
    pub fn frame(&self, i: usize) -> Result<&Sample> {
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
