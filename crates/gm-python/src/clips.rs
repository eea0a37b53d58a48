//! `gm.VideoDataset` and `gm.ClipLoader`: videos (or multi-camera scenes) cut into episodes,
//! decoded on a pool of NVDEC sessions into batches of clips on the GPU, as the Rust
//! `ClipLoader` does. The dataset (indexes, episodes) needs no GPU; the loader does.

use std::path::PathBuf;
use std::sync::Arc;

use gm_loader::{
    BadFiles, BadSamplePolicy, ClipLoader as RustClipLoader, Images, VideoDatasetBuilder,
};
use parking_lot::Mutex;
use pyo3::exceptions::{PyIndexError, PyStopIteration, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::device;
use crate::errors::loader_error;
use crate::image_loader::{plan_steps_erasing, policy_named, sampler_for};
use crate::iteration::{Inner, next_batch};
use crate::owner::Owner;
use crate::tensor::{Elem, Tensor};

/// An episode as Python sees it: the scene, and per camera the video path and frames.
type EpisodeSources = (usize, Vec<(String, Vec<usize>)>);

/// Videos cut into episodes: `frames` frames every `stride` frames (every `step`-th frame),
/// or `timed=(seconds, fps, stride)` by timestamp. `videos` (paths), `directory` (every
/// .mp4/.m4v/.mov/.webm/.mkv in it) or `scenes` (lists of camera videos, aligned) say which files.
/// Each may be a URL (`s3://`, `gs://`, `az://`, `http(s)://`; a `directory` a bucket prefix),
/// read by ranged GETs through `storage={...}` (object_store keys such as `endpoint`,
/// `region`, `allow_http`, and gm's `concurrency`, `retries`, `timeout`, ...; the
/// environment first). Indexing reads no frame and needs no GPU; `index_cache` keeps the
/// indexes.
#[pyclass(module = "gm")]
pub struct VideoDataset {
    builder: Reopen,
    /// Opened once; the first ClipLoader takes it, later ones open their own.
    opened: Mutex<Option<gm_loader::VideoDataset>>,
    len: usize,
    frames_per_clip: usize,
    cameras: usize,
    clips: Vec<EpisodeSources>,
    skipped: Vec<(String, String)>,
}

#[pymethods]
impl VideoDataset {
    #[new]
    #[pyo3(signature = (
        videos=None, *, directory=None, scenes=None, frames=8, stride=None, step=1, timed=None,
        tolerance=None, skip_gaps=false, index_cache=None, bad_files="skip", gop_cache_bytes=None,
        progress=None, storage=None, autorotate=true
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        videos: Option<Vec<PathBuf>>,
        directory: Option<PathBuf>,
        scenes: Option<Vec<Vec<PathBuf>>>,
        frames: usize,
        stride: Option<usize>,
        step: usize,
        timed: Option<(f64, f64, f64)>,
        tolerance: Option<f64>,
        skip_gaps: bool,
        index_cache: Option<PathBuf>,
        bad_files: &str,
        gop_cache_bytes: Option<usize>,
        progress: Option<&Bound<'_, PyAny>>,
        storage: Option<&Bound<'_, PyDict>>,
        autorotate: bool,
    ) -> PyResult<VideoDataset> {
        let files = Files {
            videos,
            directory,
            scenes,
        };
        let cut = Cut {
            frames,
            stride,
            step,
            timed,
            tolerance,
            skip_gaps,
        };
        let mut b =
            configure(files, cut, index_cache, bad_files, gop_cache_bytes)?.autorotate(autorotate);
        if let Some(storage) = crate::storage::from_dict(storage)? {
            b = b.storage(&storage);
        }
        let builder = b.clone();
        let counter = gm_loader::Progress::new();
        let b = b.progress(counter.clone());
        let opened =
            crate::progress::run(py, progress, &counter, ("indexing", "video"), || b.open())?;
        crate::logging::flush(py);
        let d = opened.map_err(|e| loader_error(py, e))?;
        Ok(VideoDataset::summarize(Reopen::Videos(builder), d))
    }

    /// Episodes in the dataset.
    fn __len__(&self) -> usize {
        self.len
    }

    /// Episode `i`: `(scene, [(video path, frame indices), ...])`, one entry per camera.
    fn clip(&self, i: usize) -> PyResult<EpisodeSources> {
        self.clips
            .get(i)
            .cloned()
            .ok_or_else(|| PyIndexError::new_err(format!("episode {i} of {}", self.len)))
    }

    /// Frames (samples) per episode.
    #[getter]
    fn frames_per_clip(&self) -> usize {
        self.frames_per_clip
    }

    /// Cameras per scene (1 for single videos).
    #[getter]
    fn cameras(&self) -> usize {
        self.cameras
    }

    /// Files left out when the dataset opened: `(path, reason)`.
    #[getter]
    fn skipped(&self) -> Vec<(String, String)> {
        self.skipped.clone()
    }
}

