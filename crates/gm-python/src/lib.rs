//! The Python package `gm`: Gradient Mechanics' loaders and decoders for PyTorch users.
//!
//! The extension module `gm._gm` holds the classes; `python/gm` adds the transforms (in
//! torchvision's names and arguments) and the type stubs. Tensors leave through DLPack
//! without a copy, with the consumer's stream ordered after the data and the memory's
//! release ordered after the consumer's reads.

mod apply;
mod clips;
mod coco;
mod decode;
mod device;
mod errors;
mod image_loader;
mod iteration;
mod lerobot;
mod logging;
mod owner;
mod progress;
mod segmentation;
mod stats;
mod storage;
mod targets;
mod tensor;
mod torch_import;
mod transforms;
mod video;

use pyo3::prelude::*;

/// Whether a CUDA driver and at least one GPU are present.
#[pyfunction]
fn cuda_available() -> bool {
    gm_cuda::available().is_ok_and(|n| n > 0)
}

/// Number of CUDA devices (0 without a driver).
#[pyfunction]
fn device_count() -> usize {
    gm_cuda::available().unwrap_or(0)
}

/// Hands log records queued by gm's threads to Python's `logging` now (each batch does it).
#[pyfunction]
fn flush_logs(py: Python<'_>) -> PyResult<()> {
    logging::sync_level(py)?;
    logging::flush(py);
    Ok(())
}

#[pymodule]
fn _gm(m: &Bound<'_, PyModule>) -> PyResult<()> {
    logging::init(m.py())?;
    errors::register(m)?;
    m.add_class::<tensor::Tensor>()?;
    m.add_class::<image_loader::ImageLoader>()?;
    m.add_class::<image_loader::BatchIterator>()?;
    m.add_class::<image_loader::Batch>()?;
    m.add_class::<coco::CocoDataset>()?;
    m.add_class::<segmentation::SegmentationFolder>()?;
    m.add_class::<clips::VideoDataset>()?;
    m.add_class::<clips::ClipLoader>()?;
    m.add_class::<clips::ClipIterator>()?;
    m.add_class::<clips::ClipBatch>()?;
    m.add_class::<video::VideoDecoder>()?;
    m.add_class::<video::FrameBatch>()?;
    m.add_class::<lerobot::LeRobotIndex>()?;
    m.add_function(wrap_pyfunction!(decode::decode_images, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_available, m)?)?;
    m.add_function(wrap_pyfunction!(device_count, m)?)?;
    m.add_function(wrap_pyfunction!(flush_logs, m)?)?;
    m.add_function(wrap_pyfunction!(iteration::merge_states, m)?)?;
    m.add_function(wrap_pyfunction!(apply::apply_transforms, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
