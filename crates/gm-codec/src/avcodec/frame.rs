//! A frame decoded on the CPU, as consumers see it: planes in host memory.

use crate::nvdec::{ColourInfo, FrameStatus, SurfaceFormat};

/// How chroma is sampled in a host frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChromaLayout {
    /// Luma only.
    Gray,
    /// Chroma at half width and half height.
    Yuv420,
    /// Chroma at half width.
    Yuv422,
    /// Chroma at full resolution.
    Yuv444,
}

impl ChromaLayout {
    /// Chroma plane size for a `width` x `height` frame (0 x 0 for grey).
    pub fn chroma_size(self, width: usize, height: usize) -> (usize, usize) {
        match self {
            ChromaLayout::Gray => (0, 0),
            ChromaLayout::Yuv420 => (width.div_ceil(2), height.div_ceil(2)),
            ChromaLayout::Yuv422 => (width.div_ceil(2), height),
            ChromaLayout::Yuv444 => (width, height),
        }
    }

    /// (layout, bits, full range implied) of an FFmpeg planar YUV or grey pixel format name;
    /// `None` for any other.
    pub(crate) fn of_pixel_format(name: &str) -> Option<(ChromaLayout, u8, bool)> {
        let (body, bits) = match name.strip_suffix("le") {
            Some(b) => {
                let at = b.rfind('p').map(|i| i + 1).unwrap_or(b.len());
                let at = if b.starts_with("gray") { 4 } else { at };
                (&b[..at], b[at..].parse::<u8>().ok()?)
            }
            None => (name, 8),
        };
        let (layout, jpeg) = match body {
            "gray" => (ChromaLayout::Gray, false),
            "yuv420p" => (ChromaLayout::Yuv420, false),
            "yuvj420p" => (ChromaLayout::Yuv420, true),
            "yuv422p" => (ChromaLayout::Yuv422, false),
            "yuvj422p" => (ChromaLayout::Yuv422, true),
            "yuv444p" => (ChromaLayout::Yuv444, false),
            "yuvj444p" => (ChromaLayout::Yuv444, true),
            _ => return None,
        };
        (8..=16).contains(&bits).then_some((layout, bits, jpeg))
    }

    /// FFmpeg's name of the planar format with this layout and depth (as `-pix_fmt` takes).
    pub fn pixel_format(self, bit_depth: u8) -> String {
        let base = match self {
            ChromaLayout::Gray => "gray",
            ChromaLayout::Yuv420 => "yuv420p",
            ChromaLayout::Yuv422 => "yuv422p",
            ChromaLayout::Yuv444 => "yuv444p",
        };
        if bit_depth > 8 {
            format!("{base}{bit_depth}le")
        } else {
            base.to_string()
        }
    }
}

/// Writes the samples of `u` and `v` alternately into `row` (`bps` bytes each, shifted left
/// by `shift` above 8 bits): one interleaved chroma row. Kept to plain zipped loops, which
/// the compiler vectorizes: packing is on the CPU decoders' path for every frame delivered.
fn interleave(row: &mut [u8], u: &[u8], v: &[u8], bps: usize, shift: u32) {
    if bps == 1 {
        for ((d, &a), &b) in row.chunks_exact_mut(2).zip(u).zip(v) {
            d[0] = a;
            d[1] = b;
        }
        return;
    }
    for ((d, a), b) in row
        .chunks_exact_mut(4)
        .zip(u.chunks_exact(2))
        .zip(v.chunks_exact(2))
    {
        d[..2].copy_from_slice(&widen(a, shift));
        d[2..].copy_from_slice(&widen(b, shift));
    }
}

/// A 16-bit little-endian sample with its value moved to the high bits (P016's layout).
fn widen(s: &[u8], shift: u32) -> [u8; 2] {
    (u16::from_le_bytes([s[0], s[1]]) << shift).to_le_bytes()
}

/// A requested frame decoded on the CPU, in the decoder's memory while the consumer runs.
#[derive(Debug)]
pub struct HostFrame<'a> {
    /// Presentation index in the video.
    pub frame: u32,
    /// Presentation time (ticks of the track timescale).
    pub pts: i64,
    /// Positions in the request list that asked for this frame.
    pub slots: &'a [u32],
    /// Width (the stream's cropping applied).
    pub width: u32,
    /// Height.
    pub height: u32,
    /// Chroma sampling.
    pub layout: ChromaLayout,
    /// Bits per sample; above 8, samples are 16-bit little-endian with the value in the low
    /// bits (FFmpeg's `...10le`).
    pub bit_depth: u8,
    /// Y, U and V planes (U and V empty for grey), each `strides[i]` bytes a row.
    pub planes: [&'a [u8]; 3],
    /// Bytes from one row to the next, per plane.
    pub strides: [usize; 3],
    /// Colour signalling.
    pub colour: ColourInfo,
    /// Whether the decoder reported errors for this picture.
    pub status: FrameStatus,
}

