//! The package's exceptions, and how the Rust errors become them: each names the file (or
//! input), the sample and the reason.

use gm_loader::{LoaderError, SampleError};
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;

pyo3::create_exception!(
    gm,
    GmError,
    PyException,
    "Base class of the errors gm raises."
);
pyo3::create_exception!(
    gm,
    BadSampleError,
    GmError,
    "A sample that could not be loaded under bad_samples=\"fail\", or an input of \
     decode_images; `.name` (file or input), `.index` and `.reason` say which and why."
);
pyo3::create_exception!(
    gm,
    NoGpuError,
    GmError,
    "A GPU feature was asked for where no CUDA driver or device is present."
);
pyo3::create_exception!(
    gm,
    CudaError,
    GmError,
    "The GPU (driver, NVDEC, nvJPEG) failed; not a problem of one input."
);

/// `LoaderError` as the Python exception that fits it.
pub(crate) fn loader_error(py: Python<'_>, e: LoaderError) -> PyErr {
    match e {
        LoaderError::BadSample(s) | LoaderError::BadVideo(s) | LoaderError::Plan(s) => {
            bad_sample(py, &s)
        }
        LoaderError::Config(_) | LoaderError::Resume(_) => PyValueError::new_err(e.to_string()),
        LoaderError::Cuda(c) => cuda_error(c),
        other => GmError::new_err(other.to_string()),
    }
}

/// A bad sample, with its name, index and reason as attributes.
pub(crate) fn bad_sample(py: Python<'_>, s: &SampleError) -> PyErr {
    sample_error(py, &s.name, Some(s.index), &s.reason.to_string())
}

/// A `BadSampleError` naming `name` (file or input), `index` and `reason`.
pub(crate) fn sample_error(
    py: Python<'_>,
    name: &str,
    index: Option<usize>,
    reason: &str,
) -> PyErr {
    let msg = match index {
        Some(i) => format!("{name} (sample {i}): {reason}"),
        None => format!("{name}: {reason}"),
    };
    let err = BadSampleError::new_err(msg);
    let value = err.value(py);
    // Attributes for programs; failing to set them leaves the message, which says it all.
    let _ = value.setattr("name", name);
    let _ = value.setattr("index", index);
    let _ = value.setattr("reason", reason);
    err
}

/// A CUDA error: `NoGpuError` when the driver or the device is missing.
pub(crate) fn cuda_error(e: gm_cuda::CudaError) -> PyErr {
    if e.is_unavailable() {
        NoGpuError::new_err(format!(
            "no usable GPU: {e} (gm loads libcuda.so.1 from the NVIDIA driver at run time; \
             use device=\"cpu\" for the CPU path)"
        ))
    } else {
        CudaError::new_err(e.to_string())
    }
}

/// Registers the exception classes on the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("GmError", py.get_type::<GmError>())?;
    m.add("BadSampleError", py.get_type::<BadSampleError>())?;
    m.add("NoGpuError", py.get_type::<NoGpuError>())?;
    m.add("CudaError", py.get_type::<CudaError>())?;
    Ok(())
}
