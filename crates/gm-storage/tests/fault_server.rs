//! gm-storage's requests against the in-process FaultServer: retries, resumed bodies,
//! timeouts, a stopped server and a replaced object, each bounded in time.

use std::time::{Duration, Instant};

use gm_storage::testing::{Fault, FaultServer};
use gm_storage::{FailureKind, Storage, StorageOptions};

/// Test-sized retries: 4 retries, millisecond backoff, sub-second timeouts.
fn fast() -> StorageOptions {
    StorageOptions {
        retries: 3,
        backoff_min: Duration::from_millis(5),
        backoff_max: Duration::from_millis(20),
        timeout: Duration::from_millis(400),
        connect_timeout: Duration::from_millis(200),
        retry_timeout: Duration::from_secs(3),
        ..StorageOptions::default()
    }
}

fn data(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 % 251) as u8).collect()
}

fn server_with(key: &str, bytes: Vec<u8>) -> FaultServer {
    let server = FaultServer::start().expect("a loopback port");
    server.insert(key, bytes);
    server
}

/// `bytes` served as key "k", opened as a `RemoteSource` with small sizes: an 8 KiB first GET,
/// 4 KiB blocks, a 64 KiB cache.
fn small_cache_source(bytes: &[u8]) -> (FaultServer, gm_storage::RemoteSource) {
    let server = server_with("k", bytes.to_vec());
    let options = StorageOptions {
        open_bytes: 8 << 10,
        block_size: 4 << 10,
        cache_bytes: 64 << 10,
        ..fast()
    };
    let storage = Storage::new(options);
    let src = gm_storage::RemoteSource::open(&storage, &server.url("k")).expect("open");
    (server, src)
}

#[test]
fn ranged_reads_return_exactly_the_bytes_and_the_etag() {
    let bytes = data(100_000);
    let server = server_with("v/a.bin", bytes.clone());
    let storage = Storage::new(fast());
    let (got, version) = storage
        .get(&server.url("v/a.bin"), Some(1000..5000), None)
        .expect("get");
    assert_eq!(got, bytes[1000..5000]);
    assert_eq!((version.size, version.etag.is_some()), (100_000, true));
    let (whole, _) = storage
        .get(&server.url("v/a.bin"), None, None)
        .expect("get");
    assert_eq!(whole, bytes);
    assert_eq!(
        server.log(),
        ["GET v/a.bin bytes=1000-4999", "GET v/a.bin -"]
    );
}

#[test]
fn two_503s_are_retried_and_counted() {
    let bytes = data(10_000);
    let server = server_with("k", bytes.clone());
    server.script(Some("k"), Fault::Status(503), 2);
    let storage = Storage::new(fast());
    let (got, _) = storage
        .get(&server.url("k"), Some(0..10_000), None)
        .expect("third attempt");
    assert_eq!(got, bytes);
    let stats = storage.stats();
    assert_eq!((stats.requests, stats.retries, stats.failures), (3, 2, 0));
    assert_eq!(server.requests(), 3);
}

#[test]
fn status_503_past_the_budget_fail_naming_url_range_status_and_attempts() {
    let server = server_with("k", data(1000));
    server.script(Some("k"), Fault::Status(503), 100);
    let storage = Storage::new(fast());
    let url = server.url("k");
    let err = storage
        .get(&url, Some(0..100), None)
        .expect_err("always 503");
    let failure = err.failure().expect("a request failure");
    assert_eq!((failure.status, failure.attempts), (Some(503), 4));
    let text = err.to_string();
    assert!(
        text.starts_with(&format!("GET {url} bytes 0-99: 503 after 4 attempts")),
        "{text}"
    );
    assert_eq!(storage.stats().failures, 1);
    let io: std::io::Error = err.into();
    assert_eq!(io.kind(), std::io::ErrorKind::Other);
}

#[test]
fn a_cut_body_resumes_from_where_it_stopped_when_there_is_an_etag() {
    let bytes = data(200_000);
    let server = server_with("k", bytes.clone());
    server.script(Some("k"), Fault::CutBody(50_000), 1);
    let storage = Storage::new(fast());
    let (got, _) = storage
        .get(&server.url("k"), Some(0..200_000), None)
        .expect("resumed");
    assert_eq!(got, bytes);
    let log = server.log();
    assert_eq!(log, ["GET k bytes=0-199999", "GET k bytes=50000-199999"]);
    assert_eq!(storage.stats().bytes, 200_000);
}

#[test]
fn a_cut_body_without_an_etag_is_fetched_again_whole() {
    let bytes = data(120_000);
    let server = FaultServer::start().expect("a loopback port");
    server.insert_without_etag("k", bytes.clone());
    server.script(Some("k"), Fault::CutBody(1000), 1);
    let storage = Storage::new(fast());
    let (got, version) = storage
        .get(&server.url("k"), Some(0..120_000), None)
        .expect("retried");
    assert_eq!(got, bytes);
    assert!(version.etag.is_none() && version.modified.is_some());
    assert_eq!(
        server.log(),
        ["GET k bytes=0-119999", "GET k bytes=0-119999"]
    );
}

