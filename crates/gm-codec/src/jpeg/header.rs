//! JPEG headers, read without decoding: frame type, size, components and their sampling,
//! restart interval, Adobe colour transform and EXIF orientation. Enough to decide which
//! decoder takes an image and to refuse it before any allocation.

/// How the image's scans are coded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coding {
    /// SOF0: baseline sequential Huffman.
    Baseline,
    /// SOF1: extended sequential Huffman.
    Extended,
    /// SOF2: progressive Huffman.
    Progressive,
    /// SOF3: lossless.
    Lossless,
    /// SOF9 (sequential) or SOF10 (progressive): arithmetic coding, which only libjpeg-turbo
    /// decodes here.
    Arithmetic {
        /// SOF10.
        progressive: bool,
    },
    /// SOF5-SOF7, SOF11 and SOF13-SOF15: hierarchical (differential) frames or lossless
    /// arithmetic coding, which no decoder here reads (nor libjpeg-turbo 2).
    Other(u8),
}

/// One colour component of the frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Component {
    /// Component identifier.
    pub id: u8,
    /// Horizontal sampling factor.
    pub h: u8,
    /// Vertical sampling factor.
    pub v: u8,
}

/// Chroma subsampling of a three-component image (J:a:b notation), or another layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subsampling {
    /// One component.
    Grey,
    /// No subsampling.
    S444,
    /// Chroma halved horizontally.
    S422,
    /// Chroma halved in both directions.
    S420,
    /// Chroma halved vertically.
    S440,
    /// Chroma quartered horizontally.
    S411,
    /// Chroma quartered horizontally and halved vertically.
    S410,
    /// Anything else (four components, unusual factors).
    Other,
}

/// What the header says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JpegInfo {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Bits per sample (8 or 12; 16 for lossless).
    pub precision: u8,
    /// Frame coding.
    pub coding: Coding,
    /// Components in frame order.
    pub components: Vec<Component>,
    /// Restart interval in MCUs (0: none).
    pub restart_interval: u16,
    /// The Adobe APP14 colour transform, when present (0 none/CMYK, 1 YCbCr, 2 YCCK).
    pub adobe_transform: Option<u8>,
    /// EXIF orientation, 1 (as stored) to 8.
    pub orientation: u8,
    /// Byte offset of the first start-of-scan marker.
    pub scan_offset: usize,
    /// Components in the first scan: fewer than the frame's when the image is coded as one
    /// scan per component (non-interleaved), as some encoders write baseline files.
    pub first_scan_components: u8,
    /// Runs of extraneous bytes before markers in the header (junk or padding that libjpeg
    /// skips with a warning), as byte ranges of the input; empty for a well-formed file.
    pub extraneous: Vec<std::ops::Range<usize>>,
}

impl JpegInfo {
    /// The largest horizontal and vertical sampling factors: an MCU is 8 times these pixels
    /// wide and high.
    pub fn max_sampling(&self) -> (u8, u8) {
        self.components
            .iter()
            .fold((1, 1), |(h, v), c| (h.max(c.h), v.max(c.v)))
    }

    /// Whether the first component (luma, in YCbCr) is sampled at least as finely as every
    /// other in both directions, and every component's factors divide the largest: the
    /// layouts zune-jpeg and nvJPEG assume. JPEG allows others (Y 1x1 with chroma 2x2 is
    /// valid, and libjpeg-turbo decodes it); they go to libjpeg-turbo, since the faster
    /// decoders turn them into wrong pixels without an error.
    pub fn luma_sampled_finest(&self) -> bool {
        let (h, v) = self.max_sampling();
        self.components
            .first()
            .is_some_and(|y| (y.h, y.v) == (h, v))
            && self
                .components
                .iter()
                .all(|c| c.h > 0 && c.v > 0 && h % c.h == 0 && v % c.v == 0)
    }

    /// The subsampling of the components.
    pub fn subsampling(&self) -> Subsampling {
        match self.components.as_slice() {
            [_] => Subsampling::Grey,
            [y, cb, cr] if cb.h == cr.h && cb.v == cr.v && cb.h > 0 && cb.v > 0 => {
                if y.h % cb.h != 0 || y.v % cb.v != 0 {
                    return Subsampling::Other;
                }
                match (y.h / cb.h, y.v / cb.v) {
                    (1, 1) => Subsampling::S444,
                    (2, 1) => Subsampling::S422,
                    (2, 2) => Subsampling::S420,
                    (1, 2) => Subsampling::S440,
                    (4, 1) => Subsampling::S411,
                    (4, 2) => Subsampling::S410,
                    _ => Subsampling::Other,
                }
            }
            _ => Subsampling::Other,
        }
    }

