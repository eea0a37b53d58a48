//! [`WebDataset`]: the samples of WebDataset tar shards, by index (every shard indexed), so
//! the sampler, shuffling, rank sharding, `LoaderState` and the bad-sample policy work as for
//! a folder.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::Mutex;

use gm_demux::ByteSource;
use gm_demux::source::FileSource;
use gm_storage::{Location, RemoteSource, Storage};

use super::ShardError;
use super::fields;
use super::header_hops::{Hops, index_by_headers};
use super::index_cache::{self, Extras};
use super::shard::{Place, Shard};
use super::slice::SliceSource;
use super::tar_index::{Member, TAR_BLOCK, TarIndex};
use crate::image::{Dataset, Label};
use crate::progress::Progress;

/// Shards opened and indexed at once.
const OPEN_THREADS: usize = 8;

/// A shard with its index and labels.
type Opened = (Shard, TarIndex, Extras);

/// One sample: where its image lies and its label, or why it cannot be loaded.
#[derive(Debug, Clone)]
struct Sample {
    shard: usize,
    key: String,
    /// Offset and size of the image member.
    image: Option<(u64, u64)>,
    /// Offset, size and extension of the video member.
    video: Option<(u64, u64, String)>,
    /// Offset and size of the `.json` member.
    json: Option<(u64, u64)>,
    label: Result<Label, String>,
}

/// WebDataset tar shards as an indexable dataset of images and labels.
///
/// Samples are the members of a shard grouped by key (the name up to the first `.` of its
/// last path component, as DALI's `wds2idx.py` splits it). The image is the first member
/// with an extension in [`IMAGE_EXTENSIONS`](crate::IMAGE_EXTENSIONS); the label is a `.cls`
/// (integer text), else a `.txt`, else the integer at a key of a `.json` (`label` unless
/// [`json_label_key`](WebDatasetBuilder::json_label_key) says otherwise). Sample `i` is read
/// by offset (local shards) or by a ranged GET (remote shards, pinned to the version indexed).
///
/// Every shard needs an index: given ([`index_files`](WebDatasetBuilder::index_files)), next
/// to the shard (`x.tar` -> `x.idx`), cached ([`index_cache`](WebDatasetBuilder::index_cache)),
/// or built by reading the shard once. A sample without an image or a label, with a member
/// past the end of its shard, or whose read fails is a bad sample named `shard#key` (its
/// [`label`](Dataset::label) is -1); a shard cut short adds one bad sample saying where it
/// ended.
#[derive(Debug, Clone)]
pub struct WebDataset {
    shards: Vec<Shard>,
    samples: Vec<Sample>,
    storage: Storage,
}

/// Options of a [`WebDataset`].
#[derive(Debug, Clone)]
pub struct WebDatasetBuilder {
    shards: Vec<String>,
    indexes: Vec<PathBuf>,
    cache: Option<PathBuf>,
    json_key: String,
    labelled: bool,
    header_hops: bool,
    storage: Option<Storage>,
    progress: Option<Arc<Progress>>,
}

impl WebDataset {
    /// Opens the shards of `pattern`: paths or URLs, with brace ranges and `::` lists
    /// (`s3://bucket/train-{000000..000999}.tar`).
    pub fn new(pattern: &str) -> Result<WebDataset, ShardError> {
        WebDataset::builder(pattern)?.open()
    }

    /// Options for the shards of `pattern` (see [`new`](Self::new)).
    pub fn builder(pattern: &str) -> Result<WebDatasetBuilder, ShardError> {
        Ok(WebDataset::from_shards(super::brace::expand(pattern)?))
    }

    /// Options for a list of shard paths or URLs.
    pub fn from_shards(shards: impl IntoIterator<Item = impl Into<String>>) -> WebDatasetBuilder {
        WebDatasetBuilder {
            shards: shards.into_iter().map(Into::into).collect(),
            indexes: Vec::new(),
            cache: None,
            json_key: "label".into(),
            labelled: true,
            header_hops: false,
            storage: None,
            progress: None,
        }
    }

    /// The shards' paths or URLs, in order.
    pub fn shards(&self) -> impl Iterator<Item = &str> {
        self.shards.iter().map(|s| s.name.as_str())
    }

