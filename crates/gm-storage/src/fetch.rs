//! One GET with gm's retries: transient failures are retried with backoff, and a body cut
//! short resumes from the bytes already received when the version is pinned by an ETag.

use std::ops::Range;
use std::time::{Duration, Instant};

use futures::StreamExt;
use gm_demux::SourceVersion;
use object_store::path::Path as StorePath;
use object_store::{GetOptions, GetRange, ObjectStore};

use crate::classify::classify;
use crate::error::{FailureKind, RequestFailure, StorageError};
use crate::options::StorageOptions;
use crate::stats::Counters;

/// What to fetch.
pub(crate) struct Want<'a> {
    pub url: &'a str,
    pub key: StorePath,
    /// `None`: the whole object.
    pub range: Option<Range<u64>>,
    /// The version the bytes must come from (412 otherwise).
    pub pin: Option<SourceVersion>,
}

/// Bytes and the version they came from.
pub(crate) struct Fetched {
    pub bytes: Vec<u8>,
    pub version: SourceVersion,
}

/// One attempt's failure before it is classified.
pub(crate) struct Attempt {
    pub kind: FailureKind,
    pub status: Option<u16>,
    pub message: String,
}

pub(crate) async fn get(
    store: &dyn ObjectStore,
    want: Want<'_>,
    options: &StorageOptions,
    counters: &Counters,
) -> Result<Fetched, StorageError> {
    let started = Instant::now();
    let mut got = Vec::new();
    let mut pin = want.pin.clone();
    let mut attempts = 0;
    loop {
        attempts += 1;
        counters.attempt(attempts > 1);
        let from = want.range.as_ref().map_or(0, |r| r.start) + got.len() as u64;
        let result = attempt(
            store,
            &want,
            from,
            pin.as_ref(),
            &mut got,
            counters,
            options,
        )
        .await;
        let err = match result {
            Ok(version) => {
                return Ok(Fetched {
                    bytes: got,
                    version,
                });
            }
            Err((err, version)) => {
                // Once a response named the version, later attempts resume against it.
                if pin.is_none() {
                    pin = version.filter(|v| v.etag.is_some());
                }
                err
            }
        };
        if pin.is_none() {
            got.clear();
        }
        let retry_in = options.backoff(attempts);
        let out_of_time = started.elapsed() + retry_in > options.retry_timeout;
        if !err.kind.is_transient(err.status) || attempts > options.retries || out_of_time {
            counters.failed();
            return Err(StorageError::Request(Box::new(RequestFailure {
                op: "GET",
                url: want.url.to_string(),
                range: want.range.clone(),
                kind: err.kind,
                status: err.status,
                attempts,
                elapsed: started.elapsed(),
                message: err.message,
            })));
        }
        tracing::debug!(url = want.url, attempts, "retrying: {}", err.message);
        tokio::time::sleep(retry_in).await;
    }
}

/// One request from `from`; appends the body to `got`. On failure, also gives the version the
/// response named, if it came that far.
async fn attempt(
    store: &dyn ObjectStore,
    want: &Want<'_>,
    from: u64,
    pin: Option<&SourceVersion>,
    got: &mut Vec<u8>,
    counters: &Counters,
    options: &StorageOptions,
) -> Result<SourceVersion, (Attempt, Option<SourceVersion>)> {
    let range = match &want.range {
        Some(r) => Some(GetRange::Bounded(from..r.end)),
        None if from > 0 => Some(GetRange::Offset(from)),
        None => None,
    };
    let get_options = GetOptions {
        range,
        if_match: pin.and_then(|v| v.etag.clone()),
        if_unmodified_since: pin
            .filter(|v| v.etag.is_none())
            .and_then(|v| v.modified.map(chrono::DateTime::from)),
        ..GetOptions::default()
    };
    // object_store's client timeout bounds the request; this bounds anything it does not.
    let limit = options.timeout + options.connect_timeout + Duration::from_millis(500);
    let result = tokio::time::timeout(limit, store.get_opts(&want.key, get_options)).await;
    let result = match result {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => return Err((classify(&e, false), None)),
        Err(_) => return Err((timed_out(limit), None)),
    };
    let version = SourceVersion {
        size: result.meta.size,
        modified: Some(result.meta.last_modified.into()),
        etag: result.meta.e_tag.clone(),
    };
    let expected = result.range.end - result.range.start;
    match read_body(result, expected, got, counters, limit).await {
        Ok(()) => Ok(version),
        Err(e) => Err((e, Some(version))),
    }
}

/// Most bytes reserved for a body before it arrives.
const MAX_RESERVE: usize = 64 << 20;

/// Appends the body to `got`, chunk by chunk (what arrived before a failure is kept, for a
/// resume), and checks that exactly `expected` bytes came.
async fn read_body(
    result: object_store::GetResult,
    expected: u64,
    got: &mut Vec<u8>,
    counters: &Counters,
    limit: Duration,
) -> Result<(), Attempt> {
    let before = got.len();
    // Room for the whole body up front: growing by doubling copied each body about twice
    // more and faulted in fresh pages each time (measured: most of a streamed shard's client
    // time was memmove). Capped, since `expected` is the server's word.
    got.reserve_exact(
        usize::try_from(expected)
            .unwrap_or(usize::MAX)
            .min(MAX_RESERVE),
    );
    let mut body = result.into_stream();
    loop {
        match tokio::time::timeout(limit, body.next()).await {
            Ok(Some(Ok(chunk))) => {
                counters.received(chunk.len() as u64);
                got.extend_from_slice(&chunk);
            }
            Ok(Some(Err(e))) => return Err(classify(&e, true)),
            Ok(None) => break,
            Err(_) => return Err(timed_out(limit)),
        }
    }
    let received = (got.len() - before) as u64;
    if received != expected {
        return Err(Attempt {
            kind: FailureKind::ShortBody,
            status: None,
            message: format!("{received} of {expected} bytes"),
        });
    }
    Ok(())
}

fn timed_out(limit: Duration) -> Attempt {
    Attempt {
        kind: FailureKind::TimedOut,
        status: None,
        message: format!("no progress in {limit:?}"),
    }
}
