//! Saving and loading indexes: a compact, versioned file with a checksum, tied to the video's
//! version: its size and its ETag (remote objects) or modification time.
//!
//! Layout: `GMIDX` magic, format version (u16 LE), payload length (u64 LE), CRC-32 of the
//! payload (u32 LE), payload. The payload holds the header fields and, per packet in decode
//! order, LEB128 varints of zigzag deltas (decode time, composition offset, byte offset from
//! the previous packet's end), the size and duration, and one byte each of flags and picture
//! kind: about 10 bytes a packet, 1 MB for an hour at 30 fps. GOPs, decode starts and
//! presentation order are derived again on load, by the same code that derived them first.

use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use crate::chroma_location::ChromaLocation;
use crate::codec::{Codec, CodecInfo};
use crate::container::Container;
use crate::error::{DemuxError, Result};
use crate::index::VideoIndex;
use crate::options::{BitstreamScan, IndexOptions, TrackSelect};
use crate::orientation::DisplayOrientation;
use crate::picture::{Leading, Picture, RandomAccess, SliceType};
use crate::source::{ByteSource, FileSource, SourceVersion};
use crate::tables::{MAX_SAMPLES, RawSample};

const MAGIC: &[u8; 5] = b"GMIDX";

/// Why a saved payload could not be read back; [`DemuxError::StaleIndex`] carries its message.
#[derive(Debug, thiserror::Error)]
enum PayloadError {
    /// The payload ends inside a field.
    #[error("truncated")]
    Truncated,
    /// A varint of more than 64 bits.
    #[error("varint too long")]
    VarintTooLong,
    /// A field's value does not fit its type.
    #[error("{0}")]
    OutOfRange(&'static str),
    /// A count larger than the bytes that follow could hold.
    #[error("{0} items cannot fit")]
    CountTooLarge(usize),
    /// More packets than a track may have.
    #[error("{0} packets")]
    TooManyPackets(usize),
    /// Bytes after the last packet.
    #[error("trailing bytes")]
    TrailingBytes,
    /// No packets at all.
    #[error("no packets")]
    NoPackets,
}
/// Format version; files of another version are rebuilt, not read (2: the container, VP9
/// and AV1; 3: the source's ETag; 4: the display orientation; 5: the container's chroma
/// location; 6: Matroska's orientation, which 5 saved as stored).
pub const INDEX_FORMAT_VERSION: u16 = 6;

impl VideoIndex {
    /// Writes the index to `path` (through a temporary file and a rename, so a reader never
    /// sees half a file).
    pub fn save(&self, path: &Path) -> Result<()> {
        let payload = self.encode();
        let mut out = Vec::with_capacity(payload.len() + 19);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&INDEX_FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        out.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
        out.extend_from_slice(&payload);
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        let io = |source| DemuxError::Io {
            file: path.to_path_buf(),
            source,
        };
        std::fs::write(&tmp, &out).map_err(io)?;
        std::fs::rename(&tmp, path).map_err(io)
    }

    /// Reads an index saved by [`save`](Self::save) for `video`, which must still have the
    /// size and modification time it had when indexed.
    pub fn load(path: &Path, video: &Path) -> Result<VideoIndex> {
        let meta = std::fs::metadata(video).map_err(|source| DemuxError::Io {
            file: video.to_path_buf(),
            source,
        })?;
        let current = SourceVersion {
            size: meta.len(),
            modified: meta.modified().ok(),
            etag: None,
        };
        Self::load_version(path, video, &current)
    }

    /// Reads an index saved for the source `name`, whose bytes are now at version `current`:
    /// the size must match, and the ETag where there is one, else the modification time. A
    /// source with neither cannot be checked, so its saved index is never used.
    pub fn load_version(path: &Path, name: &Path, current: &SourceVersion) -> Result<VideoIndex> {
        let stale = |reason: String| DemuxError::StaleIndex {
            file: path.to_path_buf(),
            reason,
        };
        let bytes = std::fs::read(path).map_err(|source| DemuxError::Io {
            file: path.to_path_buf(),
            source,
        })?;
        let payload = checked_payload(&bytes, path)?;
        let mut index = decode(payload, name).map_err(|e| stale(e.to_string()))?;
        let same = index.file_size == current.size
            && match (&current.etag, &index.etag) {
                (Some(now), Some(then)) => now == then,
                (None, None) => current.modified.is_some() && current.modified == index.modified,
                _ => false,
            };
        if !same {
            return Err(stale(format!(
                "{} changed since it was indexed (size, ETag or modification time)",
                name.display()
            )));
        }
        index.path = name.to_path_buf();
        Ok(index)
    }