    /// The bytes of every sample's `.json` member, in sample order (one batch of ranged
    /// reads per shard), or why a sample has none.
    pub(crate) fn json_members(&self) -> Vec<Result<Vec<u8>, String>> {
        let mut out: Vec<Result<Vec<u8>, String>> = self
            .samples
            .iter()
            .map(|s| match &s.label {
                Err(reason) if s.image.is_none() => Err(reason.clone()),
                _ => Err(format!("sample {} has no .json member", s.key)),
            })
            .collect();
        for (n, shard) in self.shards.iter().enumerate() {
            let mine: Vec<(usize, (u64, u64))> = self
                .samples
                .iter()
                .enumerate()
                .filter(|(_, s)| s.shard == n)
                .filter_map(|(i, s)| s.json.map(|j| (i, j)))
                .collect();
            let ranges: Vec<std::ops::Range<u64>> =
                mine.iter().map(|(_, (o, len))| *o..o + len).collect();
            for ((i, _), got) in mine.iter().zip(shard.read_ranges(&ranges, &self.storage)) {
                out[*i] = got.map_err(|e| format!("reading its .json: {e}"));
            }
        }
        out
    }

    /// The shard (its position in [`shards`](Self::shards)) and key of sample `index`.
    pub fn key(&self, index: usize) -> (usize, &str) {
        let s = &self.samples[index];
        (s.shard, &s.key)
    }

    /// The byte range of sample `index`'s video member in its shard, if it has one.
    pub fn video_range(&self, index: usize) -> Option<std::ops::Range<u64>> {
        self.samples[index]
            .video
            .as_ref()
            .map(|(o, n, _)| *o..o + n)
    }

    /// Sample `index`'s video member as a byte source named `shard#key.ext`, for
    /// `VideoIndex::from_source` and `IndexingDemuxer::new`: a local shard is read with
    /// `pread`s, a remote one by ranged GETs pinned to the version indexed (a shard replaced
    /// since is an error).
    pub fn video_source(&self, index: usize) -> std::io::Result<SliceSource> {
        let s = &self.samples[index];
        let shard = &self.shards[s.shard];
        let Some((offset, size, ext)) = &s.video else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("{}: sample {} has no video member", shard.name, s.key),
            ));
        };
        let inner: Arc<dyn ByteSource> = match &shard.place {
            Place::Local(path) => Arc::new(FileSource::open(path)?),
            Place::Remote(url) => {
                let source = RemoteSource::open(&self.storage, url)?;
                let now = source.version();
                if (now.size, &now.etag) != (shard.version.size, &shard.version.etag) {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        format!("{}: the shard changed since it was indexed", shard.name),
                    ));
                }
                Arc::new(source)
            }
        };
        let name = format!("{}#{}.{ext}", shard.name, s.key);
        SliceSource::new(inner, *offset..offset + size, name)
    }

    /// Why sample `index` cannot be read, before reading it.
    fn problem(&self, index: usize) -> Result<(u64, u64), std::io::Error> {
        let s = &self.samples[index];
        let fail = |m: String| std::io::Error::new(std::io::ErrorKind::InvalidData, m);
        if let Err(reason) = &s.label {
            return Err(fail(reason.clone()));
        }
        s.image
            .ok_or_else(|| fail(format!("sample {} has no image member", s.key)))
    }
}

impl WebDatasetBuilder {
    /// Index files (DALI's `.idx`), one per shard in order.
    pub fn index_files(mut self, indexes: impl IntoIterator<Item = impl Into<PathBuf>>) -> Self {
        self.indexes = indexes.into_iter().map(Into::into).collect();
        self
    }

    /// Keeps built indexes in `dir`, keyed by shard name, size and version.
    pub fn index_cache(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cache = Some(dir.into());
        self
    }

    /// Samples without labels: no `.cls`, `.txt` or `.json` label is read or required (every
    /// label is -1), as for shards whose `.json` carries annotations
    /// ([`CocoDataset::from_shards`](crate::coco::CocoDataset::from_shards)).
    pub fn unlabelled(mut self) -> Self {
        self.labelled = false;
        self
    }

    /// The `.json` key holding the label (`label` by default).
    pub fn json_label_key(mut self, key: impl Into<String>) -> Self {
        self.json_key = key.into();
        self
    }

    /// Builds missing indexes by hopping from tar header to tar header with ranged reads,
    /// whatever the member sizes. Without it, hopping is used when a shard's first 8 members
    /// average 4 MiB or more (videos), and small members are indexed by reading the shard
    /// once.
    pub fn index_by_headers(mut self, always: bool) -> Self {
        self.header_hops = always;
        self
    }

