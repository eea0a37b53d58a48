//! What the fused kernel reads, what it does to each image, and what it writes.

use crate::chroma::ChromaFilter;
use gm_cuda::{DType, DevicePtr};

use crate::colour::ColourOps;

/// Pixel layout of a source image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PixelFormat {
    /// Interleaved 8-bit R, G, B.
    Rgb8,
    /// Interleaved 8-bit B, G, R.
    Bgr8,
    /// 8-bit luma plane and interleaved U/V plane at half resolution (NVDEC's NV12).
    Nv12,
    /// 16-bit samples with the value in the high `bit_depth` bits (NVDEC's P016).
    P016 {
        /// Bits per sample of the content (10 for Main10).
        bit_depth: u8,
    },
    /// NV12's planes for 4:2:2: the interleaved U/V plane at half width and full height.
    Nv16,
    /// P016's samples in NV16's layout (4:2:2).
    P216 {
        /// Bits per sample of the content.
        bit_depth: u8,
    },
    /// NV12's planes for 4:4:4: the interleaved U/V plane at full resolution, its rows twice
    /// the luma row's bytes (the pitch fits the chroma row).
    Nv24,
    /// P016's samples in NV24's layout (4:4:4).
    P416 {
        /// Bits per sample of the content.
        bit_depth: u8,
    },
    /// Three 8-bit planes R, G, B (torchvision's `[3, H, W]` uint8 images), each row `pitch`
    /// bytes after the last; the G plane starts `plane` bytes after R and B `plane` after G.
    /// Any spacing works, 0 included (one grey plane broadcast, as `expand` makes it).
    Rgb8Planar {
        /// Bytes from one plane's first pixel to the next plane's.
        plane: usize,
    },
}

impl PixelFormat {
    /// For a luma plane and an interleaved U/V plane (the NV and P formats): how far chroma
    /// is subsampled, as shifts of (x, y), and bytes a sample; `None` for RGB.
    pub fn semi_planar(self) -> Option<((u32, u32), usize)> {
        match self {
            PixelFormat::Rgb8 | PixelFormat::Bgr8 | PixelFormat::Rgb8Planar { .. } => None,
            PixelFormat::Nv12 => Some(((1, 1), 1)),
            PixelFormat::P016 { .. } => Some(((1, 1), 2)),
            PixelFormat::Nv16 => Some(((1, 0), 1)),
            PixelFormat::P216 { .. } => Some(((1, 0), 2)),
            PixelFormat::Nv24 => Some(((0, 0), 1)),
            PixelFormat::P416 { .. } => Some(((0, 0), 2)),
        }
    }

    /// Whether the pixels are 8-bit RGB (interleaved either way round, or planar).
    pub fn is_rgb(self) -> bool {
        self.semi_planar().is_none()
    }

    /// Bytes of one row's pixels in the first plane: three a pixel interleaved, one planar,
    /// and for the NV and P formats the wider of the two planes' rows (4:4:4's interleaved
    /// chroma row is twice luma's).
    pub fn row_bytes(self, width: u32) -> usize {
        let w = width as usize;
        match self.semi_planar() {
            None if matches!(self, PixelFormat::Rgb8Planar { .. }) => w,
            None => 3 * w,
            Some(((0, _), bps)) => 2 * bps * w,
            Some((_, bps)) => bps * w,
        }
    }

    /// Bits per sample of the content: 8 for RGB and the NV formats.
    pub fn bit_depth(self) -> u8 {
        match self {
            PixelFormat::P016 { bit_depth }
            | PixelFormat::P216 { bit_depth }
            | PixelFormat::P416 { bit_depth } => bit_depth,
            _ => 8,
        }
    }
}

/// YUV to RGB matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Matrix {
    /// ITU-R BT.601.
    #[default]
    Bt601,
    /// ITU-R BT.709.
    Bt709,
    /// ITU-R BT.2020 (non-constant luminance).
    Bt2020,
}

impl Matrix {
    /// The matrix an H.264/HEVC stream signals with `matrix_coefficients` (ISO/IEC 23091-4);
    /// unspecified streams are BT.709 from 720 lines up and BT.601 below, as players do.
    pub fn from_code(matrix_coefficients: u8, height: u32) -> Matrix {
        match matrix_coefficients {
            1 => Matrix::Bt709,
            5 | 6 => Matrix::Bt601,
            9 | 10 => Matrix::Bt2020,
            _ if height >= 720 => Matrix::Bt709,
            _ => Matrix::Bt601,
        }
    }