impl HostFrame<'_> {
    fn bytes_per_sample(&self) -> usize {
        if self.bit_depth > 8 { 2 } else { 1 }
    }

    /// The planes packed without padding in FFmpeg's own layout for this frame
    /// ([`ChromaLayout::pixel_format`]): the bytes whose MD5 is ffmpeg's framemd5 with that
    /// `-pix_fmt`.
    pub fn to_planar(&self) -> Vec<u8> {
        let (w, h) = (self.width as usize, self.height as usize);
        let (cw, ch) = self.layout.chroma_size(w, h);
        let bps = self.bytes_per_sample();
        let mut out = Vec::with_capacity((w * h + 2 * cw * ch) * bps);
        let sizes = [(w, h), (cw, ch), (cw, ch)];
        for (i, &(pw, ph)) in sizes.iter().enumerate() {
            for y in 0..ph {
                let at = y * self.strides[i];
                out.extend_from_slice(&self.planes[i][at..at + pw * bps]);
            }
        }
        out
    }

    /// Chroma subsampling of the surface layout [`HostFrame::write_semi_planar`] writes, as
    /// shifts of (x, y): grey is written as 4:2:0 with neutral chroma.
    pub fn chroma_shifts(&self) -> (u32, u32) {
        match self.layout {
            ChromaLayout::Gray | ChromaLayout::Yuv420 => (1, 1),
            ChromaLayout::Yuv422 => (1, 0),
            ChromaLayout::Yuv444 => (0, 0),
        }
    }

    /// The surface layout [`HostFrame::write_semi_planar`] writes (what the CPU route stages
    /// and the twins read): NV12/NV16/NV24, or P016/P216/P416 above 8 bits.
    pub fn surface_format(&self) -> SurfaceFormat {
        let wide = self.bit_depth > 8;
        match (self.chroma_shifts(), wide) {
            ((1, 0), false) => SurfaceFormat::Nv16,
            ((1, 0), true) => SurfaceFormat::P216,
            ((0, 0), false) => SurfaceFormat::Nv24,
            ((0, 0), true) => SurfaceFormat::P416,
            (_, false) => SurfaceFormat::Nv12,
            (_, true) => SurfaceFormat::P016,
        }
    }

    /// Writes the frame as NVDEC lays out surfaces (NV12, or P016 with the value in the high
    /// bits; for 4:2:2 and 4:4:4 frames the same with chroma at their resolution, NV16/P216
    /// and NV24/P416) into `out`: luma rows then interleaved chroma rows, `pitch` bytes apart,
    /// the chroma at row `height` rounded up to even. Grey gets neutral 4:2:0 chroma. `out`
    /// must hold [`HostFrame::semi_planar_bytes`]; `None` when it or `pitch` is too small.
    pub fn write_semi_planar(&self, out: &mut [u8], pitch: usize) -> Option<()> {
        let (w, h) = (self.width as usize, self.height as usize);
        let bps = self.bytes_per_sample();
        let (sx, sy) = self.chroma_shifts();
        let (cw, chroma_rows) = (w.div_ceil(1 << sx), h.div_ceil(1 << sy));
        let chroma_at = pitch * h.next_multiple_of(2);
        if out.len() < chroma_at + pitch * chroma_rows || pitch < self.semi_planar_pitch() {
            return None;
        }
        let shift = 16 - u32::from(self.bit_depth);
        for y in 0..h {
            let src = self.planes[0].get(y * self.strides[0]..y * self.strides[0] + w * bps)?;
            let dst = &mut out[y * pitch..y * pitch + w * bps];
            if bps == 1 {
                dst.copy_from_slice(src);
            } else {
                for (d, s) in dst.chunks_exact_mut(2).zip(src.chunks_exact(2)) {
                    d.copy_from_slice(&widen(s, shift));
                }
            }
        }
        let neutral = 1u16 << (self.bit_depth - 1);
        for y in 0..chroma_rows {
            let row = &mut out[chroma_at + y * pitch..chroma_at + y * pitch + 2 * cw * bps];
            if self.layout == ChromaLayout::Gray {
                let n = (neutral << shift).to_le_bytes();
                for d in row.chunks_exact_mut(bps) {
                    d.copy_from_slice(&n[2 - bps..]);
                }
                continue;
            }
            let plane = |i: usize| {
                let at = y * self.strides[i];
                self.planes[i].get(at..at + cw * bps)
            };
            interleave(row, plane(1)?, plane(2)?, bps, shift);
        }
        Some(())
    }

    /// Bytes [`HostFrame::write_semi_planar`] writes at this pitch.
    pub fn semi_planar_bytes(&self, pitch: usize) -> usize {
        let h = self.height as usize;
        pitch * (h.next_multiple_of(2) + h.div_ceil(1 << self.chroma_shifts().1))
    }

    /// The smallest pitch [`HostFrame::write_semi_planar`] accepts: the wider of the luma row
    /// and the interleaved chroma row.
    pub fn semi_planar_pitch(&self) -> usize {
        let w = self.width as usize;
        let chroma_row = 2 * w.div_ceil(1 << self.chroma_shifts().0);
        chroma_row.max(w) * self.bytes_per_sample()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pixel_format_names_parse_as_ffmpeg_spells_them() {
        let p = ChromaLayout::of_pixel_format;
        assert_eq!(p("yuv420p"), Some((ChromaLayout::Yuv420, 8, false)));
        assert_eq!(p("yuvj420p"), Some((ChromaLayout::Yuv420, 8, true)));
        assert_eq!(p("yuv420p10le"), Some((ChromaLayout::Yuv420, 10, false)));
        assert_eq!(p("yuv444p12le"), Some((ChromaLayout::Yuv444, 12, false)));
        assert_eq!(p("gray"), Some((ChromaLayout::Gray, 8, false)));
        assert_eq!(p("gray10le"), Some((ChromaLayout::Gray, 10, false)));
        assert_eq!(p("nv12"), None);
        assert_eq!(p("yuv420p10be"), None);
        assert_eq!(p("rgb24"), None);
        for (layout, bits) in [(ChromaLayout::Yuv422, 10), (ChromaLayout::Gray, 8)] {
            let name = layout.pixel_format(bits);
            assert_eq!(p(&name), Some((layout, bits, false)), "{name}");
        }
    }

    /// Sample `(x, y)` of `plane` as NVDEC lays it out: the value in the high bits of 16
    /// above 8 bits.
    fn surface_sample(f: &HostFrame<'_>, plane: usize, x: usize, y: usize) -> u16 {
        let bps = f.bytes_per_sample();
        let at = y * f.strides[plane] + x * bps;
        let p = f.planes[plane];
        if bps == 1 {
            u16::from(p[at])
        } else {
            u16::from_le_bytes([p[at], p[at + 1]]) << (16 - u32::from(f.bit_depth))
        }
    }

    proptest::proptest! {
        /// Every layout and depth packs into the surface sample for sample, at any pitch,
        /// from planes with row padding: checked against the layout's definition read one
        /// sample at a time.
        #[test]
        fn semi_planar_packing_places_every_sample(
            w in 1usize..40, h in 1usize..12, pad in 0usize..9, extra in 0usize..70,
            layout in proptest::sample::select(vec![
                ChromaLayout::Gray, ChromaLayout::Yuv420, ChromaLayout::Yuv422,
                ChromaLayout::Yuv444,
            ]),
            bit_depth in proptest::sample::select(vec![8u8, 10, 12]),
            seed in 0u64..1000,
        ) {
            let bps = if bit_depth > 8 { 2 } else { 1 };
            let (cw, ch) = layout.chroma_size(w, h);
            let strides = [w * bps + pad, cw * bps + pad, cw * bps + pad];
            let max = (1u32 << bit_depth) - 1;
            let fill = |n: usize, k: u64| -> Vec<u8> {
                (0..n / bps)
                    .map(|i| ((i as u64 * 2654435761 + k * 97 + seed) % u64::from(max + 1)) as u16)
                    .flat_map(|v| v.to_le_bytes().into_iter().take(bps))
                    .collect()
            };
            let planes = [fill(strides[0] * h, 0), fill(strides[1] * ch, 1), fill(strides[2] * ch, 2)];
            let f = HostFrame {
                frame: 0, pts: 0, slots: &[], width: w as u32, height: h as u32, layout,
                bit_depth, planes: [&planes[0], &planes[1], &planes[2]], strides,
                colour: ColourInfo::default(), status: FrameStatus::Ok,
            };
            let pitch = f.semi_planar_pitch() + extra;
            let mut out = vec![0xA5u8; f.semi_planar_bytes(pitch)];
            proptest::prop_assert!(f.write_semi_planar(&mut out, pitch).is_some());
            let read = |at: usize| if bps == 1 {
                u16::from(out[at])
            } else {
                u16::from_le_bytes([out[at], out[at + 1]])
            };
            for y in 0..h {
                for x in 0..w {
                    proptest::prop_assert_eq!(read(y * pitch + x * bps), surface_sample(&f, 0, x, y));
                }
            }
            let (sx, sy) = f.chroma_shifts();
            let chroma_at = pitch * h.next_multiple_of(2);
            let neutral = (1u16 << (bit_depth - 1)) << if bps == 1 { 0 } else { 16 - u32::from(bit_depth) };
            for y in 0..h.div_ceil(1 << sy) {
                for x in 0..w.div_ceil(1 << sx) {
                    let at = chroma_at + y * pitch + 2 * x * bps;
                    let want = if layout == ChromaLayout::Gray {
                        (neutral, neutral)
                    } else {
                        (surface_sample(&f, 1, x, y), surface_sample(&f, 2, x, y))
                    };
                    proptest::prop_assert_eq!((read(at), read(at + bps)), want, "chroma ({}, {})", x, y);
                }
            }
            proptest::prop_assert!(f.write_semi_planar(&mut out[..pitch], pitch).is_none());
        }
    }
}
