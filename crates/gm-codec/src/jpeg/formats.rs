//! What an encoded image is, told from its first bytes, and the CPU decoding of the formats
//! that are not JPEG (PNG, BMP, WebP, TIFF), so that a mixed folder decodes.

use std::io::Cursor;

use image::{ImageFormat, ImageReader, Limits};

use super::cpu::RgbImage;
use super::error::ImageErrorKind;

/// The container of an encoded image.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SourceFormat {
    /// JPEG (JFIF/EXIF).
    Jpeg,
    /// PNG.
    Png,
    /// Windows bitmap.
    Bmp,
    /// WebP (lossy or lossless).
    WebP,
    /// TIFF.
    Tiff,
}

impl SourceFormat {
    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            SourceFormat::Jpeg => "jpeg",
            SourceFormat::Png => "png",
            SourceFormat::Bmp => "bmp",
            SourceFormat::WebP => "webp",
            SourceFormat::Tiff => "tiff",
        }
    }

    fn image_format(self) -> Option<ImageFormat> {
        match self {
            SourceFormat::Jpeg => None,
            SourceFormat::Png => Some(ImageFormat::Png),
            SourceFormat::Bmp => Some(ImageFormat::Bmp),
            SourceFormat::WebP => Some(ImageFormat::WebP),
            SourceFormat::Tiff => Some(ImageFormat::Tiff),
        }
    }
}

/// The format of `data` from its signature; `None` for anything else.
pub fn sniff(data: &[u8]) -> Option<SourceFormat> {
    if data.starts_with(&[0xFF, 0xD8]) {
        Some(SourceFormat::Jpeg)
    } else if data.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some(SourceFormat::Png)
    } else if data.starts_with(b"BM") {
        Some(SourceFormat::Bmp)
    } else if data.len() >= 12 && &data[0..4] == b"RIFF" && &data[8..12] == b"WEBP" {
        Some(SourceFormat::WebP)
    } else if data.starts_with(b"II*\0") || data.starts_with(b"MM\0*") {
        Some(SourceFormat::Tiff)
    } else {
        None
    }
}

fn reader(
    data: &[u8],
    format: SourceFormat,
    max_pixels: u64,
    max_alloc: u64,
) -> Result<ImageReader<Cursor<&[u8]>>, ImageErrorKind> {
    let f = format
        .image_format()
        .ok_or_else(|| ImageErrorKind::Unsupported("JPEG goes through the JPEG decoders".into()))?;
    let mut r = ImageReader::with_format(Cursor::new(data), f);
    let mut limits = Limits::default();
    let side = u32::try_from(max_pixels).unwrap_or(u32::MAX);
    limits.max_image_width = Some(side);
    limits.max_image_height = Some(side);
    limits.max_alloc = Some(max_alloc);
    r.limits(limits);
    Ok(r)
}

/// The kind of an `image` crate error: its limits mean too large, its unsupported features
/// unsupported, data that ends early truncated; everything else is damaged data.
fn image_error(e: image::ImageError) -> ImageErrorKind {
    let reason = e.to_string();
    match e {
        image::ImageError::Limits(_) => ImageErrorKind::TooLarge(reason),
        image::ImageError::Unsupported(_) => ImageErrorKind::Unsupported(reason),
        image::ImageError::IoError(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
            ImageErrorKind::Truncated(reason)
        }
        _ => ImageErrorKind::Corrupt(reason),
    }
}

/// What decoding a `width` x `height` image may allocate: its RGBA16 form (the widest the
/// `image` crate decodes to) and the RGB8 copy, plus room for the decoder's own buffers.
/// Bounding by the declared size, not by the size limit, is what keeps a 1 KB file that
/// claims small dimensions from asking for hundreds of megabytes (found by fuzzing).
fn alloc_bound(width: u32, height: u32) -> u64 {
    (u64::from(width) * u64::from(height))
        .saturating_mul(11)
        .saturating_add(16 << 20)
}

/// Width and height from the header of a non-JPEG image, without decoding it.
pub fn dimensions(
    data: &[u8],
    format: SourceFormat,
    max_pixels: u64,
) -> Result<(u32, u32), ImageErrorKind> {
    // Reading a header allocates little; the size limit bounds what it may claim.
    reader(data, format, max_pixels, 64 << 20)?
        .into_dimensions()
        .map_err(image_error)
}

/// [`dimensions`], with images over `max_pixels` refused as too large.
pub(crate) fn checked_dimensions(
    data: &[u8],
    format: SourceFormat,
    max_pixels: u64,
) -> Result<(u32, u32), ImageErrorKind> {
    let (w, h) = dimensions(data, format, max_pixels)?;
    if u64::from(w) * u64::from(h) > max_pixels {
        return Err(too_large(w, h, max_pixels));
    }
    Ok((w, h))
}

/// Decodes a non-JPEG image to 8-bit RGB (alpha dropped, 16-bit samples scaled).
pub fn decode_other_rgb(
    data: &[u8],
    format: SourceFormat,
    max_pixels: u64,
) -> Result<RgbImage, ImageErrorKind> {
    let (w, h) = checked_dimensions(data, format, max_pixels)?;
    let img = reader(data, format, max_pixels, alloc_bound(w, h))?
        .decode()
        .map_err(image_error)?
        .into_rgb8();
    Ok(RgbImage {
        width: img.width(),
        height: img.height(),
        rgb: img.into_raw(),
    })
}

/// The error of an image of `w` x `h` pixels over `max_pixels`.
pub(crate) fn too_large(w: u32, h: u32, max_pixels: u64) -> ImageErrorKind {
    ImageErrorKind::TooLarge(format!("{w}x{h} is over the {max_pixels}-pixel limit"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_told_by_their_signatures() {
        assert_eq!(sniff(&[0xFF, 0xD8, 0xFF, 0xE0]), Some(SourceFormat::Jpeg));
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\n...."), Some(SourceFormat::Png));
        assert_eq!(sniff(b"BM...."), Some(SourceFormat::Bmp));
        assert_eq!(sniff(b"RIFF\0\0\0\0WEBPVP8 "), Some(SourceFormat::WebP));
        assert_eq!(sniff(b"RIFF\0\0\0\0WAVEfmt "), None);
        assert_eq!(sniff(b"II*\0...."), Some(SourceFormat::Tiff));
        assert_eq!(sniff(b"MM\0*...."), Some(SourceFormat::Tiff));
        assert_eq!(sniff(b"GIF89a"), None);
        assert_eq!(sniff(b""), None);
    }
}