    pub(crate) fn code(self) -> i32 {
        match self {
            Matrix::Bt601 => 0,
            Matrix::Bt709 => 1,
            Matrix::Bt2020 => 2,
        }
    }
}

/// How a source's stored pixels are shown (a video track's display matrix: a rotation by a
/// multiple of 90 degrees, a mirror). The fused kernel reads the image as displayed: crops,
/// resizes and warps are in displayed coordinates, and only the memory reads map them back.
/// Displayed pixel (x, y) of a `w` x `h` displayed image is stored at (x', y') after
/// `x' = w - 1 - x` where `flip_x`, `y' = h - 1 - y` where `flip_y`, then swapping x' and y'
/// where `transpose`. The eight values are the eight rotations and mirrors of a rectangle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Orientation {
    /// Mirror left-right (in displayed space, before the transpose).
    pub flip_x: bool,
    /// Mirror top-bottom (in displayed space, before the transpose).
    pub flip_y: bool,
    /// Swap rows and columns: the displayed image is the stored one's height wide.
    pub transpose: bool,
}

impl Orientation {
    /// Shown as stored.
    pub const STORED: Orientation = Orientation {
        flip_x: false,
        flip_y: false,
        transpose: false,
    };

    /// Turned counter-clockwise by `degrees` (0, 90, 180 or 270), then mirrored left-right
    /// where `mirror`: ffmpeg's reading of a display matrix (its `rotation` side data is the
    /// counter-clockwise angle). `None` for other angles.
    pub fn rotated(degrees: u32, mirror: bool) -> Option<Orientation> {
        let (flip_x, flip_y, transpose) = match degrees {
            0 => (false, false, false),
            90 => (false, true, true),
            180 => (true, true, false),
            270 => (true, false, true),
            _ => return None,
        };
        // A mirror after the turn is a flip of the displayed x, which the flips compose with.
        Some(Orientation {
            flip_x: flip_x != mirror,
            flip_y,
            transpose,
        })
    }

    /// The displayed size of a `width` x `height` stored image.
    pub fn displayed_size(self, width: u32, height: u32) -> (u32, u32) {
        if self.transpose {
            (height, width)
        } else {
            (width, height)
        }
    }

    /// Where displayed pixel (`x`, `y`) of a `w` x `h` displayed image is stored.
    pub fn stored_position(self, x: usize, y: usize, w: usize, h: usize) -> (usize, usize) {
        let x = if self.flip_x { w - 1 - x } else { x };
        let y = if self.flip_y { h - 1 - y } else { y };
        if self.transpose { (y, x) } else { (x, y) }
    }

    /// The kernel's encoding: bit 0 flip_x, bit 1 flip_y, bit 2 transpose.
    pub(crate) fn code(self) -> i32 {
        i32::from(self.flip_x) | i32::from(self.flip_y) << 1 | i32::from(self.transpose) << 2
    }
}

/// A source image in device memory (an RGB image, or a mapped decoder surface).
#[derive(Debug, Clone, Copy)]
pub struct SourceImage {
    /// Interleaved pixels, or the luma plane.
    pub data: DevicePtr,
    /// The interleaved chroma plane (NV12/P016); ignored for RGB.
    pub chroma: DevicePtr,
    /// Bytes between rows (both planes).
    pub pitch: usize,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Pixel layout.
    pub format: PixelFormat,
    /// YUV matrix (YUV formats).
    pub matrix: Matrix,
    /// Full-range YUV samples rather than limited (16-235).
    pub full_range: bool,
    /// How the stored pixels are shown; `width` and `height` are the stored size.
    pub orientation: Orientation,
    /// How subsampled chroma is brought to luma resolution (YUV formats).
    pub chroma_filter: ChromaFilter,
}

impl SourceImage {
    /// The size the kernel works in: `width` x `height` turned by the orientation.
    pub fn displayed_size(&self) -> (u32, u32) {
        self.orientation.displayed_size(self.width, self.height)
    }

    /// The same image shown with `orientation`.
    pub fn oriented(self, orientation: Orientation) -> SourceImage {
        SourceImage {
            orientation,
            ..self
        }
    }

    /// The same image with its chroma brought to luma resolution by `upsampling`.
    pub fn with_chroma(self, upsampling: ChromaFilter) -> SourceImage {
        SourceImage {
            chroma_filter: upsampling,
            ..self
        }
    }

