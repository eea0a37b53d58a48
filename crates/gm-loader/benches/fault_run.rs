//! Issue 25's long run under faults: the image loader, then the clip loader, run epochs while
//! files are deleted, truncated and replaced under them, a second process holds most of the
//! GPU's memory for the middle third of each run, and epochs are dropped and resumed at random
//! batches (every tenth epoch on a freshly built loader). Every delivered sample is compared
//! with a fault-free epoch's; every sample missing from an epoch (skipped as bad) and every
//! changed one must belong to a file a fault touched during that epoch. Memory (host RSS, the
//! loader's pool) is sampled after each epoch, and every wait is bounded (`next_timeout`).
//!
//! `gm-loader--fault_run DEMO_DIR [VIDEO...]` on the GPU machine (DEMO_DIR:
//! assets/demo/images; videos: H.264/HEVC/VP9 fixtures). The image folder is made of
//! `GM_FAULT_COPIES` (default 40) copies of DEMO_DIR's photographs, the video list of
//! `GM_FAULT_VIDEO_COPIES` (default 20) copies of each video (8-frame clips, stride 8). Each
//! run stops after `GM_FAULT_SAMPLES` images (default 1,000,000) or `GM_FAULT_CLIPS` clips
//! (default 100,000), or `GM_FAULT_SECONDS` (default 240). `GM_FAULT_FRESH_EVERY` (default 10;
//! 0: never) sets how often an epoch runs on a freshly built loader; `GM_FAULT_IMAGES=0` skips
//! the image loader. Prints one JSON line of figures per loader; exits 1 if any sample was lost
//! or changed without a fault to explain it.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

#[path = "../../../bench/support/mod.rs"]
mod support;
use support::{env_usize, rss_kb};

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use gm_cuda::testing::hold_all_but;
use gm_cuda::{DType, Device, Stream};
use gm_loader::{
    Batch, ClipBatch, ClipEpoch, ClipLoader, CorePlan, Dataset, Epoch, ImageFolder, Loader,
    LoaderError, LoaderState, Sampler, VideoDataset, Waited,
};
use gm_transforms::{CenterCrop, Compose, Layout, Resize, ToDtype};
use parking_lot::Mutex;

const HOG_ENV: &str = "GM_FAULT_HOG_LEAVE_MIB";
/// The longest a batch may take before the run counts as hung.
const WATCHDOG: Duration = Duration::from_secs(60);

/// A small seeded generator (xorshift64*), so that runs repeat their fault schedule.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Files a fault touched, with the epochs it may have affected (open until restored).
#[derive(Default)]
struct Touched(Mutex<HashMap<PathBuf, Vec<(u64, u64)>>>);
impl Touched {
    fn open(&self, path: &Path, epoch: u64) -> usize {
        let mut m = self.0.lock();
        let v = m.entry(path.to_path_buf()).or_default();
        v.push((epoch.saturating_sub(1), u64::MAX));
        v.len() - 1
    }
    fn close(&self, path: &Path, slot: usize, epoch: u64) {
        if let Some(v) = self.0.lock().get_mut(path) {
            v[slot].1 = epoch + 1;
        }
    }
    fn affected(&self, path: &Path, epoch: u64) -> bool {
        self.0
            .lock()
            .get(path)
            .is_some_and(|v| v.iter().any(|&(a, b)| a <= epoch && epoch <= b))
    }
}

/// A sample by what it is, not by its index (a loader built while a file is damaged indexes
/// that file differently, which renumbers the clips after it): its file, and for a clip its
/// first frame.
type Key = (PathBuf, usize);

/// A loader under test: its epochs, each sample's output hashed.
trait Target {
    fn batches(&self) -> usize;
    /// Runs epoch `e` (or resumes `from`), calling `sample` with each delivered sample's key
    /// and hash, and stopping after `stop_after` batches when given; returns the state there.
    fn run(
        &mut self,
        e: u64,
        from: Option<&LoaderState>,
        stop_after: Option<usize>,
        sample: &mut dyn FnMut(Key, u64),
    ) -> Option<LoaderState>;
    /// Bytes the loader's output pool holds.
    fn pool_bytes(&self) -> usize;
    /// The loader's count of bad samples and its first errors.
    fn bad(&self) -> (u64, Vec<String>);
}

fn hash(px: &[u8]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    px.hash(&mut h);
    h.finish()
}

