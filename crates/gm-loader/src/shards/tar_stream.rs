//! Samples of a tar read front to back, one at a time (pull, no index): the streaming mode's
//! source. Headers are parsed here rather than by `tar::Archive`, whose entries borrow the
//! archive and so cannot be held between pulls; GNU long names and pax paths are honoured.

use std::io::Read;

use super::tar_index::{TAR_BLOCK, split_name};

/// One sample: its key and its members' extensions and bytes, in tar order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawSample {
    /// The key.
    pub key: String,
    /// `(extension, bytes)` of each member.
    pub members: Vec<(String, Vec<u8>)>,
}

impl RawSample {
    /// Bytes held.
    pub fn bytes(&self) -> u64 {
        self.members.iter().map(|m| m.1.len() as u64).sum()
    }
}

/// Reads samples from a tar stream.
pub(crate) struct TarSamples<R> {
    reader: R,
    /// A member read ahead that starts the next sample.
    ahead: Option<(String, String, Vec<u8>)>,
    /// A failure met after a whole sample, reported on the next pull.
    failed: Option<std::io::Error>,
    ended: bool,
}

/// A failure while reading a member, with the member's key when its header was read.
type MemberError = (std::io::Error, Option<String>);

impl<R: Read> TarSamples<R> {
    pub(crate) fn new(reader: R) -> Self {
        TarSamples {
            reader,
            ahead: None,
            failed: None,
            ended: false,
        }
    }

    /// The next whole sample; `Ok(None)` at the end of the archive; `Err` when the stream
    /// fails or is cut. A sample whose member was cut is lost; one that was whole when a
    /// later header failed is returned, and the failure comes on the next pull.
    pub(crate) fn next_sample(&mut self) -> std::io::Result<Option<RawSample>> {
        if let Some(e) = self.failed.take() {
            self.ended = true;
            return Err(e);
        }
        let mut sample: Option<RawSample> = None;
        loop {
            let next = match self.ahead.take() {
                Some(m) => Some(m),
                None if self.ended => None,
                None => match self.next_member() {
                    Ok(m) => m,
                    Err((e, key)) => {
                        self.ended = true;
                        return match sample {
                            Some(s) if key.as_deref() != Some(s.key.as_str()) => {
                                self.failed = Some(e);
                                Ok(Some(s))
                            }
                            _ => Err(e),
                        };
                    }
                },
            };
            let Some((key, ext, data)) = next else {
                self.ended = true;
                return Ok(sample);
            };
            match &mut sample {
                Some(s) if s.key != key => {
                    self.ahead = Some((key, ext, data));
                    return Ok(sample);
                }
                Some(s) => s.members.push((ext, data)),
                None => {
                    sample = Some(RawSample {
                        key,
                        members: vec![(ext, data)],
                    })
                }
            }
        }
    }

    /// The next regular file that is not hidden: `(key, extension, data)`.
    fn next_member(&mut self) -> Result<Option<(String, String, Vec<u8>)>, MemberError> {
        let mut long_name: Option<Vec<u8>> = None;
        loop {
            let mut block = [0u8; TAR_BLOCK as usize];
            if !read_block(&mut self.reader, &mut block).map_err(|e| (e, None))? {
                return Ok(None);
            }
            if block.iter().all(|&b| b == 0) {
                return Ok(None);
            }
            let header = tar::Header::from_byte_slice(&block);
            check_sum(&block).map_err(|e| (e, None))?;
            let size = header.entry_size().map_err(|e| (e, None))?;
            let kind = header.entry_type();
            let data = read_data(&mut self.reader, size).map_err(|e| {
                let name = long_name
                    .clone()
                    .unwrap_or_else(|| header.path_bytes().into_owned());
                let name = String::from_utf8_lossy(&name).into_owned();
                (e, Some(split_name(&name).0.to_string()))
            })?;
            if kind.is_gnu_longname() {
                long_name = Some(data.split(|&b| b == 0).next().unwrap_or_default().to_vec());
                continue;
            }
            if kind.is_pax_local_extensions() {
                let path = tar::PaxExtensions::new(&data)
                    .flatten()
                    .find(|e| e.key() == Ok("path"))
                    .map(|e| e.value_bytes().to_vec());
                if path.is_some() {
                    long_name = path;
                }
                continue;
            }
            if !kind.is_file() {
                long_name = None;
                continue;
            }
            let name_bytes = long_name
                .take()
                .unwrap_or_else(|| header.path_bytes().into_owned());
            let name = String::from_utf8_lossy(&name_bytes).into_owned();
            let (key, ext) = split_name(&name);
            if key.is_empty() || key.ends_with('/') {
                continue;
            }
            return Ok(Some((key.to_string(), ext.to_string(), data)));
        }
    }
}

