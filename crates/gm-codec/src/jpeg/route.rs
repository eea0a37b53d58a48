//! Which decoder takes an image, decided from its header before decoding.

use super::header::{Coding, JpegInfo, Subsampling};

/// A JPEG decoding path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Backend {
    /// nvJPEG's hardware backend (the NVJPG engines of A100, H100, H200).
    Hardware,
    /// nvJPEG's CUDA backend.
    Cuda,
    /// zune-jpeg on the CPU.
    Cpu,
}

/// Why an image cannot be decoded at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RouteError {
    /// More pixels than allowed; refused before anything is allocated.
    #[error("{width}x{height} is larger than the {max_pixels}-pixel limit")]
    TooLarge {
        /// Width.
        width: u32,
        /// Height.
        height: u32,
        /// The limit.
        max_pixels: u64,
    },
    /// No decoder here handles it.
    #[error("unsupported JPEG: {0}")]
    Unsupported(String),
}

/// The default size limit: 16k x 16k pixels.
pub const DEFAULT_MAX_PIXELS: u64 = 16384 * 16384;

/// The backend for an image with header `info`, given which GPU backends exist here.
///
/// The hardware engines take 8-bit baseline YCbCr or grey in 4:4:4, 4:2:2, 4:2:0 or 4:4:0; the
/// CUDA backend also takes progressive scans and 4:1:1/4:1:0; everything else that zune-jpeg
/// reads (CMYK/YCCK, RGB-coded, 12-bit, extended) goes to the CPU.
pub fn route(
    info: &JpegInfo,
    hardware: bool,
    cuda: bool,
    max_pixels: u64,
) -> Result<Backend, RouteError> {
    let pixels = u64::from(info.width) * u64::from(info.height);
    if pixels > max_pixels {
        return Err(RouteError::TooLarge {
            width: info.width,
            height: info.height,
            max_pixels,
        });
    }
    let sub = info.subsampling();
    let ycc_or_grey = sub == Subsampling::Grey || (info.components.len() == 3 && !info.is_rgb());
    // nvJPEG refuses junk between header segments; the CPU path decodes a cleaned copy.
    let gpu_ok = info.precision == 8 && ycc_or_grey && info.extraneous.is_empty();
    // The engines decode a one-component image declared with sampling factors other than 1x1
    // into garbage (Go's video-005.gray.q50.2x2.jpeg at 9.7 dB on an H200, though nvJPEG's own
    // support check accepts it); the CUDA backend decodes it right.
    let engines_ok = !(sub == Subsampling::Grey
        && info
            .components
            .first()
            .is_some_and(|c| (c.h, c.v) != (1, 1)));
    match info.coding {
        Coding::Baseline
            if gpu_ok
                && hardware
                && engines_ok
                && matches!(
                    sub,
                    Subsampling::Grey
                        | Subsampling::S444
                        | Subsampling::S422
                        | Subsampling::S420
                        | Subsampling::S440
                ) =>
        {
            Ok(Backend::Hardware)
        }
        Coding::Baseline | Coding::Progressive if gpu_ok && cuda && sub != Subsampling::Other => {
            Ok(Backend::Cuda)
        }
        Coding::Baseline | Coding::Extended | Coding::Progressive | Coding::Arithmetic { .. } => {
            Ok(Backend::Cpu)
        }
        Coding::Lossless => Err(RouteError::Unsupported("lossless JPEG".into())),
        Coding::Other(m) => Err(RouteError::Unsupported(format!(
            "frame type SOF{}",
            m - 0xC0
        ))),
    }
}
