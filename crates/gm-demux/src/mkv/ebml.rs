//! EBML primitives: variable-length integers, element headers, child iteration over bytes in
//! memory, and positioned reads of element headers and small elements from a [`ByteSource`].
//!
//! Every header is checked against its parent's end (which is itself inside the file), so
//! nothing is read or allocated by a declared size beyond what the file holds.

use std::path::Path;

use super::ids;
use crate::error::{DemuxError, ParseError, ParseResult, Result, invalid};
use crate::source::ByteSource;

/// Bytes read at once for an element header and, for blocks, the block header after it:
/// ID (at most 4) + size (8) + track number (8) + timestamp (2) + flags (1) = 23.
pub(crate) const PEEK: usize = 32;

/// Why a variable-length integer could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum VintError {
    /// The bytes end inside it.
    Short,
    /// The first byte is 0x00: longer than 8 bytes.
    NoMarker,
    /// An element ID longer than 4 bytes.
    TooLong,
}

/// A variable-length integer read from the start of some bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Vint {
    /// The value, without the length marker.
    pub value: u64,
    /// Its length in bytes (1-8).
    pub len: usize,
    /// Whether every value bit is one (an unknown size, when it is an element's size).
    pub all_ones: bool,
}

/// Reads the unsigned variable-length integer at the start of `bytes`.
pub(crate) fn vint(bytes: &[u8]) -> std::result::Result<Vint, VintError> {
    let first = *bytes.first().ok_or(VintError::Short)?;
    if first == 0 {
        return Err(VintError::NoMarker);
    }
    let len = first.leading_zeros() as usize + 1;
    let rest = bytes.get(1..len).ok_or(VintError::Short)?;
    let mut value = u64::from(first) & (0xFF >> len);
    for &b in rest {
        value = (value << 8) | u64::from(b);
    }
    let all_ones = value == (1u64 << (7 * len)) - 1;
    Ok(Vint {
        value,
        len,
        all_ones,
    })
}

/// Reads the element ID at the start of `bytes`, marker bits kept (as [`ids`] writes them).
pub(crate) fn element_id(bytes: &[u8]) -> std::result::Result<(u32, usize), VintError> {
    let first = *bytes.first().ok_or(VintError::Short)?;
    if first < 0x10 {
        return Err(VintError::TooLong);
    }
    let len = first.leading_zeros() as usize + 1;
    let all = bytes.get(..len).ok_or(VintError::Short)?;
    Ok((all.iter().fold(0u32, |a, &b| (a << 8) | u32::from(b)), len))
}

/// An element's header: its ID, where it and its data start, and its data size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Header {
    /// Element ID, marker bits kept.
    pub id: u32,
    /// Offset of the element's first byte.
    pub at: u64,
    /// Offset of its data (just past the header).
    pub data: u64,
    /// Data size; `None` for an unknown size (all value bits set).
    pub size: Option<u64>,
}

impl Header {
    /// Offset just past the element, when its size is known.
    pub(crate) fn end(&self) -> Option<u64> {
        self.size.map(|s| self.data.saturating_add(s))
    }

    /// Offset just past the element; an error for an unknown size, which only Segments and
    /// Clusters may have.
    pub(crate) fn known_end(&self) -> ParseResult<u64> {
        self.end().ok_or_else(|| {
            invalid!(
                "{} at offset {} has an unknown size, which only Segment and Cluster may have",
                ids::describe(self.id),
                self.at
            )
        })
    }

    /// "`Name (0xID)` at offset N", for messages.
    pub(crate) fn what(&self) -> String {
        format!("{} at offset {}", ids::describe(self.id), self.at)
    }
}

/// Parses the header of the element at `at`, whose bytes (from `at` on) start `bytes`; its
/// parent ends at `limit`, and the element must end there or before.
pub(crate) fn parse_header(bytes: &[u8], at: u64, limit: u64) -> ParseResult<Header> {
    let room = usize::try_from(limit.saturating_sub(at)).unwrap_or(usize::MAX);
    let bytes = bytes.get(..room.min(bytes.len())).unwrap_or_default();
    let cut = || {
        invalid!(
            "the element header at offset {at} is cut off by the end of its parent at offset {limit}"
        )
    };
    let (id, id_len) = element_id(bytes).map_err(|e| match e {
        VintError::Short => cut(),
        _ => invalid!(
            "the element ID at offset {at} starts with byte 0x{:02X}: IDs longer than 4 bytes are not valid",
            bytes.first().copied().unwrap_or(0)
        ),
    })?;
    let size = vint(bytes.get(id_len..).unwrap_or_default()).map_err(|e| match e {
        VintError::Short => cut(),
        _ => invalid!(
            "{} at offset {at} has a size field longer than 8 bytes (0x00 length marker)",
            ids::describe(id)
        ),
    })?;
    let data = at + (id_len + size.len) as u64;
    let size = (!size.all_ones).then_some(size.value);
    if let Some(s) = size
        && data.checked_add(s).is_none_or(|end| end > limit)
    {
        return Err(invalid!(
            "{} at offset {at} declares {s} bytes, past the end of its parent at offset {limit}",
            ids::describe(id)
        ));
    }
    Ok(Header { id, at, data, size })
}