/// What [`drain`] needs of an epoch of either loader.
trait Batches {
    type Batch;
    fn next_within(&mut self, timeout: Duration) -> Waited<Result<Self::Batch, LoaderError>>;
    fn state(&self) -> LoaderState;
}

impl Batches for Epoch<'_> {
    type Batch = Batch;
    fn next_within(&mut self, timeout: Duration) -> Waited<Result<Batch, LoaderError>> {
        self.next_timeout(timeout)
    }
    fn state(&self) -> LoaderState {
        Epoch::state(self)
    }
}

impl Batches for ClipEpoch<'_> {
    type Batch = ClipBatch;
    fn next_within(&mut self, timeout: Duration) -> Waited<Result<ClipBatch, LoaderError>> {
        self.next_timeout(timeout)
    }
    fn state(&self) -> LoaderState {
        ClipEpoch::state(self)
    }
}

/// Hands each batch of epoch `e` to `each`, every wait bounded by the watchdog; stops after
/// `stop_after` batches when given and returns the state there.
fn drain<E: Batches>(
    mut epoch: E,
    e: u64,
    stop_after: Option<usize>,
    mut each: impl FnMut(E::Batch),
) -> Option<LoaderState> {
    let mut n = 0;
    loop {
        match epoch.next_within(WATCHDOG) {
            Waited::Ready(Some(b)) => each(b.unwrap()),
            Waited::Ready(None) => return None,
            Waited::Pending => panic!("watchdog: no batch in {WATCHDOG:?} (epoch {e})"),
        }
        n += 1;
        if stop_after == Some(n) {
            return Some(epoch.state());
        }
    }
}

/// The image loader; its dataset's listing stays the same (one `ImageFolder` for all builds),
/// so an index names a file.
struct Images(Loader);

impl Target for Images {
    fn batches(&self) -> usize {
        self.0.batches_per_epoch()
    }
    fn run(
        &mut self,
        e: u64,
        from: Option<&LoaderState>,
        stop_after: Option<usize>,
        sample: &mut dyn FnMut(Key, u64),
    ) -> Option<LoaderState> {
        let data = self.0.dataset().clone();
        let epoch = match from {
            Some(s) => self.0.resume(s).unwrap(),
            None => self.0.epoch(e),
        };
        drain(epoch, e, stop_after, |b| {
            let bytes = b.images.to_host_bytes(None).unwrap();
            let per = bytes.len() / b.indices.len().max(1);
            for (&i, px) in b.indices.iter().zip(bytes.chunks(per)) {
                sample((PathBuf::from(data.name(i)), 0), hash(px));
            }
        })
    }
    fn pool_bytes(&self) -> usize {
        self.0.batch_pool_stats().map(|s| s.bytes_held).unwrap_or(0)
    }
    fn bad(&self) -> (u64, Vec<String>) {
        let s = self.0.stats();
        (
            s.bad,
            s.first_errors.iter().map(|e| e.to_string()).collect(),
        )
    }
}

/// The clip loader, with a stream to read its frames back on.
struct Clips(ClipLoader, Stream);

impl Target for Clips {
    fn batches(&self) -> usize {
        self.0.batches_per_epoch()
    }
    fn run(
        &mut self,
        e: u64,
        from: Option<&LoaderState>,
        stop_after: Option<usize>,
        sample: &mut dyn FnMut(Key, u64),
    ) -> Option<LoaderState> {
        let ds = self.0.dataset();
        let videos: Vec<PathBuf> = (0..ds.scenes() * ds.cameras())
            .map(|v| ds.path(v).to_path_buf())
            .collect();
        let stream = self.1.clone();
        let epoch = match from {
            Some(s) => self.0.resume(s).unwrap(),
            None => self.0.epoch(e),
        };
        drain(epoch, e, stop_after, |b| {
            let bytes = b.frames.to_host_bytes(Some(&stream)).unwrap();
            let per = bytes.len() / b.episodes.len().max(1);
            for (src, px) in b.sources.iter().zip(bytes.chunks(per)) {
                let (v, frames) = &src[0];
                sample((videos[*v].clone(), frames[0]), hash(px));
            }
        })
    }
    fn pool_bytes(&self) -> usize {
        0
    }
    fn bad(&self) -> (u64, Vec<String>) {
        let s = self.0.stats();
        (
            s.bad_clips,
            s.first_bad.iter().map(|e| e.to_string()).collect(),
        )
    }
}

