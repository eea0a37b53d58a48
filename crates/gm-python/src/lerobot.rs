//! `gm._LeRobotIndex`: a LeRobot v3 dataset's samples (the frames, padding and timestamps
//! LeRobot's `__getitem__` would read), for `gm.LeRobotDataset` (python/gm/lerobot.py) and,
//! as a `VideoDataset` of one clip per sample, for `gm.ClipLoader`.

use std::collections::HashMap;
use std::path::PathBuf;

use gm_loader::{LeRobotDataset, LeRobotDatasetBuilder};
use pyo3::exceptions::PyIndexError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::clips::{Reopen, VideoDataset};
use crate::errors::loader_error;

/// The samples of a LeRobot v3 dataset (see `gm.LeRobotDataset`).
#[pyclass(module = "gm", name = "_LeRobotIndex")]
pub struct LeRobotIndex {
    builder: LeRobotDatasetBuilder,
    dataset: LeRobotDataset,
}

#[pymethods]
impl LeRobotIndex {
    #[new]
    #[pyo3(signature = (root, *, delta_timestamps=None, tolerance_s=1e-4, index_cache=None))]
    fn new(
        py: Python<'_>,
        root: PathBuf,
        delta_timestamps: Option<HashMap<String, Vec<f64>>>,
        tolerance_s: f64,
        index_cache: Option<PathBuf>,
    ) -> PyResult<LeRobotIndex> {
        let mut b = LeRobotDataset::builder(root).tolerance_s(tolerance_s);
        for (k, d) in delta_timestamps.unwrap_or_default() {
            b = b.delta_timestamps(k, d);
        }
        if let Some(dir) = index_cache {
            b = b.index_cache(dir);
        }
        let builder = b.clone();
        let opened = py.detach(|| b.open());
        crate::logging::flush(py);
        let dataset = opened.map_err(|e| loader_error(py, e))?;
        Ok(LeRobotIndex { builder, dataset })
    }

    fn __len__(&self) -> usize {
        self.dataset.len()
    }

    /// The cameras (video features), in info.json's order.
    #[getter]
    fn cameras(&self) -> Vec<String> {
        self.dataset.cameras().to_vec()
    }

    /// Frames per second.
    #[getter]
    fn fps(&self) -> f64 {
        self.dataset.info().fps
    }

    /// Sample `i`: index, episode_index, frame_index, timestamp; per camera its video path and
    /// frame indices (`frames`), query timestamps and `{camera}_is_pad`.
    fn sample<'py>(&self, py: Python<'py>, i: usize) -> PyResult<Bound<'py, PyDict>> {
        let s = self.dataset.sample(i).ok_or_else(|| {
            PyIndexError::new_err(format!("sample {i} of {}", self.dataset.len()))
        })?;
        let videos = self.dataset.videos();
        let clip = videos
            .clip(i)
            .ok_or_else(|| PyIndexError::new_err(format!("sample {i}: no clip")))?;
        let d = PyDict::new(py);
        d.set_item("index", s.index)?;
        d.set_item("episode_index", s.episode_index)?;
        d.set_item("frame_index", s.frame_index)?;
        d.set_item("timestamp", s.timestamp)?;
        let frames = PyDict::new(py);
        let times = PyDict::new(py);
        for (c, key) in self.dataset.cameras().iter().enumerate() {
            let (v, f) = &clip.cameras[c];
            frames.set_item(key, (videos.path(*v).display().to_string(), f.clone()))?;
            times.set_item(key, s.query_timestamps[c].clone())?;
            d.set_item(format!("{key}_is_pad"), s.is_pad[c].clone())?;
        }
        d.set_item("frames", frames)?;
        d.set_item("query_timestamps", times)?;
        Ok(d)
    }

    /// The samples as a `VideoDataset` (clip `i` is sample `i`; `[cameras, T]` frames) for
    /// `gm.ClipLoader`, whose batches' `episodes` are the sample indices.
    fn clips(&self, py: Python<'_>) -> PyResult<VideoDataset> {
        let b = self.builder.clone();
        let opened = py.detach(|| b.clone().open());
        let d = opened.map_err(|e| loader_error(py, e))?;
        Ok(VideoDataset::summarize(Reopen::LeRobot(b), d.into_videos()))
    }
}
