//! Masks the caller gives in GPU memory (`Transform.__call__` with `masks` on CUDA): imported
//! through DLPack on our stream and moved in the launch that writes their image, or, where a
//! warp has no per-axis taps, read back and moved on the host as byte masks are.

use std::sync::Arc;

use gm_cuda::{DType, Device, Stream};
use gm_transforms::SourceImage;
use gm_transforms::apply::{ApplyError, DeviceChain, DeviceMasks, MovedMasks, Planned};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::{Batch, apply_error, at_image, byte_masks, import};
use crate::errors::cuda_error;
use crate::owner::{Fenced, Owner};
use crate::tensor::Tensor;

/// The device masks of a call, imported: each image's (`None`: given as bytes, or none) and
/// the tensors holding the caller's memory until the launch is queued.
pub(super) struct Imported {
    pub(super) masks: Vec<Option<DeviceMasks>>,
    held: Vec<(usize, gm_cuda::Tensor)>,
}

/// Imports `batch`'s device masks; `None` where the call has none.
pub(super) fn import_all(
    py: Python<'_>,
    batch: &Batch<'_, '_>,
    device: &Device,
    stream: &Stream,
) -> PyResult<Option<Imported>> {
    if batch.device_masks.iter().all(Option::is_none) {
        return Ok(None);
    }
    let mut masks = Vec::with_capacity(batch.device_masks.len());
    let mut held = Vec::new();
    for (i, m) in batch.device_masks.iter().enumerate() {
        let Some(obj) = m else {
            masks.push(None);
            continue;
        };
        let t = import(obj, device, stream).map_err(|e| at_image(py, i, e))?;
        masks.push(Some(planes_of(&t).map_err(|e| at_image(py, i, e))?));
        held.push((i, t));
    }
    Ok(Some(Imported { masks, held }))
}

/// A packed uint8 `[N, H, W]` tensor as mask planes.
fn planes_of(t: &gm_cuda::Tensor) -> PyResult<DeviceMasks> {
    let (shape, strides) = (t.shape(), t.strides());
    let packed = match shape {
        [n, h, w] => *n <= 1 || strides[0] == (h * w) as isize,
        _ => false,
    };
    let rows = shape.len() == 3 && (shape[1] <= 1 || strides[1] == shape[2] as isize);
    let columns = shape.len() == 3 && (shape[2] <= 1 || strides[2] == 1);
    if t.dtype() != DType::U8 || !(packed && rows && columns) {
        return Err(PyValueError::new_err(format!(
            "masks: a {:?} tensor of shape {shape:?}, strides {strides:?}: packed uint8 [N, H, W]",
            t.dtype()
        )));
    }
    Ok(DeviceMasks {
        data: t.data_ptr(),
        planes: shape[0] as u32,
        width: shape[2] as u32,
        height: shape[1] as u32,
    })
}

/// Runs the chain with the masks moved in the launch; `None` where a warp refuses that,
/// after reading the masks back into `batch`'s targets (the caller runs the chain without
/// them, and the masks are moved on the host then).
pub(super) fn run(
    chain: &mut DeviceChain,
    batch: &mut Batch<'_, '_>,
    stream: &Stream,
    (sources, planned): (&[SourceImage], &[Planned]),
    imported: &Imported,
) -> PyResult<Option<(gm_cuda::Tensor, MovedMasks)>> {
    match chain.run_masked(stream, sources, planned, &imported.masks) {
        Ok(done) => Ok(Some(done)),
        Err(ApplyError::WarpedMasks { .. }) => {
            for (i, t) in &imported.held {
                let bytes = t.to_host_bytes(stream).map_err(cuda_error)?;
                let (h, w) = (t.shape()[1] as u32, t.shape()[2] as u32);
                if let Some(target) = batch.targets.as_mut().and_then(|t| t.get_mut(*i)) {
                    target.masks = byte_masks(&bytes, t.shape()[0], w, h);
                }
            }
            Ok(None)
        }
        Err(e) => Err(apply_error(e)),
    }
}

/// Image `i`'s moved planes (all of them, the dropped objects' included) as a `[N, h, w]`
/// view of the launch's mask buffer, `None` for images without device masks.
pub(super) fn views(
    moved: MovedMasks,
    device_masks: &[Option<DeviceMasks>],
    planned: &[Planned],
    stream: &Stream,
    ready: &Arc<gm_cuda::Event>,
) -> PyResult<Vec<Option<Tensor>>> {
    let MovedMasks { mut data, offsets } = moved;
    data.set_ready_event(ready.clone());
    let owner = Arc::new(Owner::Fenced(Fenced::new(data.clone(), stream.clone())));
    let all = Tensor::from_device(&data, owner);
    device_masks
        .iter()
        .zip(planned)
        .zip(offsets)
        .map(|((m, p), offset)| {
            let Some(m) = m else { return Ok(None) };
            let shape = [
                m.planes as usize,
                p.spec.height as usize,
                p.spec.width as usize,
            ];
            all.part(offset, &shape)
                .map(Some)
                .ok_or_else(|| PyValueError::new_err(format!("masks past the buffer ({offset})")))
        })
        .collect()
}