#[test]
fn a_response_slower_than_the_timeout_is_retried() {
    let bytes = data(5000);
    let server = server_with("k", bytes.clone());
    server.script(Some("k"), Fault::Delay(Duration::from_secs(2)), 1);
    let storage = Storage::new(fast());
    let started = Instant::now();
    let (got, _) = storage
        .get(&server.url("k"), Some(0..5000), None)
        .expect("second attempt");
    assert_eq!(got, bytes);
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(storage.stats().retries, 1);
}

#[test]
fn only_slow_responses_fail_as_timeouts_within_the_retry_budget() {
    let server = server_with("k", data(5000));
    server.script(Some("k"), Fault::Delay(Duration::from_secs(5)), 100);
    let storage = Storage::new(fast());
    let started = Instant::now();
    let err = storage
        .get(&server.url("k"), Some(0..10), None)
        .expect_err("always slow");
    assert_eq!(err.failure().map(|f| f.kind), Some(FailureKind::TimedOut));
    // 4 attempts of 400 ms plus backoff, well under the 3 s retry budget's end.
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_stopped_server_is_retried_until_it_comes_back() {
    let bytes = data(4000);
    let mut server = server_with("k", bytes.clone());
    let storage = Storage::new(StorageOptions {
        retries: 10,
        ..fast()
    });
    let url = server.url("k");
    assert_eq!(
        storage.get(&url, Some(0..10), None).expect("up").0,
        bytes[..10]
    );
    server.stop();
    let err = Storage::new(fast())
        .get(&url, Some(0..10), None)
        .expect_err("refused");
    assert_eq!(err.failure().map(|f| f.kind), Some(FailureKind::Connection));
    let restarter = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        server.restart().expect("same port");
        server
    });
    let (got, _) = storage
        .get(&url, Some(0..4000), None)
        .expect("after the restart");
    assert_eq!(got, bytes);
    assert!(storage.stats().retries >= 1);
    drop(restarter.join());
}

#[test]
fn an_object_replaced_after_opening_is_reported_as_changed() {
    let server = server_with("k", data(3000));
    let storage = Storage::new(fast());
    let url = server.url("k");
    let (_, version) = storage
        .get(&url, Some(0..100), None)
        .expect("first version");
    server.insert("k", data(3001));
    let err = storage
        .get(&url, Some(100..200), Some(&version))
        .expect_err("412");
    let failure = err.failure().expect("a request failure");
    assert_eq!(
        (failure.kind, failure.status, failure.attempts),
        (FailureKind::Changed, Some(412), 1)
    );
    assert!(
        err.to_string().contains("changed since it was opened"),
        "{err}"
    );
}

#[test]
fn a_missing_object_is_not_found_at_once() {
    let server = server_with("k", data(10));
    let storage = Storage::new(fast());
    let err = storage
        .get(&server.url("nope"), None, None)
        .expect_err("404");
    let io: std::io::Error = err.into();
    assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
    assert_eq!(server.requests(), 1);
}

#[test]
fn the_synchronous_api_works_inside_an_application_runtime() {
    let bytes = data(3000);
    let server = server_with("k", bytes.clone());
    let storage = Storage::new(fast());
    let url = server.url("k");
    // Runtime::block_on would panic here ("cannot start a runtime from within a runtime").
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    let got = rt.block_on(async move { storage.get(&url, Some(0..3000), None) });
    assert_eq!(got.expect("get inside a runtime").0, bytes);
}

#[test]
fn a_remote_source_reads_through_its_cache_and_past_it() {
    use gm_demux::ByteSource;
    let bytes = data(300_000);
    let (server, src) = small_cache_source(&bytes);
    assert_eq!((src.len(), src.requests()), (300_000, 1));
    let mut small = vec![0; 5000];
    src.read_exact_at(&mut small, 100_000).expect("two blocks");
    assert_eq!(small, bytes[100_000..105_000]);
    src.read_exact_at(&mut small, 100_500).expect("cached");
    assert_eq!(small, bytes[100_500..105_500]);
    assert_eq!(src.requests(), 2, "the second read came from the cache");
    // 100 KB is more than half the 64 KiB cache: one exact ranged read.
    let mut large = vec![0; 100_000];
    src.read_exact_at(&mut large, 150_000).expect("exact read");
    assert_eq!(large, bytes[150_000..250_000]);
    assert_eq!(src.requests(), 3);
    let log = server.log();
    assert_eq!(
        log.last().map(String::as_str),
        Some("GET k bytes=150000-249999")
    );
    let err = src
        .read_exact_at(&mut small, 299_000)
        .expect_err("past the end");
    assert_eq!(err.kind(), std::io::ErrorKind::UnexpectedEof);
}

