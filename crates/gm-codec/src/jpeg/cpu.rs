//! The CPU fallback: zune-jpeg, and libjpeg-turbo where zune-jpeg differs from it, decoding to
//! interleaved RGB; EXIF orientation applied the way PIL's `exif_transpose` does.

use zune_core::bytestream::ZCursor;
use zune_core::colorspace::ColorSpace;
use zune_core::options::DecoderOptions;
use zune_jpeg::JpegDecoder;
use zune_jpeg::errors::DecodeErrors;

use super::error::ImageErrorKind;
use super::header::{Coding, JpegInfo, scan_damaged};
use super::libjpeg;
use super::types::PixelFormat;

/// A decoded image in host memory, interleaved RGB, 8 bits per sample.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RgbImage {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// `width * height * 3` bytes, row by row.
    pub rgb: Vec<u8>,
}

/// Decodes `data` (whose header is `info`) on the CPU; with `apply_orientation`, the image is
/// turned upright as its EXIF orientation says.
///
/// zune-jpeg decodes what it decodes as libjpeg-turbo does; libjpeg-turbo itself takes the
/// rest: arithmetic coding, the layouts where zune-jpeg's output differs (see
/// [`needs_libjpeg`]), files cut short (decoded only when the caller's policy allows, with
/// libjpeg's grey rows) or damaged after their header ([`scan_damaged`]), and any file
/// zune-jpeg refuses, so that whatever libjpeg-turbo decodes
/// (damaged data it recovers included) is decoded, and what it refuses is refused with its
/// reason.
pub fn decode_rgb(
    data: &[u8],
    info: &JpegInfo,
    apply_orientation: bool,
) -> Result<RgbImage, ImageErrorKind> {
    // The header's verdict first: the damage check passes over every byte.
    let libjpeg_first =
        needs_libjpeg(info) || !info.has_end_marker(data) || scan_damaged(data, info);
    let img = if libjpeg_first {
        decode_rgb_libjpeg(data, info)?
    } else {
        match decode_zune(data, info) {
            Ok(img) => img,
            // libjpeg-turbo is the reference: its verdict on a file zune-jpeg refuses stands,
            // with both reasons when it refuses too.
            Err(zune) => {
                decode_rgb_libjpeg(data, info).map_err(|libjpeg| with_reason(libjpeg, &zune))?
            }
        }
    };
    Ok(if apply_orientation {
        orient(&img, info.orientation)
    } else {
        img
    })
}

/// Whether zune-jpeg is known to decode images of header `info` differently from
/// libjpeg-turbo (or not at all), so libjpeg-turbo decodes them first; with
/// `BackendChoice::Auto` such images skip the GPU too (nvJPEG gave 20 dB on 3x3 and 4x4 4:2:0
/// images):
/// - arithmetic coding, which zune-jpeg does not implement;
/// - sequential files coded as one scan per component: zune-jpeg 0.5 returns wrong colours
///   without an error (imagetestsuite's 865db3dd, 6.3 dB against djpeg);
/// - subsampled images smaller than one MCU, whose edge chroma zune-jpeg upsamples
///   differently (20-33 dB against djpeg on 2x2 to 4x4 4:2:0 images);
/// - sampling factors where luma is not the most finely sampled component, or a factor does
///   not divide the largest ([`JpegInfo::luma_sampled_finest`]): of the 622 sampling layouts
///   cjpeg writes (baseline and progressive), zune-jpeg decoded 94 into wrong pixels without
///   an error (6 to 37 dB against djpeg), all of them outside this class, and refused most of
///   the other layouts outside it;
/// - files with junk bytes between header segments: a sign of damage, and damaged data is
///   concealed differently by each decoder; libjpeg-turbo's recovery is the reference.
pub fn needs_libjpeg(info: &JpegInfo) -> bool {
    let (h, v) = info.max_sampling();
    let below_one_mcu =
        (h > 1 || v > 1) && (info.width < 8 * u32::from(h) || info.height < 8 * u32::from(v));
    let one_scan_per_component = matches!(info.coding, Coding::Baseline | Coding::Extended)
        && info.components.len() > 1
        && usize::from(info.first_scan_components) < info.components.len();
    matches!(info.coding, Coding::Arithmetic { .. })
        || one_scan_per_component
        || below_one_mcu
        || !info.luma_sampled_finest()
        || !info.extraneous.is_empty()
}