/// Fills `block`; `false` at a clean end of stream (no byte of a new block).
fn read_block(r: &mut impl Read, block: &mut [u8]) -> std::io::Result<bool> {
    let mut got = 0;
    while got < block.len() {
        match r.read(&mut block[got..]) {
            Ok(0) if got == 0 => return Ok(false),
            Ok(0) => return Err(cut(format!("a header cut after {got} bytes"))),
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// A member's data, and the padding to the next block skipped.
fn read_data(r: &mut impl Read, size: u64) -> std::io::Result<Vec<u8>> {
    // A header can claim any size: the buffer grows with the bytes that actually come.
    let mut data = Vec::with_capacity(usize::try_from(size.min(16 << 20)).unwrap_or(0));
    let got = r.by_ref().take(size).read_to_end(&mut data)?;
    if (got as u64) < size {
        return Err(cut(format!("a member cut after {got} of {size} bytes")));
    }
    let pad = size.next_multiple_of(TAR_BLOCK) - size;
    let skipped = std::io::copy(&mut r.by_ref().take(pad), &mut std::io::sink())?;
    if skipped < pad {
        return Err(cut("the padding after a member is cut".into()));
    }
    Ok(data)
}

fn cut(what: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::UnexpectedEof, what)
}

/// [`check_sum`] of a block of any length (an error unless it is one tar block).
pub(crate) fn check_sum_of(block: &[u8]) -> std::io::Result<()> {
    match <&[u8; TAR_BLOCK as usize]>::try_from(block) {
        Ok(b) => check_sum(b),
        Err(_) => Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{} bytes are not a tar header", block.len()),
        )),
    }
}

/// A header whose checksum does not match is corruption, not a member.
fn check_sum(block: &[u8; TAR_BLOCK as usize]) -> std::io::Result<()> {
    let header = tar::Header::from_byte_slice(block);
    let stored = header.cksum()?;
    let sum: u32 = block
        .iter()
        .enumerate()
        .map(|(i, &b)| {
            if (148..156).contains(&i) {
                32
            } else {
                u32::from(b)
            }
        })
        .sum();
    if sum != stored {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("a tar header's checksum is {stored}, its bytes sum to {sum}: corrupt"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::super::tar_index::TarIndex;
    use super::*;

    /// tests/media/wds, or `$GM_FIXTURES/wds` in the GPU bundle.
    fn fixtures() -> std::path::PathBuf {
        std::env::var_os("GM_FIXTURES")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| {
                std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/media")
            })
            .join("wds")
    }

    fn all(bytes: &[u8]) -> (Vec<RawSample>, Option<String>) {
        let mut s = TarSamples::new(bytes);
        let mut out = Vec::new();
        loop {
            match s.next_sample() {
                Ok(Some(x)) => out.push(x),
                Ok(None) => return (out, None),
                Err(e) => return (out, Some(e.to_string())),
            }
        }
    }

    #[test]
    fn the_stream_groups_as_the_index_does_on_the_dali_fixtures() {
        let dir = fixtures();
        for name in ["mixed.tar", "long-names.tar"] {
            let tar = std::fs::read(dir.join(name)).unwrap();
            let index = TarIndex::build(&tar[..]).index;
            let (samples, err) = all(&tar);
            assert_eq!(err, None);
            assert_eq!(samples.len(), index.samples.len(), "{name}");
            for (s, i) in samples.iter().zip(&index.samples) {
                assert_eq!(s.key, i.key());
                assert_eq!(s.members.len(), i.members.len());
                for ((ext, data), m) in s.members.iter().zip(&i.members) {
                    assert_eq!(ext, &m.ext);
                    assert!(data[..] == tar[m.offset as usize..(m.offset + m.size) as usize]);
                }
            }
        }
    }

    #[test]
    fn a_cut_or_corrupt_stream_keeps_the_samples_before_it() {
        let dir = fixtures();
        let tar = std::fs::read(dir.join("mixed.tar")).unwrap();
        let (whole, _) = all(&tar);
        // Inside 003.jpg's data (offset 8704, 1537 bytes): 3 samples survive.
        let (got, err) = all(&tar[..9000]);
        assert_eq!(got, whole[..3]);
        assert!(err.unwrap().contains("cut after"));
        let mut bad = tar.clone();
        bad[8704 - 512 + 10] ^= 0x55; // 003.jpg's header
        let (got, err) = all(&bad);
        assert_eq!(got, whole[..3]);
        assert!(err.unwrap().contains("corrupt"));
    }
}