    /// Reads remote shards through `storage` (default: [`Storage::global`]).
    pub fn storage(mut self, storage: Storage) -> Self {
        self.storage = Some(storage);
        self
    }

    /// Counts shards opened into `progress`.
    pub fn progress(mut self, progress: Arc<Progress>) -> Self {
        self.progress = Some(progress);
        self
    }

    /// Opens every shard and reads or builds its index.
    pub fn open(self) -> Result<WebDataset, ShardError> {
        if self.shards.is_empty() {
            return Err(ShardError::NoShards);
        }
        if !self.indexes.is_empty() && self.indexes.len() != self.shards.len() {
            return Err(ShardError::IndexCount {
                shards: self.shards.len(),
                indexes: self.indexes.len(),
            });
        }
        if let Some(dir) = &self.cache {
            std::fs::create_dir_all(dir).map_err(|source| ShardError::Io {
                shard: dir.display().to_string(),
                source,
            })?;
        }
        let storage = self.storage.clone().unwrap_or_else(Storage::global);
        if let Some(p) = &self.progress {
            p.start(self.shards.len() as u64);
        }
        let mut data = WebDataset {
            shards: Vec::with_capacity(self.shards.len()),
            samples: Vec::new(),
            storage: storage.clone(),
        };
        for (n, opened) in self.open_all(&storage).into_iter().enumerate() {
            let (shard, index, mut extras) = opened?;
            if !self.labelled {
                extras.labels = vec![Ok(-1); index.samples.len()];
            }
            data.add(n, &shard, &index, extras);
            data.shards.push(shard);
        }
        Ok(data)
    }

    /// Opens and indexes every shard on a few threads (remote shards cost a request or two
    /// each, and building an index reads the whole shard); results in shard order.
    fn open_all(&self, storage: &Storage) -> Vec<Result<Opened, ShardError>> {
        let next = AtomicUsize::new(0);
        let results: Mutex<Vec<Option<Result<Opened, ShardError>>>> =
            Mutex::new((0..self.shards.len()).map(|_| None).collect());
        let threads = self.shards.len().clamp(1, OPEN_THREADS);
        std::thread::scope(|scope| {
            for _ in 0..threads {
                scope.spawn(|| {
                    loop {
                        let n = next.fetch_add(1, Ordering::Relaxed);
                        let Some(name) = self.shards.get(n) else {
                            break;
                        };
                        let opened = self.open_one(name, self.indexes.get(n), storage);
                        results.lock()[n] = Some(opened);
                        if let Some(p) = &self.progress {
                            p.add(1);
                        }
                    }
                });
            }
        });
        // Every slot is filled: the threads take every position before they stop.
        results
            .into_inner()
            .into_iter()
            .zip(&self.shards)
            .map(|(r, name)| {
                r.unwrap_or_else(|| {
                    Err(ShardError::Io {
                        shard: name.clone(),
                        source: std::io::Error::other("not opened"),
                    })
                })
            })
            .collect()
    }

    /// One shard with its index and labels.
    fn open_one(
        &self,
        name: &str,
        given: Option<&PathBuf>,
        storage: &Storage,
    ) -> Result<Opened, ShardError> {
        let shard = Shard::open(name, storage)?;
        if shard.is_gzip() {
            return Err(ShardError::Gzip(shard.name));
        }
        let (index, extras) = self.index_of(&shard, given, storage)?;
        Ok((shard, index, extras))
    }

    /// The index of `shard` and its labels: given, next to it, cached, or built.
    fn index_of(
        &self,
        shard: &Shard,
        given: Option<&PathBuf>,
        storage: &Storage,
    ) -> Result<(TarIndex, Extras), ShardError> {
        let stem = self
            .cache
            .as_deref()
            .map(|d| index_cache::stem(d, shard, &self.json_key));
        if let Some(hit) = stem.as_deref().and_then(index_cache::load) {
            return Ok(hit);
        }
        let text = match given {
            Some(path) => Some(read_text(&path.display().to_string(), storage)?),
            None => sibling_index(shard, storage),
        };
        let (index, extras) = match text {
            Some((what, text)) => {
                let index = TarIndex::parse(&text, &what)?;
                check_headers(shard, &index, &what, storage)?;
                let labels = match self.labelled {
                    true => read_labels(shard, &index, &self.json_key, storage),
                    false => vec![Ok(-1); index.samples.len()],
                };
                (index, Extras { labels, cut: None })
            }
            None => {
                let when = match self.header_hops {
                    true => Hops::Always,
                    false => Hops::IfLarge,
                };
                let built = match index_by_headers(shard, storage, when) {
                    Some(built) => built,
                    None => TarIndex::build(shard.reader(storage)?),
                };
                let extras = labels_of_build(&built, &self.json_key);
                (built.index, extras)
            }
        };
        if let Some(stem) = &stem {
            index_cache::store(stem, &index, &extras);
        }
        Ok((index, extras))
    }
}

