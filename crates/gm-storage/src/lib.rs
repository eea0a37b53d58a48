//! Remote storage for Gradient Mechanics: S3, GCS, Azure and plain HTTP(S) through
//! `object_store`, behind a synchronous API that loader threads call.
//!
//! - [`Location::parse`] tells local paths (and `file://`) from remote URLs; local data keeps
//!   the local file system's path.
//! - [`Storage`] holds one client per store (configured from the environment, then from
//!   [`StorageOptions::store`]), limits requests and bytes in flight, retries transient
//!   failures with backoff (resuming cut bodies), and counts what it did ([`StorageStats`]).
//! - Requests run on a runtime owned by this crate, so any thread can wait on them, including
//!   a thread inside the application's own tokio runtime.
//!
//! Errors name the URL, and failed requests their range, HTTP status and attempts.

mod builder;
mod cache;
mod classify;
mod error;
mod fetch;
mod location;
mod options;
mod remote;
mod runtime;
mod stats;
mod storage;
pub mod testing;

pub use error::{FailureKind, RequestFailure, StorageError};
pub use location::{Location, RemoteUrl, Scheme, looks_like_url};
pub use options::{GM_KEYS, StorageOptions};
pub use remote::RemoteSource;
pub use runtime::IO_THREADS_VAR;
pub use stats::StorageStats;
pub use storage::{ObjectEntry, PARTS_IN_FLIGHT, Storage};