fn main() {
    if let Ok(leave) = std::env::var(HOG_ENV) {
        hog(leave.parse().unwrap());
        return;
    }
    let mut args = std::env::args().skip(1);
    let demo = PathBuf::from(args.next().expect("usage: fault_run DEMO_DIR [VIDEO...]"));
    let videos: Vec<PathBuf> = args.map(PathBuf::from).collect();
    let device = Device::new(0).unwrap();
    let seconds = env_usize("GM_FAULT_SECONDS", 240) as f64;
    let mut ok = env_usize("GM_FAULT_IMAGES", 1) == 0 || images(&device, &demo, seconds);
    if !videos.is_empty() {
        ok &= clips(&device, &videos, seconds);
    }
    if !ok {
        std::process::exit(1);
    }
}

fn small_u8() -> Compose {
    Compose::new()
        .then(Resize::Shorter(72))
        .then(CenterCrop(64, 64))
        .then(ToDtype(DType::U8, Layout::Chw))
}

fn images(device: &Device, demo: &Path, seconds: f64) -> bool {
    let root = std::env::temp_dir().join("gm-fault-run-images");
    make_folder(demo, &root, env_usize("GM_FAULT_COPIES", 40));
    let data: Arc<dyn Dataset> = Arc::new(ImageFolder::new(&root).unwrap());
    let paths: Vec<PathBuf> = (0..data.len())
        .map(|i| PathBuf::from(data.name(i)))
        .collect();
    // The engines alone: with a fractional engine share, which decoder takes an image depends
    // on the batch it lands in, and the decoders differ by a rounding step, so an image's
    // pixels would vary between epochs of different order without any fault.
    let build = || {
        Images(
            Loader::builder_shared(data.clone())
                .device(device)
                .decoder(CorePlan::for_cores(2).decoder)
                .batch_size(256)
                .sampler(Sampler::shuffled(7))
                .transforms(small_u8())
                .build()
                .unwrap(),
        )
    };
    let target = env_usize("GM_FAULT_SAMPLES", 1_000_000) as u64;
    Run::new("images", paths).go(&mut build(), &|| build(), target, seconds)
}

fn clips(device: &Device, videos: &[PathBuf], seconds: f64) -> bool {
    let root = std::env::temp_dir().join("gm-fault-run-videos");
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    let mut files = Vec::new();
    for c in 0..env_usize("GM_FAULT_VIDEO_COPIES", 20) {
        for v in videos {
            let to = root.join(format!(
                "{c:03}-{}",
                v.file_name().unwrap().to_string_lossy()
            ));
            std::fs::copy(v, &to).unwrap();
            files.push(to);
        }
    }
    let stream = Stream::new(device).unwrap();
    let build = || {
        let data = VideoDataset::builder()
            .videos(&files)
            .frames(8, 8)
            .open()
            .unwrap();
        let loader = ClipLoader::builder(data)
            .device(device)
            .sessions(4)
            .batch_size(16)
            .sampler(Sampler::shuffled(7))
            .transforms(small_u8())
            .build()
            .unwrap();
        Clips(loader, stream.clone())
    };
    let target = env_usize("GM_FAULT_CLIPS", 100_000) as u64;
    Run::new("clips", files.clone()).go(&mut build(), &|| build(), target, seconds)
}

/// Each sample's hash, from one fault-free epoch.
fn reference_hashes(t: &mut dyn Target) -> HashMap<Key, u64> {
    let mut out = HashMap::new();
    t.run(0, None, None, &mut |k, h| {
        out.insert(k, h);
    });
    out
}

/// One run's files and what the fault thread shares.
struct Run {
    name: &'static str,
    files: Arc<Vec<PathBuf>>,
    epoch: Arc<AtomicU64>,
    touched: Arc<Touched>,
}

#[derive(Default, Debug)]
struct Figures {
    epochs: u64,
    samples: u64,
    skipped: u64,
    changed_by_faults: u64,
    unexplained_missing: u64,
    unexplained_changed: u64,
    drops_resumed: u64,
    fresh_loaders: u64,
}

impl Run {
    fn new(name: &'static str, files: Vec<PathBuf>) -> Run {
        Run {
            name,
            files: Arc::new(files),
            epoch: Arc::new(AtomicU64::new(1)),
            touched: Arc::new(Touched::default()),
        }
    }