/// How a `VideoDataset` opens again for a second loader.
#[derive(Clone)]
pub(crate) enum Reopen {
    /// Videos cut into episodes.
    Videos(VideoDatasetBuilder),
    /// A LeRobot dataset's samples.
    LeRobot(gm_loader::LeRobotDatasetBuilder),
}

impl Reopen {
    fn open(self) -> Result<gm_loader::VideoDataset, gm_loader::LoaderError> {
        match self {
            Reopen::Videos(b) => b.open(),
            Reopen::LeRobot(b) => b.open().map(gm_loader::LeRobotDataset::into_videos),
        }
    }
}

impl VideoDataset {
    /// The Python object over an opened dataset: what Python asks of it, copied out.
    pub(crate) fn summarize(builder: Reopen, d: gm_loader::VideoDataset) -> VideoDataset {
        let clips = (0..d.len())
            .filter_map(|i| d.clip(i))
            .map(|c| {
                let cams = c
                    .cameras
                    .into_iter()
                    .map(|(v, f)| (d.path(v).display().to_string(), f))
                    .collect();
                (c.scene, cams)
            })
            .collect();
        let skipped = d
            .skipped()
            .iter()
            .map(|e| (e.name.clone(), e.reason.to_string()))
            .collect();
        VideoDataset {
            builder,
            len: d.len(),
            frames_per_clip: d.frames_per_clip(),
            cameras: d.cameras(),
            clips,
            skipped,
            opened: Mutex::new(Some(d)),
        }
    }

    /// The opened dataset for a loader: the one indexed at construction, or a new one.
    fn take(&self, py: Python<'_>) -> PyResult<gm_loader::VideoDataset> {
        if let Some(d) = self.opened.lock().take() {
            return Ok(d);
        }
        let b = self.builder.clone();
        py.detach(|| b.open()).map_err(|e| loader_error(py, e))
    }
}

/// Which files a dataset reads (`VideoDataset`'s arguments).
struct Files {
    videos: Option<Vec<PathBuf>>,
    directory: Option<PathBuf>,
    scenes: Option<Vec<Vec<PathBuf>>>,
}

/// How the files are cut into episodes (`VideoDataset`'s arguments).
struct Cut {
    frames: usize,
    stride: Option<usize>,
    step: usize,
    timed: Option<(f64, f64, f64)>,
    tolerance: Option<f64>,
    skip_gaps: bool,
}

