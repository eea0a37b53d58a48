//! ISO-BMFF box headers, child iteration over bytes in memory, and the top-level scan of a file
//! by positioned reads (which skips `mdat` without reading it).

use crate::error::{ParseError, ParseResult, invalid};
use crate::source::ByteSource;

/// A four-character box type.
pub type FourCc = [u8; 4];

/// Printable form of a four-character code.
pub fn fourcc_str(f: FourCc) -> String {
    f.iter()
        .map(|&b| if b.is_ascii_graphic() { b as char } else { '?' })
        .collect()
}

/// A box's header: where it starts, how long its header is, and its total size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BoxHeader {
    /// Box type.
    pub kind: FourCc,
    /// Offset of the box's first byte (in the file, or in the enclosing buffer).
    pub offset: u64,
    /// Header length: 8, 16 (64-bit size), plus 16 for `uuid` boxes.
    pub header_len: u64,
    /// Total size including the header.
    pub size: u64,
}

impl BoxHeader {
    /// Offset just past the box.
    pub fn end(&self) -> u64 {
        self.offset + self.size
    }
}

/// Parses the header at the start of `bytes`, a box that starts at `offset` and must end by
/// `limit` (a size of 0 means "to the limit").
pub fn parse_header(bytes: &[u8], offset: u64, limit: u64) -> ParseResult<BoxHeader> {
    if bytes.len() < 8 {
        return Err(invalid!("truncated box header at offset {offset}"));
    }
    let size32 = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    let kind = [bytes[4], bytes[5], bytes[6], bytes[7]];
    let (mut header_len, size) = match size32 {
        0 => (8, limit.saturating_sub(offset)),
        1 => {
            if bytes.len() < 16 {
                return Err(invalid!(
                    "truncated 64-bit size of box '{}' at offset {offset}",
                    fourcc_str(kind)
                ));
            }
            let mut b = [0u8; 8];
            b.copy_from_slice(&bytes[8..16]);
            (16, u64::from_be_bytes(b))
        }
        n => (8, u64::from(n)),
    };
    if &kind == b"uuid" {
        header_len += 16;
    }
    if size < header_len {
        return Err(invalid!(
            "box '{}' at offset {offset} declares size {size}, smaller than its header",
            fourcc_str(kind)
        ));
    }
    match offset.checked_add(size) {
        Some(end) if end <= limit => Ok(BoxHeader {
            kind,
            offset,
            header_len,
            size,
        }),
        _ => Err(invalid!(
            "box '{}' at offset {offset} declares size {size}, past the end of its container ({limit})",
            fourcc_str(kind)
        )),
    }
}

/// The child boxes of a box whose content is in memory.
pub struct Children<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Children<'a> {
    /// Iterates over the boxes packed in `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        Children { bytes, pos: 0 }
    }
}

impl<'a> Iterator for Children<'a> {
    /// The header (offsets relative to the buffer) and the box's content.
    type Item = ParseResult<(BoxHeader, &'a [u8])>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.pos >= self.bytes.len() {
            return None;
        }
        let rest = &self.bytes[self.pos..];
        let h = match parse_header(rest, self.pos as u64, self.bytes.len() as u64) {
            Ok(h) => h,
            Err(e) => {
                self.pos = self.bytes.len();
                return Some(Err(e));
            }
        };
        let start = self.pos + h.header_len as usize;
        let end = self.pos + h.size as usize;
        self.pos = end;
        Some(Ok((h, &self.bytes[start..end])))
    }
}

/// The first child of type `kind`, if any.
pub fn find<'a>(bytes: &'a [u8], kind: &FourCc) -> ParseResult<Option<&'a [u8]>> {
    for child in Children::new(bytes) {
        let (h, content) = child?;
        if &h.kind == kind {
            return Ok(Some(content));
        }
    }
    Ok(None)
}

