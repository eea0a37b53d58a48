//! `VideoDataset`: many videos (or multi-camera scenes) cut into episodes, each file indexed
//! once (and, when asked, the index saved next to a cache directory for the next run).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use gm_demux::{
    DisplayOrientation, FileSource, GopCache, IndexOptions, IndexingDemuxer, VideoIndex,
};
use gm_episodes::{EpisodeGenerator, GapPolicy, MultiCamera, TimedEpisodes, Timeline};
use gm_storage::{Location, RemoteSource, RemoteUrl, Storage};
use parking_lot::Mutex;

use crate::error::{LoaderError, SampleError, SampleErrorKind};
use crate::progress::Progress;

/// File extensions [`VideoDatasetBuilder::directory`] takes as videos.
pub const VIDEO_EXTENSIONS: &[&str] = &["mp4", "m4v", "mov", "webm", "mkv"];

/// How videos are cut into episodes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum EpisodeSpec {
    /// `length` frames every `stride` frames, every `step`-th frame (presentation order).
    /// With several cameras, the cameras' frame indices are taken as aligned.
    Frames {
        /// Frames per episode.
        length: usize,
        /// Frames between episode starts.
        stride: usize,
        /// Distance between an episode's frames (1: consecutive).
        step: usize,
    },
    /// `seconds` of video sampled at `fps`, one episode every `stride` seconds, from the
    /// presentation timestamps (works on variable-frame-rate video; with several cameras,
    /// each camera's frame nearest each sample time).
    Timed {
        /// Episode duration.
        seconds: f64,
        /// Samples per second.
        fps: f64,
        /// Seconds between episode starts.
        stride: f64,
    },
}

/// What happens to a file that cannot be indexed when the dataset opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BadFiles {
    /// Leave its scene out and keep the reason ([`VideoDataset::skipped`]).
    #[default]
    Skip,
    /// Fail to open the dataset.
    Fail,
}

/// One episode: per camera, the video and its frame indices (presentation order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clip {
    /// The scene (the video, with one camera).
    pub scene: usize,
    /// `(video, frames)` per camera.
    pub cameras: Vec<(usize, Vec<usize>)>,
}

/// A scene of given clips: its videos (one per camera) and each clip's frames per camera,
/// `[clip][camera]`.
pub(crate) type ExplicitScene = (Vec<usize>, Vec<Vec<Vec<usize>>>);

/// One indexed video.
pub(crate) struct Video {
    pub(crate) path: PathBuf,
    pub(crate) demux: IndexingDemuxer,
}

/// How a scene's episodes are cut.
enum Cutter {
    Frames(EpisodeGenerator),
    Timed(TimedEpisodes),
    /// `valid`: the episodes without a gap, when gaps are skipped.
    Cameras {
        cams: MultiCamera,
        valid: Option<Vec<usize>>,
    },
    /// Given clips, `[clip][camera]` frame lists (a LeRobot dataset's samples).
    Explicit(Vec<Vec<Vec<usize>>>),
}

struct Scene {
    videos: Vec<usize>,
    cutter: Cutter,
}

impl Scene {
    fn episode_count(&self) -> usize {
        match &self.cutter {
            Cutter::Frames(g) => g.episode_count(),
            Cutter::Timed(t) => t.episode_count(),
            Cutter::Cameras { cams, valid } => {
                valid.as_ref().map_or(cams.episode_count(), Vec::len)
            }
            Cutter::Explicit(clips) => clips.len(),
        }
    }

    fn cameras(&self, k: usize) -> Option<Vec<Vec<usize>>> {
        match &self.cutter {
            Cutter::Frames(g) => {
                let f = g.episode(k as i64).ok()?;
                Some(vec![f; self.videos.len()])
            }
            Cutter::Timed(t) => Some(vec![t.episode(k as i64).ok()?]),
            Cutter::Cameras { cams, valid } => {
                let k = match valid {
                    Some(v) => *v.get(k)?,
                    None => k,
                };
                cams.episode(k as i64).ok().flatten()
            }
            Cutter::Explicit(clips) => clips.get(k).cloned(),
        }
    }
}