    /// A tightly packed interleaved RGB u8 image at `data` (what the JPEG decoder returns).
    pub fn rgb8(data: DevicePtr, width: u32, height: u32) -> SourceImage {
        SourceImage {
            data,
            chroma: DevicePtr(0),
            pitch: width as usize * 3,
            width,
            height,
            format: PixelFormat::Rgb8,
            matrix: Matrix::default(),
            full_range: true,
            orientation: Orientation::STORED,
            chroma_filter: ChromaFilter::default(),
        }
    }

    /// An RGB u8 image held as three planes (`[3, H, W]`) at `data`, rows `pitch` bytes apart
    /// and planes `plane` bytes apart: read where it lies, with no channels-last copy.
    pub fn rgb8_planar(
        data: DevicePtr,
        plane: usize,
        pitch: usize,
        width: u32,
        height: u32,
    ) -> SourceImage {
        SourceImage {
            pitch,
            format: PixelFormat::Rgb8Planar { plane },
            ..SourceImage::rgb8(data, width, height)
        }
    }
}

/// The region of the source an output image is made from, in source pixels (fractional
/// positions allowed, as random-resized-crop produces).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Crop {
    /// Left edge.
    pub x: f32,
    /// Top edge.
    pub y: f32,
    /// Width.
    pub w: f32,
    /// Height.
    pub h: f32,
}

impl Crop {
    /// The whole image.
    pub fn full(width: u32, height: u32) -> Crop {
        Crop {
            x: 0.0,
            y: 0.0,
            w: width as f32,
            h: height as f32,
        }
    }
}

/// Constant padding: the image being resized spans source pixels `x0..x1` x `y0..y1` (it may
/// reach outside the source), of which only `valid` (x0, y0, x1, y1) reads the source; the
/// rest reads `fill`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Padding {
    /// Left edge of the padded image (negative when padded past the source).
    pub x0: i32,
    /// Top edge.
    pub y0: i32,
    /// Right edge (exclusive).
    pub x1: i32,
    /// Bottom edge (exclusive).
    pub y1: i32,
    /// The region that holds image data: (left, top, right, bottom), exclusive ends.
    pub valid: (i32, i32, i32, i32),
    /// Value of padded pixels, per RGB channel, 0..255.
    pub fill: [f32; 3],
}

/// Per-image operation: crop (of the padded image, if padded), then resize to the output size,
/// then flip, then the colour operations (on the result rounded to u8).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FusedOp {
    /// Source region.
    pub crop: Crop,
    /// Mirror left-right.
    pub flip_h: bool,
    /// Mirror top-bottom.
    pub flip_v: bool,
    /// Constant padding, if any. Without it, resampling taps are clamped to the crop (rounded
    /// out to whole pixels) within the source, as resizing a cropped image does.
    pub pad: Option<Padding>,
    /// Photometric operations after the geometry, in order.
    pub colour: ColourOps,
    /// An affine or perspective sampling grid (RandomAffine, RandomRotation,
    /// RandomPerspective) that replaces `crop` and the flips, which are folded into it.
    pub warp: Option<Warp>,
}

/// A pass that runs before the final one: it writes the image as the chain has it at one
/// point, u8 RGB HWC (`spec`), and the next pass reads that as its source. A chain is cut
/// into passes where torchvision resamples or rounds twice and one sampling grid cannot give
/// its values: a warp after a resize, a crop or resize after a warp, two warps, geometry
/// after a colour operation, a second sharpness (docs/transforms.md, "Passes").
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PrePass {
    /// What the pass does to its source.
    pub op: FusedOp,
    /// What it writes: the image's size at the cut, u8 RGB HWC, the chain's filter.
    pub spec: OutputSpec,
}