/// The Rust builder for `VideoDataset`'s arguments.
fn configure(
    files: Files,
    cut: Cut,
    index_cache: Option<PathBuf>,
    bad_files: &str,
    gop_cache_bytes: Option<usize>,
) -> PyResult<VideoDatasetBuilder> {
    let mut b = VideoDatasetBuilder::default();
    if let Some(v) = files.videos {
        b = b.videos(&v);
    }
    if let Some(d) = files.directory {
        b = b.directory(d);
    }
    if let Some(s) = files.scenes {
        b = b.scenes(s);
    }
    b = match cut.timed {
        Some((seconds, fps, stride)) => b.timed(seconds, fps, stride),
        None => b
            .frames(cut.frames, cut.stride.unwrap_or(cut.frames))
            .step(cut.step),
    };
    if let Some(t) = cut.tolerance {
        b = b.tolerance(t);
    }
    if cut.skip_gaps {
        b = b.gaps(gm_episodes::GapPolicy::Skip);
    }
    if let Some(dir) = index_cache {
        b = b.index_cache(dir);
    }
    b = b.bad_files(match bad_files {
        "skip" => BadFiles::Skip,
        "fail" => BadFiles::Fail,
        other => {
            return Err(PyValueError::new_err(format!(
                "bad_files={other:?}: \"skip\" or \"fail\""
            )));
        }
    });
    if let Some(bytes) = gop_cache_bytes {
        b = b.gop_cache(bytes);
    }
    Ok(b)
}

/// Batches of clips from a `VideoDataset`, decoded on the GPU by a pool of NVDEC sessions
/// and transformed (the same draws for every frame of a clip) by the fused kernel.
///
/// Iterating yields `ClipBatch`es whose `frames` are `[B, T, C, H, W]` (`[B, cameras, T, C,
/// H, W]` for scenes) on the GPU. Videos NVDEC cannot take are decoded on the host by
/// `cpu_decoders` threads (default: the process's share of the node's cores) beside the
/// `sessions` NVDEC sessions. With `device="cpu"`, or where there is no GPU, the same
/// batches come from those CPU decoders and the kernels' CPU twins, in host memory. `set_epoch`, `state_dict` and `load_state_dict` work
/// as for `ImageLoader`. Chroma of 4:2:0 and 4:2:2 video is interpolated at the stream's
/// chroma location as ffmpeg's swscale does (RGB within one step of ffmpeg's);
/// `replicate_chroma=True` repeats each chroma sample instead (faster, not ffmpeg's).
/// `jobs_in_flight` bounds the decoding jobs out at once (see the Rust builder's default);
/// batches and their order do not depend on it, memory does. `sessions` defaults to 7, or
/// one per CPU decoder (at least 7) where the dataset also decodes on the CPU; the sessions
/// then run under Linux's SCHED_BATCH so that they do not preempt the CPU decoders
/// (`nvdec_batch_scheduling` sets that either way).
#[pyclass(module = "gm")]
pub struct ClipLoader {
    inner: Arc<Mutex<Inner<RustClipLoader>>>,
    batches: usize,
}

/// One epoch of a `ClipLoader`.
#[pyclass(module = "gm")]
pub struct ClipIterator {
    inner: Arc<Mutex<Inner<RustClipLoader>>>,
    generation: u64,
}

/// A batch of clips: `frames`, the dataset `episodes`, each clip's `sources` (per camera,
/// video path and frame indices), the `epoch` and the batch's `position`.
#[pyclass(module = "gm", frozen)]
pub struct ClipBatch {
    /// The frames.
    #[pyo3(get)]
    frames: Py<Tensor>,
    /// Dataset episode of each clip.
    #[pyo3(get)]
    episodes: Vec<usize>,
    /// Per clip, per camera: (video path, frame indices).
    #[pyo3(get)]
    sources: Vec<Vec<(String, Vec<usize>)>>,
    /// The epoch.
    #[pyo3(get)]
    epoch: u64,
    /// Position of the batch in its epoch.
    #[pyo3(get)]
    position: usize,
}

#[pymethods]
impl ClipBatch {
    fn __len__(&self) -> usize {
        self.episodes.len()
    }
}

