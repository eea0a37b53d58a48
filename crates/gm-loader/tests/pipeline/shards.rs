//! WebDataset shards on the CPU path: shards written from the demo folder in folder order give
//! the folder's batches bit for bit (locally and from moto's S3), resume exactly, split across
//! ranks and workers without loss, and turn cut shards and bad members into bad samples.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::common::*;
use gm_loader::shards::{ShardWriter, TarIndex, sample_key};
use gm_loader::{BadSamplePolicy, Dataset, ImageFolder, Loader, LoaderState, Sampler, WebDataset};
use gm_storage::StorageOptions;
use gm_storage::testing::s3_or_skip;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gm-wds-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The demo folder as shards of about `max_bytes`, in folder order (`key.<ext>` + `key.cls`);
/// returns the brace pattern of the shards.
fn write_shards(folder: &ImageFolder, dir: &Path, max_bytes: u64) -> String {
    let mut writer = ShardWriter::new(dir, "demo", max_bytes).unwrap();
    let root = folder.root().to_path_buf();
    for i in 0..folder.len() {
        let path = folder.path(i);
        let rel = path.strip_prefix(&root).unwrap().with_extension("");
        let ext = path.extension().unwrap().to_string_lossy().to_lowercase();
        let bytes = std::fs::read(path).unwrap();
        let label = folder.label(i).to_string();
        let key = sample_key(&rel.to_string_lossy());
        writer
            .add(&key, &[(&ext, &bytes), ("cls", label.as_bytes())])
            .unwrap();
    }
    let shards = writer.finish().unwrap();
    assert!(shards.len() >= 3, "several shards: {}", shards.len());
    format!(
        "{}/demo-{{000000..{:06}}}.tar",
        dir.display(),
        shards.len() - 1
    )
}

fn loader(data: Arc<dyn Dataset>, sampler: Sampler, workers: usize) -> Loader {
    Loader::builder_shared(data)
        .cpu()
        .sampler(sampler)
        .seed(5)
        .batch_size(3)
        .workers(workers)
        .bad_samples(BadSamplePolicy::Skip)
        .transforms(train_chain(32))
        .build()
        .unwrap()
}

/// Two shuffled epochs of 2 ranks x 2 workers with random crops.
fn ranks_epochs(data: Arc<dyn Dataset>) -> Vec<Vec<Seen>> {
    (0..2)
        .map(|rank| {
            let sampler = Sampler::shuffled(7).sharded(rank, 2, false).unwrap();
            let mut l = loader(data.clone(), sampler, 2);
            let mut seen = run_epoch(&mut l, 0);
            seen.extend(run_epoch(&mut l, 1));
            seen
        })
        .collect()
}

fn assert_same_ranks(a: &[Vec<Seen>], b: &[Vec<Seen>], what: &str) {
    for rank in 0..2 {
        assert_same(&a[rank], &b[rank], &format!("{what}: rank {rank}"));
    }
}

