//! A thread per stream that parses its shards' tar samples ahead of the shuffle buffer.
//!
//! A batch is drawn whole from one stream, so when the feeder parsed every stream itself
//! (headers, member bytes copied out of the read-ahead pieces, gunzip for `.tar.gz`), each
//! batch's parsing ran on one thread while the decoders waited for it. With a parser per
//! stream, the streams whose turn comes next parse their batches while the feeder draws the
//! current one. Each stream's samples and shard ends come in the order one thread would read
//! them, so epochs, draws and resumed states are the same as before.

use std::io::Read;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender, unbounded};
use gm_storage::Storage;
use parking_lot::{Condvar, Mutex};

use super::prefetch::Prefetch;
use super::shard::is_gzip_name;
use super::tar_stream::{RawSample, TarSamples};

/// Bytes of parsed samples a stream holds ahead of the feeder (with up to the read-ahead's
/// 32 MB of pieces behind them). Two batches of 256 ImageNet JPEGs: the feeder takes a whole
/// batch from one stream, then the next stream's. With 16 samples ahead (tried on
/// 2026-11-24) the other streams' parsers stopped at once, and every batch was still parsed
/// while the feeder waited for it.
const AHEAD_BYTES: u64 = 32 << 20;
/// How often a parser waiting for room looks at its stop flags.
const POLL: Duration = Duration::from_millis(20);

/// A shard's samples read front to back.
pub(crate) type ShardReader = TarSamples<Box<dyn Read + Send>>;

/// What a stream's parser hands over, in stream order.
pub(crate) enum Parsed {
    /// The next sample of the current shard.
    Sample(RawSample),
    /// The current shard is over: at its end (`None`), or why it stopped.
    End(Option<String>),
}

/// The parser of one stream, from some place in its list of shards on.
pub(crate) struct StreamParser {
    rx: Receiver<Parsed>,
    room: Arc<Room>,
}

/// The bytes a parser holds ahead, and whether its reader is gone.
#[derive(Default)]
struct Room {
    held: Mutex<u64>,
    freed: Condvar,
    closed: AtomicBool,
}

impl Room {
    /// Waits until `bytes` more fit (always, when nothing is held); false when the reader is
    /// gone or the epoch stops.
    fn take(&self, bytes: u64, stop: Option<&AtomicBool>) -> bool {
        let mut held = self.held.lock();
        loop {
            let stopped = stop.is_some_and(|s| s.load(Ordering::Relaxed));
            if self.closed.load(Ordering::Relaxed) || stopped {
                return false;
            }
            if *held == 0 || *held + bytes <= AHEAD_BYTES {
                *held += bytes;
                return true;
            }
            self.freed.wait_for(&mut held, POLL);
        }
    }

    fn give(&self, bytes: u64) {
        let mut held = self.held.lock();
        *held = held.saturating_sub(bytes);
        self.freed.notify_one();
    }
}

/// Where a parser starts, and with what.
pub(crate) struct ParseFrom {
    /// The stream's shard names, in order.
    pub(crate) names: Vec<String>,
    /// The place in `names` to start at.
    pub(crate) place: usize,
    /// A reader already inside the shard at `place` (a resumed stream), read on from there.
    pub(crate) reader: Option<ShardReader>,
}

impl StreamParser {
    /// Starts parsing `from`; the thread ends at the list's end or when the parser is dropped
    /// (it is not joined: it may be waiting for bytes, which `stop` cuts short).
    pub(crate) fn start(
        from: ParseFrom,
        storage: Storage,
        stop: Option<Arc<AtomicBool>>,
    ) -> std::io::Result<StreamParser> {
        // Unbounded: `Room` bounds what is held by bytes.
        let (tx, rx) = unbounded();
        let room = Arc::new(Room::default());
        let theirs = room.clone();
        std::thread::Builder::new()
            .name("gm-shard-parse".into())
            .spawn(move || parse(from, &storage, stop, &tx, &theirs))?;
        Ok(StreamParser { rx, room })
    }

    /// The next sample or shard end; `None` once the thread has nothing more (past the
    /// list's end).
    pub(crate) fn next(&self) -> Option<Parsed> {
        let got = self.rx.recv().ok();
        if let Some(Parsed::Sample(s)) = &got {
            self.room.give(s.bytes());
        }
        got
    }
}

impl Drop for StreamParser {
    fn drop(&mut self) {
        self.room.closed.store(true, Ordering::Relaxed);
        self.room.freed.notify_one();
    }
}

/// Opens a shard's bytes as samples (gunzipped for a `.tar.gz` name).
pub(crate) fn samples_of(name: &str, reader: Box<dyn Read + Send>) -> ShardReader {
    let reader: Box<dyn Read + Send> = if is_gzip_name(name) {
        Box::new(flate2::read::MultiGzDecoder::new(reader))
    } else {
        reader
    };
    TarSamples::new(reader)
}

/// The thread: each shard's samples, then its end, in list order; the read-ahead starts at
/// the first shard read front to back.
fn parse(
    from: ParseFrom,
    storage: &Storage,
    stop: Option<Arc<AtomicBool>>,
    tx: &Sender<Parsed>,
    room: &Room,
) {
    let ParseFrom {
        names,
        mut place,
        mut reader,
    } = from;
    let mut prefetch: Option<Prefetch> = None;
    while place < names.len() {
        let current = match reader.as_mut() {
            Some(r) => r,
            None => {
                if prefetch.is_none() {
                    match Prefetch::start(names.clone(), place, storage.clone()) {
                        Ok(p) => prefetch = Some(p),
                        Err(e) => {
                            // No read-ahead: this shard fails, the next one tries again.
                            if tx.send(Parsed::End(Some(e.to_string()))).is_err() {
                                return;
                            }
                            place += 1;
                            continue;
                        }
                    }
                }
                let Some(p) = &prefetch else { return };
                let bytes = Box::new(p.shard(place, stop.clone()));
                reader.insert(samples_of(&names[place], bytes))
            }
        };
        let parsed = match current.next_sample() {
            Ok(Some(sample)) => Parsed::Sample(sample),
            Ok(None) => Parsed::End(None),
            Err(e) => Parsed::End(Some(e.to_string())),
        };
        match &parsed {
            Parsed::End(_) => {
                reader = None;
                place += 1;
            }
            Parsed::Sample(s) => {
                if !room.take(s.bytes(), stop.as_deref()) {
                    return;
                }
            }
        }
        if tx.send(parsed).is_err() {
            return;
        }
    }
}
