//! Clusters: their Timestamp and the headers of their SimpleBlocks and BlockGroups (one small
//! read per block, never its payload), and the lace headers of laced blocks of the chosen track.

use super::ebml::{Header, Peek, Reader, VintError, vint};
use super::ids;
use crate::error::{ParseError, ParseResult, Result, invalid};
use crate::tables::MAX_SAMPLES;

/// First read of a lace header, grown (up to the whole block) while it is not enough.
const LACE_READ: u64 = 256;

/// What turns blocks of the chosen track into frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BlockTiming {
    /// The chosen track's number.
    pub track: u64,
    /// Nanoseconds per Segment tick (Info's TimestampScale).
    pub ts_scale: u64,
    /// The track's DefaultDuration in nanoseconds (0 if absent).
    pub default_duration: u64,
    /// The track's CodecDelay in Segment ticks, rounded to nearest as ffmpeg does.
    pub codec_delay: i64,
}

/// One frame of the chosen track; times in Segment ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Frame {
    /// Presentation time: Cluster + block time − CodecDelay, plus the lace's share.
    pub pts: i64,
    /// Duration (0 if the file gives none).
    pub duration: u64,
    /// File offset of the frame's first byte.
    pub offset: u64,
    /// Size in bytes.
    pub size: u32,
    /// Keyframe: SimpleBlock flag 0x80, or a BlockGroup without ReferenceBlock; lace 0 only.
    pub key: bool,
}

/// A block of the chosen track: its header fields and where its frames are.
struct Block {
    /// The (Simple)Block element, for messages.
    element: Header,
    rel: i16,
    flags: u8,
    /// (offset, size) of each frame.
    frames: Vec<(u64, u64)>,
}

/// Walks the Cluster `h`, whose parent ends at `limit`, adding the chosen track's frames to
/// `out`; returns where the Cluster ends. An unknown-size Cluster ends before the first
/// element that cannot be inside a Cluster (e.g. the next Cluster or Cues), or at `limit`.
pub(crate) fn walk_cluster(
    r: &Reader,
    h: &Header,
    limit: u64,
    t: &BlockTiming,
    out: &mut Vec<Frame>,
) -> Result<u64> {
    let known = h.end();
    let end = known.unwrap_or(limit);
    let mut time = None;
    let mut pos = h.data;
    while pos < end {
        let (c, peek) = r.header(pos, end)?;
        if known.is_none() && ids::ends_cluster(c.id) {
            return Ok(pos);
        }
        let c_end = c.known_end().map_err(|e| r.bad(e))?;
        match c.id {
            ids::TIMESTAMP => time = Some(cluster_time(r, &c, &peek)?),
            ids::SIMPLE_BLOCK => {
                if let Some(b) = read_block(r, &c, &peek, t.track)? {
                    let key = b.flags & 0x80 != 0;
                    emit(r, b, key, None, time, t, out)?;
                }
            }
            ids::BLOCK_GROUP => group(r, &c, c_end, time, t, out)?,
            _ => {}
        }
        pos = c_end;
    }
    Ok(end)
}

/// The Cluster's Timestamp.
fn cluster_time(r: &Reader, c: &Header, peek: &Peek) -> Result<i64> {
    let v = r.uint(c, peek)?;
    i64::try_from(v).map_err(|_| r.bad(invalid!("{} is {v}, too large", c.what())))
}

/// Reads a BlockGroup (ending at `end`): its Block's header, and whether it has a
/// ReferenceBlock and a BlockDuration. Stops early when the Block is another track's.
fn group(
    r: &Reader,
    g: &Header,
    end: u64,
    time: Option<i64>,
    t: &BlockTiming,
    out: &mut Vec<Frame>,
) -> Result<()> {
    let (mut block, mut reference, mut duration) = (None, false, None);
    let mut pos = g.data;
    while pos < end {
        let (c, peek) = r.header(pos, end)?;
        match c.id {
            ids::BLOCK if block.is_none() => match read_block(r, &c, &peek, t.track)? {
                Some(b) => block = Some(b),
                None => return Ok(()),
            },
            ids::REFERENCE_BLOCK => reference = true,
            ids::BLOCK_DURATION => duration = Some(r.uint(&c, &peek)?),
            _ => {}
        }
        pos = c.known_end().map_err(|e| r.bad(e))?;
    }
    match block {
        Some(b) => emit(r, b, !reference, duration, time, t, out),
        None => Ok(()),
    }
}