#[test]
fn indexed_shards_give_the_folders_batches_bit_for_bit() {
    let folder = demo_folder();
    let dir = temp_dir("same");
    let pattern = write_shards(&folder, &dir, 400_000);
    // The .idx written next to each shard.
    let shards = WebDataset::new(&pattern).unwrap();
    assert_eq!(shards.len(), folder.len());
    for i in 0..folder.len() {
        assert_eq!(shards.label(i), folder.label(i), "label of {i}");
        let (mut a, mut b) = (Vec::new(), Vec::new());
        folder.read(i, &mut a).unwrap();
        shards.read(i, &mut b).unwrap();
        assert!(a == b, "bytes of {}", shards.name(i));
    }
    let expected = ranks_epochs(Arc::new(folder));
    assert_same_ranks(
        &expected,
        &ranks_epochs(Arc::new(shards)),
        "with .idx files",
    );
    // No .idx: each shard is indexed by reading it once, into the cache, which the next open
    // reads instead.
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "idx") {
            std::fs::remove_file(path).unwrap();
        }
    }
    let cache = dir.join("cache");
    let built = WebDataset::builder(&pattern)
        .unwrap()
        .index_cache(&cache)
        .open()
        .unwrap();
    let cached_files = std::fs::read_dir(&cache).unwrap().count();
    assert_eq!(
        cached_files,
        2 * built.shards().count(),
        "an .idx and labels per shard"
    );
    assert_same_ranks(&expected, &ranks_epochs(Arc::new(built)), "built index");
    let cached = WebDataset::builder(&pattern)
        .unwrap()
        .index_cache(&cache)
        .open()
        .unwrap();
    assert_same_ranks(&expected, &ranks_epochs(Arc::new(cached)), "cached index");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn shards_in_s3_give_the_folders_batches_bit_for_bit() {
    let Some(server) = s3_or_skip("shards_in_s3_give_the_folders_batches_bit_for_bit") else {
        return;
    };
    let folder = demo_folder();
    let dir = temp_dir("s3");
    let pattern = write_shards(&folder, &dir, 400_000);
    let bucket = server.bucket("shards", StorageOptions::default());
    bucket.upload_dir(&dir, "wds").unwrap();
    let remote = pattern.replace(
        &dir.display().to_string(),
        &format!("s3://{}/wds", bucket.name()),
    );
    let expected = ranks_epochs(Arc::new(folder));
    let shards = WebDataset::builder(&remote)
        .unwrap()
        .storage(bucket.storage.clone())
        .open()
        .unwrap();
    assert!(shards.name(0).starts_with("s3://"), "{}", shards.name(0));
    assert_same_ranks(&expected, &ranks_epochs(Arc::new(shards)), "s3 with .idx");
    // Without the .idx: built by streaming each shard once.
    let cache = dir.join("cache");
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "idx") {
            let key = format!("wds/{}", path.file_name().unwrap().to_string_lossy());
            bucket.storage.delete(&bucket.url(&key)).unwrap();
        }
    }
    let before = bucket.storage.stats();
    let built = WebDataset::builder(&remote)
        .unwrap()
        .storage(bucket.storage.clone())
        .index_cache(&cache)
        .open()
        .unwrap();
    let after = bucket.storage.stats();
    assert_same_ranks(&expected, &ranks_epochs(Arc::new(built)), "s3, built index");
    let shard_bytes: u64 = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let p = e.ok()?.path();
            (p.extension()? == "tar").then(|| std::fs::metadata(p).ok().map(|m| m.len()))?
        })
        .sum();
    assert!(
        after.bytes - before.bytes <= shard_bytes + 1024,
        "indexing read each shard at most once: {before:?} -> {after:?}, shards {shard_bytes} bytes"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn resuming_from_shards_yields_the_batches_of_the_unbroken_run() {
    let folder = demo_folder();
    let dir = temp_dir("resume");
    let data: Arc<dyn Dataset> =
        Arc::new(WebDataset::new(&write_shards(&folder, &dir, 400_000)).unwrap());
    let sampler = Sampler::shuffled(3);
    let everything = run_epoch(&mut loader(data.clone(), sampler, 2), 4);
    let mut first = loader(data.clone(), sampler, 2);
    let mut epoch = first.epoch(4);
    let head: Vec<Seen> = (0..2)
        .map(|_| seen(&epoch.next().unwrap().unwrap()))
        .collect();
    let saved = epoch.state().to_json();
    drop(epoch);
    drop(first);
    let state = LoaderState::from_json(&saved).unwrap();
    let mut second = loader(data, sampler, 3);
    let tail: Vec<Seen> = second
        .resume(&state)
        .unwrap()
        .map(|b| seen(&b.unwrap()))
        .collect();
    assert_same(&head, &everything[..2], "before the save");
    assert_same(&tail, &everything[2..], "resumed");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn ranks_and_workers_cover_every_sample_exactly_once() {
    let folder = demo_folder();
    let dir = temp_dir("cover");
    let data: Arc<dyn Dataset> =
        Arc::new(WebDataset::new(&write_shards(&folder, &dir, 400_000)).unwrap());
    let n = data.len();
    for world in 1..=4 {
        for workers in [1, 3] {
            let mut visited = Vec::new();
            for rank in 0..world {
                let sampler = Sampler::shuffled(11).sharded(rank, world, true).unwrap();
                let mut l = loader(data.clone(), sampler, workers);
                for batch in run_epoch(&mut l, 0) {
                    visited.extend(batch.indices);
                }
                visited.extend(l.stats().first_errors.iter().map(|e| e.index));
            }
            visited.sort_unstable();
            let len = visited.len();
            visited.dedup();
            assert_eq!(
                len,
                visited.len(),
                "{world} ranks x {workers} workers: repeats"
            );
            assert_eq!(len, n / world * world, "{world} ranks x {workers} workers");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_cut_shard_and_bad_members_are_bad_samples_and_the_epoch_goes_on() {
    let dir = temp_dir("bad");
    // Cut inside its last image: with its .idx, the last sample is past the end.
    let shard = write_bad_shard(&dir);
    let name = shard.display().to_string();
    let indexed = WebDataset::new(&name).unwrap();
    let keys: Vec<&str> = (0..indexed.len()).map(|i| indexed.key(i).1).collect();
    assert_eq!(
        keys,
        [
            "a",
            "no-label",
            "no-image",
            "bad-label",
            "json",
            "corrupt",
            "last"
        ]
    );
    assert_eq!((indexed.label(0), indexed.label(4)), (1, 3));
    let want = [
        (1, "no .cls, .txt or .json"),
        (2, "no image member"),
        (3, "\"dog\""),
        (5, "truncated"),
        (6, "past the shard's"),
    ];
    check_bad(Arc::new(indexed), &name, &want);
    // Without the index it is built from the cut shard: the last sample is lost, and one
    // bad sample says where the shard ended.
    std::fs::remove_file(shard.with_extension("idx")).unwrap();
    let built = WebDataset::new(&name).unwrap();
    assert_eq!(built.key(6).1, "(end of shard)");
    let want = [
        (1, "no .cls, .txt or .json"),
        (2, "no image member"),
        (3, "\"dog\""),
        (5, "truncated"),
        (6, "the shard ended after 6 samples"),
    ];
    check_bad(Arc::new(built), &name, &want);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Runs an epoch and asserts exactly the `want` samples are bad, each named by the shard and
/// key, with the reason.
fn check_bad(data: Arc<dyn Dataset>, shard: &str, want: &[(usize, &str)]) {
    let n = data.len();
    let mut l = Loader::builder_shared(data.clone())
        .cpu()
        .batch_size(2)
        .bad_samples(BadSamplePolicy::Skip)
        .transforms(eval_chain(24))
        .build()
        .unwrap();
    let seen = run_epoch(&mut l, 0);
    let stats = l.stats();
    let mut bad: Vec<(usize, String)> = stats
        .first_errors
        .iter()
        .map(|e| (e.index, e.to_string()))
        .collect();
    bad.sort();
    assert_eq!(bad.len(), want.len(), "{bad:#?}");
    for ((index, text), (w, reason)) in bad.iter().zip(want) {
        assert_eq!(index, w, "{text}");
        assert!(text.contains(&format!("{shard}#")), "{text}");
        assert!(text.contains(reason), "{text} lacks {reason:?}");
    }
    let good: usize = seen.iter().map(|b| b.indices.len()).sum();
    assert_eq!(good, n - want.len());
}

#[test]
fn an_index_of_another_shard_is_refused() {
    let folder = demo_folder();
    let dir = temp_dir("swap");
    write_shards(&folder, &dir, 400_000);
    let (a, b) = (dir.join("demo-000000.idx"), dir.join("demo-000001.idx"));
    let shard = dir.join("demo-000000.tar").display().to_string();
    assert!(WebDataset::new(&shard).is_ok());
    std::fs::copy(&b, &a).unwrap();
    let e = WebDataset::new(&shard).unwrap_err().to_string();
    assert!(
        e.contains("does not match") && e.contains(&a.display().to_string()),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn our_index_equals_dali_wds2idx_output() {
    // tests/media/wds (GM_FIXTURES in the GPU bundle): made by its make.sh.
    let fixtures = std::env::var_os("GM_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/media"))
        .join("wds");
    for name in ["mixed", "long-names"] {
        let tar = std::fs::read(fixtures.join(format!("{name}.tar"))).unwrap();
        let dali = std::fs::read_to_string(fixtures.join(format!("{name}.idx"))).unwrap();
        let built = TarIndex::build(&tar[..]);
        assert!(built.cut.is_none(), "{name}");
        assert_eq!(built.index.to_dali(), dali, "{name}");
        assert_eq!(TarIndex::parse(&dali, name).unwrap(), built.index, "{name}");
    }
}
