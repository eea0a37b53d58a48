//! Decoding one image on the host, with the same checks and error kinds as the batched
//! decoder's CPU path: the CPU twin of [`ImageDecoder`](super::ImageDecoder) for pipelines that
//! run without a GPU.

use super::batch::{ImageErrorKind, classify};
use super::cpu::{RgbImage, decode_rgb};
use super::formats::{SourceFormat, decode_other_rgb, dimensions, sniff};
use super::header::{HeaderError, parse};
use super::route::{RouteError, route};

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
        return match dimensions(data, format, max_pixels) {
            Ok((w, h)) if u64::from(w) * u64::from(h) > max_pixels => Err(
                ImageErrorKind::TooLarge(format!("{w}x{h} is over the {max_pixels}-pixel limit")),
            ),
            Ok(_) => decode_other_rgb(data, format, max_pixels).map_err(|e| classify(&e)),
            Err(e) if e.contains("limit") => Err(ImageErrorKind::TooLarge(e)),
            Err(e) => Err(ImageErrorKind::Corrupt(e)),
        };
    }
    let info = match parse(data) {
        Ok(i) => i,
        Err(HeaderError::Truncated) => {
            return Err(ImageErrorKind::Truncated("the header ends early".into()));
        }
        Err(e) => return Err(ImageErrorKind::Corrupt(e.to_string())),
    };
    match route(&info, false, false, max_pixels) {
        Ok(_) => {}
        Err(RouteError::TooLarge {
            width,
            height,
            max_pixels,
        }) => {
            return Err(ImageErrorKind::TooLarge(format!(
                "{width}x{height} is over the {max_pixels}-pixel limit"
            )));
        }
        Err(RouteError::Unsupported(why)) => return Err(ImageErrorKind::Unsupported(why)),
    }
    if !info.has_end_marker(data) {
        return Err(ImageErrorKind::Truncated(
            "no end-of-image marker after the scan".into(),
        ));
    }
    decode_rgb(data, &info, apply_orientation).map_err(|e| classify(&e))
}
