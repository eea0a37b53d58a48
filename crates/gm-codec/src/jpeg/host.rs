//! Decoding one image on the host, with the same checks and error kinds as the batched
//! decoder's CPU path: the CPU twin of [`ImageDecoder`](super::ImageDecoder) for pipelines that
//! run without a GPU.

use super::cpu::{RgbImage, decode_rgb};
use super::error::ImageErrorKind;
use super::formats::{SourceFormat, checked_dimensions, decode_other_rgb, sniff};
use super::header::{JpegInfo, parse};
use super::route::route;

/// Decodes `data` (JPEG, PNG, BMP, WebP or TIFF) to interleaved 8-bit RGB on the CPU, turned
/// upright by its EXIF orientation when `apply_orientation` is set. Images over `max_pixels`
/// are refused before any pixel memory is allocated.
pub fn decode_host(
    data: &[u8],
    max_pixels: u64,
    apply_orientation: bool,
) -> Result<RgbImage, ImageErrorKind> {
    let Some(format) = sniff(data) else {
        return Err(ImageErrorKind::NotAnImage);
    };
    if format != SourceFormat::Jpeg {
        checked_dimensions(data, format, max_pixels)?;
        return decode_other_rgb(data, format, max_pixels);
    }
    let info = parse(data)?;
    route(&info, false, false, max_pixels)?;
    check_end_marker(&info, data)?;
    decode_rgb(data, &info, apply_orientation)
}

/// A JPEG whose scan has no end-of-image marker after it was cut short.
pub(crate) fn check_end_marker(info: &JpegInfo, data: &[u8]) -> Result<(), ImageErrorKind> {
    if info.has_end_marker(data) {
        Ok(())
    } else {
        Err(ImageErrorKind::Truncated(
            "no end-of-image marker after the scan".into(),
        ))
    }
}
