//! Read-ahead of one stream's shards. A thread per stream fetches the bytes of the stream's
//! shards in order, a few chunks ahead of the tar parser, so that one thread parsing several
//! streams never waits on a GET (or a cold disk) that could have started earlier: measured
//! without it, a stream spent the whole time of each shard's GETs idle (issue 22's S3 run).

use std::io::Read;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, bounded};
use gm_storage::{RemoteUrl, Storage};

use super::ShardError;
use super::shard::{Place, Shard};

/// Bytes per piece of a local shard handed to the parser.
const CHUNK: u64 = 1 << 20;
/// Bytes per ranged GET of a remote shard.
const PIECE: u64 = 1 << 20;
/// Ranged GETs of one stream in flight at once: one connection's rate is a fraction of a
/// store's (s3s-fs served one 4 MB GET at 95 MB/s; S3 gives a connection about as much, and
/// recommends parallel ranged GETs).
const PARALLEL: usize = 8;
/// Pieces a stream holds ahead of its parser: the read-ahead memory is at most
/// `CHUNK * AHEAD` per stream (local), `PIECE * (AHEAD + PARALLEL)` (remote). More than a
/// batch: the loader takes a whole batch (256 ImageNet JPEGs, 16 MB) from one stream while
/// the others wait, and with 8 MB ahead it waited on that stream's GETs for the rest
/// (streamed S3 on an H100 host: 15.9-17.1k images/s with 8, 19.5-20.3k with 32, same runs).
const AHEAD: usize = 32;
/// How often a parser waiting for bytes looks at its stop flag.
const POLL: Duration = Duration::from_millis(20);

/// What the fetching thread hands over, tagged with the shard's place in the stream's list.
enum Piece {
    /// The next bytes of the shard.
    Bytes(Vec<u8>),
    /// The shard is over: at its end, or because it could not be opened or read.
    End(Result<(), std::io::Error>),
}

/// The fetching thread of one stream, from some place in its list of shards on.
pub(crate) struct Prefetch {
    rx: Receiver<(usize, Piece)>,
    cancel: Arc<AtomicBool>,
}

impl Prefetch {
    /// Starts fetching `shards[from..]` (names, in stream order; places are positions in
    /// that list). The thread ends at the list's end, when cancelled, or when every reader is
    /// dropped; it is not joined, since it may be inside a request.
    pub(crate) fn start(
        shards: Vec<String>,
        from: usize,
        storage: Storage,
    ) -> std::io::Result<Prefetch> {
        let (tx, rx) = bounded(AHEAD);
        let cancel = Arc::new(AtomicBool::new(false));
        let flag = cancel.clone();
        std::thread::Builder::new()
            .name("gm-shard-prefetch".into())
            .spawn(move || fetch(&shards, from, &storage, &tx, &flag))?;
        Ok(Prefetch { rx, cancel })
    }

    /// The bytes of the shard at `place` as a reader (pieces left over from earlier shards
    /// are dropped). Reading gives up with an error once `stop` is set.
    pub(crate) fn shard(&self, place: usize, stop: Option<Arc<AtomicBool>>) -> ShardBytes {
        ShardBytes {
            rx: self.rx.clone(),
            place,
            chunk: Vec::new(),
            used: 0,
            ended: false,
            stop,
        }
    }
}

impl Drop for Prefetch {
    fn drop(&mut self) {
        self.cancel.store(true, Ordering::Relaxed);
    }
}

/// The thread: each shard's bytes, then its end, in list order.
fn fetch(
    shards: &[String],
    from: usize,
    storage: &Storage,
    tx: &Sender<(usize, Piece)>,
    cancel: &AtomicBool,
) {
    let io = |e: ShardError| std::io::Error::other(e.to_string());
    for (place, name) in shards.iter().enumerate().skip(from) {
        let sent = match Shard::open(name, storage) {
            Err(e) => Some(Err(io(e))),
            Ok(shard) => match &shard.place {
                Place::Remote(url) => send_ranges(place, &shard, url, storage, tx, cancel),
                Place::Local(_) => match shard.into_reader(storage.clone()) {
                    Ok(reader) => send_pieces(place, reader, tx, cancel),
                    Err(e) => Some(Err(io(e))),
                },
            },
        };
        let Some(end) = sent else { return };
        if cancel.load(Ordering::Relaxed) || tx.send((place, Piece::End(end))).is_err() {
            return;
        }
    }
}

/// Sends a remote shard's bytes, fetched by [`PARALLEL`] ranged GETs of [`PIECE`] at once,
/// pinned to the version seen when it was opened; how it ended, or `None` when the stream is
/// gone.
fn send_ranges(
    place: usize,
    shard: &Shard,
    url: &RemoteUrl,
    storage: &Storage,
    tx: &Sender<(usize, Piece)>,
    cancel: &AtomicBool,
) -> Option<Result<(), std::io::Error>> {
    let size = shard.version.size;
    let mut at = 0;
    while at < size {
        let mut reads = Vec::with_capacity(PARALLEL);
        while at < size && reads.len() < PARALLEL {
            let end = (at + PIECE).min(size);
            reads.push((url.clone(), at..end, Some(shard.version.clone())));
            at = end;
        }
        for got in storage.get_many_ranges(&reads) {
            let bytes = match got {
                Ok(b) => b,
                Err(e) => return Some(Err(e.into())),
            };
            if cancel.load(Ordering::Relaxed) || tx.send((place, Piece::Bytes(bytes))).is_err() {
                return None;
            }
        }
    }
    Some(Ok(()))
}