/// Builds a [`VideoDataset`]: which files, how they are cut, where indexes are kept.
#[derive(Debug, Clone)]
pub struct VideoDatasetBuilder {
    scenes: Vec<Vec<PathBuf>>,
    multi_camera: bool,
    directory: Option<PathBuf>,
    spec: EpisodeSpec,
    tolerance: Option<f64>,
    gaps: GapPolicy,
    index_cache: Option<PathBuf>,
    bad_files: BadFiles,
    gop_cache: Option<usize>,
    index_options: IndexOptions,
    progress: Option<Arc<Progress>>,
    storage: Option<Storage>,
    autorotate: bool,
}

impl Default for VideoDatasetBuilder {
    fn default() -> Self {
        VideoDatasetBuilder {
            scenes: Vec::new(),
            multi_camera: false,
            directory: None,
            spec: EpisodeSpec::Frames {
                length: 8,
                stride: 8,
                step: 1,
            },
            tolerance: None,
            gaps: GapPolicy::Error,
            index_cache: None,
            bad_files: BadFiles::Skip,
            gop_cache: None,
            index_options: IndexOptions::default(),
            progress: None,
            storage: None,
            autorotate: true,
        }
    }
}

impl VideoDatasetBuilder {
    /// Reads remote videos (paths that are URLs: `s3://`, `gs://`, `az://`, `http(s)://`)
    /// through `storage` (default: [`Storage::global`]).
    pub fn storage(mut self, storage: &Storage) -> Self {
        self.storage = Some(storage.clone());
        self
    }

    /// Single-camera videos, in this order.
    pub fn videos(mut self, paths: &[PathBuf]) -> Self {
        self.scenes.extend(paths.iter().map(|p| vec![p.clone()]));
        self
    }

    /// Every video (`.mp4`, `.m4v`, `.mov`, `.webm`, `.mkv`) in `dir`, sorted by name; `dir` may
    /// be a bucket prefix URL (its direct children are taken, as a directory's are).
    pub fn directory(mut self, dir: impl Into<PathBuf>) -> Self {
        self.directory = Some(dir.into());
        self
    }

    /// Multi-camera scenes: each entry lists one scene's cameras, in camera order. Batches
    /// are then `[B, cameras, T, ...]`.
    pub fn scenes(mut self, scenes: Vec<Vec<PathBuf>>) -> Self {
        self.scenes.extend(scenes);
        self.multi_camera = true;
        self
    }

    /// Episodes of `length` frames every `stride` frames (default 8 and 8).
    pub fn frames(mut self, length: usize, stride: usize) -> Self {
        let step = match self.spec {
            EpisodeSpec::Frames { step, .. } => step,
            EpisodeSpec::Timed { .. } => 1,
        };
        self.spec = EpisodeSpec::Frames {
            length,
            stride,
            step,
        };
        self
    }

    /// Every `step`-th frame within a frame-counted episode (default 1).
    pub fn step(mut self, step: usize) -> Self {
        if let EpisodeSpec::Frames { step: s, .. } = &mut self.spec {
            *s = step;
        }
        self
    }

    /// Episodes of `seconds` sampled at `fps`, one every `stride` seconds, by timestamp.
    pub fn timed(mut self, seconds: f64, fps: f64, stride: f64) -> Self {
        self.spec = EpisodeSpec::Timed {
            seconds,
            fps,
            stride,
        };
        self
    }

    /// How far (seconds) a timed sample's frame may be from its time (default: half a
    /// sample period).
    pub fn tolerance(mut self, seconds: f64) -> Self {
        self.tolerance = Some(seconds);
        self
    }

    /// What a multi-camera episode with a gap in one camera becomes (default: an error when
    /// the dataset opens).
    pub fn gaps(mut self, policy: GapPolicy) -> Self {
        self.gaps = policy;
        self
    }

    /// Keep each file's index in `dir` (built once, reused while the file is unchanged).
    pub fn index_cache(mut self, dir: impl Into<PathBuf>) -> Self {
        self.index_cache = Some(dir.into());
        self
    }

    /// What a file that cannot be indexed does (default: skipped and reported).
    pub fn bad_files(mut self, policy: BadFiles) -> Self {
        self.bad_files = policy;
        self
    }

    /// Share a cache of `bytes` of demuxed packets, by GOP, between the readers: consecutive
    /// episodes then read each GOP from the file once.
    pub fn gop_cache(mut self, bytes: usize) -> Self {
        self.gop_cache = Some(bytes);
        self
    }