/// The children of an element whose data is in memory; every child must have a known size.
pub(crate) struct Children<'a> {
    bytes: &'a [u8],
    base: u64,
    pos: usize,
}

impl<'a> Children<'a> {
    /// Iterates over the elements packed in `bytes`, which start at file offset `base`.
    pub(crate) fn new(bytes: &'a [u8], base: u64) -> Self {
        Children {
            bytes,
            base,
            pos: 0,
        }
    }

    fn parse_next(&mut self) -> ParseResult<(Header, &'a [u8])> {
        let rest = self.bytes.get(self.pos..).unwrap_or_default();
        let at = self.base + self.pos as u64;
        let limit = self.base + self.bytes.len() as u64;
        let h = parse_header(rest, at, limit)?;
        let end = h.known_end()?;
        let start = (h.data - self.base) as usize;
        let stop = (end - self.base) as usize;
        self.pos = stop;
        Ok((h, self.bytes.get(start..stop).unwrap_or_default()))
    }
}

impl<'a> Iterator for Children<'a> {
    /// A child's header (file offsets) and its data.
    type Item = ParseResult<(Header, &'a [u8])>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.pos >= self.bytes.len() {
            return None;
        }
        let item = self.parse_next();
        if item.is_err() {
            self.pos = self.bytes.len();
        }
        Some(item)
    }
}

/// An unsigned integer element's value (0 to 8 big-endian bytes).
pub(crate) fn uint(h: &Header, data: &[u8]) -> ParseResult<u64> {
    if data.len() > 8 {
        return Err(invalid!(
            "{} holds a {}-byte integer, longer than 8 bytes",
            h.what(),
            data.len()
        ));
    }
    Ok(data.iter().fold(0u64, |a, &b| (a << 8) | u64::from(b)))
}

/// A float element's value: 0, 4 or 8 big-endian bytes (IEEE 754), as the specification
/// allows.
pub(crate) fn float(h: &Header, data: &[u8]) -> ParseResult<f64> {
    if data.is_empty() {
        return Ok(0.0);
    }
    if let Ok(b) = <[u8; 4]>::try_from(data) {
        return Ok(f64::from(f32::from_be_bytes(b)));
    }
    <[u8; 8]>::try_from(data)
        .map(f64::from_be_bytes)
        .map_err(|_| {
            invalid!(
                "{} holds a {}-byte float; floats are 0, 4 or 8 bytes",
                h.what(),
                data.len()
            )
        })
}

/// A string element's value, up to its first NUL.
pub(crate) fn string(data: &[u8]) -> String {
    let end = data.iter().position(|&b| b == 0).unwrap_or(data.len());
    String::from_utf8_lossy(data.get(..end).unwrap_or_default()).into_owned()
}

/// Up to [`PEEK`] bytes of the file read at one offset.
pub(crate) struct Peek {
    buf: [u8; PEEK],
    len: usize,
    at: u64,
}

impl Peek {
    /// The bytes read.
    pub(crate) fn bytes(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or_default()
    }

    /// The bytes read from file offset `offset` on (empty if outside).
    pub(crate) fn from(&self, offset: u64) -> &[u8] {
        offset
            .checked_sub(self.at)
            .and_then(|k| usize::try_from(k).ok())
            .and_then(|k| self.bytes().get(k..))
            .unwrap_or_default()
    }
}

/// Positioned reads of one file, with errors that name it.
pub(crate) struct Reader<'a> {
    src: &'a dyn ByteSource,
    len: u64,
}

impl<'a> Reader<'a> {
    /// Reads `src`.
    pub(crate) fn new(src: &'a dyn ByteSource) -> Self {
        Reader {
            src,
            len: src.len(),
        }
    }

    /// The file's length.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// The file's name.
    pub(crate) fn file(&self) -> &Path {
        self.src.name()
    }

    /// A `Malformed` error naming the file.
    pub(crate) fn bad(&self, e: impl Into<ParseError>) -> DemuxError {
        DemuxError::malformed(self.file(), e.into())
    }

    /// Fills `buf` from offset `at`.
    pub(crate) fn read(&self, buf: &mut [u8], at: u64) -> Result<()> {
        self.src
            .read_exact_at(buf, at)
            .map_err(|source| DemuxError::Io {
                file: self.file().to_path_buf(),
                source,
            })
    }

    /// Up to [`PEEK`] bytes from `at` (fewer at the end of the file).
    pub(crate) fn peek(&self, at: u64) -> Result<Peek> {
        let left = self.len.checked_sub(at).filter(|&n| n > 0).ok_or_else(|| {
            self.bad(invalid!(
                "offset {at} is at or past the end of the {}-byte file",
                self.len
            ))
        })?;
        let len = usize::try_from(left).map_or(PEEK, |l| l.min(PEEK));
        let mut peek = Peek {
            buf: [0; PEEK],
            len,
            at,
        };
        self.read(peek.buf.get_mut(..len).unwrap_or_default(), at)?;
        Ok(peek)
    }

