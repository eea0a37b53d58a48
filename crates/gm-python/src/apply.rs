//! `gm.transforms.Compose(...)(images)`: a chain run on images the caller holds, in GPU memory
//! (any DLPack producer: PyTorch, CuPy, DALI, torchcodec) or in host memory, each image with
//! its own draws. `gm/transforms.py` brings the images to interleaved RGB (HWC) and back.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use dlpark::ffi::DLDevice;
use dlpark::python::consumer::{DlpackStream, ImportedDlpack, StreamArg, from_dlpack};
use gm_cuda::{Device, DevicePool, Event, PoolConfig, Stream, sys};
use gm_transforms::apply::{ApplyError, DeviceChain, Planned, apply_host, plan_batch};
use gm_transforms::cpu::HostImage;
use gm_transforms::{Compose, RandomErasing, SourceImage};
use parking_lot::Mutex;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::errors::cuda_error;
use crate::owner::{Fenced, Owner};
use crate::tensor::{Elem, Tensor};

/// One device's kernels and stream, loaded at the first call on it and kept. Only the kernels
/// are locked, and never across a call into Python (a producer's `__dlpack__` may let another
/// thread in, which would then wait for the lock holding the GIL).
struct Runner {
    device: Device,
    stream: Stream,
    chain: Mutex<DeviceChain>,
}

type Runners = Mutex<HashMap<usize, Arc<Runner>>>;

fn runner(ordinal: usize) -> PyResult<Arc<Runner>> {
    static RUNNERS: OnceLock<Runners> = OnceLock::new();
    let mut all = RUNNERS.get_or_init(Default::default).lock();
    if let Some(r) = all.get(&ordinal) {
        return Ok(r.clone());
    }
    let device = crate::device::open(ordinal)?;
    let stream = Stream::new(&device).map_err(cuda_error)?;
    let pool = DevicePool::new(&device, PoolConfig::unbounded("gm.transforms outputs"));
    let chain = DeviceChain::new(&device, pool).map_err(cuda_error)?;
    let r = Arc::new(Runner {
        device,
        stream,
        chain: Mutex::new(chain),
    });
    all.insert(ordinal, r.clone());
    Ok(r)
}

/// Our stream, as a DLPack consumer: the producer orders its writes before it.
struct Consumer<'a>(&'a Stream);

// SAFETY: the handle is our live stream of the producer's device (checked before import),
// and it outlives the import.
unsafe impl DlpackStream for Consumer<'_> {
    fn as_python_arg(&self, _py: Python<'_>, _device: DLDevice) -> PyResult<StreamArg> {
        Ok(dlpark::python::consumer::stream::cuda(self.0.raw().cast()))
    }

    unsafe fn wait_for_producer(
        &self,
        _device: DLDevice,
        producer: *mut std::ffi::c_void,
    ) -> PyResult<bool> {
        // SAFETY: the importer passes the producer's live stream of this device.
        let theirs = unsafe { Stream::from_raw(self.0.device(), producer as sys::CUstream) };
        let ready = Event::new(self.0.device()).map_err(cuda_error)?;
        ready.record(&theirs).map_err(cuda_error)?;
        self.0.wait(&ready).map_err(cuda_error)?;
        Ok(true)
    }
}

/// Runs `transforms` (a gm chain) on `images`, image `i` drawn from `(seed, epoch,
/// indices[i])`. On GPU `device`: each image is a DLPack tensor on it, uint8 `[H, W, 3]`
/// with rows of any pitch; on the host (`device=None`): each is `(bytes, height, width)` of
/// packed RGB. Returns one `[B, C, H, W]` (or HWC) tensor on the same device (`single`: its
/// one image).
#[pyfunction]
#[pyo3(signature = (transforms, images, *, seed, epoch, indices, device, single=false))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn apply_transforms(
    py: Python<'_>,
    transforms: &Bound<'_, PyAny>,
    images: Vec<Bound<'_, PyAny>>,
    seed: u64,
    epoch: u64,
    indices: Vec<u64>,
    device: Option<usize>,
    single: bool,
) -> PyResult<Tensor> {
    if images.is_empty() || images.len() != indices.len() {
        return Err(PyValueError::new_err(format!(
            "{} images and {} indices: give one index per image, at least one image",
            images.len(),
            indices.len()
        )));
    }
    let (chain, erasing) = crate::image_loader::plan_steps_erasing(py, Some(transforms))?;
    let out = match device {
        None => on_host(&chain, erasing.as_ref(), &images, (seed, epoch), &indices),
        Some(ordinal) => {
            let chain = (&chain, erasing.as_ref());
            on_device(py, ordinal, chain, &images, (seed, epoch), &indices)
        }
    }?;
    Ok(if single { out.first() } else { out })
}

fn apply_error(e: ApplyError) -> PyErr {
    match e {
        ApplyError::Cuda(e) => cuda_error(e),
        other => PyValueError::new_err(other.to_string()),
    }
}