/// A general sampling grid, in torchvision's own arithmetic (`_affine_grid` /
/// `_perspective_grid`, then grid_sample's unnormalization), so that a single warp lands on
/// the same source positions bit for bit: output pixel (x, y) has `u = x + origin.0`,
/// `v = y + origin.1`; `p = matrix * (u, v, 1)`; `g = p.xy / p.z + post`; the source position
/// in tap units (pixel `i`'s centre at `i`) is `(g + 1) * scale + shift`. Taps are sampled
/// nearest or bilinear; taps outside `bounds` read nothing and (with a fill) the result is
/// blended with `fill` by the weight of the taps inside, as torchvision's
/// `_apply_grid_transform` does.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Warp {
    /// Row-major 3x3 matrix; the last row is (0, 0, 1) for an affine warp.
    pub matrix: [f64; 9],
    /// Added to the output pixel's column and row.
    pub origin: [f64; 2],
    /// Added after the perspective division (-1 for a perspective, 0 for an affine warp).
    pub post: f64,
    /// Per axis: source tap position `= (g + 1) * scale + shift`.
    pub scale: [f64; 2],
    /// See `scale`.
    pub shift: [f64; 2],
    /// Source pixels that hold the image being warped: (x0, y0, x1, y1), exclusive ends.
    pub bounds: [i32; 4],
    /// Nearest taps rather than bilinear. The warp's own: the output's filter
    /// ([`OutputSpec::interp`]) serves the images of a batch without a warp, and a random
    /// warp that only some images draw must not change the batch's output.
    pub nearest: bool,
    /// Value of pixels mapped outside `bounds`, per RGB channel, 0..255, blended by the
    /// weight of the taps inside. `None` is torchvision's `fill=None`: taps outside read
    /// zero and nothing is blended.
    pub fill: Option<[f32; 3]>,
}

impl Warp {
    /// The parameters as the kernel and the CPU twin use them (f32): matrix, origin, post,
    /// scale, shift.
    pub fn to_f32(&self) -> ([f32; 9], [f32; 2], f32, [f32; 2], [f32; 2]) {
        (
            self.matrix.map(|v| v as f32),
            self.origin.map(|v| v as f32),
            self.post as f32,
            self.scale.map(|v| v as f32),
            self.shift.map(|v| v as f32),
        )
    }

    /// The same warp of a source region that starts at (`x`, `y`).
    pub fn shifted(mut self, x: u32, y: u32) -> Warp {
        self.shift[0] -= f64::from(x);
        self.shift[1] -= f64::from(y);
        let (xi, yi) = (x as i32, y as i32);
        self.bounds = [
            self.bounds[0] - xi,
            self.bounds[1] - yi,
            self.bounds[2] - xi,
            self.bounds[3] - yi,
        ];
        self
    }
}

impl FusedOp {
    /// The source pixels this op reads, as (x0, y0, x1, y1) with exclusive ends, in an image
    /// of `width` x `height`: a decoder can decode just that region (then run
    /// [`FusedOp::shifted`] by its origin on it). `None` with padding, whose window is
    /// computed differently.
    pub fn source_window(&self, width: u32, height: u32) -> Option<[u32; 4]> {
        if self.pad.is_some() || width == 0 || height == 0 {
            return None;
        }
        if let Some(w) = self.warp {
            // Every tap that reads the source is inside the bounds.
            let [x0, y0, x1, y1] = w.bounds.map(|v| v.max(0) as u32);
            return Some([x0, y0, x1.min(width), y1.min(height)]);
        }
        let ([x0, y0, x1, y1], ..) = self.windows(width, height);
        Some([x0 as u32, y0 as u32, x1 as u32, y1 as u32])
    }

    /// The same op on a region of the source that starts at (`x`, `y`) and holds its
    /// [`FusedOp::source_window`]: it reads the same pixels, and computes the same output
    /// up to floating-point rounding of the sample positions.
    pub fn shifted(mut self, x: u32, y: u32) -> FusedOp {
        self.crop.x -= x as f32;
        self.crop.y -= y as f32;
        self.warp = self.warp.map(|w| w.shifted(x, y));
        self
    }

    /// The tap window and the data region: (window x0, y0, x1, y1, valid x0, y0, x1, y1).
    pub(crate) fn windows(&self, width: u32, height: u32) -> ([i32; 4], [i32; 4], [f32; 3]) {
        if let Some(w) = self.warp {
            return (w.bounds, w.bounds, w.fill.unwrap_or([0.0; 3]));
        }
        match self.pad {
            Some(p) => (
                [p.x0, p.y0, p.x1, p.y1],
                [p.valid.0, p.valid.1, p.valid.2, p.valid.3],
                p.fill,
            ),
            None => {
                let (w, h) = (width as i32, height as i32);
                let c = self.crop;
                let x0 = (c.x.floor() as i32).clamp(0, w - 1);
                let y0 = (c.y.floor() as i32).clamp(0, h - 1);
                let x1 = ((c.x + c.w).ceil() as i32).clamp(x0 + 1, w);
                let y1 = ((c.y + c.h).ceil() as i32).clamp(y0 + 1, h);
                ([x0, y0, x1, y1], [0, 0, w, h], [0.0; 3])
            }
        }
    }