    /// The header of the element at `at`, which must end by `limit`, and the bytes read there.
    pub(crate) fn header(&self, at: u64, limit: u64) -> Result<(Header, Peek)> {
        let peek = self.peek(at)?;
        let h = parse_header(peek.bytes(), at, limit).map_err(|e| {
            if limit == self.len {
                self.bad(invalid!("{e} (the end of the file: is it truncated?)"))
            } else {
                self.bad(e)
            }
        })?;
        Ok((h, peek))
    }

    /// The data of the element `h` (known size, at most `max` bytes).
    pub(crate) fn data(&self, h: &Header, max: u64) -> Result<Vec<u8>> {
        let end = h.known_end().map_err(|e| self.bad(e))?;
        let size = end - h.data;
        if size > max || end > self.len {
            return Err(self.bad(invalid!(
                "{} has {size} bytes, more than the {max} accepted",
                h.what()
            )));
        }
        let mut buf = vec![0u8; size as usize];
        self.read(&mut buf, h.data)?;
        Ok(buf)
    }

    /// The value of the unsigned integer element `h`, from `peek` when it holds it.
    pub(crate) fn uint(&self, h: &Header, peek: &Peek) -> Result<u64> {
        let size = h.known_end().map_err(|e| self.bad(e))? - h.data;
        let value = match peek.from(h.data).get(..size.min(9) as usize) {
            Some(data) => uint(h, data),
            None => uint(h, &self.data(h, 8)?),
        };
        value.map_err(|e| self.bad(e))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn vints() {
        assert_eq!(
            vint(&[0x81]),
            Ok(Vint {
                value: 1,
                len: 1,
                all_ones: false
            })
        );
        assert_eq!(vint(&[0x40, 0x02]).unwrap().value, 2);
        assert!(vint(&[0xFF]).unwrap().all_ones);
        assert!(vint(&[0x7F, 0xFF]).unwrap().all_ones);
        assert!(!vint(&[0x7F, 0xFE]).unwrap().all_ones);
        let max = [0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF];
        assert_eq!(vint(&max).unwrap().value, (1 << 56) - 1);
        assert!(vint(&max).unwrap().all_ones);
        assert_eq!(vint(&[0x00, 1, 2]), Err(VintError::NoMarker));
        assert_eq!(vint(&[0x20, 1]), Err(VintError::Short));
        assert_eq!(vint(&[]), Err(VintError::Short));
        assert_eq!(element_id(&[0x1A, 0x45, 0xDF, 0xA3]), Ok((ids::EBML, 4)));
        assert_eq!(element_id(&[0x08, 0, 0, 0, 0]), Err(VintError::TooLong));
        assert_eq!(element_id(&[0x1A, 0x45]), Err(VintError::Short));
    }

    #[test]
    fn headers_stay_inside_their_parent() {
        let h = parse_header(&[0xA3, 0x83, 1, 2, 3], 10, 15).unwrap();
        assert_eq!(
            (h.id, h.data, h.size, h.end()),
            (0xA3, 12, Some(3), Some(15))
        );
        assert!(parse_header(&[0xA3, 0x84, 1, 2, 3], 10, 15).is_err());
        assert!(parse_header(&[0xA3, 0x83, 1, 2, 3], 10, 11).is_err());
        let e = parse_header(&[0xA3, 0x00, 1, 2, 3], 0, 5).unwrap_err();
        assert!(e.to_string().contains("0x00 length marker"), "{e}");
        let e = parse_header(&[0x01, 0x80], 0, 5).unwrap_err();
        assert!(e.to_string().contains("longer than 4 bytes"), "{e}");
        let huge = [0xA3, 0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE];
        assert!(parse_header(&huge, 0, 1 << 40).is_err());
        let unknown = [0xA3, 0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF];
        let h = parse_header(&unknown, 0, 20).unwrap();
        assert_eq!(h.size, None);
        assert!(h.known_end().is_err());
    }

    #[test]
    fn children_and_values() {
        let bytes = [0xD7, 0x81, 0x05, 0x86, 0x83, b'V', b'_', 0, 0xEC, 0x80];
        let kids: Vec<_> = Children::new(&bytes, 100)
            .collect::<ParseResult<_>>()
            .unwrap();
        assert_eq!(kids.len(), 3);
        assert_eq!(kids[0].0.at, 100);
        assert_eq!(uint(&kids[0].0, kids[0].1).unwrap(), 5);
        assert_eq!(string(kids[1].1), "V_");
        assert_eq!(kids[2].1, &[] as &[u8]);
        assert!(uint(&kids[0].0, &[0; 9]).is_err());
        let bad = [0xD7, 0x85, 0x05];
        let mut it = Children::new(&bad, 0);
        assert!(it.next().unwrap().is_err());
        assert!(it.next().is_none());
    }
}
