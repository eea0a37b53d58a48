//! Datasets over URLs on the CPU path: the same batches as the local folder (moto's S3), the
//! local walk's order, and failed requests as bad samples that name the URL (FaultServer).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::common::*;
use gm_loader::{BadSamplePolicy, Dataset, ImageFolder, ListFile, Loader, Progress, Sampler};
use gm_storage::testing::{Fault, FaultServer, s3_or_skip};
use gm_storage::{Storage, StorageOptions};

/// Shuffled epochs of 2 ranks x 2 workers, bad samples skipped, with random crops: any change
/// of order, label, byte or seed use shows.
fn ranks_epochs(data: Arc<dyn Dataset>) -> Vec<Vec<Seen>> {
    (0..2)
        .map(|rank| {
            let mut loader = Loader::builder_shared(data.clone())
                .cpu()
                .sampler(Sampler::shuffled(7).sharded(rank, 2, false).unwrap())
                .batch_size(3)
                .workers(2)
                .bad_samples(BadSamplePolicy::Skip)
                .transforms(train_chain(32))
                .build()
                .unwrap();
            let mut seen = run_epoch(&mut loader, 0);
            seen.extend(run_epoch(&mut loader, 1));
            seen
        })
        .collect()
}

fn relative(folder: &ImageFolder, root: &str) -> Vec<(String, i64)> {
    (0..folder.len())
        .map(|i| {
            let name = folder.name(i);
            let rel = name
                .strip_prefix(root)
                .unwrap_or(&name)
                .trim_start_matches('/');
            (rel.to_string(), folder.label(i))
        })
        .collect()
}

#[test]
fn an_image_folder_in_s3_gives_the_local_folders_batches_bit_for_bit() {
    let Some(server) = s3_or_skip("an_image_folder_in_s3_gives_the_local_folders_batches") else {
        return;
    };
    let bucket = server.bucket("folder", StorageOptions::default());
    let uploaded = bucket.upload_dir(&demo_images(), "train").unwrap();
    let local = demo_folder();
    let root = format!("s3://{}/train", bucket.name());
    let progress = Progress::new();
    let remote = ImageFolder::with_progress(&root, &bucket.storage, Some(&progress)).unwrap();
    // Every listed object counted, images or not, for a progress bar.
    assert_eq!(progress.listed(), uploaded as u64);
    assert_eq!(remote.classes(), local.classes());
    let local_root = demo_images().display().to_string();
    assert_eq!(relative(&remote, &root), relative(&local, &local_root));
    assert!(remote.len() >= 20 && uploaded >= remote.len());
    let a = ranks_epochs(Arc::new(local));
    let b = ranks_epochs(Arc::new(remote));
    for rank in 0..2 {
        assert_same(&a[rank], &b[rank], &format!("rank {rank}"));
    }
    let stats = bucket.storage.stats();
    assert_eq!(stats.failures, 0);
    assert!(
        stats.peak_in_flight > 1,
        "batch reads run concurrently: {stats:?}"
    );
}

