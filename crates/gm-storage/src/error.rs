//! Storage errors: each names the URL, and a failed request its range, status and attempts.

use std::fmt;
use std::io;
use std::ops::Range;
use std::time::Duration;

/// Why a request failed, after retries where retrying made sense.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// 404: no such object.
    NotFound,
    /// 412: the object changed since it was opened (its ETag no longer matches).
    Changed,
    /// 401 or 403.
    Denied,
    /// The request or its body timed out.
    TimedOut,
    /// The connection was refused or dropped.
    Connection,
    /// The body ended before the requested range did.
    ShortBody,
    /// Any other HTTP status.
    Status,
    /// The store said the operation is not supported (listing an HTTP server).
    Unsupported,
    /// Anything else.
    Other,
}

impl FailureKind {
    /// Whether another attempt may succeed.
    pub fn is_transient(self, status: Option<u16>) -> bool {
        match self {
            FailureKind::TimedOut | FailureKind::Connection | FailureKind::ShortBody => true,
            FailureKind::Status => status.is_some_and(|s| s >= 500 || s == 429 || s == 408),
            FailureKind::Other => status.is_none_or(|s| s >= 500),
            _ => false,
        }
    }

    fn io_kind(self) -> io::ErrorKind {
        match self {
            FailureKind::NotFound => io::ErrorKind::NotFound,
            FailureKind::Denied => io::ErrorKind::PermissionDenied,
            FailureKind::TimedOut => io::ErrorKind::TimedOut,
            FailureKind::Connection => io::ErrorKind::ConnectionRefused,
            FailureKind::ShortBody => io::ErrorKind::UnexpectedEof,
            FailureKind::Unsupported => io::ErrorKind::Unsupported,
            FailureKind::Changed | FailureKind::Status | FailureKind::Other => io::ErrorKind::Other,
        }
    }
}

/// One failed request, with everything a bad-sample report needs.
#[derive(Debug, Clone)]
pub struct RequestFailure {
    /// `GET`, `HEAD` or `LIST`.
    pub op: &'static str,
    /// The object's URL.
    pub url: String,
    /// The byte range asked for, if any.
    pub range: Option<Range<u64>>,
    /// The cause.
    pub kind: FailureKind,
    /// The HTTP status of the last attempt, if one came back.
    pub status: Option<u16>,
    /// Attempts made, the first included.
    pub attempts: u32,
    /// Time from the first attempt to giving up.
    pub elapsed: Duration,
    /// The last attempt's error text.
    pub message: String,
}

impl fmt::Display for RequestFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.op, self.url)?;
        if let Some(r) = &self.range {
            write!(f, " bytes {}-{}", r.start, r.end.saturating_sub(1))?;
        }
        let cause = match (self.kind, self.status) {
            (FailureKind::Changed, _) => "changed since it was opened".to_string(),
            (FailureKind::ShortBody, _) => "body ended early".to_string(),
            (FailureKind::TimedOut, _) => "timed out".to_string(),
            (FailureKind::Connection, _) => "connection failed".to_string(),
            (_, Some(status)) => status.to_string(),
            (kind, None) => format!("{kind:?}").to_lowercase(),
        };
        write!(f, ": {cause} after {} attempt", self.attempts)?;
        if self.attempts != 1 {
            f.write_str("s")?;
        }
        write!(f, " in {:.1?} ({})", self.elapsed, self.message)
    }
}

/// An error of the storage layer.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// A string that is neither a path nor a URL gm can read.
    #[error("{url}: not a usable URL: {reason}")]
    BadUrl {
        /// The string given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The store could not be configured (an unknown option, missing credentials).
    #[error("{url}: storage configuration: {reason}")]
    Config {
        /// The store's URL.
        url: String,
        /// object_store's message.
        reason: String,
    },
    /// A request failed.
    #[error("{0}")]
    Request(Box<RequestFailure>),
    /// The storage runtime could not run the request (it was shut down or panicked).
    #[error("{url}: storage runtime: {reason}")]
    Runtime {
        /// The object's URL.
        url: String,
        /// What happened.
        reason: String,
    },
    /// A local file to upload could not be read.
    #[error("{}: {source}", path.display())]
    File {
        /// The file.
        path: std::path::PathBuf,
        /// The read's error.
        source: io::Error,
    },
}

impl StorageError {
    /// The failed request, if this is one.
    pub fn failure(&self) -> Option<&RequestFailure> {
        match self {
            StorageError::Request(f) => Some(f),
            _ => None,
        }
    }
}

impl From<StorageError> for io::Error {
    /// The kind follows the cause, so callers that match on `NotFound` or `TimedOut` keep
    /// working; the text names the URL, range, status and attempts.
    fn from(e: StorageError) -> io::Error {
        let kind = match &e {
            StorageError::Request(f) => f.kind.io_kind(),
            StorageError::BadUrl { .. } | StorageError::Config { .. } => {
                io::ErrorKind::InvalidInput
            }
            StorageError::Runtime { .. } => io::ErrorKind::Other,
            StorageError::File { source, .. } => source.kind(),
        };
        io::Error::new(kind, e)
    }
}