    fn go<T: Target>(
        &self,
        first: &mut T,
        build: &dyn Fn() -> T,
        target: u64,
        seconds: f64,
    ) -> bool {
        let reference = reference_hashes(first);
        let fresh_every = env_usize("GM_FAULT_FRESH_EVERY", 10) as u64;
        let stop = Arc::new(AtomicBool::new(false));
        let faults = Arc::new(AtomicU64::new(0));
        let fault_thread = self.start_faults(stop.clone(), faults.clone());
        let t0 = Instant::now();
        let mut f = Figures::default();
        let mut rng = Rng(0x5eed_fa17);
        let mut memory = Vec::new();
        let (mut hog, mut hog_window): (Option<Child>, (Option<u64>, Option<u64>)) =
            (None, (None, None));
        let mut fresh: Option<T> = None;
        while f.samples < target && t0.elapsed().as_secs_f64() < seconds {
            let share =
                (t0.elapsed().as_secs_f64() / seconds).max(f.samples as f64 / target as f64);
            if hog.is_none() && hog_window.0.is_none() && share > 1.0 / 3.0 {
                hog = Some(start_hog(4096));
                hog_window.0 = Some(f.epochs);
            } else if hog.is_some() && share > 2.0 / 3.0 {
                stop_hog(hog.take());
                hog_window.1 = Some(f.epochs);
            }
            // Every tenth epoch runs on a fresh loader, as after a restart.
            let t: &mut T = if fresh_every > 0 && f.epochs % fresh_every == fresh_every - 1 {
                f.fresh_loaders += 1;
                fresh.insert(build())
            } else {
                &mut *first
            };
            let e = self.epoch.fetch_add(1, Ordering::SeqCst) + 1;
            self.one_epoch(t, e, &reference, &mut rng, &mut f);
            f.epochs += 1;
            memory.push((rss_kb(), first.pool_bytes()));
        }
        stop.store(true, Ordering::SeqCst);
        fault_thread.join().unwrap();
        stop_hog(hog.take());
        let warm = memory
            .get(memory.len().min(5).saturating_sub(1))
            .copied()
            .unwrap_or_default();
        let last = memory.last().copied().unwrap_or_default();
        let max_rss = memory.iter().map(|m| m.0).max().unwrap_or(0);
        let ok = f.unexplained_missing == 0 && f.unexplained_changed == 0;
        let (bad, first_errors) = first.bad();
        println!(
            "{{\"loader\": \"{}\", \"samples\": {}, \"epochs\": {}, \"seconds\": {:.1}, \
             \"faults\": {}, \"skipped_bad\": {}, \"changed_by_faults\": {}, \
             \"unexplained_missing\": {}, \"unexplained_changed\": {}, \"drops_resumed\": {}, \
             \"fresh_loaders\": {}, \"hog_epochs\": [{:?}, {:?}], \"rss_kb_after_warmup\": {}, \
             \"rss_kb_last\": {}, \"rss_kb_max\": {}, \"pool_bytes_after_warmup\": {}, \
             \"pool_bytes_last\": {}, \"bad_counted_by_first_loader\": {}, \"ok\": {ok}}}",
            self.name,
            f.samples,
            f.epochs,
            t0.elapsed().as_secs_f64(),
            faults.load(Ordering::SeqCst),
            f.skipped,
            f.changed_by_faults,
            f.unexplained_missing,
            f.unexplained_changed,
            f.drops_resumed,
            f.fresh_loaders,
            hog_window.0,
            hog_window.1,
            warm.0,
            last.0,
            max_rss,
            warm.1,
            last.1,
            bad,
        );
        // Host RSS (MB) every 50th epoch, to tell growth from a plateau.
        let trace: Vec<String> = memory
            .iter()
            .step_by(50)
            .map(|m| (m.0 / 1024).to_string())
            .collect();
        println!(
            "{{\"loader\": \"{}\", \"rss_mb_every_50_epochs\": [{}]}}",
            self.name,
            trace.join(", ")
        );
        for e in first_errors.iter().take(6) {
            println!("{{\"loader\": \"{}\", \"first_error\": {e:?}}}", self.name);
        }
        ok
    }