    /// Whether frames are turned upright as each track's display matrix says (default: yes,
    /// as ffmpeg, torchcodec and players show them: a phone's portrait clip comes out
    /// portrait). `false` keeps the stored orientation (ffmpeg's `-noautorotate`).
    pub fn autorotate(mut self, on: bool) -> Self {
        self.autorotate = on;
        self
    }

    /// Indexing options (track, bitstream scan).
    pub fn index_options(mut self, options: IndexOptions) -> Self {
        self.index_options = options;
        self
    }

    /// Counts the files indexed in `progress` (total: the files to index) while the dataset
    /// opens, for a progress bar; a `directory` that is a bucket prefix counts its listed
    /// objects in [`Progress::listed`] first.
    pub fn progress(mut self, progress: Arc<Progress>) -> Self {
        self.progress = Some(progress);
        self
    }

    /// Indexes the files (in parallel; no decoding) and cuts them into episodes.
    pub fn open(mut self) -> Result<VideoDataset, LoaderError> {
        let storage = self.storage.clone().unwrap_or_else(Storage::global);
        if let Some(dir) = self.directory.take() {
            self.scenes.extend(
                list_videos(&dir, &storage, self.progress.as_deref())?
                    .into_iter()
                    .map(|p| vec![p]),
            );
        }
        if self.scenes.is_empty() {
            return Err(LoaderError::Config("a video dataset needs videos".into()));
        }
        if let Some(dir) = &self.index_cache {
            std::fs::create_dir_all(dir).map_err(|source| LoaderError::Io {
                path: dir.clone(),
                source,
            })?;
        }
        let paths: Vec<PathBuf> = self.scenes.iter().flatten().cloned().collect();
        let indexes = index_all(
            &paths,
            self.index_cache.as_deref(),
            self.index_options,
            self.progress.as_deref(),
            &storage,
        );
        let gop_cache = self.gop_cache.map(|b| Arc::new(GopCache::new(b)));
        let mut dataset = VideoDataset {
            videos: Vec::new(),
            scenes: Vec::new(),
            starts: vec![0],
            cameras: 0,
            multi_camera: self.multi_camera,
            skipped: Vec::new(),
            gop_cache: gop_cache.clone(),
            autorotate: self.autorotate,
        };
        let mut next = indexes.into_iter();
        for (s, scene) in self.scenes.iter().enumerate() {
            let mut videos = Vec::with_capacity(scene.len());
            let mut failure = None;
            for path in scene {
                match next.next() {
                    Some(Ok(demux)) if failure.is_none() => {
                        let id = dataset.videos.len() as u64;
                        let demux = match &gop_cache {
                            Some(c) => demux.with_cache(c.clone(), id),
                            None => demux,
                        };
                        videos.push(dataset.videos.len());
                        dataset.videos.push(Video {
                            path: path.clone(),
                            demux,
                        });
                    }
                    Some(Err(e)) if failure.is_none() => failure = Some(e),
                    _ => {}
                }
            }
            let cutter = match failure {
                None => self.cutter(&dataset.videos, &videos),
                Some(e) => Err(e),
            };
            match cutter {
                Ok(cutter) => dataset.push_scene(s, Scene { videos, cutter })?,
                Err(reason) => {
                    let e = SampleError {
                        index: s,
                        name: scene
                            .iter()
                            .map(|p| p.display().to_string())
                            .collect::<Vec<_>>()
                            .join(", "),
                        reason,
                    };
                    if self.bad_files == BadFiles::Fail {
                        return Err(LoaderError::BadVideo(e));
                    }
                    tracing::warn!(scene = s, reason = %e.reason, "video left out of the dataset");
                    dataset.skipped.push(e);
                    // The videos indexed for this scene stay in `videos` unused: ids stay stable.
                }
            }
        }
        Ok(dataset)
    }

