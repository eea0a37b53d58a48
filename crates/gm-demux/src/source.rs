//! Positioned reads of a video's bytes, counted, so that the index and the plans can show
//! they read only what they need.

use std::fs::File;
use std::io;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

/// Which version of a source's bytes was read: a saved index is valid only for the same one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceVersion {
    /// Length in bytes.
    pub size: u64,
    /// Modification time, where the file system or server gives one.
    pub modified: Option<SystemTime>,
    /// The server's entity tag (remote objects), which changes whenever the bytes do.
    pub etag: Option<String>,
}

/// Random-access bytes: a file, or memory in tests and fuzzing.
pub trait ByteSource: Send + Sync {
    /// Total length in bytes.
    fn len(&self) -> u64;
    /// Whether the source is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Fills `buf` from `offset`; an error if the range runs past the end.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// A name for errors.
    fn name(&self) -> &Path;
    /// Bytes read so far.
    fn bytes_read(&self) -> u64;
    /// A hint that `ranges` will be read soon: a remote source fetches them at once, in as
    /// few requests as it can, instead of one round trip per later read. Local sources ignore it.
    fn prefetch(&self, ranges: &[Range<u64>]) {
        let _ = ranges;
    }
    /// Requests sent to the storage so far (0 for local sources, where reads are `pread`s).
    fn requests(&self) -> u64 {
        0
    }
    /// The version of the bytes, for index invalidation. By default only the length is known.
    fn version(&self) -> SourceVersion {
        SourceVersion {
            size: self.len(),
            ..SourceVersion::default()
        }
    }
}

/// A file read with `pread`, never through a shared cursor, so several threads can read it.
#[derive(Debug)]
pub struct FileSource {
    file: File,
    path: PathBuf,
    len: u64,
    read: AtomicU64,
}

impl FileSource {
    /// Opens `path`.
    pub fn open(path: &Path) -> io::Result<FileSource> {
        let file = File::open(path)?;
        let len = file.metadata()?.len();
        Ok(FileSource {
            file,
            path: path.to_path_buf(),
            len,
            read: AtomicU64::new(0),
        })
    }

    /// The file's modification time, for index invalidation.
    pub fn modified(&self) -> Option<std::time::SystemTime> {
        self.file.metadata().ok()?.modified().ok()
    }
}

impl ByteSource for FileSource {
    fn len(&self) -> u64 {
        self.len
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        check_range(offset, buf.len(), self.len)?;
        self.file.read_exact_at(buf, offset)?;
        self.read.fetch_add(buf.len() as u64, Ordering::Relaxed);
        Ok(())
    }
    fn name(&self) -> &Path {
        &self.path
    }
    fn bytes_read(&self) -> u64 {
        self.read.load(Ordering::Relaxed)
    }
    fn version(&self) -> SourceVersion {
        SourceVersion {
            size: self.len,
            modified: self.modified(),
            etag: None,
        }
    }
}

/// Bytes in memory under a name.
#[derive(Debug)]
pub struct MemSource {
    bytes: Vec<u8>,
    name: PathBuf,
    read: AtomicU64,
}

impl MemSource {
    /// Wraps `bytes`, called `name` in errors.
    pub fn new(name: impl Into<PathBuf>, bytes: Vec<u8>) -> MemSource {
        MemSource {
            bytes,
            name: name.into(),
            read: AtomicU64::new(0),
        }
    }
}

impl ByteSource for MemSource {
    fn len(&self) -> u64 {
        self.bytes.len() as u64
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        check_range(offset, buf.len(), self.len())?;
        let start = offset as usize;
        buf.copy_from_slice(&self.bytes[start..start + buf.len()]);
        self.read.fetch_add(buf.len() as u64, Ordering::Relaxed);
        Ok(())
    }
    fn name(&self) -> &Path {
        &self.name
    }
    fn bytes_read(&self) -> u64 {
        self.read.load(Ordering::Relaxed)
    }
}

fn check_range(offset: u64, len: usize, total: u64) -> io::Result<()> {
    match offset.checked_add(len as u64) {
        Some(end) if end <= total => Ok(()),
        _ => Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("{len} bytes at offset {offset} run past the end of the {total}-byte file"),
        )),
    }
}