    /// One epoch, dropped at a random batch and resumed from its state one time in three.
    fn one_epoch(
        &self,
        t: &mut dyn Target,
        e: u64,
        reference: &HashMap<Key, u64>,
        rng: &mut Rng,
        f: &mut Figures,
    ) {
        let batches = t.batches();
        let drop_at = (rng.below(3) == 0).then(|| 1 + rng.below(batches.max(1)));
        let mut seen = std::collections::HashSet::new();
        let mut check = |k: Key, h: u64| {
            f.samples += 1;
            if reference.get(&k) != Some(&h) {
                if self.touched.affected(&k.0, e) {
                    f.changed_by_faults += 1;
                } else {
                    f.unexplained_changed += 1;
                    eprintln!("{}: {k:?} changed without a fault in epoch {e}", self.name);
                }
            }
            seen.insert(k);
        };
        if let Some(state) = t.run(e, None, drop_at, &mut check) {
            f.drops_resumed += 1;
            t.run(e, Some(&state), None, &mut check);
        }
        for k in reference.keys().filter(|k| !seen.contains(*k)) {
            if self.touched.affected(&k.0, e) {
                f.skipped += 1;
            } else {
                f.unexplained_missing += 1;
                eprintln!("{}: {k:?} lost without a fault in epoch {e}", self.name);
            }
        }
    }

    /// Every 50-150 ms one file is deleted, truncated or overwritten by another file of the
    /// set, and written back (in place, so that open handles see it) 20-120 ms later.
    fn start_faults(
        &self,
        stop: Arc<AtomicBool>,
        count: Arc<AtomicU64>,
    ) -> std::thread::JoinHandle<()> {
        let (files, epoch, touched) =
            (self.files.clone(), self.epoch.clone(), self.touched.clone());
        std::thread::spawn(move || {
            let mut rng = Rng(0xfa17_0001);
            while !stop.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(50 + rng.below(100) as u64));
                let p = &files[rng.below(files.len())];
                let original = std::fs::read(p).unwrap();
                let slot = touched.open(p, epoch.load(Ordering::SeqCst));
                match rng.below(3) {
                    0 => std::fs::remove_file(p).unwrap(),
                    1 => std::fs::write(p, &original[..original.len() / 3]).unwrap(),
                    _ => {
                        let other = std::fs::read(&files[rng.below(files.len())]).unwrap();
                        std::fs::write(p, other).unwrap();
                    }
                }
                std::thread::sleep(Duration::from_millis(20 + rng.below(100) as u64));
                std::fs::write(p, &original).unwrap();
                touched.close(p, slot, epoch.load(Ordering::SeqCst));
                count.fetch_add(1, Ordering::SeqCst);
            }
        })
    }
}

/// `copies` copies of `demo`'s photographs (not its `frames/`), in class folders as there.
fn make_folder(demo: &Path, root: &Path, copies: usize) {
    let _ = std::fs::remove_dir_all(root);
    for class in std::fs::read_dir(demo).unwrap().map(|e| e.unwrap().path()) {
        let name = class.file_name().unwrap().to_owned();
        if !class.is_dir() || name == "frames" {
            continue;
        }
        let to = root.join(&name);
        std::fs::create_dir_all(&to).unwrap();
        for file in std::fs::read_dir(&class)
            .unwrap()
            .map(|e| e.unwrap().path())
        {
            let stem = file.file_stem().unwrap().to_string_lossy().into_owned();
            for c in 0..copies {
                std::fs::copy(&file, to.join(format!("{stem}-{c:03}.jpg"))).unwrap();
            }
        }
    }
}

/// Holds all but `leave_mib` of the GPU's free memory until stdin closes.
fn hog(leave_mib: usize) {
    let device = Device::new(0).unwrap();
    let held = hold_all_but(&device, leave_mib << 20).unwrap();
    let bytes: usize = held.iter().map(|b| b.len()).sum();
    println!("hog ready: holding {bytes} bytes");
    std::io::stdout().flush().unwrap();
    let mut line = String::new();
    while std::io::stdin()
        .read_line(&mut line)
        .map(|n| n > 0)
        .unwrap_or(false)
    {}
}

fn start_hog(leave_mib: usize) -> Child {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env(HOG_ENV, leave_mib.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let line = BufReader::new(out).lines().map_while(Result::ok).next();
    eprintln!("{line:?}");
    child
}

fn stop_hog(hog: Option<Child>) {
    if let Some(mut h) = hog {
        drop(h.stdin.take());
        h.wait().unwrap();
    }
}