    /// Whether `data` (the file this header came from) has an end-of-image marker after its
    /// first scan. Entropy-coded data cannot contain one (0xFF is stuffed), so a file without
    /// it was cut short; one inside an EXIF thumbnail, before the scan, does not count.
    pub fn has_end_marker(&self, data: &[u8]) -> bool {
        data.get(self.scan_offset..)
            .is_some_and(|scan| scan.windows(2).rev().any(|w| w == [0xFF, 0xD9]))
    }

    /// Width and height once EXIF orientation `o` is applied (5-8 swap them).
    pub fn oriented_size(&self, apply_orientation: bool) -> (u32, u32) {
        if apply_orientation && matches!(self.orientation, 5..=8) {
            (self.height, self.width)
        } else {
            (self.width, self.height)
        }
    }

    /// Whether a three-component image is stored as RGB rather than YCbCr (an Adobe transform
    /// of 0, or component ids 'R', 'G', 'B').
    pub fn is_rgb(&self) -> bool {
        self.components.len() == 3
            && (self.adobe_transform == Some(0)
                || self.components.iter().map(|c| c.id).eq([b'R', b'G', b'B']))
    }
}

/// Why a header could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HeaderError {
    /// The bytes do not start with a JPEG start-of-image marker.
    #[error("not a JPEG (no start-of-image marker)")]
    NotJpeg,
    /// The data ends inside the header.
    #[error("truncated JPEG header")]
    Truncated,
    /// A malformed segment.
    #[error("malformed JPEG header: {0}")]
    Malformed(String),
}

fn be16(b: &[u8], at: usize) -> Result<u16, HeaderError> {
    b.get(at..at + 2)
        .map(|s| u16::from_be_bytes([s[0], s[1]]))
        .ok_or(HeaderError::Truncated)
}

/// Reads the header of `data` up to the first scan.
pub fn parse(data: &[u8]) -> Result<JpegInfo, HeaderError> {
    if data.len() < 2 || data[0] != 0xFF || data[1] != 0xD8 {
        return Err(HeaderError::NotJpeg);
    }
    let mut pos = 2;
    let mut frame: Option<Frame> = None;
    let mut restart_interval = 0;
    let mut adobe_transform = None;
    let mut orientation = 1;
    let mut extraneous = Vec::new();
    loop {
        // Markers may be preceded by any number of 0xFF fill bytes.
        while data.get(pos) == Some(&0xFF) && data.get(pos + 1) == Some(&0xFF) {
            pos += 1;
        }
        // Junk, or an 0xFF followed by 0x00 (a stuffed byte, not a marker): libjpeg discards
        // both up to the next marker with an "extraneous bytes" warning.
        if data.get(pos).is_some_and(|&b| b != 0xFF) || data.get(pos + 1) == Some(&0x00) {
            let start = pos;
            pos = next_marker(data, pos).ok_or(HeaderError::Truncated)?;
            extraneous.push(start..pos);
            continue;
        }
        let (Some(_), Some(&marker)) = (data.get(pos), data.get(pos + 1)) else {
            return Err(HeaderError::Truncated);
        };
        pos += 2;
        if matches!(marker, 0x01 | 0xD0..=0xD7) {
            continue;
        }
        if marker == 0xD9 {
            return Err(HeaderError::Malformed(
                "end of image before any scan".into(),
            ));
        }
        let mut len = usize::from(be16(data, pos)?);
        if len < 2 {
            // libjpeg skips nothing of an APPn or comment segment that says it is shorter
            // than its own length field, and reads on after the field.
            if !matches!(marker, 0xE0..=0xEF | 0xFE) {
                return Err(HeaderError::Malformed(format!("segment length {len}")));
            }
            len = 2;
        }
        let seg = data.get(pos + 2..pos + len).ok_or(HeaderError::Truncated)?;
        match marker {
            0xC0..=0xCF if !matches!(marker, 0xC4 | 0xC8 | 0xCC) => {
                if frame.is_some() {
                    return Err(HeaderError::Malformed("two frame headers".into()));
                }
                frame = Some(read_frame(marker, seg)?);
            }
            0xDD => restart_interval = be16(seg, 0)?,
            0xEE if seg.starts_with(b"Adobe") && seg.len() >= 12 => adobe_transform = Some(seg[11]),
            0xE1 if seg.starts_with(b"Exif\0\0") => {
                if let Some(o) = exif_orientation(&seg[6..]) {
                    orientation = o;
                }
            }
            0xDA => {
                let frame = frame.ok_or_else(|| {
                    HeaderError::Malformed("a scan before the frame header".into())
                })?;
                if frame.width == 0 || frame.height == 0 {
                    return Err(HeaderError::Malformed(format!(
                        "image size {}x{}",
                        frame.width, frame.height
                    )));
                }
                return Ok(JpegInfo {
                    width: frame.width,
                    height: frame.height,
                    precision: frame.precision,
                    coding: frame.coding,
                    components: frame.components,
                    restart_interval,
                    adobe_transform,
                    orientation,
                    scan_offset: pos - 2,
                    first_scan_components: seg.first().copied().unwrap_or(0),
                    extraneous,
                });
            }
            _ => {}
        }
        pos += len;
    }
}

