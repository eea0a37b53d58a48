//! Writing WebDataset shards: samples appended in order to `prefix-000000.tar`, ... of about a
//! target size, each with its DALI `.idx` next to it.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use gm_storage::Storage;

use super::ShardError;
use super::shard::Shard;
use super::tar_index::{TAR_BLOCK, TarIndex};

/// Writes samples into numbered tar shards in a directory.
pub struct ShardWriter {
    dir: PathBuf,
    prefix: String,
    max_bytes: u64,
    open: Option<Open>,
    written: Vec<PathBuf>,
    last_key: String,
}

struct Open {
    tar: tar::Builder<BufWriter<File>>,
    path: PathBuf,
    bytes: u64,
}

impl std::fmt::Debug for ShardWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardWriter")
            .field("dir", &self.dir)
            .field("prefix", &self.prefix)
            .field("max_bytes", &self.max_bytes)
            .field("written", &self.written)
            .finish_non_exhaustive()
    }
}

/// Bytes a member takes in a tar: its header and its data padded to whole blocks.
fn member_bytes(len: usize) -> u64 {
    TAR_BLOCK + (len as u64).div_ceil(TAR_BLOCK) * TAR_BLOCK
}

/// A key that wds2idx splits back whole: its last component holds no `.`.
pub fn sample_key(relative_stem: &str) -> String {
    match relative_stem.rsplit_once('/') {
        Some((dir, base)) => format!("{dir}/{}", base.replace('.', "_")),
        None => relative_stem.replace('.', "_"),
    }
}

impl ShardWriter {
    /// Shards `dir/prefix-000000.tar`, ... of at most `max_bytes` each (a sample larger than
    /// that gets a shard of its own).
    pub fn new(dir: impl Into<PathBuf>, prefix: &str, max_bytes: u64) -> std::io::Result<Self> {
        let dir = dir.into();
        std::fs::create_dir_all(&dir)?;
        Ok(ShardWriter {
            dir,
            prefix: prefix.to_string(),
            max_bytes: max_bytes.max(1),
            open: None,
            written: Vec::new(),
            last_key: String::new(),
        })
    }

    /// Appends one sample: members `key.ext` in the order given. A key equal to the previous
    /// sample's gets a suffix, since equal neighbours would merge into one sample.
    pub fn add(&mut self, key: &str, members: &[(&str, &[u8])]) -> std::io::Result<()> {
        let size: u64 = members.iter().map(|m| member_bytes(m.1.len())).sum();
        let full = self
            .open
            .as_ref()
            .is_some_and(|o| o.bytes > 0 && o.bytes + size > self.max_bytes);
        if full {
            self.close()?;
        }
        let open = match &mut self.open {
            Some(open) => open,
            None => {
                let path = self
                    .dir
                    .join(format!("{}-{:06}.tar", self.prefix, self.written.len()));
                let file = BufWriter::with_capacity(1 << 20, File::create(&path)?);
                self.open.insert(Open {
                    tar: tar::Builder::new(file),
                    path,
                    bytes: 0,
                })
            }
        };
        let mut key = key.to_string();
        if key == self.last_key {
            key = format!("{key}_{}", open.bytes);
        }
        for (ext, data) in members {
            let mut header = tar::Header::new_gnu();
            header.set_size(data.len() as u64);
            header.set_mode(0o644);
            header.set_mtime(0);
            open.tar
                .append_data(&mut header, format!("{key}.{ext}"), *data)?;
        }
        open.bytes += size;
        self.last_key = key;
        Ok(())
    }

    /// Ends the open shard and writes its index.
    fn close(&mut self) -> std::io::Result<()> {
        let Some(open) = self.open.take() else {
            return Ok(());
        };
        let mut file = open.tar.into_inner()?;
        file.flush()?;
        drop(file);
        write_local_index(&open.path)?;
        self.written.push(open.path);
        Ok(())
    }

    /// Ends the last shard; the shards written, in order.
    pub fn finish(mut self) -> std::io::Result<Vec<PathBuf>> {
        self.close()?;
        Ok(std::mem::take(&mut self.written))
    }

    /// Shards finished so far.
    pub fn shards_written(&self) -> usize {
        self.written.len()
    }
}

/// The `.idx` path of a `.tar` path (`x.tar` -> `x.idx`).
pub fn index_path(shard: &Path) -> PathBuf {
    shard.with_extension("idx")
}

/// Indexes a local shard and writes its `.idx` next to it; an error if it was cut short.
pub fn write_local_index(shard: &Path) -> std::io::Result<TarIndex> {
    let file = std::io::BufReader::new(File::open(shard)?);
    let built = TarIndex::build(file);
    if let Some(cut) = built.cut {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{}: {cut}", shard.display()),
        ));
    }
    std::fs::write(index_path(shard), built.index.to_dali())?;
    Ok(built.index)
}

/// Indexes a shard (path or URL) by reading it once; the index and why it ended early.
pub fn index_shard(
    name: &str,
    storage: &Storage,
) -> Result<(TarIndex, Option<String>), ShardError> {
    let shard = Shard::open(name, storage)?;
    if shard.is_gzip() {
        return Err(ShardError::Gzip(shard.name));
    }
    let built = TarIndex::build(shard.reader(storage)?);
    Ok((built.index, built.cut))
}
