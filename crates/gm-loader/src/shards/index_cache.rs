//! Built shard indexes kept on disk, keyed by the shard's name, size and version (ETag, else
//! modification time): a replaced shard is indexed anew. Next to each `.idx` (DALI's format)
//! a `.labels` JSON holds the labels read while building and why the shard ended early.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::shard::Shard;
use super::tar_index::TarIndex;
use crate::image::Label;

/// What the index text cannot hold.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Extras {
    /// Per sample: the label, or why there is none.
    pub labels: Vec<Result<Label, String>>,
    /// Why the shard ended early, if it did.
    pub cut: Option<String>,
}

/// FNV-1a: stable across Rust versions, unlike the std hasher.
fn fnv(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for b in part.iter().chain(&[0xff]) {
            h = (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// The cache files' path without extension for `shard` (labels read with `json_key`).
pub(crate) fn stem(dir: &Path, shard: &Shard, json_key: &str) -> PathBuf {
    let v = &shard.version;
    let modified = v
        .modified
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    let h = fnv(&[
        shard.name.as_bytes(),
        &v.size.to_le_bytes(),
        v.etag.as_deref().unwrap_or("").as_bytes(),
        &modified.to_le_bytes(),
        json_key.as_bytes(),
    ]);
    let base = shard.name.rsplit('/').next().unwrap_or("shard");
    let base = base.split('.').next().unwrap_or("shard");
    dir.join(format!("{base}-{h:016x}"))
}

/// The cached index and extras for `stem`, if both are there and parse.
pub(crate) fn load(stem: &Path) -> Option<(TarIndex, Extras)> {
    let idx = std::fs::read_to_string(stem.with_extension("idx")).ok()?;
    let extras = std::fs::read(stem.with_extension("labels")).ok()?;
    let index = TarIndex::parse(&idx, &stem.display().to_string()).ok()?;
    let extras: Extras = serde_json::from_slice(&extras).ok()?;
    (extras.labels.len() == index.samples.len()).then_some((index, extras))
}

/// Stores an index and its extras; a failure only costs a rebuild next time.
pub(crate) fn store(stem: &Path, index: &TarIndex, extras: &Extras) {
    let write = |ext: &str, bytes: &[u8]| {
        // Write then rename, so that a reader never sees half a file.
        let tmp = stem.with_extension(format!("{ext}.tmp{}", std::process::id()));
        std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, stem.with_extension(ext)))
    };
    let json = serde_json::to_vec(extras).unwrap_or_default();
    // The labels go last: `load` needs both, so a half-written pair is a miss.
    let written = write("idx", index.to_dali().as_bytes()).and_then(|()| write("labels", &json));
    if let Err(e) = written {
        tracing::warn!(cache = %stem.display(), error = %e, "could not cache a shard index");
    }
}
