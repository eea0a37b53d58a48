//! `gm probe` and `gm demo` over URLs: the same output as for the local files, from the
//! in-process FaultServer (always), RangeHTTPServer and moto's S3 (when `cargo xtask test`
//! made them; `GM_REQUIRE_S3=1` makes their absence a failure).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod common;

use std::path::{Path, PathBuf};

use common::{fixtures, gm, read_png};
use gm_storage::StorageOptions;
use gm_storage::testing::{FaultServer, range_http_or_skip, s3_or_skip};
use serde_json::Value;

/// Small first GETs and blocks, so that a fixture of 40-130 KB is read by ranges rather than
/// whole at open (the defaults read objects up to 1 MiB whole).
const SMALL_BLOCKS: [&str; 4] = [
    "--storage",
    "open_bytes=8KiB",
    "--storage",
    "block_size=4KiB",
];

/// The fixture videos that `gm probe` indexes locally.
fn videos() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(fixtures().join("video"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let ext = p.extension().and_then(|e| e.to_str()).unwrap_or_default();
            ["mp4", "mkv", "webm"].contains(&ext)
        })
        .collect();
    v.sort();
    assert!(v.len() >= 20, "the fixture set shrank: {}", v.len());
    v
}

/// `gm probe --json` of `target` with `extra` arguments; `None` when it fails.
fn probe(target: &str, extra: &[&str]) -> Option<Value> {
    let out = gm()
        .args(["probe", "--json"])
        .args(extra)
        .arg(target)
        .output()
        .unwrap();
    if !out.status.success() {
        return None;
    }
    Some(serde_json::from_slice(&out.stdout).unwrap())
}

/// The remote table with its source-specific fields checked and removed: what is left must
/// equal the local table with its path and timing removed.
fn comparable(mut v: Value, remote: Option<&str>) -> (Value, Option<(u64, u64)>) {
    let o = v.as_object_mut().unwrap();
    o.remove("index_ms");
    let file = o.remove("file").unwrap();
    let counters = remote.map(|url| {
        assert_eq!(file, url);
        let requests = o.remove("requests").unwrap().as_u64().unwrap();
        let fetched = o.remove("bytes_fetched").unwrap().as_u64().unwrap();
        (requests, fetched)
    });
    if remote.is_none() {
        assert!(o.get("requests").is_none(), "local probes send no requests");
    }
    (v, counters)
}

/// Every fixture's `probe --json --frames` table from `url_of(name)` equals the local one.
fn check_all(url_of: impl Fn(&str) -> String, extra: &[&str]) {
    let mut compared = 0;
    for video in videos() {
        let name = video.file_name().unwrap().to_str().unwrap();
        let url = url_of(name);
        let args: Vec<&str> = ["--frames"].iter().chain(extra).copied().collect();
        let Some(local) = probe(video.to_str().unwrap(), &["--frames"]) else {
            // Refused locally (not indexable): refused remotely too.
            assert!(probe(&url, &args).is_none(), "{name}");
            continue;
        };
        let remote = probe(&url, &args).unwrap_or_else(|| panic!("{url} failed"));
        let (local, _) = comparable(local, None);
        let (remote, counters) = comparable(remote, Some(&url));
        assert!(local == remote, "{name}: the remote table differs");
        let (requests, fetched) = counters.unwrap();
        let size = local["file_size"].as_u64().unwrap();
        assert!(
            requests >= 1 && fetched <= size,
            "{name}: {requests} {fetched}"
        );
        compared += 1;
    }
    assert!(compared >= 20, "{compared} videos compared");
}

#[test]
fn probe_of_every_fixture_over_http_equals_the_local_table() {
    let server = FaultServer::start().unwrap();
    server.serve_dir(&fixtures().join("video"), "v").unwrap();
    check_all(
        |name| server.url(&format!("v/{name}")).to_string(),
        &SMALL_BLOCKS,
    );
}