    /// The index of `video` from `index_path` if that is current and was built with the same
    /// options; otherwise indexes the video and saves the result there.
    pub fn open_cached(
        video: &Path,
        index_path: &Path,
        options: IndexOptions,
    ) -> Result<VideoIndex> {
        let src = FileSource::open(video).map_err(|source| DemuxError::Io {
            file: video.to_path_buf(),
            source,
        })?;
        Self::open_cached_source(&src, index_path, options)
    }

    /// [`open_cached`](Self::open_cached) for any byte source, checked against its
    /// [`version`](ByteSource::version).
    pub fn open_cached_source(
        src: &dyn ByteSource,
        index_path: &Path,
        options: IndexOptions,
    ) -> Result<VideoIndex> {
        if let Ok(index) = Self::load_version(index_path, src.name(), &src.version())
            && index.scan == options.scan
            && match options.track {
                TrackSelect::FirstVideo => true,
                TrackSelect::Id(id) => index.track_id == id,
            }
        {
            return Ok(index);
        }
        let index = Self::from_source(src, options)?;
        if let Err(e) = index.save(index_path) {
            tracing::warn!(error = %e, "could not save the index");
        }
        Ok(index)
    }

    fn encode(&self) -> Vec<u8> {
        let mut w = Vec::with_capacity(64 + self.packets.len() * 12);
        put_u(&mut w, self.file_size);
        let (secs, nanos) = self
            .modified
            .and_then(|m| m.duration_since(UNIX_EPOCH).ok())
            .map(|d| (d.as_secs() + 1, d.subsec_nanos()))
            .unwrap_or((0, 0));
        put_u(&mut w, secs);
        put_u(&mut w, u64::from(nanos));
        put_bytes(&mut w, self.etag.as_deref().unwrap_or("").as_bytes());
        put_u(&mut w, u64::from(self.track_id));
        put_u(&mut w, u64::from(self.timescale));
        put_i(&mut w, self.edit_shift);
        let matroska = self.container == Container::Matroska;
        w.push(u8::from(self.has_edit) | u8::from(self.fragmented) << 1 | u8::from(matroska) << 2);
        w.push(self.orientation.to_byte() | self.container_chroma.to_ffmpeg() << 3);
        w.push(match self.scan {
            BitstreamScan::None => 0,
            BitstreamScan::Keyframes => 1,
            BitstreamScan::Full => 2,
        });
        let c = &self.codec;
        w.push(match c.codec {
            Codec::H264 => 0,
            Codec::Hevc => 1,
            Codec::Vp9 => 2,
            Codec::Av1 => 3,
        });
        put_bytes(&mut w, c.fourcc.as_bytes());
        w.extend_from_slice(&[
            c.profile_idc,
            c.level_idc,
            c.chroma_format,
            c.bit_depth,
            c.nal_length_size,
        ]);
        put_u(&mut w, u64::from(c.width));
        put_u(&mut w, u64::from(c.height));
        put_u(&mut w, c.parameter_sets.len() as u64);
        for s in &c.parameter_sets {
            put_bytes(&mut w, s);
        }
        put_u(&mut w, self.in_band_parameter_sets as u64);
        put_u(&mut w, self.packets.len() as u64);
        let (mut prev_dts, mut prev_end) = (0i64, 0u64);
        for p in &self.packets {
            put_i(&mut w, p.dts - prev_dts);
            put_i(&mut w, p.pts - p.dts);
            put_i(&mut w, p.offset as i64 - prev_end as i64);
            put_u(&mut w, u64::from(p.size));
            put_u(&mut w, u64::from(p.duration));
            w.push(u8::from(p.keyframe) | u8::from(p.picture.is_some()) << 1);
            if let Some(pic) = p.picture {
                w.push(encode_picture(pic));
                w.push(pic.temporal_id);
            }
            prev_dts = p.dts;
            prev_end = p.offset + u64::from(p.size);
        }
        w
    }
}

/// Reads a payload written by `encode`; GOPs, decode starts and presentation order are
/// derived again by `assemble`.
fn decode(payload: &[u8], video: &Path) -> Result<VideoIndex, PayloadError> {
    let mut r = Cursor { b: payload, pos: 0 };
    let file_size = r.u()?;
    let secs = r.u()?;
    let nanos = r.u()?;
    let modified = (secs > 0).then(|| UNIX_EPOCH + Duration::new(secs - 1, nanos as u32));
    let etag = r.bytes()?;
    let etag = (!etag.is_empty()).then(|| String::from_utf8_lossy(etag).into_owned());
    let track_id = u32::try_from(r.u()?).map_err(|_| PayloadError::OutOfRange("track id"))?;
    let timescale = u32::try_from(r.u()?).map_err(|_| PayloadError::OutOfRange("timescale"))?;
    let edit_shift = r.i()?;
    let flags = r.byte()?;
    let shown = r.byte()?;
    let orientation = DisplayOrientation::from_byte(shown & 7);
    let container_chroma = ChromaLocation::from_ffmpeg(i32::from(shown >> 3));
    let scan = match r.byte()? {
        0 => BitstreamScan::None,
        1 => BitstreamScan::Keyframes,
        _ => BitstreamScan::Full,
    };
    let codec = decode_codec(&mut r)?;
    let in_band = r.u()? as usize;
    let (samples, pictures) = decode_samples(&mut r, edit_shift)?;
    if r.pos != payload.len() {
        return Err(PayloadError::TrailingBytes);
    }
    let mut index = VideoIndex {
        path: video.to_path_buf(),
        file_size,
        modified,
        etag,
        track_id,
        timescale,
        codec,
        orientation,
        container_chroma,
        edit_shift,
        has_edit: flags & 1 != 0,
        fragmented: flags & 2 != 0,
        container: if flags & 4 != 0 {
            Container::Matroska
        } else {
            Container::Mp4
        },
        scan,
        packets: Vec::new(),
        presentation: Vec::new(),
        gops: Vec::new(),
        sync_mismatches: Vec::new(),
        in_band_parameter_sets: in_band,
        bytes_read: 0,
        requests: 0,
    };
    if samples.is_empty() {
        return Err(PayloadError::NoPackets);
    }
    index.assemble(&samples, &pictures);
    Ok(index)
}

/// The codec fields, as `encode` writes them.
fn decode_codec(r: &mut Cursor<'_>) -> Result<CodecInfo, PayloadError> {
    let codec = match r.byte()? {
        0 => Codec::H264,
        1 => Codec::Hevc,
        2 => Codec::Vp9,
        3 => Codec::Av1,
        _ => return Err(PayloadError::OutOfRange("codec")),
    };
    let fourcc = String::from_utf8_lossy(r.bytes()?).into_owned();
    let fixed = r.take(5)?;
    let width = r.u()? as u32;
    let height = r.u()? as u32;
    let n_sets = r.count(1)?;
    let mut parameter_sets = Vec::with_capacity(n_sets);
    for _ in 0..n_sets {
        parameter_sets.push(r.bytes()?.to_vec());
    }
    Ok(CodecInfo {
        codec,
        fourcc,
        profile_idc: fixed[0],
        level_idc: fixed[1],
        chroma_format: fixed[2],
        bit_depth: fixed[3],
        width,
        height,
        nal_length_size: fixed[4],
        parameter_sets,
    })
}

/// The samples (times before the edit list, as the tables give them) and their pictures.
fn decode_samples(
    r: &mut Cursor<'_>,
    edit_shift: i64,
) -> Result<(Vec<RawSample>, Vec<Option<Picture>>), PayloadError> {
    let n = r.count(6)?;
    if n as u64 > MAX_SAMPLES {
        return Err(PayloadError::TooManyPackets(n));
    }
    let mut samples = Vec::with_capacity(n);
    let mut pictures = Vec::with_capacity(n);
    let (mut dts, mut end) = (0i64, 0u64);
    for _ in 0..n {
        dts = dts
            .checked_add(r.i()?)
            .ok_or(PayloadError::OutOfRange("time overflow"))?;
        let cto = r.i()?;
        let offset = (end as i64)
            .checked_add(r.i()?)
            .ok_or(PayloadError::OutOfRange("offset overflow"))? as u64;
        let size = u32::try_from(r.u()?).map_err(|_| PayloadError::OutOfRange("size"))?;
        let duration = u32::try_from(r.u()?).map_err(|_| PayloadError::OutOfRange("duration"))?;
        let f = r.byte()?;
        let picture = if f & 2 != 0 {
            let k = r.byte()?;
            let tid = r.byte()?;
            Some(decode_picture(k, tid))
        } else {
            None
        };
        samples.push(RawSample {
            dts: dts + edit_shift,
            cts: dts + cto + edit_shift,
            duration,
            offset,
            size,
            sync: f & 1 != 0,
        });
        pictures.push(picture);
        end = offset + u64::from(size);
    }
    Ok((samples, pictures))
}

fn encode_picture(p: Picture) -> u8 {
    let st = match p.slice_type {
        None => 0,
        Some(SliceType::I) => 1,
        Some(SliceType::P) => 2,
        Some(SliceType::B) => 3,
    };
    let ra = match p.random_access {
        RandomAccess::None => 0,
        RandomAccess::Idr => 1,
        RandomAccess::Cra => 2,
        RandomAccess::Bla => 3,
        RandomAccess::RecoveryPoint => 4,
    };
    let lead = match p.leading {
        Leading::No => 0,
        Leading::Radl => 1,
        Leading::Rasl => 2,
    };
    st | ra << 2 | lead << 5 | u8::from(p.reference) << 7
}

fn decode_picture(k: u8, temporal_id: u8) -> Picture {
    Picture {
        slice_type: match k & 3 {
            1 => Some(SliceType::I),
            2 => Some(SliceType::P),
            3 => Some(SliceType::B),
            _ => None,
        },
        random_access: match (k >> 2) & 7 {
            1 => RandomAccess::Idr,
            2 => RandomAccess::Cra,
            3 => RandomAccess::Bla,
            4 => RandomAccess::RecoveryPoint,
            _ => RandomAccess::None,
        },
        leading: match (k >> 5) & 3 {
            1 => Leading::Radl,
            2 => Leading::Rasl,
            _ => Leading::No,
        },
        reference: k & 0x80 != 0,
        temporal_id,
    }
}

fn put_u(w: &mut Vec<u8>, mut v: u64) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            w.push(b);
            return;
        }
        w.push(b | 0x80);
    }
}

