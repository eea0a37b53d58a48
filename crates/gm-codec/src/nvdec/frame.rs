//! A decoded frame as consumers see it: a mapped NVDEC output surface.

use gm_cuda::{DevicePtr, Stream};

use crate::error::Result;

/// Layout of a mapped surface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SurfaceFormat {
    /// 8-bit: a luma plane, then interleaved U/V at half resolution.
    Nv12,
    /// 16 bits a sample, value in the high bits (10-bit streams: sample << 6), NV12 layout.
    P016,
    /// 8-bit 4:2:2: a luma plane, then interleaved U/V at half width and full height (frames
    /// the CPU decoder staged; NVDEC itself gives none).
    Nv16,
    /// P016's samples in NV16's layout.
    P216,
    /// 8-bit 4:4:4: a luma plane, then interleaved U/V at full resolution (rows twice the
    /// luma row's bytes; the pitch fits them). CPU-decoded frames only.
    Nv24,
    /// P016's samples in NV24's layout.
    P416,
}

impl SurfaceFormat {
    /// Chroma subsampling as shifts of (x, y): (1, 1) 4:2:0, (1, 0) 4:2:2, (0, 0) 4:4:4.
    pub fn chroma_shifts(self) -> (u32, u32) {
        match self {
            SurfaceFormat::Nv12 | SurfaceFormat::P016 => (1, 1),
            SurfaceFormat::Nv16 | SurfaceFormat::P216 => (1, 0),
            SurfaceFormat::Nv24 | SurfaceFormat::P416 => (0, 0),
        }
    }

    /// Bytes a sample: 1, or 2 for the P formats.
    pub fn bytes_per_sample(self) -> usize {
        match self {
            SurfaceFormat::Nv12 | SurfaceFormat::Nv16 | SurfaceFormat::Nv24 => 1,
            SurfaceFormat::P016 | SurfaceFormat::P216 | SurfaceFormat::P416 => 2,
        }
    }
}

/// Colour signalling of the stream (ISO/IEC 23091-4 code points), for colour conversion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ColourInfo {
    /// `matrix_coefficients` (1 BT.709, 5/6 BT.601, 9 BT.2020, 2 unspecified).
    pub matrix_coefficients: u8,
    /// Full-range (0-255) rather than limited (16-235) samples.
    pub full_range: bool,
    /// Where chroma samples sit, as ffmpeg's decoders report it (the demuxer's
    /// [`PacketSource::chroma_location`](gm_demux::PacketSource::chroma_location)).
    pub chroma_location: gm_demux::ChromaLocation,
}

/// What the decoder said of the picture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameStatus {
    /// Decoded without reported errors.
    Ok,
    /// The decoder found errors and concealed them: not the exact frame.
    Concealed,
    /// The decoder reported an error.
    Error,
}

/// A requested frame, mapped in device memory while the consumer runs.
#[derive(Debug)]
pub struct DecodedFrame<'a> {
    /// Presentation index in the video.
    pub frame: u32,
    /// Presentation time (ticks of the track timescale).
    pub pts: i64,
    /// Positions in the request list that asked for this frame.
    pub slots: &'a [u32],
    /// Luma plane.
    pub luma: DevicePtr,
    /// Interleaved chroma plane.
    pub chroma: DevicePtr,
    /// Bytes from one row to the next, both planes.
    pub pitch: usize,
    /// Display width (the stream's cropping applied).
    pub width: u32,
    /// Display height.
    pub height: u32,
    /// Sample layout.
    pub format: SurfaceFormat,
    /// Bits per sample of the stream.
    pub bit_depth: u8,
    /// Colour signalling.
    pub colour: ColourInfo,
    /// Whether the decoder reported errors for this picture.
    pub status: FrameStatus,
    /// The stream the surface is ready on; enqueue the consumer's work here.
    pub stream: &'a Stream,
}

impl DecodedFrame<'_> {
    /// The frame in ffmpeg's planar layout for its sampling (`yuv420p`, `yuv422p`,
    /// `yuv444p`; `...10le` above 8 bits, value in the low bits), copied to the host: the
    /// bytes whose MD5 is ffmpeg's framemd5. For tests and tools; it waits for the stream.
    pub fn to_planar(&self) -> Result<Vec<u8>> {
        let bps = self.format.bytes_per_sample();
        let (sx, sy) = self.format.chroma_shifts();
        let (w, h) = (self.width as usize, self.height as usize);
        let (cw, chh) = (w.div_ceil(1 << sx), h.div_ceil(1 << sy));
        let mut luma = vec![0u8; w * h * bps];
        let mut uv = vec![0u8; cw * 2 * chh * bps];
        // SAFETY: the surface is mapped for the duration of the consumer call that has `self`,
        // and holds `h` luma rows and `chh` chroma rows of these widths, `pitch` apart.
        unsafe {
            self.stream
                .download_2d(self.luma, self.pitch, w * bps, h, &mut luma)?;
            self.stream
                .download_2d(self.chroma, self.pitch, cw * 2 * bps, chh, &mut uv)?;
        }
        let mut out = Vec::with_capacity(luma.len() + uv.len());
        match bps {
            1 => {
                out.extend_from_slice(&luma);
                out.extend(uv.iter().step_by(2));
                out.extend(uv.iter().skip(1).step_by(2));
            }
            _ => {
                let shift = 16 - u32::from(self.bit_depth);
                let low = |b: &[u8]| (u16::from_le_bytes([b[0], b[1]]) >> shift).to_le_bytes();
                out.extend(luma.chunks(2).flat_map(low));
                out.extend(uv.chunks(4).flat_map(|p| low(&p[..2])));
                out.extend(uv.chunks(4).flat_map(|p| low(&p[2..])));
            }
        }
        Ok(out)
    }
}
