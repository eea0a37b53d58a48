//! Helpers shared by the loader tests: the demo images and datasets that misbehave.
#![allow(dead_code)] // each test binary uses a subset

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use gm_cuda::DType;
use gm_loader::shards::ShardWriter;
use gm_loader::{Batch, Dataset, ImageFolder, InMemory, Label, Loader, LoaderError};
use gm_storage::StorageOptions;
use gm_storage::testing::FaultServer;
use gm_transforms::{
    CenterCrop, Compose, HorizontalFlip, Layout, Normalize, RandomResizedCrop, Resize, ToDtype,
};

/// The bundled demo images (ImageFolder layout; `frames/` holds one truncated file).
pub fn demo_images() -> PathBuf {
    std::env::var_os("GM_DEMO_IMAGES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/demo/images"))
}

pub fn demo_folder() -> ImageFolder {
    ImageFolder::new(demo_images()).unwrap()
}

/// The photographs of the demo set only (every one decodes), repeated `times`.
pub fn photos(times: usize) -> InMemory {
    let folder = demo_folder();
    let mut samples = Vec::new();
    for t in 0..times {
        for i in 0..folder.len() {
            let name = folder.name(i);
            if name.contains("/frames/") {
                continue;
            }
            let mut buf = Vec::new();
            folder.read(i, &mut buf).unwrap();
            samples.push((format!("{name}#{t}"), buf, folder.label(i)));
        }
    }
    InMemory::new(samples)
}

/// The ImageNet training chain: random-resized crop, flip, normalize, f16 CHW.
pub fn train_chain(size: u32) -> Compose {
    Compose::new()
        .then(RandomResizedCrop::new(size, size))
        .then(HorizontalFlip(0.5))
        .then(Normalize::IMAGENET)
        .then(ToDtype(DType::F16, Layout::Chw))
}

/// A deterministic chain with u8 HWC output, for pixel comparisons.
pub fn eval_chain(size: u32) -> Compose {
    Compose::new()
        .then(Resize::Shorter(size + size / 7))
        .then(CenterCrop(size, size))
}

/// timm's augmentation shape with a fixed draw: random-resized crop, flip, then a warp that
/// reads the resized uint8 image (the plan cuts a pass there), u8 HWC.
pub fn warp_after_resize_chain(size: u32) -> Compose {
    Compose::new()
        .then(RandomResizedCrop::new(size, size))
        .then(HorizontalFlip(0.5))
        .then(gm_transforms::RandomRotation::new(25.0).expect("a valid range"))
        .then(gm_transforms::RandomEqualize(0.5))
}

/// Everything an epoch yields, with the images' bytes.
#[derive(Debug, PartialEq)]
pub struct Seen {
    pub position: usize,
    pub indices: Vec<usize>,
    pub labels: Vec<Label>,
    pub shape: Vec<usize>,
    pub bytes: Vec<u8>,
}

/// Asserts two epochs are the same, batch by batch, with a short message (the bytes of a
/// failing `assert_eq!` on `Seen` would run to megabytes).
pub fn assert_same(a: &[Seen], b: &[Seen], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: batch counts");
    for (x, y) in a.iter().zip(b) {
        let p = x.position;
        assert_eq!(
            (x.position, &x.indices, &x.labels, &x.shape),
            (y.position, &y.indices, &y.labels, &y.shape),
            "{what}: batch {p}"
        );
        let differ = x.bytes.iter().zip(&y.bytes).filter(|(u, v)| u != v).count();
        assert!(
            differ == 0 && x.bytes.len() == y.bytes.len(),
            "{what}: batch {p}: {differ} of {} bytes differ",
            x.bytes.len()
        );
    }
}

/// Two epochs of the same samples decoded differently: asserts the same batches (positions,
/// indices, labels, shapes) and returns the largest byte difference, the bytes that differ
/// and the bytes in all.
pub fn byte_difference(a: &[Seen], b: &[Seen]) -> (u8, usize, usize) {
    assert_eq!(a.len(), b.len(), "batch counts");
    let (mut worst, mut differ, mut total) = (0u8, 0usize, 0usize);
    for (x, y) in a.iter().zip(b) {
        assert_eq!(
            (x.position, &x.indices, &x.labels, &x.shape),
            (y.position, &y.indices, &y.labels, &y.shape)
        );
        for (u, v) in x.bytes.iter().zip(&y.bytes) {
            worst = worst.max(u.abs_diff(*v));
            differ += usize::from(u != v);
        }
        total += x.bytes.len();
    }
    (worst, differ, total)
}

pub fn seen(b: &Batch) -> Seen {
    Seen {
        position: b.position,
        indices: b.indices.clone(),
        labels: b.labels.clone(),
        shape: b.images.shape().to_vec(),
        bytes: b.images.to_host_bytes(None).unwrap(),
    }
}

pub fn run_epoch(loader: &mut Loader, epoch: u64) -> Vec<Seen> {
    loader.epoch(epoch).map(|b| seen(&b.unwrap())).collect()
}