#[test]
fn remote_listing_orders_keys_as_the_local_walk_does() {
    let Some(server) = s3_or_skip("remote_listing_orders_keys_as_the_local_walk_does") else {
        return;
    };
    // '-' and '.' sort before '/' as bytes, after the end of a path component as paths.
    let keys = [
        "b-c/x.jpg",
        "b/x.jpg",
        "a/x-1.jpg",
        "a/x/1.jpg",
        "a/x.jpg",
        "a/x.b/c.png",
        "a/x0.jpg",
        "moth/readme",
        "root.jpg",
    ];
    let dir = std::env::temp_dir().join(format!("gm-loader-order-{}", std::process::id()));
    let bucket = server.bucket("order", StorageOptions::default());
    for key in keys {
        let path = dir.join(key);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, b"x").unwrap();
        bucket
            .storage
            .put(&bucket.url(&format!("data/{key}")), b"x".to_vec())
            .unwrap();
    }
    let local = ImageFolder::new(&dir).unwrap();
    let root = format!("s3://{}/data", bucket.name());
    let remote = ImageFolder::with_storage(&root, &bucket.storage).unwrap();
    assert_eq!(remote.classes(), local.classes());
    assert_eq!(local.classes(), ["a", "b", "b-c", "moth"]);
    let order = relative(&local, &dir.display().to_string());
    assert_eq!(relative(&remote, &root), order);
    assert_eq!(order[0].0, "a/x/1.jpg", "{order:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The demo photos behind a FaultServer, and a list file of their URLs.
fn served_photos() -> (FaultServer, Vec<String>) {
    let server = FaultServer::start().unwrap();
    let folder = demo_folder();
    let mut lines = Vec::new();
    for i in (0..folder.len()).filter(|&i| !folder.name(i).contains("/frames/")) {
        let name = Path::new(&folder.name(i))
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        server.insert(
            &format!("img/{name}"),
            std::fs::read(folder.path(i)).unwrap(),
        );
        lines.push(format!("img/{name} {}", folder.label(i)));
    }
    server.insert("list.txt", (lines.join("\n") + "\n").into_bytes());
    (server, lines)
}

#[test]
fn failed_requests_are_exactly_the_bad_samples_and_name_url_and_reason() {
    let (server, lines) = served_photos();
    let n = lines.len();
    let list = server.url("list.txt").to_string();
    let storage = Storage::new(fast());
    let clean = ListFile::with_storage(&list, &storage).unwrap();
    assert_eq!(clean.len(), n);
    let expected = per_sample(&run_epoch(&mut eval_loader(Arc::new(clean)), 0));
    // One image answers 503 past the retry budget, one is deleted, one is slow once (retried),
    // one body is cut once (resumed).
    let name = |i: usize| lines[i].split(' ').next().unwrap().to_string();
    server.script(Some(&name(1)), Fault::Status(503), 1000);
    server.remove(&name(4));
    server.script(Some(&name(6)), Fault::Delay(Duration::from_secs(3)), 1);
    server.script(Some(&name(8)), Fault::CutBody(500), 1);
    let data = Arc::new(ListFile::with_storage(&list, &storage).unwrap());
    let started = Instant::now();
    let mut loader = eval_loader(data);
    let seen = run_epoch(&mut loader, 0);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    let stats = loader.stats();
    let mut bad: Vec<usize> = stats.first_errors.iter().map(|e| e.index).collect();
    bad.sort_unstable();
    assert_eq!((stats.bad, bad), (2, vec![1, 4]));
    for e in &stats.first_errors {
        let text = e.to_string();
        assert!(
            text.contains(&server.url(&name(e.index)).to_string()),
            "{text}"
        );
        let reason = if e.index == 1 {
            "503 after 3 attempts"
        } else {
            "404 after 1 attempt"
        };
        assert!(text.contains(reason), "{text}");
    }
    // Every other sample arrived, with the same pixels as without faults.
    let got = per_sample(&seen);
    assert_eq!(got.len(), n - 2);
    for (index, pixels) in &got {
        assert!(
            expected.get(index) == Some(pixels),
            "sample {index} differs"
        );
    }
    // 2 retries of the 503, 1 of the slow response, 1 of the cut body.
    let stats = storage.stats();
    assert!(stats.retries >= 4, "{stats:?}");
}

fn eval_loader(data: Arc<dyn Dataset>) -> Loader {
    Loader::builder_shared(data)
        .cpu()
        .batch_size(3)
        .workers(2)
        .bad_samples(BadSamplePolicy::Skip)
        .transforms(eval_chain(24))
        .build()
        .unwrap()
}

/// Each sample's pixels, by dataset index (the batches' bytes split evenly: one shape).
fn per_sample(seen: &[Seen]) -> std::collections::HashMap<usize, Vec<u8>> {
    let mut out = std::collections::HashMap::new();
    for batch in seen {
        let each = batch.bytes.len() / batch.indices.len();
        for (k, &index) in batch.indices.iter().enumerate() {
            out.insert(index, batch.bytes[k * each..(k + 1) * each].to_vec());
        }
    }
    out
}

#[test]
fn an_epoch_rides_out_a_server_that_stops_and_comes_back_within_the_retry_budget() {
    let (server, lines) = served_photos();
    let list = server.url("list.txt").to_string();
    let storage = Storage::new(patient());
    let data = Arc::new(ListFile::with_storage(&list, &storage).unwrap());
    let expected = per_sample(&run_epoch(&mut eval_loader(data.clone()), 0));
    let before = storage.stats();
    let restarter = outage(server, Duration::from_millis(300));
    let started = Instant::now();
    let mut loader = eval_loader(data);
    let got = per_sample(&run_epoch(&mut loader, 0));
    let server = restarter.join().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(loader.stats().bad, 0, "{:?}", loader.stats().first_errors);
    assert_eq!(got.len(), lines.len());
    assert!(got == expected, "the same pixels after the outage");
    let after = storage.stats();
    assert!(
        after.retries > before.retries,
        "the outage was met: {after:?}"
    );
    assert!(server.requests() > 0);
}

#[test]
fn an_object_deleted_after_listing_is_one_bad_sample_named_by_url() {
    let name = "an_object_deleted_after_listing_is_one_bad_sample_named_by_url";
    let Some(server) = s3_or_skip(name) else {
        return;
    };
    let bucket = server.bucket("deleted", fast());
    bucket.upload_dir(&demo_images(), "train").unwrap();
    let root = format!("s3://{}/train", bucket.name());
    let folder = ImageFolder::with_storage(&root, &bucket.storage).unwrap();
    let gone = (0..folder.len())
        .find(|&i| folder.name(i).ends_with("baboon.jpg"))
        .unwrap();
    let key = folder.name(gone)[format!("s3://{}/", bucket.name()).len()..].to_string();
    bucket.storage.delete(&bucket.url(&key)).unwrap();
    let n = folder.len();
    let mut loader = eval_loader(Arc::new(folder));
    let got = per_sample(&run_epoch(&mut loader, 0));
    let stats = loader.stats();
    let deleted: Vec<_> = stats
        .first_errors
        .iter()
        .filter(|e| e.index == gone)
        .collect();
    assert_eq!(deleted.len(), 1, "{:?}", stats.first_errors);
    let text = deleted[0].to_string();
    assert!(
        text.contains(&format!("{root}/animals/baboon.jpg")) && text.contains("404"),
        "{text}"
    );
    // The deleted image and the demo set's truncated JPEG (bad locally too); nothing else.
    assert_eq!((stats.bad, got.len()), (2, n - 2));
    assert!(!got.contains_key(&gone));
}

#[test]
fn a_server_down_past_the_budget_makes_bad_samples_and_the_epoch_still_ends() {
    let (mut server, lines) = served_photos();
    let list = server.url("list.txt").to_string();
    let storage = Storage::new(fast());
    let data = Arc::new(ListFile::with_storage(&list, &storage).unwrap());
    server.stop();
    let started = Instant::now();
    let mut loader = eval_loader(data.clone());
    let seen = run_epoch(&mut loader, 0);
    // 19 samples of 3 attempts each, 2 workers: well under a second of refused connections.
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    let stats = loader.stats();
    assert_eq!((seen.len(), stats.bad as usize), (0, lines.len()));
    let first = stats.first_errors[0].to_string();
    assert!(
        first.contains("connection failed after 3 attempts"),
        "{first}"
    );
    server.restart().unwrap();
    let mut loader = eval_loader(data);
    let again = per_sample(&run_epoch(&mut loader, 1));
    assert_eq!((again.len(), loader.stats().bad), (lines.len(), 0));
}

#[test]
fn a_server_back_only_after_the_budget_costs_exactly_the_samples_in_flight() {
    let (mut server, lines) = served_photos();
    let list = server.url("list.txt").to_string();
    // Retries without end, but none starts 2 s after a sample's first attempt.
    let storage = Storage::new(StorageOptions {
        retries: 10_000,
        backoff_min: Duration::from_millis(20),
        backoff_max: Duration::from_millis(50),
        retry_timeout: Duration::from_secs(2),
        timeout: Duration::from_secs(10),
        ..fast()
    });
    let data = Arc::new(ListFile::with_storage(&list, &storage).unwrap());
    let expected = per_sample(&run_epoch(&mut one_reader(data.clone()), 0));
    // Sample 7 (batch 2 of 3 samples, read in order by one worker) is held by the server, so
    // the outage catches exactly it in flight; 6 and 8 are answered at once.
    let key = |i: usize| lines[i].split(' ').next().unwrap().to_string();
    server.script(Some(&key(7)), Fault::Delay(Duration::from_secs(8)), 1);
    let logged = server.log().len();
    let started = Instant::now();
    let epoch = std::thread::spawn(move || {
        let mut loader = one_reader(data);
        let seen = run_epoch(&mut loader, 0);
        (seen, loader.stats())
    });
    let asked = |i: usize| {
        let wanted = format!("GET {} ", key(i));
        server.log()[logged..]
            .iter()
            .any(|l| l.starts_with(&wanted))
    };
    while !(asked(6) && asked(7) && asked(8)) {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "batch 2 never asked"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(100));
    let stopped = Instant::now();
    server.stop();
    // Sample 7's budget ends about 2 s after its first attempt; the next batch's samples,
    // asked after that, still have 1 s of theirs left when the server returns.
    std::thread::sleep(Duration::from_secs(3));
    server.restart().unwrap();
    let (seen, stats) = epoch.join().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    let bad: Vec<usize> = stats.first_errors.iter().map(|e| e.index).collect();
    assert_eq!((stats.bad, bad), (1, vec![7]), "{:?}", stats.first_errors);
    let text = stats.first_errors[0].to_string();
    assert!(text.contains(&server.url(&key(7)).to_string()), "{text}");
    // Every other sample arrived, with the pixels it has without an outage.
    let got = per_sample(&seen);
    assert_eq!(got.len(), lines.len() - 1);
    for (index, pixels) in &got {
        assert!(
            expected.get(index) == Some(pixels),
            "sample {index} differs"
        );
    }
    assert!(
        storage.stats().retries > 0,
        "the outage was met ({:?} long)",
        stopped.elapsed()
    );
}

/// One host worker reading batches of 3 in order: which samples are in flight is known.
fn one_reader(data: Arc<dyn Dataset>) -> Loader {
    Loader::builder_shared(data)
        .cpu()
        .sampler(Sampler::sequential())
        .batch_size(3)
        .workers(1)
        .prefetch(1)
        .bad_samples(BadSamplePolicy::Skip)
        .transforms(eval_chain(24))
        .build()
        .unwrap()
}