    fn cutter(&self, all: &[Video], videos: &[usize]) -> Result<Cutter, SampleErrorKind> {
        let name = |source| SampleErrorKind::Episodes {
            path: all[videos[0]].path.clone(),
            source,
        };
        let frames = |v: usize| all[v].demux.index().frame_count();
        match self.spec {
            EpisodeSpec::Frames {
                length,
                stride,
                step,
            } => {
                let n = videos.iter().map(|&v| frames(v)).min().unwrap_or(0);
                EpisodeGenerator::new(n, length, stride)
                    .and_then(|g| g.with_step(step))
                    .map(Cutter::Frames)
                    .map_err(name)
            }
            EpisodeSpec::Timed {
                seconds,
                fps,
                stride,
            } if !self.multi_camera => {
                let t = Timeline::from_index(all[videos[0]].demux.index());
                let t = TimedEpisodes::new(t, seconds, fps, stride);
                let t = match self.tolerance {
                    Some(tol) => t.and_then(|t| t.with_tolerance(tol)),
                    None => t,
                };
                t.map(Cutter::Timed).map_err(name)
            }
            EpisodeSpec::Timed {
                seconds,
                fps,
                stride,
            } => {
                let timelines = videos
                    .iter()
                    .map(|&v| Timeline::from_index(all[v].demux.index()))
                    .collect();
                let cams = MultiCamera::new(timelines, seconds, fps, stride);
                let cams = match self.tolerance {
                    Some(tol) => cams.and_then(|c| c.with_tolerance(tol)),
                    None => cams,
                }
                .map_err(name)?
                .with_gap_policy(self.gaps);
                // Gaps are found now, not in the middle of an epoch.
                let mut valid = Vec::new();
                for k in 0..cams.episode_count() {
                    match cams.episode(k as i64) {
                        Ok(Some(_)) => valid.push(k),
                        Ok(None) => {}
                        Err(e) => return Err(name(e)),
                    }
                }
                let all_valid = valid.len() == cams.episode_count();
                Ok(Cutter::Cameras {
                    cams,
                    valid: (!all_valid).then_some(valid),
                })
            }
        }
    }
}

fn is_video(name: &str) -> bool {
    Path::new(name)
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| VIDEO_EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()))
}

fn list_videos(
    dir: &Path,
    storage: &Storage,
    progress: Option<&Progress>,
) -> Result<Vec<PathBuf>, LoaderError> {
    let io = |source| LoaderError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let location = Location::parse(&dir.to_string_lossy()).map_err(|e| io(e.into()))?;
    let dir = match location {
        Location::Local(dir) => dir,
        Location::Remote(url) => {
            let prefix = url.key().trim_end_matches('/');
            let mut out: Vec<PathBuf> = storage
                .list_counted(&url, progress.map(Progress::listing_counter))
                .map_err(|e| io(e.into()))?
                .into_iter()
                .filter(|e| {
                    let rest = e.url.key().strip_prefix(prefix).unwrap_or_default();
                    let name = rest.trim_start_matches('/');
                    !name.contains('/') && is_video(name)
                })
                .map(|e| PathBuf::from(e.url.url().as_str()))
                .collect();
            out.sort();
            return Ok(out);
        }
    };
    let dir = dir.as_path();
    let entries = std::fs::read_dir(dir).map_err(|source| LoaderError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut out: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file() && is_video(&p.to_string_lossy()))
        .collect();
    out.sort();
    Ok(out)
}

/// The name of `video`'s saved index in the cache directory: its stem and a hash of its
/// absolute path (two `clip.mp4` in different folders must not share an index).
pub fn index_file_name(video: &Path) -> String {
    let abs = std::fs::canonicalize(video).unwrap_or_else(|_| video.to_path_buf());
    // FNV-1a: stable across Rust versions, unlike the std hasher.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in abs.as_os_str().as_encoded_bytes() {
        h = (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
    }
    let stem = video
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!("{stem}-{h:016x}.gmidx")
}

/// Indexes every path on a few threads (more for remote videos), in order.
fn index_all(
    paths: &[PathBuf],
    cache: Option<&Path>,
    options: IndexOptions,
    progress: Option<&Progress>,
    storage: &Storage,
) -> Vec<Result<IndexingDemuxer, SampleErrorKind>> {
    if let Some(p) = progress {
        p.start(paths.len() as u64);
    }
    let results: Mutex<Vec<Option<Result<IndexingDemuxer, SampleErrorKind>>>> =
        Mutex::new((0..paths.len()).map(|_| None).collect());
    let next = AtomicUsize::new(0);
    let local = std::thread::available_parallelism()
        .map_or(4, |n| n.get())
        .min(8);
    // Remote indexing waits on round trips, not on the CPU: more threads, up to a quarter of
    // the storage's request limit (each index sends a few requests at once).
    let remote = paths
        .iter()
        .any(|p| gm_storage::looks_like_url(&p.to_string_lossy()));
    let threads = match remote {
        true => local.max(storage.options().concurrency / 4),
        false => local,
    }
    .min(paths.len().max(1));
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(p) = paths.get(i) else { break };
                    let r = open_one(p, cache, options, storage);
                    results.lock()[i] = Some(r);
                    if let Some(p) = progress {
                        p.add(1);
                    }
                }
            });
        }
    });
    results
        .into_inner()
        .into_iter()
        .map(|r| r.unwrap_or(Err(SampleErrorKind::Internal("not indexed"))))
        .collect()
}

