//! One shard: a local tar read by offsets, or a remote one read by ranged GETs pinned to the
//! version seen when the dataset was opened.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::ops::Range;
use std::path::PathBuf;

use gm_demux::SourceVersion;
use gm_storage::{Location, RemoteUrl, Storage};

use super::ShardError;

/// A remote shard is streamed for indexing in GETs of this size.
const STREAM_CHUNK: u64 = 8 << 20;

/// Where a shard lives.
#[derive(Debug, Clone)]
pub(crate) enum Place {
    Local(PathBuf),
    Remote(RemoteUrl),
}

/// A shard with the size and version it had when opened.
#[derive(Debug, Clone)]
pub(crate) struct Shard {
    /// Its path or URL, as given (expanded): for names and errors.
    pub name: String,
    pub place: Place,
    pub version: SourceVersion,
}

impl Shard {
    /// Looks `name` up: its size and version (one 1-byte GET for remote shards).
    pub(crate) fn open(name: &str, storage: &Storage) -> Result<Shard, ShardError> {
        let io = |source: std::io::Error| ShardError::Io {
            shard: name.to_string(),
            source,
        };
        let location = Location::parse(name).map_err(|e| io(e.into()))?;
        let (place, version) = match location {
            Location::Local(path) => {
                let meta = std::fs::metadata(&path).map_err(io)?;
                let version = SourceVersion {
                    size: meta.len(),
                    modified: meta.modified().ok(),
                    etag: None,
                };
                (Place::Local(path), version)
            }
            Location::Remote(url) => {
                let (_, version) = storage
                    .get(&url, Some(0..1), None)
                    .map_err(|e| io(e.into()))?;
                (Place::Remote(url), version)
            }
        };
        Ok(Shard {
            name: name.to_string(),
            place,
            version,
        })
    }

    /// Whether it is gzip-compressed (by name): such a shard can only be streamed.
    pub(crate) fn is_gzip(&self) -> bool {
        is_gzip_name(&self.name)
    }

    /// The shard front to back, in bounded memory.
    pub(crate) fn reader(&self, storage: &Storage) -> Result<Box<dyn Read + Send>, ShardError> {
        self.clone().into_reader(storage.clone())
    }

    /// [`reader`](Self::reader), owning what it reads from.
    pub(crate) fn into_reader(self, storage: Storage) -> Result<Box<dyn Read + Send>, ShardError> {
        match self.place {
            Place::Local(path) => {
                let file = File::open(&path).map_err(|source| ShardError::Io {
                    shard: self.name.clone(),
                    source,
                })?;
                Ok(Box::new(BufReader::with_capacity(1 << 20, file)))
            }
            Place::Remote(url) => Ok(Box::new(RangeReader {
                storage,
                url,
                version: self.version,
                at: 0,
                chunk: Vec::new(),
                used: 0,
            })),
        }
    }

    /// Reads `range` of a local shard (remote shards are read in batches by the dataset).
    pub(crate) fn read_local(
        &self,
        path: &std::path::Path,
        range: Range<u64>,
        buf: &mut Vec<u8>,
    ) -> std::io::Result<()> {
        let mut f = File::open(path)?;
        f.seek(SeekFrom::Start(range.start))?;
        buf.clear();
        let len = range.end - range.start;
        buf.reserve(usize::try_from(len).unwrap_or(0));
        let got = f.take(len).read_to_end(buf)?;
        if (got as u64) < len {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!(
                    "{}: {got} of {len} bytes at offset {} (the shard shrank?)",
                    self.name, range.start
                ),
            ));
        }
        Ok(())
    }
}

impl Shard {
    /// Reads several ranges, each result on its own (labels of a given index).
    pub(crate) fn read_ranges(
        &self,
        ranges: &[Range<u64>],
        storage: &Storage,
    ) -> Vec<std::io::Result<Vec<u8>>> {
        match &self.place {
            Place::Local(path) => ranges
                .iter()
                .map(|r| {
                    let mut buf = Vec::new();
                    self.read_local(path, r.clone(), &mut buf).map(|()| buf)
                })
                .collect(),
            Place::Remote(url) => {
                let reads: Vec<_> = ranges
                    .iter()
                    .map(|r| (url.clone(), r.clone(), Some(self.version.clone())))
                    .collect();
                storage
                    .get_many_ranges(&reads)
                    .into_iter()
                    .map(|r| r.map_err(Into::into))
                    .collect()
            }
        }
    }
}

/// Whether a shard name says gzip (`.tar.gz`, `.tgz`).
pub(crate) fn is_gzip_name(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.ends_with(".tar.gz") || n.ends_with(".tgz")
}

/// A remote object as a `Read`, by ranged GETs of [`STREAM_CHUNK`] pinned to one version.
struct RangeReader {
    storage: Storage,
    url: RemoteUrl,
    version: SourceVersion,
    at: u64,
    chunk: Vec<u8>,
    used: usize,
}

impl Read for RangeReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.used == self.chunk.len() {
            if self.at >= self.version.size {
                return Ok(0);
            }
            let end = (self.at + STREAM_CHUNK).min(self.version.size);
            let (bytes, _) =
                self.storage
                    .get(&self.url, Some(self.at..end), Some(&self.version))?;
            if bytes.is_empty() {
                return Ok(0);
            }
            self.at += bytes.len() as u64;
            self.chunk = bytes;
            self.used = 0;
        }
        let n = buf.len().min(self.chunk.len() - self.used);
        buf[..n].copy_from_slice(&self.chunk[self.used..self.used + n]);
        self.used += n;
        Ok(n)
    }
}
