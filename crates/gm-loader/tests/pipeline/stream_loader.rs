//! A streaming WebDataset through the `Loader` on the CPU path: each image is its sample's
//! (named `shard#key`), the order is the stream's, resuming from a saved state gives the rest
//! of the epoch bit for bit, epochs run back to back, shards in S3 give the local batches,
//! bad members and a cut shard are bad samples while the epoch goes on, and request faults
//! (503s, cut bodies, a deleted shard, an outage; FaultServer) are retried or cost exactly
//! their shard.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::common::*;
use gm_loader::shards::{ShardWriter, StreamOptions, WebDatasetStream, sample_key};
use gm_loader::{BadSamplePolicy, Batch, Dataset, InMemory, Loader, LoaderError, LoaderState};
use gm_storage::testing::s3_or_skip;
use gm_storage::{Storage, StorageOptions};
use gm_transforms::Compose;

pub(super) fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gm-wds-stream-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The demo folder's photos as shards of about `max_bytes` (`key.<ext>` + `key.cls`); the
/// shards, and each key's file.
pub(super) fn write_shards(dir: &Path, max_bytes: u64) -> (Vec<String>, BTreeMap<String, PathBuf>) {
    write_copies(dir, max_bytes, 1)
}

/// [`write_shards`] with every photo `copies` times (keys `key`, `key-1`, `key-2`, ...).
fn write_copies(
    dir: &Path,
    max_bytes: u64,
    copies: usize,
) -> (Vec<String>, BTreeMap<String, PathBuf>) {
    let folder = demo_folder();
    let mut writer = ShardWriter::new(dir, "demo", max_bytes).unwrap();
    let mut files = BTreeMap::new();
    for (copy, i) in (0..copies).flat_map(|c| (0..folder.len()).map(move |i| (c, i))) {
        let path = folder.path(i);
        if folder.name(i).contains("/frames/") {
            continue;
        }
        let rel = path.strip_prefix(folder.root()).unwrap().with_extension("");
        let ext = path.extension().unwrap().to_string_lossy().to_lowercase();
        let mut key = sample_key(&rel.to_string_lossy());
        if copy > 0 {
            key = format!("{key}-{copy}");
        }
        let label = folder.label(i).to_string();
        let bytes = std::fs::read(path).unwrap();
        writer
            .add(&key, &[(&ext, &bytes), ("cls", label.as_bytes())])
            .unwrap();
        files.insert(key, path.to_path_buf());
    }
    let shards: Vec<String> = writer
        .finish()
        .unwrap()
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    (shards, files)
}

pub(super) fn options() -> StreamOptions {
    StreamOptions {
        seed: 9,
        streams: 2,
        batch_size: 3,
        shuffle_buffer: 4,
        ..StreamOptions::default()
    }
}

fn streaming(shards: &[String], storage: Storage, chain: Compose, workers: usize) -> Loader {
    let stream = WebDatasetStream::from_shards(shards.to_vec(), options(), storage).unwrap();
    Loader::streaming(stream)
        .cpu()
        .workers(workers)
        .transforms(chain)
        .build()
        .unwrap()
}

/// Each batch as `Seen`, with its images' names.
pub(super) fn epoch_named(
    epoch: impl Iterator<Item = Result<Batch, LoaderError>>,
) -> Vec<(Seen, Vec<String>)> {
    epoch
        .map(|b| {
            let b = b.unwrap();
            let names = b.names.clone().expect("a streamed batch names its images");
            (seen(&b), names)
        })
        .collect()
}