#[pymethods]
impl ClipLoader {
    #[new]
    #[pyo3(signature = (
        dataset, batch_size=8, transforms=None, *, shuffle=false, seed=0, device=None,
        rank=None, world_size=None, drop_last=false, bad_samples="skip", sessions=None,
        prefetch_next_epoch=true, decoder="auto", replicate_chroma=false, cpu_decoders=None,
        jobs_in_flight=None, nvdec_batch_scheduling=None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        dataset: &VideoDataset,
        batch_size: usize,
        transforms: Option<&Bound<'_, PyAny>>,
        shuffle: bool,
        seed: u64,
        device: Option<&Bound<'_, PyAny>>,
        rank: Option<usize>,
        world_size: Option<usize>,
        drop_last: bool,
        bad_samples: &str,
        sessions: Option<usize>,
        prefetch_next_epoch: bool,
        decoder: &str,
        replicate_chroma: bool,
        cpu_decoders: Option<usize>,
        jobs_in_flight: Option<usize>,
        nvdec_batch_scheduling: Option<bool>,
    ) -> PyResult<ClipLoader> {
        let decoder: gm_codec::DecoderChoice = decoder
            .parse()
            .map_err(|e: gm_codec::DecoderChoiceError| PyValueError::new_err(e.to_string()))?;
        crate::logging::sync_level(py)?;
        let (chain, erasing) = plan_steps_erasing(py, transforms)?;
        let sampler = sampler_for(py, shuffle, seed, rank, world_size, drop_last)?;
        let gpu = device::resolve(py, &device::parse(device)?)?;
        let policy: BadSamplePolicy = policy_named(bad_samples)?;
        let b = RustClipLoader::builder(dataset.take(py)?);
        let b = match &gpu {
            Some(gpu) => b.device(gpu),
            None => b.cpu(),
        };
        // Sessions left unset take the Rust default: 7, or one per CPU decoder (at least 7)
        // where the dataset also decodes on the CPU.
        let b = match sessions {
            Some(n) => b.sessions(n),
            None => b,
        };
        let b = match nvdec_batch_scheduling {
            Some(on) => b.nvdec_batch_scheduling(on),
            None => b,
        };
        let b = match cpu_decoders {
            Some(n) => b.cpu_decoders(n),
            None => b,
        };
        let b = match jobs_in_flight {
            Some(n) => b.jobs_in_flight(n),
            None => b,
        };
        let b = b
            .decoder(decoder)
            .replicate_chroma(replicate_chroma)
            .transforms(chain)
            .sampler(sampler)
            .batch_size(batch_size)
            .drop_last(drop_last)
            .seed(seed)
            .bad_samples(policy);
        let b = match erasing {
            Some(e) => b.random_erasing(e),
            None => b,
        };
        let loader = py.detach(|| b.build());
        crate::logging::flush(py);
        let loader = loader.map_err(|e| loader_error(py, e))?;
        let batches = loader.batches_per_epoch();
        Ok(ClipLoader {
            inner: Arc::new(Mutex::new(Inner::new(loader, None, prefetch_next_epoch))),
            batches,
        })
    }

    /// Batches per epoch (for this rank).
    fn __len__(&self) -> usize {
        self.batches
    }

    /// Where the loader runs, in words: `CPU (...)` with the reason; on a GPU empty, or how
    /// its threads are placed (`threads on` a NUMA node, `NVDEC threads under SCHED_BATCH`).
    #[getter]
    fn placement(&self) -> String {
        self.inner.lock().loader.placement().to_string()
    }

    /// The decoder threads: (NVDEC sessions, CPU decoders).
    #[getter]
    fn decoder_threads(&self) -> (usize, usize) {
        self.inner.lock().loader.decoder_threads()
    }

    /// Starts an epoch (see `ImageLoader.__iter__`).
    fn __iter__(&self, py: Python<'_>) -> PyResult<ClipIterator> {
        let inner = self.inner.clone();
        let generation = py
            .detach(|| inner.lock().start())
            .map_err(|e| loader_error(py, e))?;
        Ok(ClipIterator {
            inner: self.inner.clone(),
            generation,
        })
    }

    /// The epoch the next iteration runs.
    fn set_epoch(&self, epoch: u64) {
        self.inner.lock().set_epoch(epoch);
    }

    /// Where the loader stands (see `ImageLoader.state_dict`).
    fn state_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.inner.lock().state_dict(py)
    }

    /// Resumes from a `state_dict` at the next iteration.
    fn load_state_dict(&self, state: &Bound<'_, PyDict>) -> PyResult<()> {
        self.inner.lock().load_state_dict(state)
    }

    /// Counters: batches, clips, frames, packets decoded, bad clips, decode and wait times.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.inner.lock().loader.stats();
        let d = PyDict::new(py);
        d.set_item("batches", s.batches)?;
        d.set_item("clips", s.clips)?;
        d.set_item("frames", s.frames)?;
        d.set_item("packets_decoded", s.packets_decoded)?;
        d.set_item("bad_clips", s.bad_clips)?;
        d.set_item("substituted", s.substituted)?;
        d.set_item("skipped", s.skipped)?;
        d.set_item("decode_us", s.decode_us)?;
        d.set_item("wait_us", s.wait_us)?;
        // Videos NVDEC cannot decode go to libavcodec on the sessions' threads.
        d.set_item("cpu_videos", self.inner.lock().loader.cpu_videos())?;
        d.set_item("cpu_frames_decoded", s.cpu_frames_decoded)?;
        d.set_item("cpu_parts", s.cpu_parts)?;
        d.set_item("cpu_parts_dropped", s.cpu_parts_dropped)?;
        d.set_item("nvdec_parts", s.nvdec_parts)?;
        d.set_item("nvdec_parts_dropped", s.nvdec_parts_dropped)?;
        d.set_item("parked_jobs", s.parked_jobs)?;
        d.set_item("cpu_runs", s.cpu_runs)?;
        d.set_item("cpu_decode_us", s.cpu_decode_us)?;
        let bad: Vec<(String, usize, String)> = s
            .first_bad
            .iter()
            .map(|e| (e.name.clone(), e.index, e.reason.to_string()))
            .collect();
        d.set_item("first_errors", bad)?;
        Ok(d)
    }

    /// Stops the running iteration and joins its threads.
    fn close(&self, py: Python<'_>) {
        let inner = self.inner.clone();
        py.detach(|| inner.lock().close());
        crate::logging::flush(py);
    }
}