/// `kind` with `other` (zune-jpeg's verdict) added after its reason.
fn with_reason(mut kind: ImageErrorKind, other: &ImageErrorKind) -> ImageErrorKind {
    if let ImageErrorKind::Truncated(r)
    | ImageErrorKind::TooLarge(r)
    | ImageErrorKind::Unsupported(r)
    | ImageErrorKind::Corrupt(r) = &mut kind
    {
        r.push_str(&format!("; {other}"));
    }
    kind
}

/// libjpeg-turbo's own decode of `data` (whose header is `info`), as `djpeg` and Pillow decode
/// it: the reference the CPU path is checked against, for callers who want those pixels
/// exactly. Grey comes back as RGB; CMYK/YCCK is converted as zune-jpeg converts it; no EXIF
/// orientation is applied.
pub fn decode_rgb_libjpeg(data: &[u8], info: &JpegInfo) -> Result<RgbImage, ImageErrorKind> {
    let cmyk = info.components.len() == 4;
    let decoded = libjpeg::decode_rgb(data, info.width, info.height, cmyk)?;
    if let Some(warning) = &decoded.warning {
        tracing::debug!(%warning, "libjpeg-turbo recovered damaged data");
    }
    Ok(RgbImage {
        width: info.width,
        height: info.height,
        rgb: decoded.rgb,
    })
}

/// zune-jpeg's decode to interleaved RGB; files with header junk never get here (they go to
/// libjpeg-turbo, which skips it itself).
fn decode_zune(data: &[u8], info: &JpegInfo) -> Result<RgbImage, ImageErrorKind> {
    // 4:1:0 chroma: zune-jpeg 0.4 upsampled it wrongly and it was refused; 0.5 decodes Go's
    // video-001.q50.410.jpeg at 36.5 dB against ffmpeg (luma 50.6 dB), so it is decoded.
    // zune-jpeg 0.5 reads RGB-coded files (Adobe transform 0, or component ids R, G, B) as
    // RGB itself: every file is asked for RGB.
    // Strict: where zune-jpeg would conceal damage its own way (a bad Huffman code, data
    // ending inside a scan), it stops, and libjpeg-turbo recovers the file as the reference
    // does, or refuses it as the reference does.
    let options = DecoderOptions::default()
        .set_strict_mode(true)
        .jpeg_set_out_colorspace(ColorSpace::RGB)
        .set_max_width(info.width as usize)
        .set_max_height(info.height as usize);
    // A last guard: zune-jpeg 0.4.21 panicked on a corrupt scan the jpeg_header fuzz target
    // found (tests/media/regressions/zune-bitstream-panic.jpeg; 0.5 decodes it). A bad file
    // must be an error, never the end of an epoch; the tests check nothing reaches this.
    let decoded = std::panic::catch_unwind(|| {
        let mut decoder = JpegDecoder::new_with_options(ZCursor::new(data), options);
        let pixels = decoder.decode().map_err(zune_error)?;
        let dims = decoder
            .info()
            .map(|i| (u32::from(i.width), u32::from(i.height)))
            .ok_or_else(|| ImageErrorKind::Corrupt("zune-jpeg gave no image information".into()))?;
        Ok::<_, ImageErrorKind>((pixels, dims))
    })
    .map_err(|_| ImageErrorKind::Corrupt("zune-jpeg panicked on corrupt data".into()))?;
    let (pixels, (width, height)) = decoded?;
    let n = width as usize * height as usize;
    // Single-component files come back as luma whatever was asked for.
    let pixels = if pixels.len() == n {
        pixels.iter().flat_map(|&y| [y, y, y]).collect()
    } else {
        pixels
    };
    if pixels.len() != n * 3 {
        return Err(ImageErrorKind::Corrupt(format!(
            "zune-jpeg returned {} bytes for {width}x{height} RGB",
            pixels.len()
        )));
    }
    Ok(RgbImage {
        width,
        height,
        rgb: pixels,
    })
}

