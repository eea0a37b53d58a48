//! `gm.transforms.Compose(...)(images)`: a chain run on images the caller holds, in GPU memory
//! (any DLPack producer: PyTorch, CuPy, DALI, torchcodec) or in host memory, each image with
//! its own draws. `gm/_apply.py` views the images as `[H, W, 3]` (planes or interleaved) and
//! brings the output back.

mod masks;

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use dlpark::ffi::DLDevice;
use dlpark::python::consumer::{DlpackStream, ImportedDlpack, StreamArg, from_dlpack};
use gm_cuda::{Device, DevicePool, Event, PoolConfig, Stream, sys};
use gm_transforms::apply::{
    ApplyError, DeviceChain, MovedTargets, Planned, Targets, apply_host, check_ragged,
    move_targets, plan_batch, ragged_slots,
};
use gm_transforms::cpu::HostImage;
use gm_transforms::targets::{BoundingBoxes, BoxFormat, KeyPoints, Mask};
use gm_transforms::{Compose, RandomErasing, SourceImage};
use parking_lot::Mutex;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};

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

/// One image's targets as `gm/_apply.py` hands them over: `(boxes, masks, keypoints)`, each
/// `None` or `(rows, format)`, `(objects, height, width, bytes or a CUDA uint8 [N, H, W]
/// DLPack tensor)`, `(points, visible, per object)`.
type TargetArgs<'py> = (
    Option<(Vec<[f32; 4]>, String)>,
    Option<(usize, u32, u32, Bound<'py, PyAny>)>,
    Option<KeyPointArgs>,
);

/// Keypoints as `gm/_apply.py` hands them over: points, visibility, points per object.
type KeyPointArgs = (Vec<[f32; 2]>, Vec<bool>, usize);

/// What a call on the GPU gives back: the output, the targets moved (the masks among them
/// where they were given as bytes) and each image's masks moved in the launch.
type DeviceOutput = (
    Output,
    Option<Vec<MovedTargets>>,
    Option<Vec<Option<Tensor>>>,
);

/// Runs `transforms` (a gm chain) on `images`, image `i` drawn from `(seed, epoch,
/// indices[i])`. On GPU `device`: each item is a DLPack tensor on it, uint8 `[H, W, 3]` or a
/// `[B, H, W, 3]` batch, channels-last or a view of planes, rows of any pitch; on the host (`device=None`): each is `(bytes, height, width)` of
/// packed RGB. Returns one `[B, C, H, W]` (or HWC) tensor on the same device (`single`: its
/// one image); with `targets` (one per image), `(tensor, moved)`, each image's targets moved
/// with it as a dict of `kept`, `canvas` and the moved `boxes`, `masks`, `keypoints`.
#[pyfunction]
#[pyo3(signature = (transforms, images, *, seed, epoch, indices, device, single=false, targets=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn apply_transforms<'py>(
    py: Python<'py>,
    transforms: &Bound<'py, PyAny>,
    images: Vec<Bound<'py, PyAny>>,
    seed: u64,
    epoch: u64,
    indices: Vec<u64>,
    device: Option<usize>,
    single: bool,
    targets: Option<Vec<TargetArgs<'py>>>,
) -> PyResult<Bound<'py, PyAny>> {
    if images.is_empty() {
        return Err(PyValueError::new_err("no images: give at least one"));
    }
    let (chain, erasing) = crate::image_loader::plan_steps_erasing(py, Some(transforms))?;
    let mut batch = Batch {
        chain: &chain,
        erasing: erasing.as_ref(),
        draws: (seed, epoch),
        indices: &indices,
        targets: targets.as_ref().map(|t| parse_targets(t)).transpose()?,
        device_masks: targets.map(device_mask_args).unwrap_or_default(),
    };
    let (out, moved, mask_views) = match device {
        None => {
            let (out, moved) = on_host(&mut batch, &images)?;
            (out, moved, None)
        }
        Some(ordinal) => on_device(py, ordinal, &mut batch, &images)?,
    };
    let out = out.into_py(py, single)?;
    match moved {
        None => Ok(out),
        Some(moved) => {
            let mut views = mask_views.unwrap_or_default().into_iter();
            let dicts = moved
                .iter()
                .map(|m| moved_dict(py, m, views.next().flatten()))
                .collect::<PyResult<Vec<_>>>()?;
            Ok(PyTuple::new(py, [out, dicts.into_pyobject(py)?.into_any()])?.into_any())
        }
    }
}

/// What one call runs: the chain, each image's draws and, if given, targets.
struct Batch<'a, 'py> {
    chain: &'a Compose,
    erasing: Option<&'a RandomErasing>,
    draws: (u64, u64),
    indices: &'a [u64],
    targets: Option<Vec<Targets>>,
    /// Image `i`'s masks where the caller gave them in GPU memory: moved in the launch.
    device_masks: Vec<Option<Bound<'py, PyAny>>>,
}

