//! [`Storage`]: shared clients, limits, retries and counters, with a synchronous API for
//! loader threads.

use std::collections::HashMap;
use std::io::Read;
use std::ops::Range;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use gm_demux::SourceVersion;
use object_store::path::Path as StorePath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload, WriteMultipart};
use tokio::sync::Semaphore;

use crate::error::{FailureKind, RequestFailure, StorageError};
use crate::fetch::{self, Fetched, Want};
use crate::location::{RemoteUrl, Scheme};
use crate::options::StorageOptions;
use crate::runtime;
use crate::stats::{Counters, StorageStats};

/// Semaphore units for bytes in flight: KiB, so that 256 MiB fits in a `u32` count.
const BYTE_UNIT: u64 = 1024;

/// A listed object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectEntry {
    /// Its URL.
    pub url: RemoteUrl,
    /// Its size in bytes.
    pub size: u64,
}

/// Access to remote stores. Cheap to clone; clones share clients, limits and counters.
#[derive(Debug, Clone)]
pub struct Storage {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    options: StorageOptions,
    stores: Mutex<HashMap<String, Arc<dyn ObjectStore>>>,
    requests: Arc<Semaphore>,
    bytes: Arc<Semaphore>,
    byte_units: u32,
    counters: Counters,
}

impl Default for Storage {
    fn default() -> Self {
        Storage::new(StorageOptions::default())
    }
}

impl Storage {
    /// The process's shared storage with default options (credentials and endpoints from the
    /// environment): what datasets given a URL use unless they are given a `Storage`.
    pub fn global() -> Storage {
        static GLOBAL: std::sync::OnceLock<Storage> = std::sync::OnceLock::new();
        GLOBAL.get_or_init(Storage::default).clone()
    }

    /// Storage with `options`.
    pub fn new(options: StorageOptions) -> Storage {
        let byte_units = (options.max_inflight_bytes / BYTE_UNIT).clamp(1, u32::MAX as u64 >> 3);
        let inner = Inner {
            requests: Arc::new(Semaphore::new(options.concurrency.max(1))),
            bytes: Arc::new(Semaphore::new(byte_units as usize)),
            byte_units: byte_units as u32,
            stores: Mutex::default(),
            counters: Counters::default(),
            options,
        };
        Storage {
            inner: Arc::new(inner),
        }
    }

    /// The options in use.
    pub fn options(&self) -> &StorageOptions {
        &self.inner.options
    }

    /// Counters so far.
    pub fn stats(&self) -> StorageStats {
        self.inner.counters.snapshot()
    }

    /// The client for `url`'s store, built once per store root.
    fn store(&self, url: &RemoteUrl) -> Result<Arc<dyn ObjectStore>, StorageError> {
        let root = url.root();
        let mut stores = self
            .inner
            .stores
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(store) = stores.get(&root) {
            return Ok(Arc::clone(store));
        }
        let store = crate::builder::build(url, &self.inner.options)?;
        stores.insert(root, Arc::clone(&store));
        Ok(store)
    }

    /// Reads `range` of `url` (the whole object for `None`), from version `pin` when given.
    /// Returns the bytes and the version they came from.
    pub fn get(
        &self,
        url: &RemoteUrl,
        range: Option<Range<u64>>,
        pin: Option<&SourceVersion>,
    ) -> Result<(Vec<u8>, SourceVersion), StorageError> {
        let this = self.clone();
        let (url, pin) = (url.clone(), pin.cloned());
        self.block_on(&url.to_string(), async move {
            this.get_async(&url, range, pin)
                .await
                .map(|f| (f.bytes, f.version))
        })
    }

    /// Reads several ranges of one object version concurrently, under the limits.
    pub fn get_ranges(
        &self,
        url: &RemoteUrl,
        ranges: &[Range<u64>],
        pin: &SourceVersion,
    ) -> Result<Vec<Vec<u8>>, StorageError> {
        let this = self.clone();
        let (url, pin, ranges) = (url.clone(), pin.clone(), ranges.to_vec());
        self.block_on(&url.to_string(), async move {
            let gets = ranges.into_iter().map(|r| {
                let (this, url, pin) = (this.clone(), url.clone(), pin.clone());
                async move { this.get_async(&url, Some(r), Some(pin)).await }
            });
            let fetched = futures::future::join_all(gets).await;
            fetched.into_iter().map(|f| f.map(|f| f.bytes)).collect()
        })
    }

    /// Reads whole objects concurrently; each result stands alone, so one failure does not
    /// cost the others.
    pub fn get_many(&self, urls: &[RemoteUrl]) -> Vec<Result<Vec<u8>, StorageError>> {
        if urls.is_empty() {
            // A batch of local files: no request, and no runtime threads started for it.
            return Vec::new();
        }
        let this = self.clone();
        let owned = urls.to_vec();
        let joined = self.block_on("(batch)", async move {
            let gets = owned.iter().map(|u| this.get_async(u, None, None));
            Ok(futures::future::join_all(gets).await)
        });
        match joined {
            Ok(results) => results.into_iter().map(|r| r.map(|f| f.bytes)).collect(),
            Err(e) => urls
                .iter()
                .map(|u| Err(runtime_error(&u.to_string(), &e)))
                .collect(),
        }
    }

