//! `device=` arguments: "cpu", "cuda", "cuda:N", a `torch.device`, or None (the GPU of this
//! rank if there is one, else the CPU).

use gm_cuda::Device;
use gm_loader::DistEnv;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::errors::{cuda_error, loader_error};

/// Where work runs.
#[derive(Debug, Clone)]
pub(crate) enum Placement {
    /// The CPU path, asked for.
    Cpu,
    /// A GPU, asked for (an error if there is none).
    Gpu(usize),
    /// The GPU of this rank (`LOCAL_RANK`) if there is one, else the CPU.
    Auto,
}

/// Reads a `device=` argument.
pub(crate) fn parse(device: Option<&Bound<'_, PyAny>>) -> PyResult<Placement> {
    let Some(d) = device else {
        return Ok(Placement::Auto);
    };
    if d.is_none() {
        return Ok(Placement::Auto);
    }
    // A `torch.device` prints as "cuda:0" or "cpu"; an int is an ordinal, as in torch.
    if let Ok(i) = d.extract::<usize>() {
        return Ok(Placement::Gpu(i));
    }
    let s = d.str()?.to_string();
    match s.as_str() {
        "cpu" => Ok(Placement::Cpu),
        "cuda" => Ok(Placement::Gpu(local_rank(d.py())?)),
        other => match other.strip_prefix("cuda:").map(str::parse::<usize>) {
            Some(Ok(i)) => Ok(Placement::Gpu(i)),
            _ => Err(PyValueError::new_err(format!(
                "device {other:?}: expected \"cpu\", \"cuda\", \"cuda:N\" or None"
            ))),
        },
    }
}

/// `LOCAL_RANK` under torchrun, else 0.
fn local_rank(py: Python<'_>) -> PyResult<usize> {
    Ok(DistEnv::from_env()
        .map_err(|e| loader_error(py, e))?
        .map_or(0, |e| e.local_rank))
}

/// Opens GPU `ordinal`, or says clearly why not.
pub(crate) fn open(ordinal: usize) -> PyResult<Device> {
    Device::new(ordinal).map_err(cuda_error)
}

/// The device for `placement`: `None` for the CPU path.
pub(crate) fn resolve(py: Python<'_>, placement: &Placement) -> PyResult<Option<Device>> {
    match placement {
        Placement::Cpu => Ok(None),
        Placement::Gpu(i) => open(*i).map(Some),
        Placement::Auto => match gm_cuda::available() {
            Ok(_) => open(local_rank(py)?).map(Some),
            Err(e) => {
                tracing::info!(reason = %e, "no GPU: running on the CPU");
                Ok(None)
            }
        },
    }
}
