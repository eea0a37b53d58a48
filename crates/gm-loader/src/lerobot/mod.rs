//! LeRobot v3 datasets (`meta/info.json`, episode and data tables in parquet, every camera's
//! episodes concatenated into MP4 files with per-episode `from_timestamp`) as a
//! [`VideoDataset`] whose clips are LeRobot's samples: sample `i` is row `i` of the data, and
//! its frames per camera are the ones LeRobot's `__getitem__` decodes for it
//! (`delta_timestamps` rounded to frames, clamped to the episode with a padding mask, the
//! data's timestamps shifted by the episode's `from_timestamp`, torchcodec's frame choice and
//! tolerance check). The [`ClipLoader`](crate::ClipLoader) then decodes them on NVDEC or, for
//! AV1 on GPUs without it, on the CPU.

mod error;
mod info;
mod query;
mod tables;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use error::LeRobotError;
pub use info::LeRobotInfo;

use crate::error::LoaderError;
use crate::video::{BadFiles, VideoDataset};
use gm_episodes::Timeline;
use tables::{Columns, read_columns};

/// LeRobot's default `tolerance_s`.
pub const DEFAULT_TOLERANCE_S: f64 = 1e-4;

/// Settings of a [`LeRobotDataset`].
#[derive(Debug, Clone)]
pub struct LeRobotDatasetBuilder {
    root: PathBuf,
    delta_timestamps: BTreeMap<String, Vec<f64>>,
    tolerance_s: f64,
    index_cache: Option<PathBuf>,
}

impl LeRobotDatasetBuilder {
    /// LeRobot's `delta_timestamps` for camera `key` (seconds relative to each sample; every
    /// camera given must have as many, since a clip stacks the cameras). Cameras without give
    /// the sample's own frame.
    pub fn delta_timestamps(mut self, key: impl Into<String>, deltas: Vec<f64>) -> Self {
        self.delta_timestamps.insert(key.into(), deltas);
        self
    }

    /// LeRobot's `tolerance_s` (default 1e-4 s): how far a decoded frame may lie from its query
    /// time, and how far a delta may be from a whole number of frames.
    pub fn tolerance_s(mut self, seconds: f64) -> Self {
        self.tolerance_s = seconds;
        self
    }

    /// Keeps the videos' indexes in `dir` (see `VideoDatasetBuilder::index_cache`).
    pub fn index_cache(mut self, dir: impl Into<PathBuf>) -> Self {
        self.index_cache = Some(dir.into());
        self
    }

    /// Reads the tables, indexes the videos (no decoding) and works out every sample's frames;
    /// a frame beyond the tolerance is an error naming the sample, camera, file and times, as
    /// LeRobot's decoding assertion (but at open, for the whole dataset).
    pub fn open(self) -> Result<LeRobotDataset, LoaderError> {
        open(self)
    }
}

/// One sample of a LeRobot dataset: what LeRobot's `__getitem__` reads besides the pixels.
#[derive(Debug, Clone, PartialEq)]
pub struct LeRobotSample {
    /// `index` (the data row).
    pub index: usize,
    /// `episode_index`.
    pub episode_index: usize,
    /// `frame_index` within the episode.
    pub frame_index: usize,
    /// `timestamp` within the episode, seconds.
    pub timestamp: f64,
    /// Per camera: the query times within the episode (the data's timestamps at the clamped
    /// rows).
    pub query_timestamps: Vec<Vec<f64>>,
    /// Per camera: LeRobot's `{key}_is_pad` (the offset fell outside the episode).
    pub is_pad: Vec<Vec<bool>>,
}

/// A LeRobot v3 dataset: its samples and the [`VideoDataset`] of their frames.
pub struct LeRobotDataset {
    info: LeRobotInfo,
    samples: Vec<LeRobotSample>,
    videos: VideoDataset,
}

impl LeRobotDataset {
    /// Settings for the dataset at `root` (a local LeRobot v3 dataset folder).
    pub fn builder(root: impl Into<PathBuf>) -> LeRobotDatasetBuilder {
        LeRobotDatasetBuilder {
            root: root.into(),
            delta_timestamps: BTreeMap::new(),
            tolerance_s: DEFAULT_TOLERANCE_S,
            index_cache: None,
        }
    }

    /// `meta/info.json`.
    pub fn info(&self) -> &LeRobotInfo {
        &self.info
    }

    /// The cameras, in the order of the clips' cameras.
    pub fn cameras(&self) -> &[String] {
        &self.info.video_keys
    }