#[test]
fn probe_of_an_mp4_fetches_only_the_ranges_its_index_needs() {
    let server = FaultServer::start().unwrap();
    let video = fixtures().join("video/h264_1366x766.mp4");
    let size = std::fs::metadata(&video).unwrap().len();
    server.insert("v.mp4", std::fs::read(&video).unwrap());
    let url = server.url("v.mp4").to_string();
    let keyframes = ["--frames", "--scan", "keyframes"];
    let local = probe(video.to_str().unwrap(), &keyframes).unwrap();
    let args: Vec<&str> = keyframes.iter().chain(&SMALL_BLOCKS).copied().collect();
    let remote = probe(&url, &args).unwrap();
    let (local, _) = comparable(local, None);
    let (remote, counters) = comparable(remote, Some(&url));
    assert!(local == remote, "the remote table differs");
    let (requests, fetched) = counters.unwrap();
    eprintln!("{url}: {requests} requests, {fetched} of {size} bytes");
    // The first GET, the moov box, the keyframes' header windows: a few requests, and a
    // small part of the file (the frame table still lists every frame).
    assert_eq!(requests, server.requests(), "every request is counted");
    assert!(requests <= 4, "{requests} requests");
    assert!(fetched * 4 < size, "{fetched} of {size} bytes");
    assert_eq!(
        local["frames"].as_array().unwrap().len() as u64,
        local["frame_count"].as_u64().unwrap()
    );
    // The text form reports the same counters.
    let out = gm()
        .arg("probe")
        .args(SMALL_BLOCKS)
        .arg(&url)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("requests,") && text.contains("bytes fetched"),
        "{text}"
    );
}

#[test]
fn probe_of_a_missing_object_or_a_bad_option_fails_naming_it() {
    let server = FaultServer::start().unwrap();
    let url = server.url("absent.mp4").to_string();
    let out = gm().args(["probe", &url]).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&url) && err.contains("404"), "{err}");
    let out = gm()
        .args(["probe", "--storage", "retries=lots", &url])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("retries") && err.contains("lots"), "{err}");
}

#[test]
fn probe_over_a_range_http_server_equals_the_local_table() {
    let name = "probe_over_a_range_http_server_equals_the_local_table";
    let Some(server) = range_http_or_skip(name, &fixtures().join("video")) else {
        return;
    };
    check_all(|name| server.url(name).to_string(), &SMALL_BLOCKS);
}

/// `--storage` arguments that reach the test S3 server.
fn s3_args(endpoint: &str) -> Vec<String> {
    [
        format!("endpoint={endpoint}"),
        "access_key_id=test".into(),
        "secret_access_key=test".into(),
        "region=us-east-1".into(),
        "allow_http=true".into(),
    ]
    .into_iter()
    .flat_map(|kv| ["--storage".to_string(), kv])
    .collect()
}

#[test]
fn probe_over_s3_equals_the_local_table() {
    let Some(server) = s3_or_skip("probe_over_s3_equals_the_local_table") else {
        return;
    };
    let bucket = server.bucket("probe", StorageOptions::default());
    bucket.upload_dir(&fixtures().join("video"), "v").unwrap();
    let mut extra = s3_args(&server.endpoint());
    extra.extend(SMALL_BLOCKS.map(String::from));
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    check_all(|name| bucket.url(&format!("v/{name}")).to_string(), &extra);
}

/// The demo images (default set, or GM_DEMO_IMAGES), as the demo finds them.
fn demo_images() -> PathBuf {
    std::env::var_os("GM_DEMO_IMAGES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/demo/images"))
}

