//! The shard index: where each member of each sample lies in a tar, in DALI's `.idx` format
//! (`tools/wds2idx.py`, version `v1.2`): a `v1.2 <samples>` line, then one line per sample of
//! `ext offset size name` for each member, where `offset` is the member's data offset.

use std::io::Read;

use super::ShardError;

/// The tar block size: member data starts on a multiple of it.
pub const TAR_BLOCK: u64 = 512;
/// The only index version read and written.
const VERSION: &str = "v1.2";
/// Label members are read while indexing when at most this big (a `.cls` is a few bytes).
pub(crate) const LABEL_BYTES: u64 = 64 * 1024;
/// Extensions whose contents a build keeps: the label fields.
pub const LABEL_EXTENSIONS: &[&str] = &["cls", "txt", "json"];

/// One member of a sample.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// The extension: the name after the first `.` of its last path component.
    pub ext: String,
    /// Offset of its data in the shard.
    pub offset: u64,
    /// Its size in bytes.
    pub size: u64,
    /// Its full name in the tar.
    pub name: String,
}

/// The members of one sample, in tar order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IndexedSample {
    /// Its members.
    pub members: Vec<Member>,
}

impl IndexedSample {
    /// The key (the name without the extension) of the sample.
    pub fn key(&self) -> &str {
        self.members.first().map_or("", |m| split_name(&m.name).0)
    }
}

/// The index of one shard.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TarIndex {
    /// Its samples, in tar order.
    pub samples: Vec<IndexedSample>,
}

/// What a build found besides the index.
#[derive(Debug, Clone, Default)]
pub struct Built {
    /// The index.
    pub index: TarIndex,
    /// The contents of small label members, by `(sample, member)`.
    pub labels: Vec<(usize, usize, Vec<u8>)>,
    /// Why the shard ended early (truncated, corrupt header), if it did.
    pub cut: Option<String>,
}

/// DALI's `split_name`: the key runs to the first `.` after the last `/`; the extension is the
/// rest. A name without such a dot is all key.
pub fn split_name(name: &str) -> (&str, &str) {
    let base = name.rfind('/').map_or(0, |i| i + 1);
    match name[base..].find('.') {
        Some(dot) => (&name[..base + dot], &name[base + dot + 1..]),
        None => (name, ""),
    }
}

/// A reader that counts the bytes it gave.
struct Counted<R> {
    inner: R,
    n: u64,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let got = self.inner.read(buf)?;
        self.n += got as u64;
        Ok(got)
    }
}

impl TarIndex {
    /// Adds a member, starting a new sample when its key differs from the last one's; hidden
    /// files (`.x`, `dir/.x`) are skipped, as wds2idx skips them.
    pub(crate) fn push(&mut self, member: Member) -> Option<(usize, usize)> {
        let key = split_name(&member.name).0;
        if key.is_empty() || key.ends_with('/') {
            return None;
        }
        let same = self.samples.last().is_some_and(|s| s.key() == key);
        if !same {
            self.samples.push(IndexedSample::default());
        }
        let last = self.samples.len() - 1;
        let sample = &mut self.samples[last];
        sample.members.push(member);
        Some((last, sample.members.len() - 1))
    }

