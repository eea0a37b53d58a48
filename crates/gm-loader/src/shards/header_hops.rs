//! Indexing a shard by hopping from tar header to tar header with ranged reads, instead of
//! reading it whole: for shards of large members (videos), where a whole read would fetch
//! gigabytes to learn a few hundred offsets.

use std::ops::Range;

use gm_storage::Storage;

use super::shard::Shard;
use super::tar_index::{Built, LABEL_BYTES, LABEL_EXTENSIONS, Member, TAR_BLOCK, split_name};
use super::tar_stream::check_sum_of;

/// Members looked at before deciding whether hopping pays.
const PROBE_MEMBERS: usize = 8;
/// Hopping pays when the probed members average at least this many bytes.
const LARGE_MEMBER: u64 = 4 << 20;

/// When to hop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Hops {
    /// Always.
    Always,
    /// Only if the first members are large; `None` otherwise (read the shard whole).
    IfLarge,
}

/// Why a small member (a GNU long name, a pax header, a label) was not read; the index ends
/// before it.
#[derive(Debug, thiserror::Error)]
enum SmallMemberError {
    /// Larger than a small member may be.
    #[error("a {what} of {len} bytes at byte {at}")]
    TooLarge {
        what: &'static str,
        len: u64,
        at: u64,
    },
    /// Its bytes could not be read.
    #[error("the {what} at byte {at}: {source}")]
    Read {
        what: &'static str,
        at: u64,
        source: std::io::Error,
    },
}

/// The index of `shard` from its headers: one ranged read per header (and per GNU long name,
/// pax header and small label member). `None` when `when` is `IfLarge` and the first members
/// are small.
pub(crate) fn index_by_headers(shard: &Shard, storage: &Storage, when: Hops) -> Option<Built> {
    let size = shard.version.size;
    let read = |r: Range<u64>| -> std::io::Result<Vec<u8>> {
        let len = r.end - r.start;
        let mut got = shard.read_ranges(&[r], storage);
        let bytes = got
            .pop()
            .unwrap_or_else(|| Err(std::io::Error::other("no read")))?;
        if bytes.len() as u64 != len {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!("{} of {len} bytes", bytes.len()),
            ));
        }
        Ok(bytes)
    };
    let mut built = Built::default();
    let (mut pos, mut long_name, mut members, mut member_bytes) = (0u64, None, 0usize, 0u64);
    while pos + TAR_BLOCK <= size {
        if when == Hops::IfLarge
            && members == PROBE_MEMBERS
            && member_bytes / (members as u64) < LARGE_MEMBER
        {
            return None;
        }
        let block = match read(pos..pos + TAR_BLOCK).and_then(|b| {
            if b.iter().all(|&x| x == 0) {
                return Ok(None);
            }
            check_sum_of(&b).map(|()| Some(b))
        }) {
            Ok(Some(b)) => b,
            Ok(None) => return Some(built),
            Err(e) => {
                built.cut = Some(format!("the header at byte {pos}: {e}"));
                return Some(built);
            }
        };
        let header = tar::Header::from_byte_slice(&block);
        let (kind, data) = (header.entry_type(), pos + TAR_BLOCK);
        let Ok(len) = header.entry_size() else {
            built.cut = Some(format!("the header at byte {pos} has no size"));
            return Some(built);
        };
        if data.saturating_add(len) > size {
            built.cut = Some(format!(
                "the member at byte {data} runs past the shard's {size} bytes"
            ));
            return Some(built);
        }
        pos = data + len.next_multiple_of(TAR_BLOCK);
        let small = |what: &'static str| -> Result<Vec<u8>, SmallMemberError> {
            if len > LABEL_BYTES {
                return Err(SmallMemberError::TooLarge {
                    what,
                    len,
                    at: data,
                });
            }
            read(data..data + len).map_err(|source| SmallMemberError::Read {
                what,
                at: data,
                source,
            })
        };
        if kind.is_gnu_longname() || kind.is_pax_local_extensions() {
            match small("long name") {
                Ok(bytes) if kind.is_gnu_longname() => {
                    long_name = Some(bytes.split(|&b| b == 0).next().unwrap_or_default().to_vec());
                }
                Ok(bytes) => {
                    let path = tar::PaxExtensions::new(&bytes)
                        .flatten()
                        .find(|e| e.key() == Ok("path"))
                        .map(|e| e.value_bytes().to_vec());
                    long_name = path.or(long_name);
                }
                Err(e) => {
                    built.cut = Some(e.to_string());
                    return Some(built);
                }
            }
            continue;
        }
        let name_bytes = long_name
            .take()
            .unwrap_or_else(|| header.path_bytes().into_owned());
        if !kind.is_file() {
            continue;
        }
        let name = String::from_utf8_lossy(&name_bytes).into_owned();
        let ext = split_name(&name).1.to_string();
        let label = LABEL_EXTENSIONS.iter().any(|l| ext.eq_ignore_ascii_case(l));
        members += 1;
        member_bytes += len;
        let Some((s, m)) = built.index.push(Member {
            ext,
            offset: data,
            size: len,
            name,
        }) else {
            continue;
        };
        if label && len <= LABEL_BYTES {
            match small("label") {
                Ok(bytes) => built.labels.push((s, m, bytes)),
                Err(e) => {
                    built.cut = Some(e.to_string());
                    return Some(built);
                }
            }
        }
    }
    Some(built)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::super::tar_index::TarIndex;
    use super::*;

    fn fixture(name: &str) -> std::path::PathBuf {
        std::env::var_os("GM_FIXTURES")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| {
                std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/media")
            })
            .join("wds")
            .join(name)
    }

    #[test]
    fn hopping_gives_the_index_and_labels_of_a_whole_read() {
        let storage = Storage::default();
        for name in ["mixed.tar", "long-names.tar"] {
            let path = fixture(name);
            let shard = Shard::open(&path.display().to_string(), &storage).unwrap();
            let hopped = index_by_headers(&shard, &storage, Hops::Always).unwrap();
            let whole = TarIndex::build(std::fs::File::open(&path).unwrap());
            assert_eq!(hopped.index, whole.index, "{name}");
            assert_eq!(hopped.labels, whole.labels, "{name}");
            assert_eq!((hopped.cut, whole.cut), (None, None));
            let dali = std::fs::read_to_string(path.with_extension("idx")).unwrap();
            assert_eq!(hopped.index.to_dali(), dali);
        }
        // Fewer than 8 members: indexed by hopping anyway.
        let long = fixture("long-names.tar").display().to_string();
        let shard = Shard::open(&long, &storage).unwrap();
        assert!(index_by_headers(&shard, &storage, Hops::IfLarge).is_some());
    }

    #[test]
    fn a_cut_shard_keeps_the_members_within_it() {
        let storage = Storage::default();
        let bytes = std::fs::read(fixture("mixed.tar")).unwrap();
        let dir = std::env::temp_dir().join(format!("gm-hops-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cut = dir.join("cut.tar");
        // Inside x.y/003.jpg's data (offset 8704, 1537 bytes).
        std::fs::write(&cut, &bytes[..9000]).unwrap();
        let shard = Shard::open(&cut.display().to_string(), &storage).unwrap();
        let hopped = index_by_headers(&shard, &storage, Hops::Always).unwrap();
        let keys: Vec<&str> = hopped.index.samples.iter().map(|s| s.key()).collect();
        assert_eq!(keys, ["cls/000", "cls/001", "cls/002"]);
        assert!(hopped.cut.unwrap().contains("runs past"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