#[pymethods]
impl ClipIterator {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<ClipBatch> {
        let Some(b) = next_batch(py, &self.inner, self.generation)? else {
            return Err(PyStopIteration::new_err(()));
        };
        let sources = {
            let g = self.inner.lock();
            let d = g.loader.dataset();
            b.sources
                .iter()
                .map(|cams| {
                    cams.iter()
                        .map(|(v, f)| (d.path(*v).display().to_string(), f.clone()))
                        .collect()
                })
                .collect()
        };
        let (episodes, epoch, position) = (b.episodes.clone(), b.epoch, b.position);
        let mut b = b;
        let on_device = match &mut b.frames {
            Images::Device(t) => Ok(t.clone()),
            Images::Host(h) => Err((h.shape.clone(), h.dtype, std::mem::take(&mut h.data))),
        };
        let tensor = match on_device {
            // The tensor stays in the batch: its release is ordered before the memory's.
            Ok(mut frames) => {
                if let Some(e) = b.ready_event() {
                    frames.set_ready_event(e.clone());
                }
                Tensor::from_device(&frames, Arc::new(Owner::Clips(Mutex::new(b))))
            }
            Err((shape, dtype, data)) => Tensor::host(&shape, Elem::of(dtype), data)?,
        };
        Ok(ClipBatch {
            frames: Py::new(py, tensor)?,
            episodes,
            sources,
            epoch,
            position,
        })
    }

    /// Batches left in this epoch.
    fn __len__(&self) -> usize {
        self.inner.lock().remaining(self.generation)
    }
}

impl Drop for ClipIterator {
    fn drop(&mut self) {
        self.inner.lock().abandon(self.generation);
    }
}