fn open_one(
    path: &Path,
    cache: Option<&Path>,
    options: IndexOptions,
    storage: &Storage,
) -> Result<IndexingDemuxer, SampleErrorKind> {
    if let Ok(Location::Remote(url)) = Location::parse(&path.to_string_lossy()) {
        return open_remote(path, &url, cache, options, storage);
    }
    let index = match cache {
        Some(dir) => VideoIndex::open_cached(path, &dir.join(index_file_name(path)), options),
        None => VideoIndex::open(path, options),
    }
    .map_err(|e| SampleErrorKind::Demux {
        message: e.to_string(),
    })?;
    if index.frame_count() == 0 {
        return Err(SampleErrorKind::NoFrames(path.to_path_buf()));
    }
    let source = FileSource::open(path).map_err(|e| SampleErrorKind::read(&e))?;
    Ok(IndexingDemuxer::new(Arc::new(index), Arc::new(source)))
}

/// A remote video: indexed through ranged reads (or its saved index, while the object's ETag
/// holds), and read by the same source afterwards.
fn open_remote(
    path: &Path,
    url: &RemoteUrl,
    cache: Option<&Path>,
    options: IndexOptions,
    storage: &Storage,
) -> Result<IndexingDemuxer, SampleErrorKind> {
    let source = RemoteSource::open(storage, url).map_err(|e| SampleErrorKind::read(&e.into()))?;
    let index = match cache {
        Some(dir) => {
            VideoIndex::open_cached_source(&source, &dir.join(index_file_name(path)), options)
        }
        None => VideoIndex::from_source(&source, options),
    }
    .map_err(|e| SampleErrorKind::Demux {
        message: e.to_string(),
    })?;
    if index.frame_count() == 0 {
        return Err(SampleErrorKind::NoFrames(path.to_path_buf()));
    }
    Ok(IndexingDemuxer::new(Arc::new(index), Arc::new(source)))
}

/// Videos cut into episodes. Episode `i` of the dataset is episode `k` of scene `s`, scenes
/// in the order given; with one camera a scene is one video.
pub struct VideoDataset {
    pub(crate) videos: Vec<Video>,
    scenes: Vec<Scene>,
    /// First dataset episode of each scene, plus the total at the end.
    starts: Vec<usize>,
    cameras: usize,
    multi_camera: bool,
    skipped: Vec<SampleError>,
    gop_cache: Option<Arc<GopCache>>,
    autorotate: bool,
}

impl VideoDataset {
    /// Adds scene `s` (its episodes follow the previous scenes').
    fn push_scene(&mut self, s: usize, scene: Scene) -> Result<(), LoaderError> {
        let count = scene.episode_count();
        if self.cameras == 0 {
            self.cameras = scene.videos.len();
        } else if self.cameras != scene.videos.len() {
            return Err(LoaderError::Config(format!(
                "scene {s} has {} cameras, the first scene {}",
                scene.videos.len(),
                self.cameras
            )));
        }
        self.starts.push(self.starts[self.starts.len() - 1] + count);
        self.scenes.push(scene);
        Ok(())
    }

    /// The same indexed videos cut into given clips instead: each scene is its videos (one per
    /// camera, ids of this dataset) and its clips' frame lists, `[clip][camera]`.
    pub(crate) fn with_explicit_scenes(
        mut self,
        scenes: Vec<ExplicitScene>,
        multi_camera: bool,
    ) -> Result<VideoDataset, LoaderError> {
        self.scenes.clear();
        self.starts = vec![0];
        self.cameras = 0;
        self.multi_camera = multi_camera;
        for (s, (videos, clips)) in scenes.into_iter().enumerate() {
            self.push_scene(
                s,
                Scene {
                    videos,
                    cutter: Cutter::Explicit(clips),
                },
            )?;
        }
        Ok(self)
    }

