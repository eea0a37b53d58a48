//! `IndexingDemuxer`: plans and reads the packets of a video for a set of frames.

use std::path::Path;
use std::sync::Arc;

use crate::annexb::{append_annexb, append_parameter_sets};
use crate::cache::GopCache;
use crate::codec::{Codec, CodecInfo};
use crate::error::{DemuxError, Result};
use crate::index::VideoIndex;
use crate::options::IndexOptions;
use crate::packet::{Packet, PacketSource};
use crate::plan::{DecodePlan, DecodeRun};
use crate::source::{ByteSource, FileSource};

/// A video's index and its bytes: plans frame requests and reads exactly the planned packets.
pub struct IndexingDemuxer {
    index: Arc<VideoIndex>,
    source: Arc<dyn ByteSource>,
    cache: Option<(Arc<GopCache>, u64)>,
    /// The index's chroma location, worked out once (it parses the SPS), not per run.
    chroma: crate::ChromaLocation,
}

impl std::fmt::Debug for IndexingDemuxer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IndexingDemuxer")
            .field("index", &self.index.path)
            .finish()
    }
}

impl IndexingDemuxer {
    /// Indexes `path` and keeps it open.
    pub fn open(path: &Path, options: IndexOptions) -> Result<IndexingDemuxer> {
        let src = FileSource::open(path).map_err(|source| DemuxError::Io {
            file: path.to_path_buf(),
            source,
        })?;
        let index = VideoIndex::from_source(&src, options)?;
        Ok(Self::new(Arc::new(index), Arc::new(src)))
    }

    /// Uses an existing index (for example one loaded from disk) over `source`.
    pub fn new(index: Arc<VideoIndex>, source: Arc<dyn ByteSource>) -> IndexingDemuxer {
        IndexingDemuxer {
            chroma: index.chroma_location(),
            index,
            source,
            cache: None,
        }
    }

    /// Shares `cache`; `video_id` tells this video's GOPs apart from other videos'.
    pub fn with_cache(mut self, cache: Arc<GopCache>, video_id: u64) -> Self {
        self.cache = Some((cache, video_id));
        self
    }

    /// The index.
    pub fn index(&self) -> &Arc<VideoIndex> {
        &self.index
    }

    /// See [`VideoIndex::plan`].
    pub fn plan(&self, frames: &[usize]) -> Result<DecodePlan> {
        self.index.plan(frames)
    }

    /// Bytes read from the file so far (index and packets).
    pub fn bytes_read(&self) -> u64 {
        self.source.bytes_read()
    }

    /// The packets of `run` in the form NVDEC's parser takes (see [`Packet`]), reading only
    /// their byte ranges (or the cache); the same as [`PacketSource::read_run`].
    pub fn read_run(&self, run: &DecodeRun) -> Result<Vec<Packet>> {
        let idx = &self.index;
        self.prefetch_run(run);
        let mut out = Vec::with_capacity(run.packets.len());
        for (k, &d) in run.packets.iter().enumerate() {
            let p = idx
                .packets
                .get(d as usize)
                .ok_or_else(|| DemuxError::BadSample {
                    file: idx.path.clone(),
                    sample: d as usize,
                    reason: "not in the index".into(),
                })?;
            let raw = self.raw_packet(d)?;
            let mut data = Vec::with_capacity(raw.len() + 64);
            match idx.codec.codec {
                Codec::H264 | Codec::Hevc => {
                    if k == 0 {
                        append_parameter_sets(&mut data, &idx.codec.parameter_sets);
                    }
                    append_annexb(&mut data, &raw, idx.codec.nal_length_size).map_err(|e| {
                        DemuxError::BadSample {
                            file: idx.path.clone(),
                            sample: d as usize,
                            reason: e.to_string(),
                        }
                    })?;
                }
                // The configuration OBUs (a sequence header) ahead of a run, in case its
                // first temporal unit does not repeat them.
                Codec::Av1 => {
                    if k == 0 {
                        idx.codec
                            .parameter_sets
                            .iter()
                            .for_each(|s| data.extend_from_slice(s));
                    }
                    data.extend_from_slice(&raw);
                }
                Codec::Vp9 => data.extend_from_slice(&raw),
            }
            out.push(Packet {
                decode_index: d,
                pts: p.pts,
                data,
            });
        }
        Ok(out)
    }

    /// Tells the source which byte ranges the run will read (those not in the GOP cache): a
    /// remote source fetches them in a few concurrent requests instead of one per packet.
    fn prefetch_run(&self, run: &DecodeRun) {
        let ranges: Vec<_> = run
            .packets
            .iter()
            .filter_map(|&d| self.index.packets.get(d as usize).map(|p| (d, p)))
            .filter(|(d, p)| match &self.cache {
                Some((cache, vid)) => !cache.contains((*vid, p.gop), *d),
                None => true,
            })
            .map(|(_, p)| p.offset..p.offset + u64::from(p.size))
            .collect();
        if !ranges.is_empty() {
            self.source.prefetch(&ranges);
        }
    }

    fn raw_packet(&self, d: u32) -> Result<Arc<[u8]>> {
        let p = &self.index.packets[d as usize];
        let key = self.cache.as_ref().map(|(_, vid)| (*vid, p.gop));
        if let (Some((cache, _)), Some(key)) = (&self.cache, key)
            && let Some(hit) = cache.get(key, d)
        {
            return Ok(hit);
        }
        let mut buf = vec![0u8; p.size as usize];
        self.source
            .read_exact_at(&mut buf, p.offset)
            .map_err(|source| DemuxError::Io {
                file: self.index.path.clone(),
                source,
            })?;
        let bytes: Arc<[u8]> = buf.into();
        if let (Some((cache, _)), Some(key)) = (&self.cache, key) {
            cache.insert(key, d, bytes.clone());
        }
        Ok(bytes)
    }
}

impl PacketSource for IndexingDemuxer {
    fn name(&self) -> &Path {
        &self.index.path
    }

    fn codec(&self) -> &CodecInfo {
        &self.index.codec
    }

    fn chroma_location(&self) -> crate::ChromaLocation {
        self.chroma
    }

    fn read_run(&self, run: &DecodeRun) -> Result<Vec<Packet>> {
        IndexingDemuxer::read_run(self, run)
    }
}