#[test]
fn a_streamed_epoch_gives_each_samples_image_in_the_streams_order() {
    let dir = temp_dir("same");
    let (shards, files) = write_shards(&dir, 300_000);
    let mut loader = streaming(&shards, Storage::default(), eval_chain(24), 3);
    assert!(loader.is_streaming());
    let got = epoch_named(loader.epoch(0));
    // The reference: each file alone through the folder's CPU path, the same chain.
    let folder = demo_folder();
    let reference: BTreeMap<PathBuf, (Vec<u8>, i64)> = {
        let items: Vec<_> = (0..folder.len())
            .filter(|&i| !folder.name(i).contains("/frames/"))
            .map(|i| {
                let mut buf = Vec::new();
                folder.read(i, &mut buf).unwrap();
                (folder.path(i).display().to_string(), buf, folder.label(i))
            })
            .collect();
        let mut l = Loader::builder(InMemory::new(items.clone()))
            .cpu()
            .batch_size(1)
            .transforms(eval_chain(24))
            .build()
            .unwrap();
        run_epoch(&mut l, 0)
            .into_iter()
            .map(|s| {
                let i = s.indices[0];
                (PathBuf::from(&items[i].0), (s.bytes, s.labels[0]))
            })
            .collect()
    };
    let mut names_seen = Vec::new();
    for (s, names) in &got {
        let per = s.bytes.len() / names.len();
        for (k, name) in names.iter().enumerate() {
            let (shard, key) = name.rsplit_once('#').unwrap();
            assert!(shards.iter().any(|x| x == shard), "{name}");
            let (bytes, label) = &reference[&files[key]];
            assert_eq!(s.labels[k], *label, "label of {name}");
            assert!(
                s.bytes[k * per..(k + 1) * per] == bytes[..],
                "the image of {name} differs"
            );
            names_seen.push(name.clone());
        }
    }
    let unique: BTreeSet<_> = names_seen.iter().collect();
    assert_eq!(
        (names_seen.len(), unique.len()),
        (files.len(), files.len()),
        "every sample once"
    );
    // The order is the stream's own.
    let stream = WebDatasetStream::from_shards(shards.clone(), options(), Storage::default());
    let order: Vec<String> = stream
        .unwrap()
        .epoch(0)
        .flat_map(|b| b.samples)
        .map(|s| format!("{}#{}", shards[s.shard], s.sample.key))
        .collect();
    assert_eq!(names_seen, order);
    assert_eq!(loader.dataset().len(), 0, "no sample stays parked");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn resuming_a_streamed_epoch_gives_the_rest_bit_for_bit() {
    let dir = temp_dir("resume");
    let (shards, _) = write_shards(&dir, 300_000);
    let mut loader = streaming(&shards, Storage::default(), train_chain(32), 2);
    let full = epoch_named(loader.epoch(1));
    assert!(full.len() >= 4, "{} batches", full.len());
    // Another loader, stopped after `k` batches; a third resumes from its saved state.
    for k in [1, full.len() / 2, full.len() - 1] {
        let mut first = streaming(&shards, Storage::default(), train_chain(32), 3);
        let mut epoch = first.epoch(1);
        for _ in 0..k {
            epoch.next().unwrap().unwrap();
        }
        let saved = epoch.state().to_json();
        drop(epoch);
        let state = LoaderState::from_json(&saved).unwrap();
        assert_eq!((state.epoch, state.next_batch), (1, k));
        let mut second = streaming(&shards, Storage::default(), train_chain(32), 1);
        let rest = epoch_named(second.resume(&state).unwrap());
        assert_eq!(rest.len(), full.len() - k, "after {k}");
        for ((a, an), (_, bn)) in rest.iter().zip(&full[k..]) {
            assert_eq!(an, bn, "after {k}: names of batch {}", a.position);
        }
        let (a, b): (Vec<Seen>, Vec<Seen>) = (
            rest.into_iter().map(|x| x.0).collect(),
            full[k..]
                .iter()
                .map(|x| Seen {
                    position: x.0.position,
                    indices: x.0.indices.clone(),
                    labels: x.0.labels.clone(),
                    shape: x.0.shape.clone(),
                    bytes: x.0.bytes.clone(),
                })
                .collect(),
        );
        assert_same(&a, &b, &format!("resumed after {k}"));
    }
    // A state of another stream is refused before anything is read.
    let mut other = WebDatasetStream::from_shards(
        shards.clone(),
        StreamOptions {
            seed: 10,
            ..options()
        },
        Storage::default(),
    )
    .map(|s| Loader::streaming(s).cpu().build().unwrap())
    .unwrap();
    let state = loader.state(1, 0);
    let e = other.resume(&state).err().expect("another seed");
    assert!(e.to_string().contains("different loader"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn streamed_epochs_run_back_to_back_as_they_run_alone() {
    let dir = temp_dir("epochs");
    let (shards, _) = write_shards(&dir, 300_000);
    let mut loader = streaming(&shards, Storage::default(), train_chain(32), 2);
    let alone: Vec<Vec<(Seen, Vec<String>)>> =
        (0..3).map(|e| epoch_named(loader.epoch(e))).collect();
    assert_ne!(alone[0][0].1, alone[1][0].1, "epochs shuffle differently");
    let mut together: Vec<Vec<(Seen, Vec<String>)>> = vec![Vec::new(), Vec::new(), Vec::new()];
    for (e, b) in loader.epochs(0..3) {
        let b = b.unwrap();
        let names = b.names.clone().unwrap();
        together[e as usize].push((seen(&b), names));
    }
    for e in 0..3 {
        let names = |v: &[(Seen, Vec<String>)]| v.iter().map(|x| x.1.clone()).collect::<Vec<_>>();
        assert_eq!(names(&together[e]), names(&alone[e]), "epoch {e}");
        for (a, b) in together[e].iter().zip(&alone[e]) {
            assert!(a.0.bytes == b.0.bytes, "epoch {e} batch {}", a.0.position);
        }
    }
    assert_eq!(loader.dataset().len(), 0, "no sample stays parked");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn streaming_shards_from_s3_through_the_loader_gives_the_local_batches() {
    let Some(server) = s3_or_skip("streaming_shards_from_s3_through_the_loader") else {
        return;
    };
    let dir = temp_dir("s3");
    let (shards, _) = write_shards(&dir, 300_000);
    let bucket = server.bucket("stream-loader", StorageOptions::default());
    bucket.upload_dir(&dir, "wds").unwrap();
    same_from_s3(&bucket, &shards, "wds");
    // One shard of about 2.5 MB: read in ranged GETs of 1 MB, several at once.
    let big = temp_dir("s3-big");
    let (one, _) = write_copies(&big, u64::MAX, 3);
    assert_eq!(one.len(), 1);
    assert!(std::fs::metadata(&one[0]).unwrap().len() > 2 << 20);
    bucket.upload_dir(&big, "big").unwrap();
    same_from_s3(&bucket, &one, "big");
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(&big).unwrap();
}

/// Streams `shards` locally and as uploaded under `prefix`: the same batches, and a GET for
/// the version plus one per MB of each shard.
fn same_from_s3(bucket: &gm_storage::testing::TestBucket, shards: &[String], prefix: &str) {
    let remote: Vec<String> = shards
        .iter()
        .map(|s| {
            let file = Path::new(s).file_name().unwrap().to_string_lossy();
            bucket.url(&format!("{prefix}/{file}")).to_string()
        })
        .collect();
    let mut local = streaming(shards, Storage::default(), train_chain(32), 2);
    let mut s3 = streaming(&remote, bucket.storage.clone(), train_chain(32), 2);
    let before = bucket.storage.stats();
    let a = epoch_named(local.epoch(0));
    let b = epoch_named(s3.epoch(0));
    let after = bucket.storage.stats();
    assert_eq!(a.len(), b.len());
    for ((x, xn), (y, yn)) in a.iter().zip(&b) {
        let strip = |n: &String| n.rsplit_once('#').unwrap().1.to_string();
        let (xk, yk): (Vec<_>, Vec<_>) = (
            xn.iter().map(strip).collect(),
            yn.iter().map(strip).collect(),
        );
        assert_eq!(xk, yk, "batch {}", x.position);
        assert!(yn.iter().all(|n| n.starts_with("s3://")), "{yn:?}");
        assert!(x.bytes == y.bytes, "batch {}", x.position);
    }
    let requests = after.requests - before.requests;
    let pieces: u64 = shards
        .iter()
        .map(|s| 1 + std::fs::metadata(s).unwrap().len().div_ceil(1 << 20))
        .sum();
    assert_eq!(requests, pieces, "requests for {} shards", shards.len());
}

#[test]
fn bad_members_and_a_cut_shard_are_bad_samples_of_a_stream() {
    let dir = temp_dir("bad");
    let shard = write_bad_shard(&dir);
    let name = shard.display().to_string();
    let missing = dir.join("gone.tar").display().to_string();
    let shards = vec![name.clone(), missing.clone()];
    let build = |policy| {
        let o = StreamOptions {
            batch_size: 2,
            shuffle_buffer: 1,
            streams: 1,
            ..StreamOptions::default()
        };
        let stream = WebDatasetStream::from_shards(shards.clone(), o, Storage::default());
        Loader::streaming(stream.unwrap())
            .cpu()
            .bad_samples(policy)
            .transforms(eval_chain(24))
            .build()
            .unwrap()
    };
    let mut l = build(BadSamplePolicy::Skip);
    let batches = epoch_named(l.epoch(0));
    let kept: Vec<String> = batches.iter().flat_map(|b| b.1.clone()).collect();
    assert_eq!(kept, [format!("{name}#a"), format!("{name}#json")]);
    let labels: Vec<i64> = batches.iter().flat_map(|b| b.0.labels.clone()).collect();
    assert_eq!(labels, [1, 3]);
    let mut errors = l.stats().first_errors;
    errors.sort_by(|a, b| a.name.cmp(&b.name));
    let bad: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
    let want = [
        (format!("{name}#(end of shard)"), "ended after 6 samples"),
        (format!("{name}#bad-label"), "\"dog\""),
        (format!("{name}#corrupt"), "truncated"),
        (format!("{name}#no-image"), "no image member"),
        (format!("{name}#no-label"), "no .cls, .txt or .json"),
        (format!("{missing}#(end of shard)"), "gave 0 samples"),
    ];
    assert_eq!(bad.len(), want.len(), "{bad:#?}");
    for (text, (who, why)) in bad.iter().zip(&want) {
        assert!(
            text.contains(who.as_str()) && text.contains(why),
            "{text} is not {who}: {why}"
        );
    }
    // Under Fail, the first bad sample ends the epoch, named.
    let mut l = build(BadSamplePolicy::Fail);
    let e = l.epoch(0).find_map(Result::err).expect("a bad sample");
    assert!(e.to_string().contains(&format!("{name}#no-label")), "{e}");
    // What a stream cannot do is refused when the loader is built.
    let stream = WebDatasetStream::from_shards(shards.clone(), options(), Storage::default());
    let e = Loader::streaming(stream.unwrap())
        .bad_samples(BadSamplePolicy::Substitute)
        .cpu()
        .build()
        .err()
        .unwrap();
    assert!(e.to_string().contains("substitutes"), "{e}");
    let stream = WebDatasetStream::from_shards(shards, options(), Storage::default());
    let e = Loader::streaming(stream.unwrap())
        .batch_size(5)
        .cpu()
        .build()
        .err()
        .unwrap();
    assert!(e.to_string().contains("batch size"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Each image's pixels by name, over an epoch.
fn pixels_by_name(batches: &[(Seen, Vec<String>)]) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for (s, names) in batches {
        let per = s.bytes.len() / names.len().max(1);
        for (k, name) in names.iter().enumerate() {
            let key = name.rsplit_once('#').unwrap().1.to_string();
            out.insert(key, s.bytes[k * per..(k + 1) * per].to_vec());
        }
    }
    out
}

#[test]
fn a_stream_rides_out_retried_faults_and_loses_only_the_shards_that_fail() {
    use gm_storage::testing::{Fault, FaultServer};
    use std::time::{Duration, Instant};
    let dir = temp_dir("faults");
    let (shards, _) = write_shards(&dir, 150_000);
    assert!(shards.len() >= 4, "{} shards", shards.len());
    let server = FaultServer::start().unwrap();
    server.serve_dir(&dir, "wds").unwrap();
    let key = |s: &String| {
        format!(
            "wds/{}",
            Path::new(s).file_name().unwrap().to_string_lossy()
        )
    };
    let urls: Vec<String> = shards
        .iter()
        .map(|s| server.url(&key(s)).to_string())
        .collect();
    let storage = Storage::new(fast());
    let clean = epoch_named(streaming(&urls, storage.clone(), eval_chain(24), 2).epoch(0));
    let expected = pixels_by_name(&clean);
    // Shard 0: two 503s (the third try answers); shard 1: its data GET cut once (the first
    // request, its version GET, passes); shard 2 deleted; shard 3 answers 503 past the budget.
    server.script(Some(&key(&shards[0])), Fault::Status(503), 2);
    server.script(Some(&key(&shards[1])), Fault::CutBody(5000), 2);
    server.remove(&key(&shards[2]));
    server.script(Some(&key(&shards[3])), Fault::Status(503), 1000);
    let started = Instant::now();
    let mut loader = streaming(&urls, storage.clone(), eval_chain(24), 2);
    let got = epoch_named(loader.epoch(0));
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    let mut errors = loader.stats().first_errors;
    errors.sort_by(|a, b| a.name.cmp(&b.name));
    let bad: Vec<(String, String)> = errors
        .iter()
        .map(|e| (e.name.clone(), e.to_string()))
        .collect();
    assert_eq!(bad.len(), 2, "{bad:#?}");
    assert_eq!(bad[0].0, format!("{}#(end of shard)", urls[2]));
    assert!(bad[0].1.contains("404"), "{}", bad[0].1);
    assert_eq!(bad[1].0, format!("{}#(end of shard)", urls[3]));
    assert!(bad[1].1.contains("503 after 3 attempts"), "{}", bad[1].1);
    // Every sample of the other shards arrived, with the pixels of the clean run.
    let lost: Vec<&String> = clean
        .iter()
        .flat_map(|b| &b.1)
        .filter(|n| {
            n.starts_with(&format!("{}#", urls[2])) || n.starts_with(&format!("{}#", urls[3]))
        })
        .collect();
    let got = pixels_by_name(&got);
    assert_eq!(got.len(), expected.len() - lost.len());
    for (name, pixels) in &got {
        assert!(expected.get(name) == Some(pixels), "{name} differs");
    }
    // 2 retries of shard 0, 1 of the cut body, 2 of shard 3 before it is given up.
    assert!(storage.stats().retries >= 5, "{:?}", storage.stats());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_stream_waits_out_a_server_that_is_down_and_comes_back_within_the_retry_budget() {
    use gm_storage::testing::FaultServer;
    use std::time::{Duration, Instant};
    let dir = temp_dir("outage");
    let (shards, _) = write_shards(&dir, 150_000);
    let server = FaultServer::start().unwrap();
    server.serve_dir(&dir, "wds").unwrap();
    let urls: Vec<String> = shards
        .iter()
        .map(|s| {
            let file = Path::new(s).file_name().unwrap().to_string_lossy();
            server.url(&format!("wds/{file}")).to_string()
        })
        .collect();
    let storage = Storage::new(patient());
    let clean = epoch_named(streaming(&urls, storage.clone(), eval_chain(24), 2).epoch(0));
    let before = storage.stats();
    let restarter = outage(server, Duration::from_millis(300));
    let started = Instant::now();
    let mut loader = streaming(&urls, storage.clone(), eval_chain(24), 2);
    let got = epoch_named(loader.epoch(0));
    let _server = restarter.join().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(loader.stats().bad, 0, "{:?}", loader.stats().first_errors);
    assert_eq!(pixels_by_name(&got), pixels_by_name(&clean));
    assert!(
        storage.stats().retries > before.retries,
        "the outage was met"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