/// An index's prefetch of header windows over an object larger than the cache: what the cache
/// cannot hold beside its blocks is left for the reads, so no byte is fetched twice (before,
/// the prefetch evicted the opening GET's blocks and the reads fetched them again).
#[test]
fn a_prefetch_larger_than_the_cache_never_fetches_a_byte_twice() {
    use gm_demux::ByteSource;
    let bytes = data(300_000);
    let (server, src) = small_cache_source(&bytes);
    // Windows of 100 bytes every 6,000 from the start: one block apart at most, so the
    // prefetch asks for every block of the object, 4.5 times the cache.
    let windows: Vec<std::ops::Range<u64>> =
        (0..50u64).map(|i| i * 6000 + 40..i * 6000 + 140).collect();
    src.prefetch(&windows);
    for w in &windows {
        let mut buf = vec![0; 100];
        src.read_exact_at(&mut buf, w.start).expect("a window");
        assert_eq!(buf, bytes[w.start as usize..w.end as usize]);
    }
    let mut fetched: Vec<(u64, u64)> = server
        .log()
        .iter()
        .filter_map(|l| {
            let (a, b) = l.strip_prefix("GET k bytes=")?.split_once('-')?;
            Some((a.parse().ok()?, b.parse().ok()?))
        })
        .collect();
    fetched.sort_unstable();
    for pair in fetched.windows(2) {
        assert!(pair[0].1 < pair[1].0, "fetched twice: {pair:?}");
    }
    assert!(src.bytes_fetched() <= 300_000, "{}", src.bytes_fetched());
}

/// Header windows far apart: each is fetched exactly (100 bytes, never rounded up to a
/// block: a full bitstream scan's windows rounded to blocks fetched nearly the whole file),
/// and every read is then served without another request.
#[test]
fn header_windows_are_fetched_exactly() {
    use gm_demux::ByteSource;
    let bytes = data(600_000);
    // The server lives to the end of the test (`_server`, not `_`).
    let (_server, src) = small_cache_source(&bytes);
    // 29 windows 20,000 bytes apart (more than the 16 KiB that share a request), past the
    // opening GET's two blocks.
    let windows: Vec<std::ops::Range<u64>> = (1..=29u64)
        .map(|i| i * 20_000 + 40..i * 20_000 + 140)
        .collect();
    src.prefetch(&windows);
    let (requests, fetched) = (src.requests(), src.bytes_fetched());
    assert_eq!(
        fetched,
        8192 + 29 * 100,
        "the opening GET, then the windows"
    );
    assert_eq!(requests, 1 + 29);
    for w in &windows {
        let mut buf = vec![0; 100];
        src.read_exact_at(&mut buf, w.start).expect("a window");
        assert_eq!(buf, bytes[w.start as usize..w.end as usize]);
    }
    assert_eq!(src.requests(), requests, "every window was prefetched");
    assert_eq!(src.bytes_fetched(), fetched);
}

/// Windows close together share requests, but the bytes between them never make a prefetch
/// fetch more than 1.5 times what it asked for.
#[test]
fn close_windows_share_requests_within_half_again_their_bytes() {
    use gm_demux::ByteSource;
    let bytes = data(600_000);
    let (_server, src) = small_cache_source(&bytes);
    // 100-byte windows 150 bytes apart (gaps of 50: merged), then 100-byte windows 2,000
    // apart (gaps of 1,900: merging them would fetch 20 times the bytes asked for).
    let close = (0..20u64).map(|i| 100_000 + i * 150..100_000 + i * 150 + 100);
    let far = (0..20u64).map(|i| 300_000 + i * 2000..300_000 + i * 2000 + 100);
    let windows: Vec<std::ops::Range<u64>> = close.chain(far).collect();
    let before = (src.requests(), src.bytes_fetched());
    src.prefetch(&windows);
    let (requests, fetched) = (src.requests() - before.0, src.bytes_fetched() - before.1);
    assert_eq!(
        requests,
        1 + 20,
        "one request for the close windows, one per far window"
    );
    assert!(
        fetched * 2 <= 3 * 40 * 100,
        "{fetched} bytes for 4,000 asked"
    );
    for w in &windows {
        let mut buf = vec![0; 100];
        src.read_exact_at(&mut buf, w.start).expect("a window");
        assert_eq!(buf, bytes[w.start as usize..w.end as usize]);
    }
    assert_eq!(
        src.requests() - before.0,
        requests,
        "every window was prefetched"
    );
}

/// Run alone in a child process by the test below: a client built before anything else used
/// the storage runtime (reqwest panics when no rustls provider is installed yet).
#[test]
fn probe_first_use_is_a_delete() {
    if std::env::var_os("GM_STORAGE_FIRST_USE").is_some() {
        let server = server_with("a/b", data(10));
        // `delete` builds the client on this thread, before the runtime exists.
        let deleted = Storage::new(fast()).delete(&server.url("a/b"));
        assert!(deleted.is_ok(), "{deleted:?}");
    }
}

#[test]
fn the_first_use_of_storage_in_a_process_may_build_a_client_outside_the_runtime() {
    let exe = std::env::current_exe().expect("test binary path");
    let out = std::process::Command::new(exe)
        .args(["--exact", "probe_first_use_is_a_delete"])
        .env("GM_STORAGE_FIRST_USE", "1")
        .output()
        .expect("the test binary runs");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && text.contains("1 passed"), "{text}");
}