impl Batch<'_, '_> {
    /// Plans images of `sizes` (width, height), their boxes given to steps that draw from them
    /// (and put on their image's canvas).
    fn plan(&mut self, sizes: &[(u32, u32)]) -> PyResult<Vec<Planned>> {
        if sizes.len() != self.indices.len() {
            return Err(PyValueError::new_err(format!(
                "{} images and {} indices: give one index per image",
                sizes.len(),
                self.indices.len()
            )));
        }
        for (t, &size) in self.targets.iter_mut().flatten().zip(sizes) {
            if let Some(b) = &mut t.boxes {
                b.canvas = size;
            }
            if let Some(k) = &mut t.keypoints {
                k.canvas = size;
            }
        }
        let boxes: Vec<Option<&BoundingBoxes>> = match &self.targets {
            Some(t) => t.iter().map(|t| t.boxes.as_ref()).collect(),
            None => Vec::new(),
        };
        if !boxes.is_empty() && boxes.len() != sizes.len() {
            return Err(PyValueError::new_err(format!(
                "{} images and {} targets: give one target dict per image",
                sizes.len(),
                boxes.len()
            )));
        }
        plan_batch(
            self.chain,
            self.erasing,
            sizes,
            self.draws,
            self.indices,
            &boxes,
        )
        .map_err(apply_error)
    }

    /// Each image's targets moved through its plan's geometry.
    fn moved(&self, planned: &[Planned]) -> PyResult<Option<Vec<MovedTargets>>> {
        let Some(targets) = &self.targets else {
            return Ok(None);
        };
        planned
            .iter()
            .zip(targets)
            .enumerate()
            .map(|(index, (p, t))| {
                move_targets(&p.post.geometry, t)
                    .map_err(|source| apply_error(ApplyError::Targets { index, source }))
            })
            .collect::<PyResult<Vec<_>>>()
            .map(Some)
    }
}