    /// Indexes a tar by reading it once, front to back. A stream that ends early or holds a
    /// corrupt header keeps the samples completed before it, and says why in `cut`.
    pub fn build(reader: impl Read) -> Built {
        let mut counted = Counted {
            inner: reader,
            n: 0,
        };
        let mut built = Built::default();
        let mut archive = tar::Archive::new(&mut counted);
        let entries = match archive.entries() {
            Ok(e) => e,
            Err(e) => {
                built.cut = Some(e.to_string());
                return built;
            }
        };
        for entry in entries {
            let mut entry = match entry {
                Ok(e) => e,
                Err(e) => {
                    built.cut = Some(e.to_string());
                    break;
                }
            };
            if !entry.header().entry_type().is_file() {
                continue;
            }
            let name = match entry.path() {
                Ok(p) => p.to_string_lossy().into_owned(),
                Err(e) => {
                    built.cut = Some(format!("a member's name: {e}"));
                    break;
                }
            };
            let (offset, size) = (entry.raw_file_position(), entry.size());
            let ext = split_name(&name).1.to_string();
            let label = LABEL_EXTENSIONS.iter().any(|l| ext.eq_ignore_ascii_case(l));
            let Some((s, m)) = built.index.push(Member {
                ext,
                offset,
                size,
                name,
            }) else {
                continue;
            };
            if label && size <= LABEL_BYTES {
                let mut bytes = Vec::with_capacity(size as usize);
                if let Err(e) = entry.read_to_end(&mut bytes) {
                    built.cut = Some(e.to_string());
                    break;
                }
                built.labels.push((s, m, bytes));
            }
        }
        // A member whose data runs past the bytes read was cut: its sample is not whole.
        if built.cut.is_some() {
            let read = counted.n;
            let last_cut = built.index.samples.last().is_some_and(|s| {
                s.members
                    .iter()
                    .any(|m| m.offset.saturating_add(m.size) > read)
            });
            if last_cut {
                built.index.samples.pop();
                built.labels.retain(|l| l.0 < built.index.samples.len());
            }
        }
        built
    }

    /// DALI's text.
    pub fn to_dali(&self) -> String {
        let mut out = format!("{VERSION} {}\n", self.samples.len());
        for sample in &self.samples {
            let fields: Vec<String> = sample
                .members
                .iter()
                .map(|m| format!("{} {} {} {}", m.ext, m.offset, m.size, m.name))
                .collect();
            out.push_str(&fields.join(" "));
            out.push('\n');
        }
        out
    }

