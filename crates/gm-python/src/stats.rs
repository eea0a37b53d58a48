//! Loader counters as Python dicts.

use gm_loader::Stats;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// `Stats` as a dict: counts, microseconds per stage, images/s, the share of time waited and
/// the first bad samples (name, index, reason).
pub(crate) fn stats_dict<'py>(py: Python<'py>, s: &Stats) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("batches", s.batches)?;
    d.set_item("samples", s.samples)?;
    d.set_item("bad", s.bad)?;
    d.set_item("skipped", s.skipped)?;
    d.set_item("substituted", s.substituted)?;
    d.set_item("read_us", s.read_us)?;
    d.set_item("decode_us", s.decode_us)?;
    d.set_item("decode_plan_us", s.decode_plan_us)?;
    d.set_item("decode_hardware_us", s.decode_hardware_us)?;
    d.set_item("decode_cuda_us", s.decode_cuda_us)?;
    d.set_item("transform_us", s.transform_us)?;
    d.set_item("mask_prepare_us", s.mask_prepare_us)?;
    d.set_item("mask_upload_us", s.mask_upload_us)?;
    d.set_item("targets_us", s.targets_us)?;
    d.set_item("masks_from_spans", s.masks_from_spans)?;
    d.set_item("wait_us", s.wait_us)?;
    d.set_item("wall_us", s.wall_us)?;
    d.set_item("images_per_second", s.images_per_second())?;
    d.set_item("wait_fraction", s.wait_fraction())?;
    let paths = PyDict::new(py);
    paths.set_item("hardware", s.paths.hardware)?;
    paths.set_item("cuda", s.paths.cuda)?;
    paths.set_item("cpu", s.paths.cpu)?;
    d.set_item("decode_paths", paths)?;
    let errors: Vec<(String, usize, String)> = s
        .first_errors
        .iter()
        .map(|e| (e.name.clone(), e.index, e.reason.to_string()))
        .collect();
    d.set_item("first_errors", errors)?;
    Ok(d)
}