    /// Samples (data rows).
    pub fn len(&self) -> usize {
        self.samples.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    /// Sample `i`.
    pub fn sample(&self, i: usize) -> Option<&LeRobotSample> {
        self.samples.get(i)
    }

    /// The frames of every sample as clips (clip `i` is sample `i`; `[cameras][T]`).
    pub fn videos(&self) -> &VideoDataset {
        &self.videos
    }

    /// The clips, for a [`ClipLoader`](crate::ClipLoader) (whose batches' `episodes` are the
    /// sample indices).
    pub fn into_videos(self) -> VideoDataset {
        self.videos
    }
}

/// What the episodes table says of one episode.
struct Episode {
    from: usize,
    to: usize,
    /// Per camera: (video file, `from_timestamp`).
    videos: Vec<(PathBuf, f64)>,
}

fn tables_under(dir: &Path) -> Result<Vec<PathBuf>, LeRobotError> {
    let io = |path: &Path, source| LeRobotError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut out = Vec::new();
    let mut chunks: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| io(dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    chunks.sort();
    for chunk in chunks {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&chunk)
            .map_err(|e| io(&chunk, e))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "parquet"))
            .collect();
        files.sort();
        out.extend(files);
    }
    if out.is_empty() {
        return Err(LeRobotError::Inconsistent(format!(
            "{}: no parquet tables",
            dir.display()
        )));
    }
    Ok(out)
}

fn read_all(dir: &Path, wanted: &[&str]) -> Result<Columns, LeRobotError> {
    let mut all = Columns::default();
    for t in tables_under(dir)? {
        all.extend(read_columns(&t, wanted)?);
    }
    Ok(all)
}

fn episodes(root: &Path, info: &LeRobotInfo) -> Result<Vec<Episode>, LeRobotError> {
    let mut wanted: Vec<String> = ["episode_index", "dataset_from_index", "dataset_to_index"]
        .map(String::from)
        .to_vec();
    for k in &info.video_keys {
        for c in ["chunk_index", "file_index", "from_timestamp"] {
            wanted.push(format!("videos/{k}/{c}"));
        }
    }
    let names: Vec<&str> = wanted.iter().map(String::as_str).collect();
    let t = read_all(&root.join("meta/episodes"), &names)?;
    let mut out = Vec::with_capacity(t.rows);
    for row in 0..t.rows {
        if t.get("episode_index")[row] as usize != row {
            return Err(LeRobotError::Inconsistent(format!(
                "meta/episodes: row {row} holds episode {}",
                t.get("episode_index")[row]
            )));
        }
        let mut videos = Vec::new();
        for k in &info.video_keys {
            let col = |c: &str| t.get(&format!("videos/{k}/{c}"))[row];
            let path = LeRobotInfo::fill(
                root,
                &info.video_path,
                k,
                col("chunk_index") as usize,
                col("file_index") as usize,
            )?;
            videos.push((path, col("from_timestamp")));
        }
        out.push(Episode {
            from: t.get("dataset_from_index")[row] as usize,
            to: t.get("dataset_to_index")[row] as usize,
            videos,
        });
    }
    Ok(out)
}

/// Frame count over duration: what torchcodec reports as `average_fps` for an MP4.
fn average_fps(index: &gm_demux::VideoIndex) -> f64 {
    let ticks: u64 = index.packets.iter().map(|p| u64::from(p.duration)).sum();
    let seconds = ticks as f64 / f64::from(index.timescale.max(1));
    if seconds > 0.0 {
        index.frame_count() as f64 / seconds
    } else {
        0.0
    }
}

fn open(b: LeRobotDatasetBuilder) -> Result<LeRobotDataset, LoaderError> {
    let root = b.root.as_path();
    let info = LeRobotInfo::read(root)?;
    if info.video_keys.is_empty() {
        return Err(
            LeRobotError::Inconsistent(format!("{}: no video features", root.display())).into(),
        );
    }
    for (k, d) in &b.delta_timestamps {
        if !info.video_keys.contains(k) {
            return Err(LeRobotError::Inconsistent(format!(
                "delta_timestamps names {k:?}, not a camera of {} ({:?})",
                root.display(),
                info.video_keys
            ))
            .into());
        }
        query::check_deltas(k, d, info.fps, b.tolerance_s)?;
    }
    let episodes = episodes(root, &info)?;
    let data = read_all(
        &root.join("data"),
        &["index", "episode_index", "frame_index", "timestamp"],
    )?;
    let (samples, scenes, videos) = plan_samples(&b, &info, &episodes, &data)?;
    let videos = videos.with_explicit_scenes(scenes, info.video_keys.len() > 1)?;
    Ok(LeRobotDataset {
        info,
        samples,
        videos,
    })
}