fn put_i(w: &mut Vec<u8>, v: i64) {
    put_u(w, ((v << 1) ^ (v >> 63)) as u64);
}

fn put_bytes(w: &mut Vec<u8>, b: &[u8]) {
    put_u(w, b.len() as u64);
    w.extend_from_slice(b);
}

struct Cursor<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn byte(&mut self) -> Result<u8, PayloadError> {
        let v = *self.b.get(self.pos).ok_or(PayloadError::Truncated)?;
        self.pos += 1;
        Ok(v)
    }
    fn u(&mut self) -> Result<u64, PayloadError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(PayloadError::VarintTooLong)
    }
    fn i(&mut self) -> Result<i64, PayloadError> {
        let u = self.u()?;
        Ok((u >> 1) as i64 ^ -((u & 1) as i64))
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8], PayloadError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.b.len())
            .ok_or(PayloadError::Truncated)?;
        let s = &self.b[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn bytes(&mut self) -> Result<&'a [u8], PayloadError> {
        let n = usize::try_from(self.u()?).map_err(|_| PayloadError::OutOfRange("length"))?;
        self.take(n)
    }
    /// A count of items of at least `min_item` bytes each, checked against what is left.
    fn count(&mut self, min_item: usize) -> Result<usize, PayloadError> {
        let n = usize::try_from(self.u()?).map_err(|_| PayloadError::OutOfRange("count"))?;
        if n.saturating_mul(min_item) > self.b.len() - self.pos {
            return Err(PayloadError::CountTooLarge(n));
        }
        Ok(n)
    }
}

