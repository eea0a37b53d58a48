//! WebDataset tar shards: brace patterns of shard names, DALI's shard index, and
//! [`WebDataset`], an indexable dataset over indexed shards.

mod brace;
mod fields;
mod header_hops;
mod index_cache;
mod prefetch;
mod shard;
mod slice;
mod stream;
mod stream_parse;
mod tar_index;
mod tar_stream;
mod webdataset;
mod writer;

pub use brace::{BraceError, MAX_EXPANSION, expand};
pub(crate) use fields::{raw_image, raw_label};
pub use slice::SliceSource;
pub use stream::{
    ShardFailure, StreamBatch, StreamCursor, StreamEpoch, StreamOptions, StreamSample, StreamState,
    WebDatasetStream,
};
pub use tar_index::{
    Built, IndexedSample, LABEL_EXTENSIONS, Member, TAR_BLOCK, TarIndex, split_name,
};
pub use tar_stream::RawSample;
pub use webdataset::{WebDataset, WebDatasetBuilder};
pub use writer::{ShardWriter, index_path, index_shard, sample_key, write_local_index};

/// A shard dataset could not be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ShardError {
    /// A brace pattern is malformed or expands too far.
    #[error("shard pattern {pattern:?}: {reason}")]
    Brace {
        /// The pattern.
        pattern: String,
        /// The reason.
        reason: BraceError,
    },
    /// A shard or index could not be read.
    #[error("{shard}: {source}")]
    Io {
        /// The shard's (or index's) path or URL.
        shard: String,
        /// The reason.
        source: std::io::Error,
    },
    /// An index file is not DALI's `v1.2` format.
    #[error("{index}:{line}: {reason}")]
    Index {
        /// The index's path or URL.
        index: String,
        /// Line number, from 1.
        line: usize,
        /// The reason.
        reason: String,
    },
    /// A given index does not describe its shard.
    #[error("{index}: {reason}")]
    Mismatch {
        /// The index's path or URL.
        index: String,
        /// What differs.
        reason: String,
    },
    /// A compressed shard cannot be read by offsets.
    #[error("{0}: a .tar.gz cannot be indexed for random access; repack it as .tar")]
    Gzip(String),
    /// Index files were given, but not one per shard.
    #[error("{indexes} index files for {shards} shards")]
    IndexCount {
        /// Shards.
        shards: usize,
        /// Index files.
        indexes: usize,
    },
    /// Streaming options out of range.
    #[error("streaming options: {0}")]
    Options(String),
    /// The pattern named no shard.
    #[error("no shards")]
    NoShards,
}