    /// Parses DALI's text (`what` names it in errors). Names and extensions cannot hold
    /// spaces in this format; each member is four fields.
    pub fn parse(text: &str, what: &str) -> Result<TarIndex, ShardError> {
        let bad = |line: usize, reason: String| ShardError::Index {
            index: what.to_string(),
            line,
            reason,
        };
        let mut lines = text.lines();
        let head = lines.next().unwrap_or_default();
        let mut words = head.split_whitespace();
        if words.next() != Some(VERSION) {
            return Err(bad(
                1,
                format!("expected `{VERSION} <samples>`, found {head:?}"),
            ));
        }
        let count: usize = words
            .next()
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| bad(1, format!("no sample count in {head:?}")))?;
        let mut index = TarIndex::default();
        for (n, line) in lines.enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.is_empty() || !fields.len().is_multiple_of(4) {
                return Err(bad(
                    n + 2,
                    "expected `ext offset size name` per member".into(),
                ));
            }
            let mut sample = IndexedSample::default();
            for f in fields.chunks_exact(4) {
                let num = |t: &str| {
                    t.parse::<u64>()
                        .map_err(|e| bad(n + 2, format!("{t:?}: {e}")))
                };
                sample.members.push(Member {
                    ext: f[0].to_string(),
                    offset: num(f[1])?,
                    size: num(f[2])?,
                    name: f[3].to_string(),
                });
            }
            index.samples.push(sample);
        }
        if index.samples.len() != count {
            return Err(bad(
                1,
                format!("says {count} samples, holds {}", index.samples.len()),
            ));
        }
        Ok(index)
    }

    /// Why a member of sample `s` cannot lie in a shard of `shard_size` bytes, if so: its
    /// data must start on a tar block, after a header, and end within the shard.
    pub fn member_problem(member: &Member, shard_size: u64) -> Option<String> {
        if !member.offset.is_multiple_of(TAR_BLOCK) || member.offset < TAR_BLOCK {
            return Some(format!(
                "member {} at offset {} is not after a tar header",
                member.name, member.offset
            ));
        }
        let end = member.offset.saturating_add(member.size);
        (end > shard_size).then(|| {
            format!(
                "member {} ends at byte {end}, past the shard's {shard_size} bytes (truncated shard?)",
                member.name
            )
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn tar_of(files: &[(&str, &[u8])]) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        for (name, data) in files {
            let mut h = tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            b.append_data(&mut h, name, *data).unwrap();
        }
        b.into_inner().unwrap()
    }

    #[test]
    fn names_split_as_wds2idx_splits_them() {
        assert_eq!(split_name("a/b.c/x.seg.png"), ("a/b.c/x", "seg.png"));
        assert_eq!(split_name("x.jpg"), ("x", "jpg"));
        assert_eq!(split_name("dir/.hidden"), ("dir/", "hidden"));
        assert_eq!(split_name("noext"), ("noext", ""));
    }

    #[test]
    fn members_group_by_key_and_offsets_point_at_the_data() {
        let files: &[(&str, &[u8])] = &[
            ("c/a.jpg", b"AAAA"),
            ("c/a.cls", b"3"),
            ("c/.hidden", b"h"),
            ("c/b.jpg", &[7u8; 700]),
            ("c/b.json", b"{\"label\": 1}"),
            ("c/a.jpg", b"again"),
        ];
        let tar = tar_of(files);
        let built = TarIndex::build(&tar[..]);
        assert!(built.cut.is_none());
        let keys: Vec<&str> = built.index.samples.iter().map(|s| s.key()).collect();
        assert_eq!(keys, ["c/a", "c/b", "c/a"]);
        for s in &built.index.samples {
            for m in &s.members {
                let data = &tar[m.offset as usize..(m.offset + m.size) as usize];
                let want = files.iter().filter(|f| f.0 == m.name).map(|f| f.1);
                assert!(want.into_iter().any(|w| w == data), "{}", m.name);
                assert_eq!(TarIndex::member_problem(m, tar.len() as u64), None);
            }
        }
        assert_eq!(built.labels.len(), 2);
        let text = built.index.to_dali();
        assert!(
            text.starts_with("v1.2 3\njpg 512 4 c/a.jpg cls 1536 1 c/a.cls\n"),
            "{text}"
        );
        assert_eq!(TarIndex::parse(&text, "x").unwrap(), built.index);
    }

    #[test]
    fn a_truncated_tar_keeps_its_whole_samples_and_says_why() {
        let tar = tar_of(&[("a.jpg", &[1u8; 600]), ("b.jpg", &[2u8; 2000])]);
        // Inside b's data, then inside b's header: a stays whole either way.
        for cut in [2048 + 100, 1536 + 100] {
            let built = TarIndex::build(&tar[..cut]);
            let keys: Vec<&str> = built.index.samples.iter().map(|s| s.key()).collect();
            assert_eq!(keys, ["a"], "cut at {cut}");
            assert!(built.cut.is_some(), "cut at {cut}");
        }
    }

    #[test]
    fn bad_index_text_is_an_error_with_the_line() {
        for (text, line) in [
            ("v1.1 1\njpg 512 3 a.jpg\n", 1),
            ("v1.2 2\njpg 512 3 a.jpg\n", 1),
            ("v1.2 1\njpg 512 3\n", 2),
            ("v1.2 1\njpg x 3 a.jpg\n", 2),
        ] {
            let e = TarIndex::parse(text, "s.idx").unwrap_err().to_string();
            assert!(e.contains(&format!("s.idx:{line}")), "{e}");
        }
        let m = Member {
            ext: "jpg".into(),
            offset: 1000,
            size: 1,
            name: "a.jpg".into(),
        };
        assert!(TarIndex::member_problem(&m, 5000).is_some());
        let m = Member { offset: 1024, ..m };
        assert!(TarIndex::member_problem(&m, 1024).unwrap().contains("past"));
    }
}