/// The payload of a saved index file, after its magic, version, length and checksum check out.
fn checked_payload<'a>(bytes: &'a [u8], path: &Path) -> Result<&'a [u8]> {
    let stale = |reason: String| DemuxError::StaleIndex {
        file: path.to_path_buf(),
        reason,
    };
    if bytes.len() < 19 || &bytes[..5] != MAGIC {
        return Err(stale("not an index file".into()));
    }
    let version = u16::from_le_bytes([bytes[5], bytes[6]]);
    if version != INDEX_FORMAT_VERSION {
        return Err(stale(format!(
            "format version {version}, this build reads {INDEX_FORMAT_VERSION}"
        )));
    }
    let mut len = [0u8; 8];
    len.copy_from_slice(&bytes[7..15]);
    let len = u64::from_le_bytes(len);
    let crc = u32::from_le_bytes([bytes[15], bytes[16], bytes[17], bytes[18]]);
    let payload = &bytes[19..];
    if payload.len() as u64 != len || crc32fast::hash(payload) != crc {
        return Err(stale("damaged (length or checksum mismatch)".into()));
    }
    Ok(payload)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip() {
        for v in [0i64, 1, -1, 63, -64, 1 << 40, i64::MIN / 2, i64::MAX / 2] {
            let mut w = Vec::new();
            put_i(&mut w, v);
            assert_eq!(Cursor { b: &w, pos: 0 }.i().unwrap(), v);
        }
        let mut w = Vec::new();
        put_u(&mut w, u64::MAX);
        assert_eq!(Cursor { b: &w, pos: 0 }.u().unwrap(), u64::MAX);
    }

    #[test]
    fn pictures_round_trip() {
        for st in [
            None,
            Some(SliceType::I),
            Some(SliceType::P),
            Some(SliceType::B),
        ] {
            for ra in [
                RandomAccess::None,
                RandomAccess::Idr,
                RandomAccess::Cra,
                RandomAccess::Bla,
                RandomAccess::RecoveryPoint,
            ] {
                for leading in [Leading::No, Leading::Radl, Leading::Rasl] {
                    for reference in [false, true] {
                        let p = Picture {
                            slice_type: st,
                            random_access: ra,
                            reference,
                            leading,
                            temporal_id: 3,
                        };
                        assert_eq!(decode_picture(encode_picture(p), 3), p);
                    }
                }
            }
        }
    }
}