    /// The whole image, unflipped, unpadded, colours unchanged.
    pub fn full(width: u32, height: u32) -> FusedOp {
        FusedOp {
            crop: Crop::full(width, height),
            flip_h: false,
            flip_v: false,
            pad: None,
            colour: ColourOps::NONE,
            warp: None,
        }
    }
}

/// Resampling filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Interp {
    /// Nearest neighbour.
    Nearest,
    /// Bilinear with OpenCV's pixel-centre convention and replicated borders.
    #[default]
    Bilinear,
    /// Bicubic convolution (A = -0.75, OpenCV's INTER_CUBIC and torch's bicubic).
    Bicubic,
    /// Bilinear widened by the scale when shrinking (torch's `antialias=True`, PIL's
    /// triangle filter); the same as bilinear when enlarging.
    Antialias,
}

/// Memory layout of an output image.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Layout {
    /// Channels, rows, columns.
    #[default]
    Chw,
    /// Rows, columns, channels.
    Hwc,
}

/// Where one image of a batch of many sizes lands ([`FusedKernel::run_slots`](crate::FusedKernel::run_slots)):
/// a slot of `width` x `height` pixels at `offset` bytes into the output, with rows (and, in
/// CHW, planes) of the slot's size. The image fills the slot's top-left corner; the rest of
/// the slot is set to `fill`, an output value (after normalization), as torchvision's
/// detection models pad a batch.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Slot {
    /// Bytes from the start of the output.
    pub offset: usize,
    /// Pixels per row.
    pub width: u32,
    /// Rows.
    pub height: u32,
    /// Value of the slot's pixels outside the image.
    pub fill: f32,
}

impl Slot {
    /// The slot that is exactly image `k` of a batch of `spec` images.
    pub fn tight(spec: &OutputSpec, k: usize) -> Slot {
        Slot {
            offset: k * spec.image_bytes(),
            width: spec.width,
            height: spec.height,
            fill: 0.0,
        }
    }

    /// Bytes the slot spans for images of `spec`'s channels and type.
    pub fn bytes(&self, spec: &OutputSpec) -> usize {
        self.width as usize * self.height as usize * spec.channels() * spec.dtype.size()
    }
}

/// What the batch tensor holds for every image.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OutputSpec {
    /// Output width.
    pub width: u32,
    /// Output height.
    pub height: u32,
    /// Layout.
    pub layout: Layout,
    /// Element type.
    pub dtype: DType,
    /// Channels stored as B, G, R.
    pub bgr: bool,
    /// One grey channel (0.2989 R + 0.587 G + 0.114 B, torchvision's weights) instead of three.
    pub grey: bool,
    /// Filter.
    pub interp: Interp,
    /// Per output channel: `out = value * scale + bias`, `value` in 0..255.
    pub scale: [f32; 3],
    /// See `scale`.
    pub bias: [f32; 3],
}

impl OutputSpec {
    /// `(value / 255 - mean) / std` per channel, the torchvision convention.
    pub fn normalized(
        width: u32,
        height: u32,
        dtype: DType,
        mean: [f32; 3],
        std: [f32; 3],
    ) -> OutputSpec {
        OutputSpec {
            width,
            height,
            layout: Layout::Chw,
            dtype,
            bgr: false,
            grey: false,
            interp: Interp::Bilinear,
            scale: [0, 1, 2].map(|c| 1.0 / (255.0 * std[c])),
            bias: [0, 1, 2].map(|c| -mean[c] / std[c]),
        }
    }

    /// Packed u8 RGB (HWC) of `width` x `height`, values as they are (no scaling): a frame's
    /// RGB conversion alone, with nearest taps (at the source's own size, each output pixel
    /// reads exactly one source pixel).
    pub fn rgb8(width: u32, height: u32) -> OutputSpec {
        OutputSpec {
            width,
            height,
            layout: Layout::Hwc,
            dtype: DType::U8,
            bgr: false,
            grey: false,
            interp: Interp::Nearest,
            scale: [1.0; 3],
            bias: [0.0; 3],
        }
    }

    /// Channels per output pixel.
    pub fn channels(&self) -> usize {
        if self.grey { 1 } else { 3 }
    }

    /// Bytes of one image in the batch.
    pub fn image_bytes(&self) -> usize {
        self.width as usize * self.height as usize * self.channels() * self.dtype.size()
    }
}