impl WebDataset {
    /// Adds the samples of shard `n`.
    fn add(&mut self, n: usize, shard: &Shard, index: &TarIndex, extras: Extras) {
        let size = shard.version.size;
        for (sample, label) in index.samples.iter().zip(extras.labels) {
            let range = |m: Option<&Member>| m.map(|m| (m.offset, m.size));
            let past_end = sample
                .members
                .iter()
                .find_map(|m| TarIndex::member_problem(m, size));
            self.samples.push(Sample {
                shard: n,
                key: sample.key().to_string(),
                image: range(fields::image(sample)),
                video: fields::video(sample).map(|m| (m.offset, m.size, m.ext.clone())),
                json: fields::json(sample).map(|m| (m.offset, m.size)),
                label: match past_end {
                    Some(reason) => Err(reason),
                    None => label,
                },
            });
        }
        if let Some(cut) = extras.cut {
            self.samples.push(Sample {
                shard: n,
                key: "(end of shard)".into(),
                image: None,
                video: None,
                json: None,
                label: Err(format!(
                    "the shard ended after {} samples: {cut}",
                    index.samples.len()
                )),
            });
        }
    }
}

/// The labels of a freshly built index: from the label members read on the way.
fn labels_of_build(built: &super::tar_index::Built, json_key: &str) -> Extras {
    let labels = built
        .index
        .samples
        .iter()
        .enumerate()
        .map(|(s, sample)| {
            let (m, member) = fields::label_member(sample)
                .ok_or_else(|| format!("sample {} has no .cls, .txt or .json", sample.key()))?;
            let bytes = built
                .labels
                .iter()
                .find(|l| l.0 == s && l.1 == m)
                .map(|l| l.2.as_slice())
                .ok_or_else(|| format!("{}: label member too large", member.name))?;
            fields::parse_label(member, bytes, json_key).map_err(|e| e.to_string())
        })
        .collect();
    Extras {
        labels,
        cut: built.cut.clone(),
    }
}

/// The labels of an index read from a file: each label member read by its range.
fn read_labels(
    shard: &Shard,
    index: &TarIndex,
    json_key: &str,
    storage: &Storage,
) -> Vec<Result<Label, String>> {
    let members: Vec<Option<&Member>> = index
        .samples
        .iter()
        .map(|s| fields::label_member(s).map(|(_, m)| m))
        .collect();
    let ranges: Vec<std::ops::Range<u64>> = members
        .iter()
        .flatten()
        .map(|m| m.offset..m.offset + m.size)
        .collect();
    let mut bytes = shard.read_ranges(&ranges, storage).into_iter();
    index
        .samples
        .iter()
        .zip(members)
        .map(|(sample, member)| {
            let member = member
                .ok_or_else(|| format!("sample {} has no .cls, .txt or .json", sample.key()))?;
            match bytes.next() {
                Some(Ok(b)) => fields::parse_label(member, &b, json_key).map_err(|e| e.to_string()),
                Some(Err(e)) => Err(format!("{}: {e}", member.name)),
                None => Err(format!("{}: not read", member.name)),
            }
        })
        .collect()
}

