//! Decoding one image on the host, with the same checks and error kinds as the batched
//! decoder's CPU path: the CPU twin of [`ImageDecoder`](super::ImageDecoder) for pipelines that
//! run without a GPU.

use super::cpu::{RgbImage, decode_rgb};
use super::error::ImageErrorKind;
use super::formats::{SourceFormat, checked_dimensions, decode_other_rgb, sniff};
use super::header::{JpegInfo, parse};
use super::options::{DecoderOptions, Truncated};
use super::route::route;

/// Decodes `data` (JPEG, PNG, BMP, WebP or TIFF) to interleaved 8-bit RGB on the CPU, turned
/// upright by its EXIF orientation when `apply_orientation` is set. Images over `max_pixels`
/// are refused before any pixel memory is allocated.
pub fn decode_host(
    data: &[u8],
    max_pixels: u64,
    apply_orientation: bool,
) -> Result<RgbImage, ImageErrorKind> {
    let options = DecoderOptions {
        max_pixels,
        apply_orientation,
        ..DecoderOptions::default()
    };
    decode_host_with(data, &options)
}

/// [`decode_host`] under the settings of `options` that apply on the host: `max_pixels`,
/// `apply_orientation` and `truncated`.
pub fn decode_host_with(data: &[u8], options: &DecoderOptions) -> Result<RgbImage, ImageErrorKind> {
    let (max_pixels, apply_orientation) = (options.max_pixels, options.apply_orientation);
    let Some(format) = sniff(data) else {
        return Err(ImageErrorKind::NotAnImage);
    };
    if format != SourceFormat::Jpeg {
        checked_dimensions(data, format, max_pixels)?;
        return decode_other_rgb(data, format, max_pixels);
    }
    let info = parse(data)?;
    route(&info, false, false, max_pixels)?;
    if options.truncated == Truncated::Refuse {
        check_end_marker(&info, data)?;
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A 4:2:0 baseline header of `w` x `h` with a two-byte scan and, when `end`, an
    /// end-of-image marker.
    fn header(w: u16, h: u16, end: bool) -> Vec<u8> {
        let mut v = vec![0xFF, 0xD8, 0xFF, 0xC0, 0, 17, 8];
        v.extend_from_slice(&h.to_be_bytes());
        v.extend_from_slice(&w.to_be_bytes());
        v.extend_from_slice(&[3, 1, 0x22, 0, 2, 0x11, 0, 3, 0x11, 0]);
        v.extend_from_slice(&[0xFF, 0xDA, 0, 8, 1, 1, 0, 0, 63, 0, 0x12, 0x34]);
        if end {
            v.extend_from_slice(&[0xFF, 0xD9]);
        }
        v
    }

    fn png(w: u32, h: u32) -> Vec<u8> {
        let img = image::RgbImage::from_fn(w, h, |x, y| image::Rgb([x as u8, y as u8, 7]));
        let mut out = std::io::Cursor::new(Vec::new());
        img.write_to(&mut out, image::ImageFormat::Png).unwrap();
        out.into_inner()
    }

    #[test]
    fn each_refusal_has_its_kind_without_reading_messages() {
        assert_eq!(
            decode_host(b"GIF89a", 1 << 20, true),
            Err(ImageErrorKind::NotAnImage)
        );
        let whole = header(64, 48, true);
        assert_eq!(
            decode_host(&whole[..9], 1 << 20, true),
            Err(ImageErrorKind::Truncated("the header ends early".into()))
        );
        assert_eq!(
            decode_host(&header(64, 48, false), 1 << 20, true),
            Err(ImageErrorKind::Truncated(
                "no end-of-image marker after the scan".into()
            ))
        );
        assert_eq!(
            decode_host(&header(64, 48, true), 1000, true),
            Err(ImageErrorKind::TooLarge(
                "64x48 is over the 1000-pixel limit".into()
            ))
        );
        // Missing tables: damaged data, in libjpeg-turbo's words (its scan holds one of the
        // three components, a layout libjpeg-turbo decodes first).
        assert!(matches!(
            decode_host(&whole, 1 << 20, true),
            Err(ImageErrorKind::Corrupt(why)) if why.starts_with("libjpeg-turbo")
        ));
    }

    #[test]
    fn other_formats_decode_and_their_errors_are_typed() {
        let data = png(5, 3);
        let img = decode_host(&data, 1 << 20, true).unwrap();
        assert_eq!((img.width, img.height), (5, 3));
        assert_eq!(&img.rgb[..6], &[0, 0, 7, 1, 0, 7]);
        assert_eq!(
            decode_host(&data, 14, true),
            Err(ImageErrorKind::TooLarge(
                "5x3 is over the 14-pixel limit".into()
            ))
        );
        let cut = decode_host(&data[..data.len() / 2], 1 << 20, true);
        // A PNG cut short: the reader's end-of-file error, as truncated.
        assert!(matches!(cut, Err(ImageErrorKind::Truncated(_))), "{cut:?}");
    }
}
