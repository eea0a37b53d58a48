//! The small value types of the JPEG side, shared by every layer: the output pixel layout, a
//! region of an image, and the plane layout of a decoded image. This module imports nothing
//! above the header reader, so the nvJPEG wrapper and the batched decoder can both use it.

use super::header::{JpegInfo, Subsampling};

/// Pixel layout of decoded images, 8 bits per sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PixelFormat {
    /// Interleaved RGB (HWC).
    Rgb,
    /// Planar RGB (CHW).
    RgbPlanar,
    /// One luma plane.
    Grey,
}

impl PixelFormat {
    /// Samples per pixel.
    pub fn channels(self) -> usize {
        match self {
            PixelFormat::Grey => 1,
            _ => 3,
        }
    }
}

/// A region of an image: its top-left pixel and size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Roi {
    /// Left edge.
    pub x: u32,
    /// Top edge.
    pub y: u32,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
}

/// Row pitches are rounded up to this, and planes get spare rows, so that a decoder writing
/// whole blocks past the image's edge stays inside the image's own planes.
const PITCH_ALIGN: usize = 64;
const SPARE_ROWS: usize = 16;

/// How the planes of one decoded image lie in memory: sizes, pitches and chroma factors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlaneLayout {
    /// Width as stored (before orientation).
    pub width: u32,
    /// Height as stored.
    pub height: u32,
    /// Horizontal chroma factor: 1 or 2.
    pub hs: u8,
    /// Vertical chroma factor: 1 or 2.
    pub vs: u8,
    /// One component only: no chroma planes.
    pub grey: bool,
    /// Luma row pitch in bytes.
    pub y_pitch: usize,
    /// Chroma row pitch in bytes.
    pub c_pitch: usize,
    /// Chroma plane width.
    pub c_width: u32,
    /// Chroma plane height.
    pub c_height: u32,
}

impl PlaneLayout {
    /// The layout for a JPEG with header `info`, or `None` where the chroma factors are not
    /// 1 or 2 in each direction (4:1:1, 4:1:0 and stranger files keep nvJPEG's own output).
    pub fn for_jpeg(info: &JpegInfo) -> Option<PlaneLayout> {
        let (hs, vs, grey) = match info.subsampling() {
            Subsampling::Grey => (1, 1, true),
            Subsampling::S444 => (1, 1, false),
            Subsampling::S422 => (2, 1, false),
            Subsampling::S420 => (2, 2, false),
            Subsampling::S440 => (1, 2, false),
            _ => return None,
        };
        Some(PlaneLayout::new(info.width, info.height, hs, vs, grey))
    }

    /// The layout of a `width` x `height` image with chroma factors `hs` x `vs` (1 or 2),
    /// with this module's padded pitches. Chroma planes are ceil(width / hs) wide, as the JPEG
    /// standard sizes components.
    pub fn new(width: u32, height: u32, hs: u8, vs: u8, grey: bool) -> PlaneLayout {
        let (hs, vs) = (hs.clamp(1, 2), vs.clamp(1, 2));
        let c_width = width.div_ceil(u32::from(hs));
        let c_height = height.div_ceil(u32::from(vs));
        PlaneLayout {
            width,
            height,
            hs,
            vs,
            grey,
            y_pitch: (width as usize).div_ceil(PITCH_ALIGN) * PITCH_ALIGN,
            c_pitch: (c_width as usize).div_ceil(PITCH_ALIGN) * PITCH_ALIGN,
            c_width,
            c_height,
        }
    }

    /// Bytes of the luma plane, spare rows included.
    pub fn y_bytes(&self) -> usize {
        self.y_pitch * (self.height as usize + SPARE_ROWS)
    }

    /// Bytes of one chroma plane, spare rows included (0 for grey).
    pub fn c_bytes(&self) -> usize {
        if self.grey {
            0
        } else {
            self.c_pitch * (self.c_height as usize + SPARE_ROWS)
        }
    }

    /// Bytes of all planes: Y, then Cb, then Cr.
    pub fn bytes(&self) -> usize {
        self.y_bytes() + 2 * self.c_bytes()
    }

    /// Output size once EXIF orientation `o` is applied.
    pub fn oriented(&self, o: u8) -> (u32, u32) {
        if matches!(o, 5..=8) {
            (self.height, self.width)
        } else {
            (self.width, self.height)
        }
    }
}