fn on_host(
    chain: &Compose,
    erasing: Option<&RandomErasing>,
    images: &[Bound<'_, PyAny>],
    draws: (u64, u64),
    indices: &[u64],
) -> PyResult<Tensor> {
    let mut pixels = Vec::with_capacity(images.len());
    for (i, img) in images.iter().enumerate() {
        let (bytes, h, w): (Bound<'_, PyBytes>, u32, u32) = img.extract()?;
        if bytes.as_bytes().len() != h as usize * w as usize * 3 {
            return Err(PyValueError::new_err(format!(
                "image {i}: {} bytes for {h} x {w} RGB",
                bytes.as_bytes().len()
            )));
        }
        pixels.push((bytes, w, h));
    }
    let sizes: Vec<(u32, u32)> = pixels.iter().map(|&(_, w, h)| (w, h)).collect();
    let planned = plan_batch(chain, erasing, &sizes, draws, indices).map_err(apply_error)?;
    let spec = planned[0].spec;
    let each = spec.image_bytes();
    let mut out = vec![0u8; each * planned.len()];
    for ((bytes, w, h), (p, dst)) in pixels.iter().zip(planned.iter().zip(out.chunks_mut(each))) {
        apply_host(&HostImage::rgb8(bytes.as_bytes(), *w, *h), p, dst);
    }
    Tensor::host(&shape(planned.len(), &planned), Elem::of(spec.dtype), out)
}

fn shape(n: usize, planned: &[Planned]) -> Vec<usize> {
    let spec = planned[0].spec;
    let (h, w, c) = (spec.height as usize, spec.width as usize, spec.channels());
    match spec.layout {
        gm_transforms::Layout::Chw => vec![n, c, h, w],
        gm_transforms::Layout::Hwc => vec![n, h, w, c],
    }
}

fn on_device(
    py: Python<'_>,
    ordinal: usize,
    (chain, erasing): (&Compose, Option<&RandomErasing>),
    images: &[Bound<'_, PyAny>],
    draws: (u64, u64),
    indices: &[u64],
) -> PyResult<Tensor> {
    let runner = runner(ordinal)?;
    let (device, stream) = (&runner.device, &runner.stream);
    // The imports hold the producers' memory (their DLPack deleters) until the launch is
    // queued; the caller's output consumption orders the producers' later reuse after it.
    let mut imports = Vec::with_capacity(images.len());
    let mut sources = Vec::with_capacity(images.len());
    for (i, img) in images.iter().enumerate() {
        let t = import(img, device, stream).map_err(|e| at_image(py, i, e))?;
        sources.push(source_of(&t).map_err(|e| at_image(py, i, e))?);
        imports.push(t);
    }
    let sizes: Vec<(u32, u32)> = sources.iter().map(|s| (s.width, s.height)).collect();
    let planned = plan_batch(chain, erasing, &sizes, draws, indices).map_err(apply_error)?;
    let mut out = runner
        .chain
        .lock()
        .run(stream, &sources, &planned)
        .map_err(apply_error)?;
    let ready = Arc::new(Event::new(device).map_err(cuda_error)?);
    ready.record(stream).map_err(cuda_error)?;
    out.set_ready_event(ready);
    drop(imports);
    let owner = Arc::new(Owner::Fenced(Fenced::new(out.clone(), stream.clone())));
    Ok(Tensor::from_device(&out, owner))
}

fn at_image(py: Python<'_>, i: usize, e: PyErr) -> PyErr {
    let msg = format!("image {i}: {}", e.value(py));
    if e.is_instance_of::<PyTypeError>(py) {
        PyTypeError::new_err(msg)
    } else {
        PyValueError::new_err(msg)
    }
}

/// `img` (a DLPack producer on `device`) as a gm tensor, its writes ordered before `stream`.
fn import(img: &Bound<'_, PyAny>, device: &Device, stream: &Stream) -> PyResult<gm_cuda::Tensor> {
    if img.hasattr("__dlpack__")? {
        let imported = from_dlpack(img.as_borrowed(), Some(&Consumer(stream)), None)?;
        let t = match imported {
            ImportedDlpack::Legacy(m) => gm_cuda::Tensor::from_dlpack(m, device, None),
            ImportedDlpack::Versioned(m) => gm_cuda::Tensor::from_dlpack(m, device, None),
        };
        return t.map_err(|e| PyValueError::new_err(e.to_string()));
    }
    Err(PyTypeError::new_err(format!(
        "a {} is not a DLPack tensor (give a CUDA tensor: torch, CuPy, JAX, gm.Tensor)",
        img.get_type().name()?
    )))
}

/// A uint8 `[H, W, 3]` tensor whose pixels are packed within each row, as a kernel source.
fn source_of(t: &gm_cuda::Tensor) -> PyResult<SourceImage> {
    let (shape, strides) = (t.shape(), t.strides());
    if t.dtype() != gm_cuda::DType::U8 || shape.len() != 3 || shape[2] != 3 {
        return Err(PyValueError::new_err(format!(
            "a {:?} tensor of shape {shape:?}: images are uint8 [H, W, 3] here \
             (gm.transforms brings [3, H, W] to that)",
            t.dtype()
        )));
    }
    if strides[2] != 1 || strides[1] != 3 || strides[0] < 3 * shape[1] as isize {
        return Err(PyValueError::new_err(format!(
            "strides {strides:?}: each row's pixels must be packed RGB (call .contiguous())"
        )));
    }
    let (h, w) = (shape[0] as u32, shape[1] as u32);
    let mut src = SourceImage::rgb8(t.data_ptr(), w, h);
    src.pitch = strides[0] as usize;
    Ok(src)
}