    /// Reads one range from each of several objects concurrently (members of tar shards),
    /// each pinned to its version when one is given; each result stands alone.
    pub fn get_many_ranges(
        &self,
        reads: &[(RemoteUrl, Range<u64>, Option<SourceVersion>)],
    ) -> Vec<Result<Vec<u8>, StorageError>> {
        if reads.is_empty() {
            return Vec::new();
        }
        let this = self.clone();
        let owned = reads.to_vec();
        let joined = self.block_on("(batch)", async move {
            let gets = owned
                .iter()
                .map(|(u, r, pin)| this.get_async(u, Some(r.clone()), pin.clone()));
            Ok(futures::future::join_all(gets).await)
        });
        match joined {
            Ok(results) => results.into_iter().map(|r| r.map(|f| f.bytes)).collect(),
            Err(e) => reads
                .iter()
                .map(|(u, _, _)| Err(runtime_error(&u.to_string(), &e)))
                .collect(),
        }
    }

    async fn get_async(
        &self,
        url: &RemoteUrl,
        range: Option<Range<u64>>,
        pin: Option<SourceVersion>,
    ) -> Result<Fetched, StorageError> {
        let store = self.store(url)?;
        let len = range
            .as_ref()
            .map_or(self.inner.options.block_size, |r| r.end - r.start);
        let units = (len.div_ceil(BYTE_UNIT) as u32).clamp(1, self.inner.byte_units);
        let closed = |_| runtime_error(&url.to_string(), &"limits closed");
        let _request = self.inner.requests.acquire().await.map_err(closed)?;
        let _bytes = self.inner.bytes.acquire_many(units).await.map_err(closed)?;
        let _in_flight = self.inner.counters.start(len);
        let want = Want {
            url: url.url().as_str(),
            key: StorePath::from(url.key()),
            range,
            pin,
        };
        fetch::get(
            store.as_ref(),
            want,
            &self.inner.options,
            &self.inner.counters,
        )
        .await
    }

    /// Lists the objects under `prefix` (a "folder": a trailing `/` is implied), sorted by key.
    pub fn list(&self, prefix: &RemoteUrl) -> Result<Vec<ObjectEntry>, StorageError> {
        self.list_counted(prefix, None)
    }

    /// [`list`](Self::list), adding one to `listed` for every object as the pages arrive
    /// (a long listing's progress, for whoever polls the counter).
    pub fn list_counted(
        &self,
        prefix: &RemoteUrl,
        listed: Option<Arc<AtomicU64>>,
    ) -> Result<Vec<ObjectEntry>, StorageError> {
        if prefix.scheme() == Scheme::Http {
            return Err(self.unsupported(
                prefix,
                "an HTTP server cannot be listed: give a list file or shard URLs",
            ));
        }
        let store = self.store(prefix)?;
        let key = prefix.key().trim_end_matches('/').to_string();
        let base = prefix.clone();
        let counters_owner = self.clone();
        self.block_on(&prefix.to_string(), async move {
            use futures::TryStreamExt;
            counters_owner.inner.counters.attempt(false);
            let path = (!key.is_empty()).then(|| StorePath::from(key.as_str()));
            let listed: Vec<_> = store
                .list(path.as_ref())
                .inspect_ok(|_| {
                    if let Some(n) = &listed {
                        n.fetch_add(1, Ordering::Relaxed);
                    }
                })
                .try_collect()
                .await
                .map_err(|e| {
                    counters_owner.inner.counters.failed();
                    list_error(&base, &e)
                })?;
            let mut entries: Vec<ObjectEntry> = listed
                .into_iter()
                .map(|m| ObjectEntry {
                    url: base.with_key(m.location.as_ref()),
                    size: m.size,
                })
                .collect();
            entries.sort_by(|a, b| a.url.key().cmp(b.url.key()));
            Ok(entries)
        })
    }

    /// Writes `bytes` to `url` (tools and tests).
    pub fn put(&self, url: &RemoteUrl, bytes: Vec<u8>) -> Result<SourceVersion, StorageError> {
        let store = self.store(url)?;
        let key = StorePath::from(url.key());
        let name = url.to_string();
        self.block_on(&name.clone(), async move {
            let size = bytes.len() as u64;
            let put = store.put(&key, PutPayload::from(bytes)).await;
            let put = put.map_err(|e| simple_failure("PUT", &name, &e))?;
            Ok(SourceVersion {
                size,
                modified: None,
                etag: put.e_tag,
            })
        })
    }

