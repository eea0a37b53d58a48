//! gm-storage against real servers on loopback: moto's S3 and RangeHTTPServer (installed by
//! `cargo xtask test`; SKIP lines without them, failures with GM_REQUIRE_S3=1).

use std::path::Path;
use std::time::Duration;

use gm_storage::testing::{range_http_or_skip, s3_or_skip};
use gm_storage::{FailureKind, StorageOptions};

/// A fixture video (`$GM_FIXTURES/video` in the GPU bundle).
fn media(name: &str) -> std::path::PathBuf {
    std::env::var_os("GM_FIXTURES")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/media"))
        .join("video")
        .join(name)
}

fn quick() -> StorageOptions {
    StorageOptions {
        retries: 2,
        backoff_min: Duration::from_millis(5),
        ..StorageOptions::default()
    }
}

#[test]
fn s3_put_ranged_get_list_and_changed_version() {
    let Some(server) = s3_or_skip("s3_put_ranged_get_list_and_changed_version") else {
        return;
    };
    let bucket = server.bucket("basics", quick());
    let bytes = std::fs::read(media("h264_bframes.mkv")).expect("fixture");
    let url = bucket.url("videos/a.mkv");
    bucket.storage.put(&url, bytes.clone()).expect("put");
    bucket
        .storage
        .put(&bucket.url("videos/b/c.bin"), vec![1, 2, 3])
        .expect("put");
    bucket
        .storage
        .put(&bucket.url("other.bin"), vec![4])
        .expect("put");

    let (got, version) = bucket
        .storage
        .get(&url, Some(100..4196), None)
        .expect("ranged get");
    assert_eq!(got, bytes[100..4196]);
    assert_eq!(version.size, bytes.len() as u64);
    assert!(version.etag.is_some() && version.modified.is_some());

    let listed = bucket.storage.list(&bucket.url("videos")).expect("list");
    let keys: Vec<_> = listed
        .iter()
        .map(|e| (e.url.key().to_string(), e.size))
        .collect();
    let expected = [
        ("videos/a.mkv".to_string(), bytes.len() as u64),
        ("videos/b/c.bin".into(), 3),
    ];
    assert_eq!(keys, expected);

    bucket
        .storage
        .put(&url, bytes[..1000].to_vec())
        .expect("replace");
    let err = bucket
        .storage
        .get(&url, Some(0..10), Some(&version))
        .expect_err("412");
    assert_eq!(
        err.failure().map(|f| (f.kind, f.status)),
        Some((FailureKind::Changed, Some(412)))
    );
}

#[test]
fn a_large_file_uploads_in_parts_and_a_small_one_in_one_put() {
    let Some(server) = s3_or_skip("a_large_file_uploads_in_parts_and_a_small_one_in_one_put")
    else {
        return;
    };
    let options = StorageOptions {
        part_bytes: 5 << 20,
        ..quick()
    };
    let bucket = server.bucket("parts", options);
    let dir = std::env::temp_dir().join(format!("gm-parts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    // 12.5 MiB of a pattern no part repeats: parts of 5, 5 and 2.5 MiB.
    let big: Vec<u8> = (0..(25u64 << 19))
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let (big_path, small_path) = (dir.join("big.tar"), dir.join("small.tar"));
    std::fs::write(&big_path, &big).expect("write");
    std::fs::write(&small_path, &big[..1000]).expect("write");
    let url = bucket.url("shards/big.tar");
    let put = bucket
        .storage
        .put_file(&url, &big_path)
        .expect("multipart upload");
    assert_eq!(put.size, big.len() as u64);
    // S3 (and moto) tag a multipart object `md5-of-md5s-<parts>`.
    let etag = put.etag.clone().unwrap_or_default();
    assert!(etag.trim_matches('"').ends_with("-3"), "etag {etag}");
    let (got, _) = bucket.storage.get(&url, None, None).expect("get");
    assert!(got == big, "the object differs from the file");
    let small = bucket.url("shards/small.tar");
    let put = bucket.storage.put_file(&small, &small_path).expect("put");
    assert!(!put.etag.unwrap_or_default().contains('-'), "one PUT");
    assert_eq!(
        bucket.storage.get(&small, None, None).expect("get").0,
        big[..1000]
    );
    // A file that cannot be read names itself.
    let gone = dir.join("gone.tar");
    let err = bucket
        .storage
        .put_file(&bucket.url("x"), &gone)
        .expect_err("no file");
    assert!(err.to_string().contains("gone.tar"), "{err}");
    std::fs::remove_dir_all(&dir).expect("cleanup");
}

#[test]
fn s3_missing_object_is_not_found() {
    let Some(server) = s3_or_skip("s3_missing_object_is_not_found") else {
        return;
    };
    let bucket = server.bucket("missing", quick());
    let err = bucket
        .storage
        .get(&bucket.url("nope"), None, None)
        .expect_err("404");
    assert_eq!(
        std::io::Error::from(err).kind(),
        std::io::ErrorKind::NotFound
    );
}

#[test]
fn range_http_server_gives_ranges_and_last_modified_but_no_listing() {
    let dir = media("");
    let Some(server) = range_http_or_skip("range_http_server_gives_ranges", &dir) else {
        return;
    };
    let storage = gm_storage::Storage::new(quick());
    let bytes = std::fs::read(media("vp9_odd.webm")).expect("fixture");
    let (got, version) = storage
        .get(&server.url("vp9_odd.webm"), Some(7..7007), None)
        .expect("get");
    assert_eq!(got, bytes[7..7007]);
    assert_eq!(
        (version.size, version.etag.is_none()),
        (bytes.len() as u64, true)
    );
    assert!(version.modified.is_some());
    let err = storage.list(&server.url("")).expect_err("HTTP cannot list");
    assert_eq!(
        err.failure().map(|f| f.kind),
        Some(FailureKind::Unsupported)
    );
    assert_eq!(storage.stats().requests, 1);
}

/// Run in a child process by the test below, never on its own.
#[test]
fn probe_for_the_skip_test() {
    if std::env::var_os("GM_STORAGE_PROBE").is_some() {
        let _ = s3_or_skip("probe");
    }
}

fn run_probe(require: bool) -> (bool, String) {
    let mut cmd = std::process::Command::new(std::env::current_exe().expect("test binary path"));
    cmd.args(["--exact", "probe_for_the_skip_test", "--nocapture"])
        .env("GM_STORAGE_PROBE", "1")
        .env_remove("GM_MOTO_SERVER")
        .env_remove(gm_storage::testing::REQUIRE_S3_VAR);
    if require {
        cmd.env(gm_storage::testing::REQUIRE_S3_VAR, "1");
    }
    let out = cmd.output().expect("the test binary runs");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

#[test]
fn without_a_server_tests_skip_visibly_unless_one_is_required() {
    let (ok, text) = run_probe(false);
    assert!(
        ok && text.contains("SKIP (no S3 test server): probe"),
        "{text}"
    );
    let (ok, text) = run_probe(true);
    assert!(
        !ok && text.contains("no S3 test server and GM_REQUIRE_S3=1"),
        "{text}"
    );
}