/// Runs `epochs` of `loader` back to back ([`Loader::epochs`]), asserts each equals `alone`'s
/// run of that epoch, and returns after each batch its epoch, the batches taken in that epoch
/// and the epoch started ahead by then.
pub fn back_to_back_equal_alone(
    alone: &mut Loader,
    loader: &mut Loader,
    epochs: std::ops::Range<u64>,
) -> Vec<(u64, usize, Option<u64>)> {
    let want: Vec<Vec<Seen>> = epochs.clone().map(|e| run_epoch(alone, e)).collect();
    let (per_epoch, prestart) = (loader.batches_per_epoch(), loader.prestart_at());
    assert!(
        per_epoch > prestart + 1,
        "{per_epoch} batches an epoch, {prestart}"
    );
    let first = epochs.start;
    let mut got: Vec<Vec<Seen>> = want.iter().map(|_| Vec::new()).collect();
    let mut ahead = Vec::new();
    let mut run = loader.epochs(epochs);
    while let Some((e, b)) = run.next() {
        let this = &mut got[(e - first) as usize];
        this.push(seen(&b.unwrap()));
        ahead.push((e, this.len(), run.started_ahead()));
    }
    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_same(
            g,
            w,
            &format!("epoch {} run back to back", first + k as u64),
        );
    }
    ahead
}

/// A dataset that sleeps on every read, panics at one index, or both.
pub struct Misbehaving {
    pub inner: Arc<dyn Dataset>,
    pub delay: Duration,
    pub panic_at: Option<usize>,
}

impl Dataset for Misbehaving {
    fn len(&self) -> usize {
        self.inner.len()
    }
    fn label(&self, index: usize) -> Label {
        self.inner.label(index)
    }
    fn name(&self, index: usize) -> String {
        self.inner.name(index)
    }
    fn read(&self, index: usize, buf: &mut Vec<u8>) -> std::io::Result<()> {
        std::thread::sleep(self.delay);
        if self.panic_at == Some(index) {
            panic!("dataset exploded at {index}");
        }
        self.inner.read(index, buf)
    }
}

/// The loader's threads in this process (workers and stages; not the test binary's own main
/// thread, whose name may start with `gm-loader` too).
pub fn loader_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .map(|d| {
            d.filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("comm")).ok())
                .filter(|n| n.starts_with("gm-loader-read") || n.starts_with("gm-loader-stag"))
                .count()
        })
        .unwrap_or(0)
}

/// Loader threads left after up to 500 ms: a joined thread's /proc entry can outlive the join
/// by a moment (the kernel wakes the joiner before it reaps the task).
pub fn loader_threads_after_join() -> usize {
    let t = std::time::Instant::now();
    loop {
        let n = loader_threads();
        if n == 0 || t.elapsed() > Duration::from_millis(500) {
            return n;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

pub fn is_bad_sample(r: &Result<Batch, LoaderError>) -> bool {
    matches!(r, Err(LoaderError::BadSample(_)))
}

/// Storage options that give up fast: 2 retries 5-20 ms apart, 500 ms per request, 2 s in
/// all (the fault tests' budget).
pub fn fast() -> StorageOptions {
    StorageOptions {
        retries: 2,
        backoff_min: Duration::from_millis(5),
        backoff_max: Duration::from_millis(20),
        timeout: Duration::from_millis(500),
        connect_timeout: Duration::from_millis(200),
        retry_timeout: Duration::from_secs(2),
        ..StorageOptions::default()
    }
}

/// [`fast`] with patience for an outage: refused connections fail at once, and 50 retries
/// 50 ms apart outlast a 300 ms one.
pub fn patient() -> StorageOptions {
    StorageOptions {
        retries: 50,
        backoff_max: Duration::from_millis(50),
        retry_timeout: Duration::from_secs(8),
        ..fast()
    }
}

/// Stops `server` now and starts it again after `down`, on a thread that gives it back.
pub fn outage(mut server: FaultServer, down: Duration) -> std::thread::JoinHandle<FaultServer> {
    server.stop();
    std::thread::spawn(move || {
        std::thread::sleep(down);
        server.restart().unwrap();
        server
    })
}

/// A shard member: extension and bytes.
type Member<'a> = (&'a str, &'a [u8]);

/// Shard `bad-000000.tar` in `dir`, of the demo photos, with a sample of each kind of damage
/// in this order: `a` (good, label 1), `no-label`, `no-image`, `bad-label` (`.cls` "dog"),
/// `json` (good, label 3 in `.json`), `corrupt` (a JPEG cut at 900 bytes) and `last` (good),
/// its `.idx` written, then the shard cut 4096 bytes short, inside the last image.
pub fn write_bad_shard(dir: &Path) -> PathBuf {
    let folder = demo_folder();
    let good: Vec<usize> = (0..folder.len())
        .filter(|&i| !folder.name(i).contains("/frames/"))
        .take(4)
        .collect();
    let jpeg: Vec<Vec<u8>> = good
        .iter()
        .map(|&i| std::fs::read(folder.path(i)).unwrap())
        .collect();
    let json: &[u8] = br#"{"label": 3}"#;
    let samples: [(&str, &[Member]); 7] = [
        ("a", &[("jpg", &jpeg[0]), ("cls", b"1")]),
        ("no-label", &[("jpg", &jpeg[1])]),
        ("no-image", &[("cls", b"2")]),
        ("bad-label", &[("jpg", &jpeg[1]), ("cls", b"dog")]),
        ("json", &[("jpg", &jpeg[2]), ("json", json)]),
        ("corrupt", &[("jpg", &jpeg[3][..900]), ("cls", b"4")]),
        ("last", &[("jpg", &jpeg[3]), ("cls", b"5")]),
    ];
    let mut writer = ShardWriter::new(dir, "bad", 1 << 30).unwrap();
    for (key, members) in samples {
        writer.add(key, members).unwrap();
    }
    let shard = writer.finish().unwrap().remove(0);
    let len = std::fs::metadata(&shard).unwrap().len();
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&shard)
        .unwrap();
    file.set_len(len - 4096).unwrap();
    shard
}