    /// Settings for a dataset.
    pub fn builder() -> VideoDatasetBuilder {
        VideoDatasetBuilder::default()
    }

    /// Indexes every file (no decoding) and cuts each into episodes of `length` frames every
    /// `stride` frames, taking every `step`-th frame; a file that cannot be indexed is an
    /// error.
    pub fn open(
        paths: &[PathBuf],
        length: usize,
        stride: usize,
        step: usize,
    ) -> Result<VideoDataset, LoaderError> {
        VideoDataset::builder()
            .videos(paths)
            .frames(length, stride)
            .step(step)
            .bad_files(BadFiles::Fail)
            .open()
    }

    /// Episodes in all scenes.
    pub fn len(&self) -> usize {
        self.starts[self.starts.len() - 1]
    }

    /// Whether there are no episodes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Cameras per scene (1 unless built from [`VideoDatasetBuilder::scenes`]).
    pub fn cameras(&self) -> usize {
        self.cameras.max(1)
    }

    /// Whether batches carry a camera dimension.
    pub fn is_multi_camera(&self) -> bool {
        self.multi_camera
    }

    /// Scenes (videos, with one camera) in the dataset.
    pub fn scenes(&self) -> usize {
        self.scenes.len()
    }

    /// The scene and its episode for dataset episode `i`.
    pub fn locate(&self, i: usize) -> Option<(usize, usize)> {
        if i >= self.len() {
            return None;
        }
        let s = self.starts.partition_point(|&x| x <= i) - 1;
        Some((s, i - self.starts[s]))
    }

    /// Dataset episode `i`: per camera, the video and its frames.
    pub fn clip(&self, i: usize) -> Option<Clip> {
        let (s, k) = self.locate(i)?;
        let scene = &self.scenes[s];
        let frames = scene.cameras(k)?;
        Some(Clip {
            scene: s,
            cameras: scene.videos.iter().copied().zip(frames).collect(),
        })
    }

    /// Frame indices (presentation order) of the first camera of dataset episode `i`.
    pub fn frames(&self, i: usize) -> Option<Vec<usize>> {
        self.clip(i)?.cameras.into_iter().next().map(|c| c.1)
    }

    /// The path of video `v` (the ids in [`Clip::cameras`]).
    pub fn path(&self, v: usize) -> &Path {
        &self.videos[v].path
    }

    /// The index of video `v`.
    pub fn video_index(&self, v: usize) -> &Arc<VideoIndex> {
        self.videos[v].demux.index()
    }

    /// How video `v`'s frames come out: its display matrix's turn, or as stored when the
    /// dataset was built with `autorotate(false)`.
    pub fn orientation(&self, v: usize) -> DisplayOrientation {
        if self.autorotate {
            self.video_index(v).orientation
        } else {
            DisplayOrientation::STORED
        }
    }

    /// Video `v`'s frame size as it comes out (width, height): turned by
    /// [`orientation`](Self::orientation).
    pub fn frame_size(&self, v: usize) -> (u32, u32) {
        let codec = &self.video_index(v).codec;
        self.orientation(v)
            .displayed_size(codec.width, codec.height)
    }

    /// Samples per episode.
    pub fn frames_per_clip(&self) -> usize {
        (0..self.len())
            .find_map(|i| self.clip(i))
            .and_then(|c| c.cameras.first().map(|c| c.1.len()))
            .unwrap_or(0)
    }

    /// Files left out when the dataset opened, with the reason (index: the scene).
    pub fn skipped(&self) -> &[SampleError] {
        &self.skipped
    }

    /// Counters of the shared GOP packet cache, if there is one.
    pub fn gop_cache_stats(&self) -> Option<gm_demux::CacheStats> {
        self.gop_cache.as_ref().map(|c| c.stats())
    }

    /// A name for episode `i` in error messages: its files.
    pub fn name(&self, i: usize) -> String {
        match self.clip(i) {
            Some(c) => c
                .cameras
                .iter()
                .map(|(v, _)| self.path(*v).display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            None => format!("episode {i}"),
        }
    }
}