    /// Uploads the file at `path` to `url`: one PUT below `part_bytes` ([`StorageOptions`]),
    /// else a multipart upload of `part_bytes` parts, [`PARTS_IN_FLIGHT`] at a time, read from
    /// the file as they go (a shard of gigabytes is never held whole). A failed multipart
    /// upload is aborted, so no parts are left behind.
    pub fn put_file(&self, url: &RemoteUrl, path: &Path) -> Result<SourceVersion, StorageError> {
        let file_error = |source| StorageError::File {
            path: path.to_path_buf(),
            source,
        };
        let size = std::fs::metadata(path).map_err(file_error)?.len();
        let part = self.options().part_bytes.max(MIN_PART);
        if size < part {
            return self.put(url, std::fs::read(path).map_err(file_error)?);
        }
        let file = std::fs::File::open(path).map_err(file_error)?;
        let upload = Upload {
            store: self.store(url)?,
            key: StorePath::from(url.key()),
            name: url.to_string(),
            path: path.to_path_buf(),
            part: usize::try_from(part).unwrap_or(usize::MAX),
            size,
        };
        self.block_on(&url.to_string(), upload.run(file))
    }

    /// Deletes `url` (tools and tests).
    pub fn delete(&self, url: &RemoteUrl) -> Result<(), StorageError> {
        let store = self.store(url)?;
        let key = StorePath::from(url.key());
        let name = url.to_string();
        self.block_on(&name.clone(), async move {
            store
                .delete(&key)
                .await
                .map_err(|e| simple_failure("DELETE", &name, &e))
        })
    }

    fn block_on<T: Send + 'static>(
        &self,
        url: &str,
        fut: impl Future<Output = Result<T, StorageError>> + Send + 'static,
    ) -> Result<T, StorageError> {
        runtime::run(fut).map_err(|e| runtime_error(url, &e))?
    }

    fn unsupported(&self, url: &RemoteUrl, why: &str) -> StorageError {
        StorageError::Request(Box::new(RequestFailure {
            op: "LIST",
            url: url.to_string(),
            range: None,
            kind: FailureKind::Unsupported,
            status: None,
            attempts: 0,
            elapsed: std::time::Duration::ZERO,
            message: why.to_string(),
        }))
    }
}

fn runtime_error(url: &str, e: &dyn std::fmt::Display) -> StorageError {
    StorageError::Runtime {
        url: url.to_string(),
        reason: e.to_string(),
    }
}

fn simple_failure(op: &'static str, url: &str, e: &object_store::Error) -> StorageError {
    let attempt = crate::classify::classify(e, false);
    StorageError::Request(Box::new(RequestFailure {
        op,
        url: url.to_string(),
        range: None,
        kind: attempt.kind,
        status: attempt.status,
        attempts: 1,
        elapsed: std::time::Duration::ZERO,
        message: attempt.message,
    }))
}

fn list_error(url: &RemoteUrl, e: &object_store::Error) -> StorageError {
    simple_failure("LIST", url.url().as_str(), e)
}

/// Parts of a multipart upload in flight at once.
pub const PARTS_IN_FLIGHT: usize = 4;
/// S3's smallest part (all but the last).
const MIN_PART: u64 = 5 << 20;

/// A multipart upload of one file.
struct Upload {
    store: Arc<dyn ObjectStore>,
    key: StorePath,
    name: String,
    path: std::path::PathBuf,
    part: usize,
    size: u64,
}

impl Upload {
    async fn run(self, mut file: std::fs::File) -> Result<SourceVersion, StorageError> {
        let fail = |e: &object_store::Error| simple_failure("PUT", &self.name, e);
        let started = self.store.put_multipart(&self.key).await;
        let mut writer =
            WriteMultipart::new_with_chunk_size(started.map_err(|e| fail(&e))?, self.part);
        if let Err(e) = self.send_parts(&mut writer, &mut file).await {
            let _ = writer.abort().await;
            return Err(e);
        }
        let put = writer.finish().await.map_err(|e| fail(&e))?;
        Ok(SourceVersion {
            size: self.size,
            modified: None,
            etag: put.e_tag,
        })
    }

    /// Reads the file a part at a time into the writer, which sends each when it is full.
    async fn send_parts(
        &self,
        writer: &mut WriteMultipart,
        file: &mut std::fs::File,
    ) -> Result<(), StorageError> {
        loop {
            let waited = writer.wait_for_capacity(PARTS_IN_FLIGHT).await;
            waited.map_err(|e| simple_failure("PUT", &self.name, &e))?;
            let mut buf = Vec::with_capacity(self.part);
            let mut part = file.by_ref().take(self.part as u64);
            // A read of a few milliseconds on this runtime's worker; the others go on.
            let n =
                tokio::task::block_in_place(|| part.read_to_end(&mut buf)).map_err(|source| {
                    StorageError::File {
                        path: self.path.clone(),
                        source,
                    }
                })?;
            if n == 0 {
                return Ok(());
            }
            writer.put(bytes::Bytes::from(buf));
        }
    }
}