/// Sends one shard's bytes; how it ended, or `None` when the stream is gone.
fn send_pieces(
    place: usize,
    mut reader: Box<dyn Read + Send>,
    tx: &Sender<(usize, Piece)>,
    cancel: &AtomicBool,
) -> Option<Result<(), std::io::Error>> {
    loop {
        // Room for a whole piece up front: grown from empty, the piece was reallocated a
        // dozen times and read through the shard's buffered reader in small steps.
        let mut chunk = Vec::with_capacity(CHUNK as usize);
        match reader.by_ref().take(CHUNK).read_to_end(&mut chunk) {
            Ok(0) => return Some(Ok(())),
            Ok(_) => {
                if cancel.load(Ordering::Relaxed) || tx.send((place, Piece::Bytes(chunk))).is_err()
                {
                    return None;
                }
            }
            Err(e) => {
                // Bytes read before the failure still reach the parser: samples before it
                // count.
                if !chunk.is_empty() && tx.send((place, Piece::Bytes(chunk))).is_err() {
                    return None;
                }
                return Some(Err(e));
            }
        }
    }
}

/// One shard's bytes out of its stream's [`Prefetch`].
pub(crate) struct ShardBytes {
    rx: Receiver<(usize, Piece)>,
    place: usize,
    chunk: Vec<u8>,
    used: usize,
    ended: bool,
    stop: Option<Arc<AtomicBool>>,
}

impl ShardBytes {
    /// The next piece of this shard.
    fn next_piece(&mut self) -> std::io::Result<Option<Vec<u8>>> {
        loop {
            if self
                .stop
                .as_ref()
                .is_some_and(|s| s.load(Ordering::Relaxed))
            {
                return Err(std::io::Error::other("the epoch stopped"));
            }
            let (place, piece) = match self.rx.recv_timeout(POLL) {
                Ok(got) => got,
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(std::io::Error::other("the shard reader stopped"));
                }
            };
            // Left over from a shard the parser gave up on.
            if place < self.place {
                continue;
            }
            if place > self.place {
                return Err(std::io::Error::other("the shard reader skipped a shard"));
            }
            return match piece {
                Piece::Bytes(b) => Ok(Some(b)),
                Piece::End(end) => {
                    self.ended = true;
                    end.map(|()| None)
                }
            };
        }
    }
}

impl Read for ShardBytes {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.used == self.chunk.len() {
            if self.ended {
                return Ok(0);
            }
            match self.next_piece()? {
                Some(b) => {
                    self.chunk = b;
                    self.used = 0;
                }
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.chunk.len() - self.used);
        buf[..n].copy_from_slice(&self.chunk[self.used..self.used + n]);
        self.used += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn temp_dir(test: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("gm-prefetch-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn files(dir: &std::path::Path, sizes: &[usize]) -> Vec<String> {
        sizes
            .iter()
            .enumerate()
            .map(|(i, &n)| {
                let p = dir.join(format!("s{i}.tar"));
                let bytes: Vec<u8> = (0..n).map(|k| (k * 7 + i) as u8).collect();
                std::fs::write(&p, bytes).unwrap();
                p.display().to_string()
            })
            .collect()
    }

    #[test]
    fn shards_come_whole_in_order_and_an_abandoned_one_is_skipped() {
        let dir = temp_dir("order");
        let sizes = [10 << 20, 5, 0, (CHUNK as usize) * 2 + 3];
        let mut names = files(&dir, &sizes);
        names.insert(2, dir.join("missing.tar").display().to_string());
        let p = Prefetch::start(names.clone(), 0, Storage::global()).unwrap();
        // Shard 0: read 100 bytes only, then move on.
        let mut head = [0u8; 100];
        p.shard(0, None).read_exact(&mut head).unwrap();
        assert_eq!(head[99], (99 * 7) as u8);
        let mut got = Vec::new();
        p.shard(1, None).read_to_end(&mut got).unwrap();
        assert_eq!(got, std::fs::read(&names[1]).unwrap());
        let e = p.shard(2, None).read_to_end(&mut Vec::new()).unwrap_err();
        assert!(e.to_string().contains("missing.tar"), "{e}");
        for place in [3, 4] {
            let mut got = Vec::new();
            p.shard(place, None).read_to_end(&mut got).unwrap();
            assert_eq!(got, std::fs::read(&names[place]).unwrap(), "shard {place}");
        }
    }

    #[test]
    fn a_stop_flag_ends_a_wait() {
        let dir = temp_dir("stop");
        let names = files(&dir, &[1]);
        let p = Prefetch::start(names, 0, Storage::global()).unwrap();
        let mut r = p.shard(1, Some(Arc::new(AtomicBool::new(true))));
        assert!(r.read(&mut [0u8; 4]).is_err());
    }
}