/// Every child of type `kind`.
pub fn find_all<'a>(bytes: &'a [u8], kind: &FourCc) -> ParseResult<Vec<&'a [u8]>> {
    let mut out = Vec::new();
    for child in Children::new(bytes) {
        let (h, content) = child?;
        if &h.kind == kind {
            out.push(content);
        }
    }
    Ok(out)
}

/// Follows a path of box types (`moov/trak/mdia`, given as a slice) from `bytes`.
pub fn find_path<'a>(bytes: &'a [u8], path: &[&FourCc]) -> ParseResult<Option<&'a [u8]>> {
    let mut cur = bytes;
    for kind in path {
        match find(cur, kind)? {
            Some(c) => cur = c,
            None => return Ok(None),
        }
    }
    Ok(Some(cur))
}

/// The boxes at the top level of a file.
#[derive(Debug, Default)]
pub struct TopLevel {
    /// The `moov` box, if present.
    pub moov: Option<BoxHeader>,
    /// Every `moof` box, in file order.
    pub moofs: Vec<BoxHeader>,
    /// Whether an `mdat` box was seen.
    pub has_mdat: bool,
}

/// Most top-level boxes we accept: a fragment per frame of a 10-hour 60 fps video.
const MAX_TOP_LEVEL_BOXES: usize = 5_000_000;

/// Walks the top-level boxes with one 16-byte read each.
pub fn scan_top_level(src: &dyn ByteSource) -> ParseResult<TopLevel> {
    let len = src.len();
    if len == 0 {
        return Err("the file is empty".into());
    }
    let mut top = TopLevel::default();
    let mut offset = 0u64;
    let mut count = 0usize;
    let mut buf = [0u8; 16];
    while offset < len {
        count += 1;
        if count > MAX_TOP_LEVEL_BOXES {
            return Err(invalid!("more than {MAX_TOP_LEVEL_BOXES} top-level boxes"));
        }
        let n = (len - offset).min(16) as usize;
        src.read_exact_at(&mut buf[..n], offset)
            .map_err(|e| format!("reading the box header at offset {offset}: {e}"))?;
        let h = parse_header(&buf[..n], offset, len).map_err(|e| {
            if count == 1 {
                invalid!("not an MP4/MOV or Matroska/WebM file ({e})")
            } else {
                e
            }
        })?;
        if count == 1 && !is_known_top_level(&h.kind) {
            return Err(invalid!(
                "not an MP4/MOV or Matroska/WebM file: it starts with '{}'",
                fourcc_str(h.kind)
            ));
        }
        match &h.kind {
            b"moov" => {
                if top.moov.is_some() {
                    return Err("more than one 'moov' box".into());
                }
                top.moov = Some(h);
            }
            b"moof" => top.moofs.push(h),
            b"mdat" => top.has_mdat = true,
            _ => {}
        }
        offset = h.end();
    }
    Ok(top)
}

fn is_known_top_level(kind: &FourCc) -> bool {
    matches!(
        kind,
        b"ftyp"
            | b"moov"
            | b"mdat"
            | b"free"
            | b"skip"
            | b"wide"
            | b"pnot"
            | b"styp"
            | b"sidx"
            | b"moof"
            | b"uuid"
            | b"meta"
            | b"pdin"
            | b"junk"
    )
}

/// Boxes whose children are boxes, walked by [`check_table_counts`].
const CONTAINERS: &[&FourCc] = &[
    b"moov", b"trak", b"mdia", b"minf", b"stbl", b"edts", b"mvex", b"dinf", b"udta", b"moof",
    b"traf",
];