/// The header of the (Simple)Block `c` (its first bytes are in `peek`) if it belongs to
/// `track`, with its frames' places; `None` for another track's block.
fn read_block(r: &Reader, c: &Header, peek: &Peek, track: u64) -> Result<Option<Block>> {
    let size = c.known_end().map_err(|e| r.bad(e))? - c.data;
    let head = peek.from(c.data);
    let head = head
        .get(..head.len().min(size as usize))
        .unwrap_or_default();
    let short = || r.bad(invalid!("{} is too short for a block header", c.what()));
    let number = vint(head).map_err(|e| match e {
        VintError::Short => short(),
        _ => r.bad(invalid!(
            "{} has a track number longer than 8 bytes",
            c.what()
        )),
    })?;
    if number.value != track {
        return Ok(None);
    }
    let fixed = head.get(number.len..number.len + 3).ok_or_else(short)?;
    let (rel, flags) = match *fixed {
        [a, b, f] => (i16::from_be_bytes([a, b]), f),
        _ => return Err(short()),
    };
    let header = number.len as u64 + 3;
    let (payload, rest) = (c.data + header, size - header);
    let frames = match (flags >> 1) & 3 {
        0 => vec![(payload, rest)],
        kind => read_laces(r, c, kind, payload, rest)?,
    };
    Ok(Some(Block {
        element: *c,
        rel,
        flags,
        frames,
    }))
}

/// The frames of a laced block whose lace header starts at `at`, `size` bytes before the end
/// of the block.
fn read_laces(r: &Reader, c: &Header, kind: u8, at: u64, size: u64) -> Result<Vec<(u64, u64)>> {
    let mut want = size.min(LACE_READ);
    loop {
        let mut buf = vec![0u8; want as usize];
        r.read(&mut buf, at)?;
        let laces =
            parse_laces(kind, &buf, size).map_err(|e| r.bad(invalid!("{}: {e}", c.what())))?;
        if let Some(l) = laces {
            return Ok(l.place(at));
        }
        want = size.min(want.saturating_mul(8));
    }
}

/// A lace header, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Laces {
    /// Bytes of the lace header (count and sizes).
    pub header: u64,
    /// Each frame's size.
    pub sizes: Vec<u64>,
}

impl Laces {
    /// (offset, size) of each frame, the lace header starting at `at`.
    fn place(&self, at: u64) -> Vec<(u64, u64)> {
        let mut offset = at + self.header;
        self.sizes
            .iter()
            .map(|&s| {
                let here = offset;
                offset += s;
                (here, s)
            })
            .collect()
    }
}

/// Reads the lace header (`kind`: 1 Xiph, 2 fixed-size, 3 EBML) of a block's `size` bytes
/// after its block header; `head` holds the first of them. `None` when `head` ends inside the
/// lace header and more of the block is left to read.
pub(crate) fn parse_laces(kind: u8, head: &[u8], size: u64) -> ParseResult<Option<Laces>> {
    let head = head
        .get(..usize::try_from(size).unwrap_or(usize::MAX).min(head.len()))
        .unwrap_or_default();
    let more = (head.len() as u64) < size;
    let Some(&n) = head.first() else {
        return if more {
            Ok(None)
        } else {
            Err("a laced block has no lace count".into())
        };
    };
    let count = u64::from(n) + 1;
    let body = size - 1;
    if count > body {
        return Err(invalid!(
            "a laced block of {size} bytes cannot hold {count} frames"
        ));
    }
    let mut lace = LaceHeader {
        head,
        more,
        pos: 1,
        sizes: Vec::with_capacity(count as usize),
    };
    let coded = match kind {
        1 => lace.xiph(count),
        2 => {
            if !body.is_multiple_of(count) {
                return Err(invalid!(
                    "{body} bytes do not split into {count} fixed-size laces"
                ));
            }
            lace.sizes.resize(count as usize - 1, body / count);
            Ok(true)
        }
        _ => lace.ebml(count),
    }?;
    if !coded {
        return Ok(None);
    }
    lace.finish(size).map(Some)
}

/// A lace header being read.
struct LaceHeader<'a> {
    head: &'a [u8],
    more: bool,
    pos: usize,
    sizes: Vec<u64>,
}

impl LaceHeader<'_> {
    /// Xiph lacing: each size but the last as a run of 255s and a final byte below 255.
    /// `false` when `head` ends first but more of the block is left.
    fn xiph(&mut self, count: u64) -> ParseResult<bool> {
        for _ in 1..count {
            let mut s = 0u64;
            loop {
                let Some(&b) = self.head.get(self.pos) else {
                    return self.ran_out();
                };
                self.pos += 1;
                s += u64::from(b);
                if b != 255 {
                    break;
                }
            }
            self.sizes.push(s);
        }
        Ok(true)
    }

    /// EBML lacing: the first size as a vint, each next one as a signed vint difference.
    fn ebml(&mut self, count: u64) -> ParseResult<bool> {
        let mut prev = 0i64;
        for k in 1..count {
            let v = match vint(self.head.get(self.pos..).unwrap_or_default()) {
                Ok(v) => v,
                Err(VintError::Short) => return self.ran_out(),
                Err(_) => return Err("an EBML lace size is longer than 8 bytes".into()),
            };
            self.pos += v.len;
            // Values are below 2^56, so they fit in i64.
            let value = v.value as i64;
            let s = if k == 1 {
                value
            } else {
                let bias = (1i64 << (7 * v.len - 1)) - 1;
                prev.checked_add(value - bias)
                    .filter(|&s| s >= 0)
                    .ok_or("an EBML lace size difference gives a negative size")?
            };
            prev = s;
            self.sizes.push(s as u64);
        }
        Ok(true)
    }

    fn ran_out(&self) -> ParseResult<bool> {
        if self.more {
            Ok(false)
        } else {
            Err("the lace sizes run past the end of the block".into())
        }
    }

    /// The last frame takes what the header and the other frames leave of the block.
    fn finish(mut self, size: u64) -> ParseResult<Laces> {
        let header = self.pos as u64;
        let coded = self
            .sizes
            .iter()
            .try_fold(0u64, |a, &s| a.checked_add(s))
            .ok_or("lace sizes overflow")?;
        let last = size
            .checked_sub(header)
            .and_then(|left| left.checked_sub(coded))
            .ok_or_else(|| -> ParseError {
                invalid!("lace sizes total {coded} bytes, more than the block's {size} bytes after its {header}-byte lace header")
            })?;
        self.sizes.push(last);
        Ok(Laces {
            header,
            sizes: self.sizes,
        })
    }
}