/// Spot-checks a given index against its shard: the tar headers before the first member of
/// the first and the last sample must be valid and give the sizes the index says. An index
/// of another tar (a stale one, or one swapped with its neighbour's) fails here rather than
/// serving other bytes under its labels. Members past the end are left to the per-sample
/// check.
fn check_headers(
    shard: &Shard,
    index: &TarIndex,
    what: &str,
    storage: &Storage,
) -> Result<(), ShardError> {
    let size = shard.version.size;
    let mut members: Vec<&Member> = [index.samples.first(), index.samples.last()]
        .into_iter()
        .flatten()
        .filter_map(|s| s.members.first())
        .filter(|m| TarIndex::member_problem(m, size).is_none())
        .collect();
    members.dedup_by_key(|m| m.offset);
    let ranges: Vec<_> = members
        .iter()
        .map(|m| m.offset - TAR_BLOCK..m.offset)
        .collect();
    for (m, block) in members.iter().zip(shard.read_ranges(&ranges, storage)) {
        let block = block.map_err(|source| ShardError::Io {
            shard: shard.name.clone(),
            source,
        })?;
        let said = (block.len() == TAR_BLOCK as usize)
            .then(|| tar::Header::from_byte_slice(&block).entry_size().ok())
            .flatten();
        if said != Some(m.size) || super::tar_stream::check_sum_of(&block).is_err() {
            return Err(ShardError::Mismatch {
                index: what.to_string(),
                reason: format!(
                    "does not match {}: the header before {} at {} says {said:?} bytes, the index {}",
                    shard.name, m.name, m.offset, m.size
                ),
            });
        }
    }
    Ok(())
}

/// A text file (an index) from a path or URL, with its name.
fn read_text(name: &str, storage: &Storage) -> Result<(String, String), ShardError> {
    let io = |source: std::io::Error| ShardError::Io {
        shard: name.to_string(),
        source,
    };
    let bytes = match Location::parse(name).map_err(|e| io(e.into()))? {
        Location::Local(path) => std::fs::read(path).map_err(io)?,
        Location::Remote(url) => storage.get(&url, None, None).map_err(|e| io(e.into()))?.0,
    };
    let text = String::from_utf8(bytes)
        .map_err(|e| io(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))?;
    Ok((name.to_string(), text))
}

/// The `.idx` next to a `.tar`, if there is one (any failure to read it: none).
fn sibling_index(shard: &Shard, storage: &Storage) -> Option<(String, String)> {
    let stem = shard.name.strip_suffix(".tar")?;
    let name = format!("{stem}.idx");
    if matches!(shard.place, Place::Local(_)) && !Path::new(&name).exists() {
        return None;
    }
    read_text(&name, storage).ok()
}

impl Dataset for WebDataset {
    fn len(&self) -> usize {
        self.samples.len()
    }
    fn label(&self, index: usize) -> Label {
        self.samples[index].label.clone().unwrap_or(-1)
    }
    fn name(&self, index: usize) -> String {
        let s = &self.samples[index];
        format!("{}#{}", self.shards[s.shard].name, s.key)
    }
    fn read(&self, index: usize, buf: &mut Vec<u8>) -> std::io::Result<()> {
        let (offset, size) = self.problem(index)?;
        let shard = &self.shards[self.samples[index].shard];
        let range = offset..offset + size;
        match &shard.place {
            Place::Local(path) => shard.read_local(path, range, buf),
            Place::Remote(url) => {
                let (bytes, _) = self.storage.get(url, Some(range), Some(&shard.version))?;
                *buf = bytes;
                Ok(())
            }
        }
    }
    fn read_batch(&self, indices: &[usize], bufs: &mut [Vec<u8>]) -> Vec<std::io::Result<()>> {
        let mut remote = Vec::new();
        let mut results: Vec<Option<std::io::Result<()>>> = Vec::with_capacity(indices.len());
        for (k, &i) in indices.iter().enumerate() {
            let shard = &self.shards[self.samples[i].shard];
            match (&shard.place, self.problem(i)) {
                (_, Err(e)) => results.push(Some(Err(e))),
                (Place::Local(path), Ok((o, n))) => {
                    results.push(Some(shard.read_local(path, o..o + n, &mut bufs[k])));
                }
                (Place::Remote(url), Ok((o, n))) => {
                    remote.push((k, (url.clone(), o..o + n, Some(shard.version.clone()))));
                    results.push(None);
                }
            }
        }
        let reads: Vec<_> = remote.iter().map(|r| r.1.clone()).collect();
        for ((k, _), got) in remote.iter().zip(self.storage.get_many_ranges(&reads)) {
            results[*k] = Some(got.map(|bytes| bufs[*k] = bytes).map_err(Into::into));
        }
        results
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Err(std::io::Error::other("a batch read lost a sample"))))
            .collect()
    }
}