/// The stdout of `cmd`, which must succeed (its output is the failure report).
fn stdout_of_success(cmd: &mut std::process::Command) -> String {
    let run = cmd.output().unwrap();
    let text = String::from_utf8_lossy(&run.stdout).into_owned();
    assert!(
        run.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    text
}

fn demo(images: &str, out: &Path, extra: &[String]) -> String {
    stdout_of_success(
        gm().args([
            "demo", "--cpu", "--epochs", "1", "--batch", "8", "--size", "64",
        ])
        .args(["--images", images])
        .args(extra)
        .arg("--out")
        .arg(out),
    )
}

#[test]
fn demo_over_s3_makes_the_local_contact_sheet() {
    let Some(server) = s3_or_skip("demo_over_s3_makes_the_local_contact_sheet") else {
        return;
    };
    let bucket = server.bucket("demo", StorageOptions::default());
    let dir = demo_images();
    let uploaded = bucket.upload_dir(&dir, "images").unwrap();
    let tmp = std::env::temp_dir().join(format!("gm-remote-demo-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let local = demo(dir.to_str().unwrap(), &tmp.join("local.png"), &[]);
    let url = bucket.url("images/").to_string();
    let remote = demo(&url, &tmp.join("remote.png"), &s3_args(&server.endpoint()));
    assert!(remote.contains(&format!("{uploaded} in {url}")), "{remote}");
    // Same files in the same order, same seeds: the same first batch, pixel for pixel.
    assert_eq!(
        read_png(&tmp.join("local.png")),
        read_png(&tmp.join("remote.png"))
    );
    // The truncated sample is reported under its URL.
    assert!(local.contains("video-001.truncated.jpeg"), "{local}");
    let bad = format!("{url}frames/video-001.truncated.jpeg");
    assert!(remote.contains(&bad), "{remote}");
    std::fs::remove_dir_all(&tmp).unwrap();
}

/// `gm probe --json DIR`: the folder's videos, skipped files and totals.
fn probe_folder(target: &str, extra: &[&str]) -> Value {
    let out = gm()
        .args(["probe", "--json"])
        .args(extra)
        .arg(target)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{target}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn probe_of_a_bucket_prefix_indexes_every_video_as_the_local_folder() {
    let name = "probe_of_a_bucket_prefix_indexes_every_video_as_the_local_folder";
    let Some(server) = s3_or_skip(name) else {
        return;
    };
    let bucket = server.bucket("probe-prefix", StorageOptions::default());
    let dir = fixtures().join("video");
    bucket.upload_dir(&dir, "v").unwrap();
    let local = probe_folder(dir.to_str().unwrap(), &[]);
    let prefix = bucket.url("v/").to_string();
    let mut extra = s3_args(&server.endpoint());
    extra.extend(SMALL_BLOCKS.map(String::from));
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let remote = probe_folder(&prefix, &extra);
    let videos = |v: &Value, root: &str, remote: bool| -> Vec<Value> {
        v["videos"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                let mut s = s.clone();
                let o = s.as_object_mut().unwrap();
                let file = o.remove("file").unwrap();
                let rel = file
                    .as_str()
                    .unwrap()
                    .strip_prefix(root)
                    .unwrap()
                    .to_string();
                o.insert("file".into(), rel.trim_start_matches('/').into());
                assert_eq!(o.remove("requests").is_some(), remote);
                s
            })
            .collect()
    };
    let want = videos(&local, dir.to_str().unwrap(), false);
    assert!(want.len() >= 20, "{} videos", want.len());
    assert_eq!(videos(&remote, &prefix, true), want);
    // Each file equals its own single-file probe.
    let one = comparable(
        probe(dir.join("h264_bpyramid.mp4").to_str().unwrap(), &[]).unwrap(),
        None,
    )
    .0;
    let from_folder = want
        .iter()
        .find(|v| v["file"] == "h264_bpyramid.mp4")
        .unwrap();
    let mut from_folder = from_folder.clone();
    from_folder.as_object_mut().unwrap().remove("file");
    // A single file's probe also says which decoder the stream gets on this machine.
    let mut one = one;
    let o = one.as_object_mut().unwrap();
    assert!(o.remove("decoder").is_some() && o.remove("decoder_reason").is_some());
    assert_eq!(from_folder, one);
    // The same file left out, and the cost counted.
    assert_eq!(
        remote["skipped"].as_array().unwrap().len(),
        local["skipped"].as_array().unwrap().len()
    );
    let total = &remote["total"];
    assert_eq!(total["videos"].as_u64().unwrap() as usize, want.len());
    assert!(total["requests"].as_u64().unwrap() >= want.len() as u64);
    assert!(total["bytes_read"].as_u64().unwrap() < total["file_size"].as_u64().unwrap());
    assert!(local["total"].get("requests").is_none());
}

fn shard_to(to: &str, extra: &[String]) -> String {
    stdout_of_success(
        gm().args(["shard", "--from"])
            .arg(demo_images())
            .args(["--to", to, "--size", "0.4MB", "--prefix", "demo"])
            .args(extra),
    )
}

#[test]
fn shard_to_s3_uploads_the_shards_and_indexes_a_local_run_writes() {
    let name = "shard_to_s3_uploads_the_shards_and_indexes_a_local_run_writes";
    let Some(server) = s3_or_skip(name) else {
        return;
    };
    let bucket = server.bucket("shard-to", StorageOptions::default());
    let local = std::env::temp_dir().join(format!("gm-shard-to-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&local);
    shard_to(local.to_str().unwrap(), &[]);
    let prefix = bucket.url("train/").to_string();
    let said = shard_to(&prefix, &s3_args(&server.endpoint()));
    assert!(said.contains(&prefix), "{said}");
    let storage = gm_storage::Storage::new(server.options(StorageOptions::default()));
    let mut files: Vec<String> = std::fs::read_dir(&local)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert!(files.len() >= 4, "several shards and their .idx: {files:?}");
    let listed = storage.list(&bucket.url("train/")).unwrap();
    let keys: Vec<String> = listed.iter().map(|o| o.url.key().to_string()).collect();
    let want: Vec<String> = files.iter().map(|f| format!("train/{f}")).collect();
    assert_eq!(keys, want, "the same objects as the local files");
    for f in &files {
        let (bytes, _) = storage
            .get(&bucket.url(&format!("train/{f}")), None, None)
            .unwrap();
        assert!(
            bytes == std::fs::read(local.join(f)).unwrap(),
            "{f} differs"
        );
    }
    let _ = std::fs::remove_dir_all(&local);
}