/// Checks, in every table box under `content`, that the declared entry count fits in the box,
/// so that no parser (ours or mp4parse) allocates by a hostile count.
pub fn check_table_counts(content: &[u8]) -> ParseResult<()> {
    for child in Children::new(content) {
        let (h, body) = child?;
        if CONTAINERS.contains(&&h.kind) {
            check_table_counts(body)?;
            continue;
        }
        let version = body.first().copied().unwrap_or(0);
        // (offset of the count, bytes per entry); entries follow the count.
        let layout: Option<(usize, usize)> = match &h.kind {
            b"stco" | b"stss" | b"stps" => Some((4, 4)),
            b"co64" | b"stts" | b"ctts" => Some((4, 8)),
            b"stsc" => Some((4, 12)),
            b"elst" => Some((4, if version == 1 { 20 } else { 12 })),
            b"stsd" | b"dref" => Some((4, 8)),
            b"sbgp" => Some((if version == 1 { 12 } else { 8 }, 8)),
            b"sgpd" => Some((if version >= 1 { 12 } else { 8 }, 1)),
            b"saio" => Some((
                if body.get(3).is_some_and(|f| f & 1 != 0) {
                    12
                } else {
                    4
                },
                if version == 1 { 8 } else { 4 },
            )),
            b"stsz" => {
                let mut r = Reader::new(body, "stsz");
                r.skip(4)?;
                if r.u32()? == 0 { Some((8, 4)) } else { None }
            }
            b"trun" => None, // checked entry by entry where it is read
            _ => None,
        };
        if let Some((at, size)) = layout {
            let mut r = Reader::new(body, "table");
            r.skip(at)?;
            let count = r.u32()? as usize;
            if count.saturating_mul(size) > r.remaining() {
                return Err(invalid!(
                    "'{}' declares {count} entries but holds {} bytes",
                    fourcc_str(h.kind),
                    r.remaining()
                ));
            }
        }
    }
    Ok(())
}

/// Containers mp4parse needs to see, and the leaf boxes it reads in them.
const MP4PARSE_CONTAINERS: &[&FourCc] = &[
    b"moov", b"trak", b"edts", b"mdia", b"minf", b"stbl", b"mvex",
];
const MP4PARSE_LEAVES: &[&FourCc] = &[
    b"mvhd", b"tkhd", b"elst", b"mdhd", b"hdlr", b"stts", b"ctts", b"stsc", b"stsz", b"stco",
    b"co64", b"stss", b"trex", b"mehd",
];

/// Renames every box of a `moov` (the whole box in `moov`) that mp4parse need not read to
/// `free`, so it skips them: sample entries, metadata and DRM boxes are parsed by us or not at
/// all, and mp4parse would allocate by the sizes they declare.
pub fn hide_from_mp4parse(moov: &mut [u8]) -> ParseResult<()> {
    let h = parse_header(moov, 0, moov.len() as u64)?;
    hide_children(moov, h.header_len as usize)
}

fn hide_children(buf: &mut [u8], start: usize) -> ParseResult<()> {
    let mut children = Vec::new();
    for child in Children::new(&buf[start..]) {
        let (h, _) = child?;
        children.push(h);
    }
    for h in children {
        let at = start + h.offset as usize;
        if MP4PARSE_CONTAINERS.contains(&&h.kind) {
            hide_children(&mut buf[..at + h.size as usize], at + h.header_len as usize)?;
        } else if !MP4PARSE_LEAVES.contains(&&h.kind) {
            buf[at + 4..at + 8].copy_from_slice(b"free");
        }
    }
    Ok(())
}

/// Reads a whole box (header and content) into memory, refusing absurd sizes.
pub fn read_box(src: &dyn ByteSource, h: &BoxHeader, max: u64) -> ParseResult<Vec<u8>> {
    if h.size > max {
        return Err(invalid!(
            "box '{}' of {} bytes is larger than the {max}-byte limit",
            fourcc_str(h.kind),
            h.size
        ));
    }
    let mut buf = vec![0u8; h.size as usize];
    src.read_exact_at(&mut buf, h.offset)
        .map_err(|e| format!("reading box '{}': {e}", fourcc_str(h.kind)))?;
    Ok(buf)
}

/// Big-endian readers over a byte slice with bounds checks.
pub struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    what: &'static str,
}

