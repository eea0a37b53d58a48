//! [`SliceSource`]: a byte range of another source (a video member of a tar shard) as a
//! source of its own, so that video indexes and decode plans read members unchanged.

use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use gm_demux::{ByteSource, SourceVersion};

/// Bytes `start..start + len` of `inner`, addressed from 0.
pub struct SliceSource {
    inner: Arc<dyn ByteSource>,
    start: u64,
    len: u64,
    name: PathBuf,
    read: AtomicU64,
}

impl std::fmt::Debug for SliceSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SliceSource")
            .field("name", &self.name)
            .field("start", &self.start)
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

impl SliceSource {
    /// `range` of `inner`, named `name` in errors (`shard.tar#key.mp4`); an error if the
    /// range runs past the end of `inner`.
    pub fn new(
        inner: Arc<dyn ByteSource>,
        range: Range<u64>,
        name: impl Into<PathBuf>,
    ) -> io::Result<Self> {
        let name = name.into();
        if range.start > range.end || range.end > inner.len() {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "{}: bytes {range:?} run past the end of {} ({} bytes)",
                    name.display(),
                    inner.name().display(),
                    inner.len()
                ),
            ));
        }
        Ok(SliceSource {
            inner,
            start: range.start,
            len: range.end - range.start,
            name,
            read: AtomicU64::new(0),
        })
    }
}

impl ByteSource for SliceSource {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let end = offset
            .checked_add(buf.len() as u64)
            .filter(|&e| e <= self.len);
        if end.is_none() {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "{}: {} bytes at offset {offset} run past its {} bytes",
                    self.name.display(),
                    buf.len(),
                    self.len
                ),
            ));
        }
        self.inner.read_exact_at(buf, self.start + offset)?;
        self.read.fetch_add(buf.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    fn name(&self) -> &Path {
        &self.name
    }

    fn bytes_read(&self) -> u64 {
        self.read.load(Ordering::Relaxed)
    }

    fn prefetch(&self, ranges: &[Range<u64>]) {
        let shifted: Vec<Range<u64>> = ranges
            .iter()
            .map(|r| self.start + r.start.min(self.len)..self.start + r.end.min(self.len))
            .collect();
        self.inner.prefetch(&shifted);
    }

    fn requests(&self) -> u64 {
        self.inner.requests()
    }

    /// The shard's version, with the member's place in the ETag: a cached index of the
    /// member is valid for the same bytes of the same shard only.
    fn version(&self) -> SourceVersion {
        let shard = self.inner.version();
        SourceVersion {
            size: self.len,
            modified: shard.modified,
            etag: Some(format!(
                "{}@{}+{}",
                shard.etag.unwrap_or_default(),
                self.start,
                self.len
            )),
        }
    }
}