fn parse_targets(args: &[TargetArgs<'_>]) -> PyResult<Vec<Targets>> {
    args.iter()
        .enumerate()
        .map(|(i, a)| parse_target(i, a))
        .collect()
}

/// Target `i` as `gm/_apply.py` hands it over; a bad one is a `ValueError` naming it.
fn parse_target(i: usize, (boxes, masks, keypoints): &TargetArgs<'_>) -> PyResult<Targets> {
    let bad = |why: String| PyValueError::new_err(format!("target {i}: {why}"));
    let mut t = Targets::default();
    if let Some((rows, format)) = boxes {
        let format = match format.as_str() {
            "XYXY" => BoxFormat::Xyxy,
            "XYWH" => BoxFormat::Xywh,
            "CXCYWH" => BoxFormat::Cxcywh,
            other => return Err(bad(format!("box format {other:?}: XYXY, XYWH or CXCYWH"))),
        };
        let b = BoundingBoxes::new(format, (0, 0), rows.clone());
        t.boxes = Some(b.map_err(|e| bad(e.to_string()))?);
    }
    if let Some((n, h, w, payload)) = masks {
        let Ok(bytes) = payload.cast::<PyBytes>() else {
            // In GPU memory: checked at import, moved in the launch (`Batch::device_masks`);
            // their count is checked here against the boxes' and keypoints', as
            // `move_targets` checks byte masks'.
            let t = with_keypoints(t, keypoints, &bad)?;
            if t.boxes.is_some() || t.keypoints.is_some() {
                let c = t.objects().map_err(|e| bad(e.to_string()))?;
                if c != *n {
                    return Err(bad(format!("the counts differ: {n} masks, {c} objects")));
                }
            }
            return Ok(t);
        };
        let bytes = bytes.as_bytes();
        if bytes.len() != n * (*h as usize * *w as usize) {
            return Err(bad(format!(
                "{} mask bytes for {n} masks of {w}x{h}",
                bytes.len()
            )));
        }
        t.masks = byte_masks(bytes, *n, *w, *h);
    }
    with_keypoints(t, keypoints, &bad)
}

/// `n` packed `w` x `h` byte planes as masks.
pub(super) fn byte_masks(bytes: &[u8], n: usize, w: u32, h: u32) -> Vec<Mask> {
    let plane = (h as usize * w as usize).max(1);
    bytes
        .chunks(plane)
        .take(n)
        .map(|d| Mask {
            width: w,
            height: h,
            data: d.to_vec(),
        })
        .collect()
}

fn with_keypoints(
    mut t: Targets,
    keypoints: &Option<KeyPointArgs>,
    bad: &impl Fn(String) -> PyErr,
) -> PyResult<Targets> {
    if let Some((points, visible, per)) = keypoints {
        let k = KeyPoints::new((0, 0), points.clone(), visible.clone());
        t.keypoints = Some(k.map_err(|e| bad(e.to_string()))?);
        t.keypoints_per_object = *per;
    }
    Ok(t)
}

/// Each image's masks given in GPU memory (not as bytes).
fn device_mask_args(args: Vec<TargetArgs<'_>>) -> Vec<Option<Bound<'_, PyAny>>> {
    args.into_iter()
        .map(|(_, masks, _)| {
            masks
                .map(|m| m.3)
                .filter(|p| !p.is_instance_of::<PyBytes>())
        })
        .collect()
}

/// `m` as `gm/_apply.py` rebuilds it; `device_masks`: the image's masks moved in the launch
/// (every given plane, `kept` saying which stay), in place of `masks`' bytes.
fn moved_dict<'py>(
    py: Python<'py>,
    m: &MovedTargets,
    device_masks: Option<Tensor>,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    if let Some(t) = device_masks {
        d.set_item("device_masks", Bound::new(py, t)?)?;
    }
    d.set_item("kept", &m.kept)?;
    d.set_item("canvas", m.canvas)?;
    if let Some(b) = &m.boxes {
        d.set_item("boxes", &b.boxes)?;
    }
    // Read only where the caller gave masks.
    let bytes: Vec<u8> = m
        .masks
        .iter()
        .flat_map(|x| x.data.iter().copied())
        .collect();
    d.set_item("masks", (m.masks.len(), PyBytes::new(py, &bytes)))?;
    if let Some(k) = &m.keypoints {
        d.set_item("keypoints", (&k.points, &k.visible))?;
    }
    Ok(d)
}

fn apply_error(e: ApplyError) -> PyErr {
    match e {
        ApplyError::Cuda(e) => cuda_error(e),
        other => PyValueError::new_err(other.to_string()),
    }
}

/// A call's output: one batch, or images of many sizes one after the other in one buffer
/// (each image's start in elements, and its shape).
enum Output {
    Batch(Tensor),
    Ragged(Tensor, Vec<(usize, Vec<usize>)>),
}

impl Output {
    /// `planned`'s images in `tensor`: a batch where they stack, else one after the other.
    fn of(tensor: Tensor, planned: &[Planned]) -> Output {
        if Planned::stacks(planned) {
            return Output::Batch(tensor);
        }
        let (_, offsets) = ragged_slots(planned);
        let parts = offsets
            .into_iter()
            .zip(planned)
            .map(|(o, p)| (o, image_shape(&p.spec)))
            .collect();
        Output::Ragged(tensor, parts)
    }

    /// As Python gets it: the batch (its one image where `single`), or a list of images.
    fn into_py<'py>(self, py: Python<'py>, single: bool) -> PyResult<Bound<'py, PyAny>> {
        match self {
            Output::Batch(t) => Ok(Bound::new(py, if single { t.first() } else { t })?.into_any()),
            Output::Ragged(t, parts) => {
                let mut views = Vec::with_capacity(parts.len());
                for (offset, shape) in parts {
                    let view = t.part(offset, &shape).ok_or_else(|| {
                        PyValueError::new_err(format!("an image past the output's end ({offset})"))
                    })?;
                    views.push(Bound::new(py, view)?);
                }
                Ok(views.into_pyobject(py)?.into_any())
            }
        }
    }
}

/// `[C, H, W]` or `[H, W, C]`, as `spec` lays an image out.
fn image_shape(spec: &gm_transforms::OutputSpec) -> Vec<usize> {
    let (h, w, c) = (spec.height as usize, spec.width as usize, spec.channels());
    match spec.layout {
        gm_transforms::Layout::Chw => vec![c, h, w],
        gm_transforms::Layout::Hwc => vec![h, w, c],
    }
}