/// Adds a block's frames to `out`: lace k at `t + k·dur/n` with `dur` its BlockDuration or
/// `n` DefaultDurations, truncated to Segment ticks (as ffmpeg's `matroska_parse_block`).
fn emit(
    r: &Reader,
    b: Block,
    key: bool,
    duration: Option<u64>,
    time: Option<i64>,
    t: &BlockTiming,
    out: &mut Vec<Frame>,
) -> Result<()> {
    let overflow = || r.bad(invalid!("{}: timestamps overflow", b.element.what()));
    let cluster = time.ok_or_else(|| {
        r.bad(invalid!(
            "{} comes before its Cluster's Timestamp",
            b.element.what()
        ))
    })?;
    let n = b.frames.len() as u128;
    let dur = match duration.filter(|&d| d > 0) {
        Some(d) => u128::from(d),
        None => u128::from(t.default_duration) * n / u128::from(t.ts_scale),
    };
    let start = cluster
        .checked_add(i64::from(b.rel))
        .and_then(|v| v.checked_sub(t.codec_delay))
        .ok_or_else(overflow)?;
    for (k, &(offset, size)) in b.frames.iter().enumerate() {
        let k = k as u128;
        let (lo, hi) = (dur * k / n, dur * (k + 1) / n);
        let pts = i64::try_from(lo)
            .ok()
            .and_then(|lo| start.checked_add(lo))
            .ok_or_else(overflow)?;
        let size = u32::try_from(size)
            .map_err(|_| r.bad(invalid!("{}: a frame of {size} bytes", b.element.what())))?;
        if out.len() as u64 >= MAX_SAMPLES {
            return Err(r.bad(invalid!("the track has more than {MAX_SAMPLES} frames")));
        }
        out.push(Frame {
            pts,
            duration: u64::try_from(hi - lo).map_err(|_| overflow())?,
            offset,
            size,
            key: key && k == 0,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn laces(kind: u8, head: &[u8]) -> ParseResult<Option<Laces>> {
        parse_laces(kind, head, head.len() as u64)
    }

    #[test]
    fn xiph_lacing() {
        // 3 frames: 300, 5, and the rest (7).
        let mut b = vec![2, 255, 45, 5];
        b.extend([0u8; 312]);
        let l = laces(1, &b).unwrap().unwrap();
        assert_eq!(l.header, 4);
        assert_eq!(l.sizes, vec![300, 5, 7]);
        assert_eq!(parse_laces(1, &b[..2], b.len() as u64).unwrap(), None);
        assert!(laces(1, &b[..20]).is_err());
    }

    #[test]
    fn ebml_lacing() {
        // 300 as a 2-byte vint, then 5 - 300 = -295 as a signed 2-byte vint (bias 8191).
        let d = (8191 - 295) as u16 | 0x4000;
        let mut b = vec![2, 0x41, 0x2C, (d >> 8) as u8, d as u8];
        b.extend([0u8; 312]);
        let l = laces(3, &b).unwrap().unwrap();
        assert_eq!((l.header, l.sizes), (5, vec![300, 5, 7]));
        // A difference that makes a size negative.
        let neg = [2, 0x81, 0x80, 0, 0, 0, 0];
        assert!(laces(3, &neg).is_err());
        assert!(laces(3, &[1, 0x00, 1, 2]).is_err());
    }

    #[test]
    fn fixed_lacing() {
        let b = [2u8; 13];
        let l = laces(2, &b).unwrap().unwrap();
        assert_eq!((l.header, l.sizes), (1, vec![4, 4, 4]));
        assert!(laces(2, &[2u8; 12]).is_err());
    }

    #[test]
    fn lace_count_bounded_by_the_block() {
        let e = laces(2, &[255, 0, 0, 0]).unwrap_err();
        assert!(e.to_string().contains("cannot hold 256 frames"), "{e}");
        assert!(laces(1, &[]).is_err());
        assert!(laces(1, &[200; 150]).is_err());
    }
}