type Scenes = Vec<crate::video::ExplicitScene>;

/// Every sample's rows, times and frames; the videos indexed; the clips grouped into scenes
/// of consecutive samples that read the same files.
fn plan_samples(
    b: &LeRobotDatasetBuilder,
    info: &LeRobotInfo,
    episodes: &[Episode],
    data: &Columns,
) -> Result<(Vec<LeRobotSample>, Scenes, VideoDataset), LoaderError> {
    let mut files: Vec<PathBuf> = Vec::new();
    for e in episodes {
        for (p, _) in &e.videos {
            if !files.contains(p) {
                files.push(p.clone());
            }
        }
    }
    let mut builder = VideoDataset::builder()
        .videos(&files)
        .frames(1, 1)
        .bad_files(BadFiles::Fail)
        .autorotate(true);
    if let Some(dir) = &b.index_cache {
        builder = builder.index_cache(dir);
    }
    let videos = builder.open()?;
    let timelines: Vec<(Timeline, f64)> = (0..files.len())
        .map(|v| {
            let index = videos.video_index(v);
            // A container without sample durations: the dataset's rate.
            let fps = Some(average_fps(index))
                .filter(|f| *f > 0.0)
                .unwrap_or(info.fps);
            (Timeline::from_index(index), fps)
        })
        .collect();
    let deltas: Vec<Vec<i64>> = info
        .video_keys
        .iter()
        .map(|k| match b.delta_timestamps.get(k) {
            Some(d) => query::delta_indices(d, info.fps),
            None => vec![0],
        })
        .collect();
    if deltas.iter().any(|d| d.len() != deltas[0].len()) {
        return Err(LeRobotError::Inconsistent(format!(
            "the clip loader stacks cameras: give every camera as many delta timestamps ({:?})",
            b.delta_timestamps
        ))
        .into());
    }
    let ts = data.get("timestamp");
    let mut samples = Vec::with_capacity(data.rows);
    let mut scenes: Scenes = Vec::new();
    for row in 0..data.rows {
        if data.get("index")[row] as usize != row {
            return Err(LeRobotError::Inconsistent(format!(
                "data: row {row} holds index {}",
                data.get("index")[row]
            ))
            .into());
        }
        let ep_index = data.get("episode_index")[row] as usize;
        let ep = episodes.get(ep_index).ok_or_else(|| {
            LeRobotError::Inconsistent(format!(
                "data row {row}: episode {ep_index} is not in meta/episodes"
            ))
        })?;
        if !(ep.from..ep.to).contains(&row) || ep.to > data.rows {
            return Err(LeRobotError::Inconsistent(format!(
                "data row {row} of episode {ep_index} lies outside its rows {}..{}",
                ep.from, ep.to
            ))
            .into());
        }
        let mut sample = LeRobotSample {
            index: row,
            episode_index: ep_index,
            frame_index: data.get("frame_index")[row] as usize,
            // The column is float32: its value, as LeRobot's `.item()` widens it.
            timestamp: f64::from(ts[row] as f32),
            query_timestamps: Vec::new(),
            is_pad: Vec::new(),
        };
        let mut clip = Vec::with_capacity(info.video_keys.len());
        let mut ids = Vec::with_capacity(info.video_keys.len());
        for (c, key) in info.video_keys.iter().enumerate() {
            let (rows, pad) = query::query_rows(row, ep.from, ep.to, &deltas[c]);
            let times: Vec<f64> = rows.iter().map(|&r| f64::from(ts[r] as f32)).collect();
            let (path, from) = &ep.videos[c];
            let v = files.iter().position(|f| f == path).unwrap_or(0);
            let shifted: Vec<f64> = times.iter().map(|t| from + t).collect();
            let (timeline, fps) = &timelines[v];
            let frames = query::choose_frames(&shifted, timeline, *fps, b.tolerance_s).map_err(
                |(query, frame, found, distance)| LeRobotError::Tolerance {
                    sample: row,
                    episode: ep_index,
                    key: key.clone(),
                    video: path.clone(),
                    query,
                    frame,
                    found,
                    distance,
                    tolerance_s: b.tolerance_s,
                },
            )?;
            clip.push(frames);
            ids.push(v);
            sample.query_timestamps.push(times);
            sample.is_pad.push(pad);
        }
        match scenes.last_mut() {
            Some((last, clips)) if *last == ids => clips.push(clip),
            _ => scenes.push((ids, vec![clip])),
        }
        samples.push(sample);
    }
    Ok((samples, scenes, videos))
}