fn on_host(
    batch: &mut Batch<'_, '_>,
    images: &[Bound<'_, PyAny>],
) -> PyResult<(Output, Option<Vec<MovedTargets>>)> {
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
    let planned = batch.plan(&sizes)?;
    let stacks = Planned::stacks(&planned);
    if !stacks {
        check_ragged(&planned).map_err(apply_error)?;
    }
    let total: usize = planned.iter().map(|p| p.spec.image_bytes()).sum();
    let mut out = vec![0u8; total];
    let mut rest = out.as_mut_slice();
    for ((bytes, w, h), p) in pixels.iter().zip(&planned) {
        let (dst, tail) = rest.split_at_mut(p.spec.image_bytes());
        apply_host(&HostImage::rgb8(bytes.as_bytes(), *w, *h), p, dst);
        rest = tail;
    }
    let moved = batch.moved(&planned)?;
    let spec = planned[0].spec;
    let shape = if stacks {
        [vec![planned.len()], image_shape(&spec)].concat()
    } else {
        vec![total / spec.dtype.size()]
    };
    let t = Tensor::host(&shape, Elem::of(spec.dtype), out)?;
    Ok((Output::of(t, &planned), moved))
}

fn on_device(
    py: Python<'_>,
    ordinal: usize,
    batch: &mut Batch<'_, '_>,
    images: &[Bound<'_, PyAny>],
) -> PyResult<DeviceOutput> {
    let runner = runner(ordinal)?;
    let (device, stream) = (&runner.device, &runner.stream);
    // The imports hold the producers' memory (their DLPack deleters) until the launch is
    // queued; the caller's output consumption orders the producers' later reuse after it.
    let mut imports = Vec::with_capacity(images.len());
    let mut sources = Vec::with_capacity(images.len());
    for (i, img) in images.iter().enumerate() {
        let t = import(img, device, stream).map_err(|e| at_image(py, i, e))?;
        sources.extend(sources_of(&t).map_err(|e| at_image(py, i, e))?);
        imports.push(t);
    }
    let sizes: Vec<(u32, u32)> = sources.iter().map(|s| (s.width, s.height)).collect();
    let planned = batch.plan(&sizes)?;
    let device_masks = masks::import_all(py, batch, device, stream)?;
    let (mut out, moved_masks) = {
        let mut kernels = runner.chain.lock();
        let masked = match &device_masks {
            Some(m) => masks::run(&mut kernels, batch, stream, (&sources, &planned), m)?,
            None => None,
        };
        match masked {
            Some((out, moved)) => (out, Some(moved)),
            None => {
                let out = if Planned::stacks(&planned) {
                    kernels.run(stream, &sources, &planned)
                } else {
                    kernels.run_ragged(stream, &sources, &planned)
                };
                (out.map_err(apply_error)?, None)
            }
        }
    };
    let ready = Arc::new(Event::new(device).map_err(cuda_error)?);
    ready.record(stream).map_err(cuda_error)?;
    out.set_ready_event(ready.clone());
    drop(imports);
    let mask_views = match (moved_masks, &device_masks) {
        (Some(moved), Some(m)) => Some(masks::views(moved, &m.masks, &planned, stream, &ready)?),
        _ => None,
    };
    drop(device_masks);
    let moved = batch.moved(&planned)?;
    let owner = Arc::new(Owner::Fenced(Fenced::new(out.clone(), stream.clone())));
    Ok((
        Output::of(Tensor::from_device(&out, owner), &planned),
        moved,
        mask_views,
    ))
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

/// A uint8 `[H, W, 3]` tensor, or a `[B, H, W, 3]` batch of them (one import for the whole
/// batch), as kernel sources.
fn sources_of(t: &gm_cuda::Tensor) -> PyResult<Vec<SourceImage>> {
    let (shape, strides) = (t.shape(), t.strides());
    let refuse = || {
        PyValueError::new_err(format!(
            "a {:?} tensor of shape {shape:?}: images are uint8 [H, W, 3] or [B, H, W, 3] here \
             (gm.transforms brings [3, H, W] to that)",
            t.dtype()
        ))
    };
    if t.dtype() != gm_cuda::DType::U8 || shape.last() != Some(&3) {
        return Err(refuse());
    }
    let ptr = t.data_ptr().0;
    match (shape, strides) {
        ([h, w, _], [sh, sw, sc]) => Ok(vec![source_of(ptr, (*h, *w), [*sh, *sw, *sc])?]),
        ([b, h, w, _], [sb, sh, sw, sc]) if *sb >= 0 => (0..*b)
            .map(|i| source_of(ptr + (i * *sb as usize) as u64, (*h, *w), [*sh, *sw, *sc]))
            .collect(),
        _ => Err(refuse()),
    }
}

/// The image of `size` (H, W) at `ptr` with byte strides (row, column, channel): channels-last
/// (each row's pixels packed RGB) or planes (each plane's rows packed), read where it lies.
fn source_of(ptr: u64, (h, w): (usize, usize), strides: [isize; 3]) -> PyResult<SourceImage> {
    let [row, column, channel] = strides;
    let data = gm_cuda::DevicePtr(ptr);
    if column == 3 && channel == 1 && row >= 3 * w as isize {
        let mut src = SourceImage::rgb8(data, w as u32, h as u32);
        src.pitch = row as usize;
        return Ok(src);
    }
    if column == 1 && row >= w as isize && channel >= 0 {
        return Ok(SourceImage::rgb8_planar(
            data,
            channel as usize,
            row as usize,
            w as u32,
            h as u32,
        ));
    }
    Err(PyValueError::new_err(format!(
        "strides {strides:?}: each row's pixels must be packed, as RGB triples or as planes \
         (call .contiguous())"
    )))
}
