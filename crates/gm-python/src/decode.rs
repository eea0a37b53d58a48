//! `gm.decode_images`: one-off decoding of encoded images (JPEG on the GPU's engines, nvJPEG's
//! CUDA backend and the CPU; PNG, BMP, WebP and TIFF on the CPU), like torchvision's
//! `decode_jpeg` on a list.

use std::sync::{Arc, OnceLock};

use gm_codec::jpeg::{DecoderOptions, EncodedImage, ImageDecoder, Truncated, decode_host_with};
use gm_cuda::Device;
use parking_lot::Mutex;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::device;
use crate::errors::{cuda_error, sample_error};
use crate::logging;
use crate::owner::{Fenced, Owner};
use crate::tensor::{Elem, Tensor};

/// One decoder per GPU, created at the first call (creating one costs far more than a
/// small batch's decode).
/// Decoders by (GPU ordinal, apply orientation, truncated-JPEG policy).
type Decoders = Mutex<Vec<((usize, bool, Truncated), ImageDecoder)>>;

fn decoders() -> &'static Decoders {
    static D: OnceLock<Decoders> = OnceLock::new();
    D.get_or_init(|| Mutex::new(Vec::new()))
}

/// Per input: the tensor, or (name, reason).
type Decoded = Vec<Result<Tensor, (String, String)>>;

fn decode_gpu(
    device: &Device,
    names: &[String],
    data: &[&[u8]],
    (orientation, truncated): (bool, Truncated),
) -> PyResult<Decoded> {
    let mut all = decoders().lock();
    let key = (device.ordinal(), orientation, truncated);
    let slot = match all.iter().position(|(k, _)| *k == key) {
        Some(i) => i,
        None => {
            let options = DecoderOptions {
                apply_orientation: orientation,
                truncated,
                ..DecoderOptions::default()
            };
            let d = ImageDecoder::new(device, options)
                .map_err(|e| crate::errors::GmError::new_err(e.to_string()))?;
            all.push((key, d));
            all.len() - 1
        }
    };
    let inputs: Vec<EncodedImage<'_>> = names
        .iter()
        .zip(data)
        .map(|(name, data)| EncodedImage { name, data })
        .collect();
    let batch = all[slot]
        .1
        .decode(&inputs)
        .map_err(|e| crate::errors::GmError::new_err(e.to_string()))?;
    let (tensors, stream) = batch.into_tensors().map_err(cuda_error)?;
    Ok(tensors
        .into_iter()
        .map(|r| match r {
            Ok(t) => {
                let owner = Arc::new(Owner::Fenced(Fenced::new(t.clone(), stream.clone())));
                Ok(Tensor::from_device(&t, owner))
            }
            Err(e) => Err((e.input, e.kind.to_string())),
        })
        .collect())
}

fn decode_cpu(
    names: &[String],
    data: &[&[u8]],
    (orientation, truncated): (bool, Truncated),
) -> PyResult<Decoded> {
    let options = DecoderOptions {
        apply_orientation: orientation,
        truncated,
        ..DecoderOptions::default()
    };
    let mut out = Vec::with_capacity(data.len());
    for (name, d) in names.iter().zip(data) {
        out.push(match decode_host_with(d, &options) {
            Ok(img) => {
                let shape = [img.height as usize, img.width as usize, 3];
                Ok(Tensor::host(&shape, Elem::of(gm_cuda::DType::U8), img.rgb)?)
            }
            Err(kind) => Err((name.clone(), kind.to_string())),
        });
    }
    Ok(out)
}

/// Decodes encoded images to `uint8` tensors of shape `[H, W, 3]` (RGB), on the GPU (the
/// default when there is one) or the CPU. `names` label the inputs in errors (default
/// "input N"). With `errors="raise"` the first bad input raises `BadSampleError`; with
/// `errors="return"` its place in the list holds the `BadSampleError` instead. A JPEG cut
/// before its end is refused (`truncated="refuse"`, as PIL) or decoded as libjpeg-turbo
/// does, the missing rows grey (`truncated="decode"`).
#[pyfunction]
#[pyo3(signature = (
    data, *, device=None, names=None, errors="raise", apply_orientation=true, truncated="refuse"
))]
pub(crate) fn decode_images(
    py: Python<'_>,
    data: Vec<Bound<'_, PyBytes>>,
    device: Option<&Bound<'_, PyAny>>,
    names: Option<Vec<String>>,
    errors: &str,
    apply_orientation: bool,
    truncated: &str,
) -> PyResult<Vec<Py<PyAny>>> {
    let truncated = parse_truncated(truncated)?;
    let raise = match errors {
        "raise" => true,
        "return" => false,
        other => {
            return Err(PyValueError::new_err(format!(
                "errors={other:?}: \"raise\" or \"return\""
            )));
        }
    };
    let names = names.unwrap_or_else(|| (0..data.len()).map(|i| format!("input {i}")).collect());
    if names.len() != data.len() {
        return Err(PyValueError::new_err(format!(
            "{} names for {} inputs",
            names.len(),
            data.len()
        )));
    }
    let gpu = device::resolve(py, &device::parse(device)?)?;
    let bytes: Vec<&[u8]> = data.iter().map(|b| b.as_bytes()).collect();
    let decoded = py.detach(|| match &gpu {
        Some(d) => decode_gpu(d, &names, &bytes, (apply_orientation, truncated)),
        None => decode_cpu(&names, &bytes, (apply_orientation, truncated)),
    });
    logging::flush(py);
    let mut out = Vec::with_capacity(data.len());
    for (i, r) in decoded?.into_iter().enumerate() {
        match r {
            Ok(t) => out.push(Py::new(py, t)?.into_any()),
            Err((name, reason)) => {
                let err = sample_error(py, &name, Some(i), &reason);
                if raise {
                    return Err(err);
                }
                out.push(err.into_value(py).into_any());
            }
        }
    }
    Ok(out)
}

/// `truncated="refuse"` or `"decode"`, as a ValueError otherwise.
pub(crate) fn parse_truncated(value: &str) -> PyResult<Truncated> {
    value
        .parse()
        .map_err(|e: gm_codec::jpeg::ParseOptionError| {
            PyValueError::new_err(format!("truncated={value:?}: {e}"))
        })
}