impl<'a> Reader<'a> {
    /// Reads `bytes`, naming `what` in errors.
    pub fn new(bytes: &'a [u8], what: &'static str) -> Self {
        Reader {
            bytes,
            pos: 0,
            what,
        }
    }
    /// Takes `n` bytes.
    pub fn take(&mut self, n: usize) -> ParseResult<&'a [u8]> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or(ParseError::Truncated {
                what: self.what,
                needed: n,
                at: self.pos,
            })?;
        let s = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    /// Skips `n` bytes.
    pub fn skip(&mut self, n: usize) -> ParseResult<()> {
        self.take(n).map(|_| ())
    }
    /// One byte.
    pub fn u8(&mut self) -> ParseResult<u8> {
        Ok(self.take(1)?[0])
    }
    /// Big-endian u16.
    pub fn u16(&mut self) -> ParseResult<u16> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }
    /// Big-endian u32.
    pub fn u32(&mut self) -> ParseResult<u32> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    /// Big-endian u64.
    pub fn u64(&mut self) -> ParseResult<u64> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_be_bytes(a))
    }
    /// Bytes left.
    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }
    /// The rest of the bytes.
    pub fn rest(&mut self) -> &'a [u8] {
        let s = &self.bytes[self.pos..];
        self.pos = self.bytes.len();
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn boxed(kind: &[u8; 4], content: &[u8]) -> Vec<u8> {
        let mut v = ((content.len() + 8) as u32).to_be_bytes().to_vec();
        v.extend_from_slice(kind);
        v.extend_from_slice(content);
        v
    }

    #[test]
    fn headers_of_all_sizes() {
        let b = boxed(b"free", &[1, 2, 3]);
        let h = parse_header(&b, 0, b.len() as u64).unwrap();
        assert_eq!((h.kind, h.size, h.header_len), (*b"free", 11, 8));
        let mut large = vec![0, 0, 0, 1];
        large.extend_from_slice(b"mdat");
        large.extend_from_slice(&20u64.to_be_bytes());
        large.extend_from_slice(&[0; 4]);
        let h = parse_header(&large, 0, 20).unwrap();
        assert_eq!((h.size, h.header_len), (20, 16));
        let to_end = [0, 0, 0, 0, b'm', b'd', b'a', b't'];
        assert_eq!(parse_header(&to_end, 100, 1000).unwrap().size, 900);
    }

    #[test]
    fn hostile_sizes_are_errors() {
        let too_big = [0xff, 0xff, 0xff, 0xff, b'm', b'o', b'o', b'v'];
        assert!(
            parse_header(&too_big, 0, 100)
                .unwrap_err()
                .to_string()
                .contains("past the end")
        );
        let too_small = [0, 0, 0, 4, b'm', b'o', b'o', b'v'];
        assert!(
            parse_header(&too_small, 0, 100)
                .unwrap_err()
                .to_string()
                .contains("smaller than its header")
        );
        let mut overflow = vec![0, 0, 0, 1];
        overflow.extend_from_slice(b"mdat");
        overflow.extend_from_slice(&u64::MAX.to_be_bytes());
        assert!(parse_header(&overflow, 10, 100).is_err());
        assert!(parse_header(&[0, 0, 0], 0, 100).is_err());
    }

    #[test]
    fn children_and_paths() {
        let inner = boxed(b"mdhd", &[9; 4]);
        let mut trak = boxed(b"tkhd", &[1]);
        trak.extend(boxed(b"mdia", &inner));
        let moov = boxed(b"trak", &trak);
        assert_eq!(
            find_path(&moov, &[b"trak", b"mdia", b"mdhd"]).unwrap(),
            Some(&[9u8; 4][..])
        );
        assert_eq!(find_path(&moov, &[b"trak", b"edts"]).unwrap(), None);
        let kinds: Vec<FourCc> = Children::new(&trak).map(|c| c.unwrap().0.kind).collect();
        assert_eq!(kinds, vec![*b"tkhd", *b"mdia"]);
        let mut bad = trak.clone();
        bad.truncate(trak.len() - 1);
        assert!(Children::new(&bad).any(|c| c.is_err()));
    }
}