/// Where the next marker starts at or after `pos` (its last fill byte): libjpeg's rule for
/// junk between segments, skipping bytes up to a 0xFF that is followed by a marker code (not
/// a stuffed 0x00).
fn next_marker(data: &[u8], mut pos: usize) -> Option<usize> {
    loop {
        pos += data.get(pos..)?.iter().position(|&b| b == 0xFF)?;
        while data.get(pos + 1) == Some(&0xFF) {
            pos += 1;
        }
        match data.get(pos + 1)? {
            0x00 => pos += 2,
            _ => return Some(pos),
        }
    }
}

impl JpegInfo {
    /// `data` without its extraneous header bytes, for decoders that refuse them; borrowed
    /// when there are none.
    pub fn without_extraneous<'a>(&self, data: &'a [u8]) -> std::borrow::Cow<'a, [u8]> {
        if self.extraneous.is_empty() {
            return std::borrow::Cow::Borrowed(data);
        }
        let mut out = Vec::with_capacity(data.len());
        let mut at = 0;
        for run in &self.extraneous {
            out.extend_from_slice(data.get(at..run.start).unwrap_or_default());
            at = run.end;
        }
        out.extend_from_slice(data.get(at..).unwrap_or_default());
        std::borrow::Cow::Owned(out)
    }
}

/// What a frame header (SOFn) says.
struct Frame {
    coding: Coding,
    precision: u8,
    width: u32,
    height: u32,
    components: Vec<Component>,
}

/// The frame header `seg` of marker `marker` (0xC0 to 0xCF, not DHT/JPG/DAC).
fn read_frame(marker: u8, seg: &[u8]) -> Result<Frame, HeaderError> {
    if seg.len() < 6 {
        return Err(HeaderError::Truncated);
    }
    let precision = seg[0];
    let height = u32::from(be16(seg, 1)?);
    let width = u32::from(be16(seg, 3)?);
    let n = usize::from(seg[5]);
    if n == 0 || seg.len() < 6 + 3 * n {
        return Err(HeaderError::Malformed(format!(
            "{n} components in a {}-byte frame header",
            seg.len()
        )));
    }
    let components = (0..n)
        .map(|k| {
            let c = &seg[6 + 3 * k..9 + 3 * k];
            Component {
                id: c[0],
                h: c[1] >> 4,
                v: c[1] & 15,
            }
        })
        .collect();
    let coding = match marker {
        0xC0 => Coding::Baseline,
        0xC1 => Coding::Extended,
        0xC2 => Coding::Progressive,
        0xC3 => Coding::Lossless,
        0xC9 => Coding::Arithmetic { progressive: false },
        0xCA => Coding::Arithmetic { progressive: true },
        m => Coding::Other(m),
    };
    Ok(Frame {
        coding,
        precision,
        width,
        height,
        components,
    })
}

/// The orientation tag (0x0112) of IFD0 of a TIFF-structured EXIF block; invalid values are
/// ignored (treated as absent).
fn exif_orientation(tiff: &[u8]) -> Option<u8> {
    let le = match tiff.get(0..2)? {
        b"II" => true,
        b"MM" => false,
        _ => return None,
    };
    let u16_at = |at: usize| {
        tiff.get(at..at + 2).map(|b| {
            if le {
                u16::from_le_bytes([b[0], b[1]])
            } else {
                u16::from_be_bytes([b[0], b[1]])
            }
        })
    };
    let u32_at = |at: usize| {
        tiff.get(at..at + 4).map(|b| {
            if le {
                u32::from_le_bytes([b[0], b[1], b[2], b[3]])
            } else {
                u32::from_be_bytes([b[0], b[1], b[2], b[3]])
            }
        })
    };
    let ifd = usize::try_from(u32_at(4)?).ok()?;
    let count = usize::from(u16_at(ifd)?);
    for k in 0..count.min(512) {
        let e = ifd.checked_add(2 + 12 * k)?;
        if u16_at(e)? == 0x0112 {
            let v = u16_at(e + 8)?;
            return (1..=8).contains(&v).then_some(v as u8);
        }
    }
    None
}