/// The kind of a zune-jpeg error: its own variants say whether the data ended early or uses
/// a coding it does not read; everything else is damaged data.
fn zune_error(e: DecodeErrors) -> ImageErrorKind {
    let reason = format!("zune-jpeg: {e:?}");
    match e {
        DecodeErrors::Unsupported(_) => ImageErrorKind::Unsupported(reason),
        DecodeErrors::ExhaustedData => ImageErrorKind::Truncated(reason),
        _ => ImageErrorKind::Corrupt(reason),
    }
}

/// Interleaved RGB to the output layout. Grey uses the BT.601 luma weights that JPEG's YCbCr
/// uses, in 8-bit fixed point.
pub fn to_layout(img: &RgbImage, format: PixelFormat) -> Vec<u8> {
    match format {
        PixelFormat::Rgb => img.rgb.clone(),
        PixelFormat::RgbPlanar => {
            let n = img.width as usize * img.height as usize;
            let mut out = vec![0u8; n * 3];
            for (p, px) in img.rgb.chunks_exact(3).enumerate() {
                for c in 0..3 {
                    out[c * n + p] = px[c];
                }
            }
            out
        }
        PixelFormat::Grey => img
            .rgb
            .chunks_exact(3)
            .map(|p| {
                ((77 * u32::from(p[0]) + 150 * u32::from(p[1]) + 29 * u32::from(p[2]) + 128) >> 8)
                    as u8
            })
            .collect(),
    }
}

/// Where output pixel (`x`, `y`) of a `w` x `h` image (as stored) turned by EXIF orientation
/// `o` comes from. Shared by [`orient`] and the colour kernel's CPU twin; the kernel has the
/// same table.
pub(crate) fn stored_position(o: u8, w: usize, h: usize, x: usize, y: usize) -> (usize, usize) {
    match o {
        2 => (w - 1 - x, y),
        3 => (w - 1 - x, h - 1 - y),
        4 => (x, h - 1 - y),
        5 => (y, x),
        6 => (y, h - 1 - x),
        7 => (w - 1 - y, h - 1 - x),
        8 => (w - 1 - y, x),
        _ => (x, y),
    }
}

/// The image turned upright for EXIF orientation `o` (1-8): 2 mirror, 3 rotate 180, 4 flip,
/// 5 transpose, 6 rotate 90 clockwise, 7 transverse, 8 rotate 90 counter-clockwise.
pub fn orient(img: &RgbImage, o: u8) -> RgbImage {
    let (w, h) = (img.width as usize, img.height as usize);
    let swap = matches!(o, 5..=8);
    let (ow, oh) = if swap { (h, w) } else { (w, h) };
    let mut rgb = vec![0u8; ow * oh * 3];
    for y in 0..oh {
        for x in 0..ow {
            let (sx, sy) = stored_position(o, w, h, x, y);
            let (d, s) = ((y * ow + x) * 3, (sy * w + sx) * 3);
            rgb[d..d + 3].copy_from_slice(&img.rgb[s..s + 3]);
        }
    }
    RgbImage {
        width: ow as u32,
        height: oh as u32,
        rgb,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orientations_turn_the_image_like_pil() {
        // 3x2 image, pixel value = index: 0 1 2 / 3 4 5.
        let img = RgbImage {
            width: 3,
            height: 2,
            rgb: (0..6u8).flat_map(|v| [v, v, v]).collect(),
        };
        let px = |i: &RgbImage| i.rgb.chunks(3).map(|p| p[0]).collect::<Vec<_>>();
        let cases: [(u8, (u32, u32), [u8; 6]); 8] = [
            (1, (3, 2), [0, 1, 2, 3, 4, 5]),
            (2, (3, 2), [2, 1, 0, 5, 4, 3]),
            (3, (3, 2), [5, 4, 3, 2, 1, 0]),
            (4, (3, 2), [3, 4, 5, 0, 1, 2]),
            (5, (2, 3), [0, 3, 1, 4, 2, 5]),
            (6, (2, 3), [3, 0, 4, 1, 5, 2]),
            (7, (2, 3), [5, 2, 4, 1, 3, 0]),
            (8, (2, 3), [2, 5, 1, 4, 0, 3]),
        ];
        for (o, dims, want) in cases {
            let r = orient(&img, o);
            assert_eq!((r.width, r.height), dims, "orientation {o}");
            assert_eq!(px(&r), want, "orientation {o}");
        }
    }
}