/// Whether the data from the first scan of `info`'s image on breaks the JPEG syntax in a way
/// libjpeg-turbo recovers from with a warning, or stops on: junk between segments, a marker
/// that cannot appear inside entropy-coded data, restart markers out of order, a segment
/// running past the end, or scan parameters the frame's coding does not allow. Each decoder
/// conceals such damage its own way (or accepts what libjpeg refuses), so the CPU path hands
/// these files to libjpeg-turbo, the reference. One pass over the bytes, no decoding; data cut
/// short (no end-of-image marker) is not counted here.
pub fn scan_damaged(data: &[u8], info: &JpegInfo) -> bool {
    // Lossless and hierarchical scans use these fields otherwise; libjpeg-turbo 2 reads neither.
    let progressive = match info.coding {
        Coding::Baseline | Coding::Extended | Coding::Arithmetic { progressive: false } => {
            Some(false)
        }
        Coding::Progressive | Coding::Arithmetic { progressive: true } => Some(true),
        Coding::Lossless | Coding::Other(_) => None,
    };
    let mut pos = info.scan_offset;
    loop {
        // At a marker: 0xFF, fill bytes, the code; or at the end of data cut short.
        if pos >= data.len() {
            return false;
        }
        if data.get(pos) != Some(&0xFF) {
            return true;
        }
        while data.get(pos + 1) == Some(&0xFF) {
            pos += 1;
        }
        let Some(&marker) = data.get(pos + 1) else {
            return false;
        };
        pos += 2;
        match marker {
            0xD9 => return false,
            0xC0..=0xCF | 0xDA..=0xDF | 0xE0..=0xEF | 0xFE => {
                let Ok(len) = be16(data, pos) else {
                    return false;
                };
                let len = usize::from(len);
                if len < 2 || pos + len > data.len() {
                    return true;
                }
                pos += len;
                if marker == 0xDA {
                    let seg = data.get(pos + 2 - len..pos).unwrap_or_default();
                    if progressive.is_some_and(|p| scan_parameters_bad(seg, p)) {
                        return true;
                    }
                    match entropy_end(data, pos) {
                        Some(end) => pos = end,
                        None => return true,
                    }
                }
            }
            _ => return true,
        }
    }
}

/// Whether the spectral selection and successive approximation of scan header `seg` (SOS
/// without its length) break libjpeg's rules: a sequential scan must cover all 64
/// coefficients at full precision (libjpeg warns and decodes it as such); a progressive one
/// must be a DC scan (Ss = Se = 0) or a one-component AC band within 1..=63, refine one bit
/// at a time (Al = Ah - 1) and shift by at most 13 (libjpeg stops).
fn scan_parameters_bad(seg: &[u8], progressive: bool) -> bool {
    let n = usize::from(seg.first().copied().unwrap_or(0));
    let Some(&[ss, se, a]) = seg.get(1 + 2 * n..4 + 2 * n) else {
        return true;
    };
    let (ah, al) = (a >> 4, a & 0x0F);
    if !progressive {
        return (ss, se, ah, al) != (0, 63, 0, 0);
    }
    let band_bad = if ss == 0 {
        se != 0
    } else {
        ss > se || se > 63 || n != 1
    };
    band_bad || (ah != 0 && al + 1 != ah) || al > 13
}

/// Where the entropy-coded data starting at `pos` ends (at the marker after it, or at the end
/// of the data); `None` when a marker inside it is not a restart marker in sequence.
fn entropy_end(data: &[u8], mut pos: usize) -> Option<usize> {
    let mut next_rst = 0xD0u8;
    loop {
        let Some(at) = data.get(pos..).and_then(|d| memchr::memchr(0xFF, d)) else {
            return Some(data.len());
        };
        pos += at;
        match data.get(pos + 1) {
            None => return Some(data.len()),
            Some(0x00) => pos += 2,
            Some(0xFF) => pos += 1,
            Some(&m @ 0xD0..=0xD7) => {
                if m != next_rst {
                    return None;
                }
                next_rst = if m == 0xD7 { 0xD0 } else { m + 1 };
                pos += 2;
            }
            Some(_) => return Some(pos),
        }
    }
}
