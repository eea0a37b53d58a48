//! Streaming mode: shards read front to back with no index (`.tar` or `.tar.gz`), in a
//! seeded order, split across ranks and a fixed number of logical streams, through seeded
//! bounded shuffle buffers; exactly resumable from a [`LoaderState`].
//!
//! Order of an epoch (pass `p`; passes beyond 0 only with `epoch_batches`):
//! - shards are permuted by `SampleRng(seed, epoch, u64::MAX - 1 - p)`;
//! - rank `r` of `R` takes `shards[r::R]`, dealt to `streams` streams round robin (a fixed
//!   number, not the worker count, so the order is the same on any machine);
//! - each stream reads its shards in turn into a buffer of at most `shuffle_buffer` samples
//!   and `shuffle_buffer_bytes` bytes; the `k`-th sample out is drawn uniformly by
//!   `SampleRng(seed, epoch, stream key + k)`, once the buffer is full, or, while it grows
//!   (webdataset's `initial`), once it holds `shuffle_initial` samples and two more were read
//!   for this draw (so the first batch does not wait for a whole buffer);
//! - batches are filled from the streams in turn, a whole batch from one stream while it
//!   lasts.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use gm_storage::Storage;
use gm_transforms::SampleRng;
use serde::{Deserialize, Serialize};

use super::ShardError;
use super::shard::Shard;
use super::stream_parse::{ParseFrom, Parsed, ShardReader, StreamParser, samples_of};
use super::tar_stream::RawSample;
use crate::error::LoaderError;
use crate::sampler::{Sampler, Shard as RankShard};
use crate::state::LoaderState;

/// Options of streaming mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamOptions {
    /// Seed of the shard order and the shuffle buffers.
    pub seed: u64,
    /// This process's rank and the number of ranks.
    pub rank: usize,
    /// Number of ranks.
    pub world_size: usize,
    /// Logical streams per rank (4 by default).
    pub streams: usize,
    /// Samples per batch.
    pub batch_size: usize,
    /// Samples a stream's shuffle buffer holds at most (1 = no shuffle).
    pub shuffle_buffer: usize,
    /// Bytes a stream's shuffle buffer holds at most.
    pub shuffle_buffer_bytes: u64,
    /// Samples a stream's buffer holds before its first draw (100 by default, as webdataset's
    /// `initial`); it then grows by one sample per draw up to `shuffle_buffer`. At least
    /// `shuffle_buffer` fills the whole buffer before the first draw.
    pub shuffle_initial: usize,
    /// Batches per epoch: the data repeats (a new pass) or stops at this count, so that every
    /// rank yields as many; `None`: one pass, as many batches as the rank's shards give.
    pub epoch_batches: Option<usize>,
    /// The key of a `.json` label member's integer label (default `"label"`), for the
    /// [`Loader`](crate::Loader) ([`Loader::streaming`](crate::Loader::streaming)).
    pub json_label_key: String,
}

impl Default for StreamOptions {
    fn default() -> Self {
        StreamOptions {
            seed: 0,
            rank: 0,
            world_size: 1,
            streams: 4,
            batch_size: 32,
            shuffle_buffer: 1000,
            shuffle_buffer_bytes: 256 << 20,
            shuffle_initial: 100,
            epoch_batches: None,
            json_label_key: "label".into(),
        }
    }
}

impl StreamOptions {
    /// Rank and world size from the launcher's environment (`RANK`/`WORLD_SIZE` or Slurm's,
    /// as [`DistEnv::from_env`](crate::DistEnv::from_env) reads them); unchanged when the
    /// process was not started by a launcher.
    pub fn ranks_from_env(mut self) -> Result<Self, LoaderError> {
        if let Some(env) = crate::DistEnv::from_env()? {
            self.rank = env.rank;
            self.world_size = env.world_size;
        }
        Ok(self)
    }
}

/// One sample out of a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamSample {
    /// Position of its shard in the dataset's shard list.
    pub shard: usize,
    /// Its ordinal within the shard.
    pub ordinal: u64,
    /// Its key and members.
    pub sample: RawSample,
}

impl StreamSample {
    /// The index that seeds its augmentations: `(shard << 32) | ordinal`.
    pub fn seed_index(&self) -> u64 {
        ((self.shard as u64) << 32) | (self.ordinal & 0xffff_ffff)
    }
}

/// A batch of samples, and the shards that failed while it was filled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamBatch {
    /// Position in the epoch.
    pub position: usize,
    /// The samples.
    pub samples: Vec<StreamSample>,
    /// One record per shard that could not be read or ended early.
    pub shard_errors: Vec<ShardFailure>,
}

/// A shard that could not be read, or ended early.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardFailure {
    /// Position of the shard in the dataset's shard list.
    pub shard: usize,
    /// Its name, how many samples it gave, and why.
    pub message: String,
}

/// Where one stream stands.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct StreamCursor {
    /// Position in the stream's shard list of the shard being read (or next).
    pub shard_pos: usize,
    /// Samples read from that shard so far.
    pub read_in_shard: u64,
    /// The buffered samples, as `(shard, ordinal)`, in buffer order.
    pub buffer: Vec<(usize, u64)>,
    /// Samples drawn from the buffer so far.
    pub drawn: u64,
}

/// The streaming position saved in [`LoaderState::stream`].
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct StreamState {
    /// Pass over the rank's shards (0 unless `epoch_batches` repeats the data).
    pub pass: u64,
    /// The stream the next batch starts from.
    pub turn: usize,
    /// Each stream's position.
    pub streams: Vec<StreamCursor>,
}

/// WebDataset shards read as streams.
#[derive(Debug, Clone)]
pub struct WebDatasetStream {
    names: Vec<String>,
    options: StreamOptions,
    storage: Storage,
}

impl WebDatasetStream {
    /// Streams of the shards of `pattern` (paths or URLs with brace ranges).
    pub fn new(pattern: &str, options: StreamOptions) -> Result<WebDatasetStream, ShardError> {
        WebDatasetStream::from_shards(super::brace::expand(pattern)?, options, Storage::global())
    }

    /// Streams of a list of shards, read through `storage`.
    pub fn from_shards(
        names: Vec<String>,
        options: StreamOptions,
        storage: Storage,
    ) -> Result<WebDatasetStream, ShardError> {
        if names.is_empty() {
            return Err(ShardError::NoShards);
        }
        if options.world_size == 0 || options.rank >= options.world_size {
            return Err(ShardError::Options(format!(
                "rank {} is not below world size {}",
                options.rank, options.world_size
            )));
        }
        if options.streams == 0 || options.batch_size == 0 || options.shuffle_buffer == 0 {
            return Err(ShardError::Options(
                "streams, batch_size and shuffle_buffer must be at least 1".into(),
            ));
        }
        Ok(WebDatasetStream {
            names,
            options,
            storage,
        })
    }

    /// The batches of `epoch` from the start.
    pub fn epoch(&self, epoch: u64) -> StreamEpoch<'_> {
        StreamEpoch::start(self, epoch, 0, StreamState::default())
    }

    /// The batches that follow a saved state.
    pub fn resume(&self, state: &LoaderState) -> Result<StreamEpoch<'_>, LoaderError> {
        let saved = self.check_resume(state)?;
        Ok(StreamEpoch::start(
            self,
            state.epoch,
            state.next_batch,
            saved,
        ))
    }

    /// Whether `state` was saved by a stream of these shards and options, with a position
    /// that fits them: the position when it was. A state with no streaming position resumes
    /// at the start of its epoch only (`next_batch` 0: [`crate::Loader::state`]'s).
    pub fn check_resume(&self, state: &LoaderState) -> Result<StreamState, LoaderError> {
        self.state(state.epoch, state.next_batch, None)
            .check_same_loader(state)?;
        let Some(saved) = state.stream.clone() else {
            if state.next_batch == 0 {
                return Ok(StreamState::default());
            }
            return Err(LoaderError::Resume(
                "the state has no streaming position".into(),
            ));
        };
        if saved.streams.len() != self.options.streams {
            return Err(LoaderError::Resume(format!(
                "the state has {} streams, this loader {}",
                saved.streams.len(),
                self.options.streams
            )));
        }
        let shards = self.names.len();
        let bad_shard = saved
            .streams
            .iter()
            .flat_map(|c| &c.buffer)
            .any(|&(shard, _)| shard >= shards);
        if saved.turn >= self.options.streams || bad_shard {
            return Err(LoaderError::Resume(format!(
                "the streaming position does not fit {} streams of {shards} shards",
                self.options.streams
            )));
        }
        Ok(saved)
    }

    pub(crate) fn state(
        &self,
        epoch: u64,
        next_batch: usize,
        stream: Option<StreamState>,
    ) -> LoaderState {
        let o = &self.options;
        LoaderState {
            epoch,
            next_batch,
            seed: o.seed,
            sampler: Sampler {
                order: crate::Order::Shuffled { seed: o.seed },
                shard: Some(RankShard {
                    rank: o.rank,
                    world_size: o.world_size,
                    drop_last: false,
                }),
            },
            dataset_len: self.names.len(),
            batch_size: o.batch_size,
            drop_last: false,
            stream,
            reshards: Vec::new(),
            share_batches: None,
            groups: None,
        }
    }

    /// The shards of each stream in pass `pass` of `epoch`, as positions in `names`.
    fn deal(&self, epoch: u64, pass: u64) -> Vec<Vec<usize>> {
        let o = &self.options;
        let mut order: Vec<usize> = (0..self.names.len()).collect();
        let mut rng = SampleRng::new(o.seed, epoch, u64::MAX - 1 - pass);
        for i in (1..order.len()).rev() {
            let j = rng.below(i as u64 + 1) as usize;
            order.swap(i, j);
        }
        let mine: Vec<usize> = order
            .into_iter()
            .skip(o.rank)
            .step_by(o.world_size)
            .collect();
        (0..o.streams)
            .map(|s| mine.iter().copied().skip(s).step_by(o.streams).collect())
            .collect()
    }

    /// A shard's samples from the start, as a pull reader.
    fn open(&self, shard: usize) -> Result<ShardReader, ShardError> {
        let name = &self.names[shard];
        let reader = Shard::open(name, &self.storage)?.into_reader(self.storage.clone())?;
        Ok(samples_of(name, reader))
    }

    /// The options it was made with.
    pub fn options(&self) -> &StreamOptions {
        &self.options
    }

    /// The shards, as given (expanded).
    pub fn shards(&self) -> &[String] {
        &self.names
    }
}

/// One stream being read.
struct Live {
    shards: Vec<usize>,
    cursor: StreamCursor,
    /// A resumed stream's current shard, read up to its position, until the parser takes it.
    reader: Option<ShardReader>,
    /// Parses the stream's shards ahead on its own thread, from the first read on.
    parser: Option<StreamParser>,
    buffer: Vec<StreamSample>,
    bytes: u64,
    /// Every shard read and the buffer drained.
    done: bool,
}

/// The batches of one epoch, in order.
pub struct StreamEpoch<'a> {
    data: &'a WebDatasetStream,
    epoch: u64,
    next_batch: usize,
    state: StreamState,
    live: Vec<Live>,
    errors: Vec<ShardFailure>,
    /// Most samples and bytes held in buffers at once, over all streams.
    peak: (usize, u64),
    /// Set by the loader whose feeder reads this epoch: a read waiting for bytes gives up.
    stop: Option<Arc<AtomicBool>>,
}

impl std::fmt::Debug for StreamEpoch<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamEpoch")
            .field("epoch", &self.epoch)
            .field("next_batch", &self.next_batch)
            .finish_non_exhaustive()
    }
}

impl<'a> StreamEpoch<'a> {
    fn start(
        data: &'a WebDatasetStream,
        epoch: u64,
        next_batch: usize,
        saved: StreamState,
    ) -> Self {
        let mut this = StreamEpoch {
            data,
            epoch,
            next_batch,
            state: StreamState {
                pass: saved.pass,
                turn: saved.turn,
                streams: Vec::new(),
            },
            live: Vec::new(),
            errors: Vec::new(),
            peak: (0, 0),
            stop: None,
        };
        let cursors = if saved.streams.is_empty() {
            vec![StreamCursor::default(); data.options.streams]
        } else {
            saved.streams
        };
        this.begin_pass(saved.pass, cursors);
        this
    }

    /// Streams of pass `pass`, at `cursors`: buffered samples are fetched again (their
    /// shards re-read up to them) and the current shard is read up to its position.
    fn begin_pass(&mut self, pass: u64, cursors: Vec<StreamCursor>) {
        let deal = self.data.deal(self.epoch, pass);
        let mut failures = Vec::new();
        self.live = deal
            .into_iter()
            .zip(cursors)
            .map(|(shards, cursor)| self.restore(shards, cursor, &mut failures))
            .collect();
        // A shard that cannot be re-read on resume loses the samples buffered from it: the
        // next batch says so, as for a shard cut while streaming.
        self.errors.extend(failures);
        self.state.pass = pass;
    }

    fn restore(
        &self,
        shards: Vec<usize>,
        cursor: StreamCursor,
        failures: &mut Vec<ShardFailure>,
    ) -> Live {
        let mut live = Live {
            shards,
            cursor: StreamCursor {
                buffer: Vec::new(),
                ..cursor.clone()
            },
            reader: None,
            parser: None,
            buffer: Vec::new(),
            bytes: 0,
            done: false,
        };
        let mut wanted: HashMap<(usize, u64), Option<StreamSample>> =
            cursor.buffer.iter().map(|&k| (k, None)).collect();
        let mut from: Vec<usize> = cursor.buffer.iter().map(|k| k.0).collect();
        from.sort_unstable();
        from.dedup();
        let current = live.shards.get(cursor.shard_pos).copied();
        for shard in from.into_iter().filter(|&s| Some(s) != current) {
            // A shard left earlier: read it up to its last buffered sample.
            let last = cursor.buffer.iter().filter(|k| k.0 == shard).map(|k| k.1);
            let count = last.max().map_or(0, |m| m.saturating_add(1));
            if let Err(f) = self.read_up_to(shard, count, &mut wanted) {
                failures.push(f);
            }
        }
        if let Some(shard) = current.filter(|_| cursor.read_in_shard > 0) {
            match self.read_up_to(shard, cursor.read_in_shard, &mut wanted) {
                Ok(reader) => live.reader = Some(reader),
                Err(f) => failures.push(f),
            }
        }
        for key in &cursor.buffer {
            if let Some(Some(sample)) = wanted.remove(key) {
                live.bytes += sample.sample.bytes();
                live.buffer.push(sample);
            }
        }
        live.cursor.buffer = live.buffer.iter().map(|s| (s.shard, s.ordinal)).collect();
        live
    }

    /// Reads the first `count` samples of `shard`, keeping those `wanted`; the reader, left
    /// after them, or why the shard could not be read that far.
    fn read_up_to(
        &self,
        shard: usize,
        count: u64,
        wanted: &mut HashMap<(usize, u64), Option<StreamSample>>,
    ) -> Result<ShardReader, ShardFailure> {
        let failure = |why: String| ShardFailure {
            shard,
            message: format!(
                "{}: resuming, re-reading its first {count} samples: {why}",
                self.data.names[shard]
            ),
        };
        let mut reader = self.data.open(shard).map_err(|e| failure(e.to_string()))?;
        for ordinal in 0..count {
            let sample = match reader.next_sample() {
                Ok(Some(sample)) => sample,
                Ok(None) => return Err(failure(format!("it ended after {ordinal}"))),
                Err(e) => return Err(failure(format!("sample {ordinal}: {e}"))),
            };
            if let Some(slot) = wanted.get_mut(&(shard, ordinal)) {
                *slot = Some(StreamSample {
                    shard,
                    ordinal,
                    sample,
                });
            }
        }
        Ok(reader)
    }

    /// Makes reads that wait for bytes give up once `stop` is set (the loader's feeder).
    pub(crate) fn stop_on(&mut self, stop: Arc<AtomicBool>) {
        self.stop = Some(stop);
    }

    /// The state to save to resume after the last batch yielded.
    pub fn state(&self) -> LoaderState {
        let mut stream = self.state.clone();
        stream.streams = self.live.iter().map(|l| l.cursor.clone()).collect();
        self.data.state(self.epoch, self.next_batch, Some(stream))
    }

    /// Most samples and bytes held in the shuffle buffers at once so far.
    pub fn peak_buffered(&self) -> (usize, u64) {
        self.peak
    }

    /// The next sample of stream `s`, `None` once it is done. A full buffer gives one at once
    /// (the next pull reads one to refill it); a growing one reads two samples per draw, the
    /// first draw once it holds `shuffle_initial`. The rule looks only at the stream's state
    /// at the start of the pull, which a saved state restores, so a resumed epoch draws the
    /// same samples.
    fn pull(&mut self, s: usize) -> Option<StreamSample> {
        let o = &self.data.options;
        let initial = o.shuffle_initial.clamp(1, o.shuffle_buffer);
        let mut read = 0;
        loop {
            let live = &mut self.live[s];
            if live.done {
                return None;
            }
            let full =
                live.buffer.len() >= o.shuffle_buffer || live.bytes >= o.shuffle_buffer_bytes;
            let grown = read >= 2 && live.buffer.len() >= initial;
            let source_done = live.cursor.shard_pos >= live.shards.len();
            if full || grown || (source_done && !live.buffer.is_empty()) {
                return Some(self.draw(s));
            }
            if source_done {
                live.done = true;
                return None;
            }
            if self.read_one(s) {
                read += 1;
            }
        }
    }

    /// Takes the next sample out of stream `s`'s (non-empty) buffer.
    fn draw(&mut self, s: usize) -> StreamSample {
        let (seed, pass) = (self.data.options.seed, self.state.pass);
        let live = &mut self.live[s];
        let key = (pass << 56) | ((s as u64) << 40) | live.cursor.drawn;
        let j = SampleRng::new(seed, self.epoch, key).below(live.buffer.len() as u64) as usize;
        let sample = live.buffer.swap_remove(j);
        live.cursor.buffer.swap_remove(j);
        live.cursor.drawn += 1;
        live.bytes -= sample.sample.bytes();
        sample
    }

    /// Takes the next sample of stream `s`'s current shard from its parser into its buffer
    /// (true), or moves to the next shard (recording why, when the shard failed).
    fn read_one(&mut self, s: usize) -> bool {
        if self.live[s].parser.is_none() && !self.start_parser(s) {
            return false;
        }
        let live = &mut self.live[s];
        match live.parser.as_ref().and_then(StreamParser::next) {
            Some(Parsed::Sample(sample)) => {
                let shard = live.shards[live.cursor.shard_pos];
                let ordinal = live.cursor.read_in_shard;
                live.cursor.read_in_shard += 1;
                live.bytes += sample.bytes();
                live.cursor.buffer.push((shard, ordinal));
                live.buffer.push(StreamSample {
                    shard,
                    ordinal,
                    sample,
                });
                let held = self.live.iter().map(|l| l.buffer.len()).sum::<usize>();
                let bytes = self.live.iter().map(|l| l.bytes).sum::<u64>();
                self.peak = (self.peak.0.max(held), self.peak.1.max(bytes));
                true
            }
            Some(Parsed::End(error)) => {
                self.end_shard(s, error);
                false
            }
            None => {
                self.end_shard(s, Some("the stream's parser stopped".into()));
                false
            }
        }
    }

    /// Starts the parser of every stream with shards left, so that the streams whose turn
    /// comes later parse their first samples while the first stream's are drawn.
    fn start_parsers(&mut self) {
        for s in 0..self.live.len() {
            let live = &self.live[s];
            if live.parser.is_none() && !live.done && live.cursor.shard_pos < live.shards.len() {
                self.start_parser(s);
            }
        }
    }

    /// Starts stream `s`'s parser at its current shard (handing it a resumed reader); when
    /// no thread can be started, that shard fails (false).
    fn start_parser(&mut self, s: usize) -> bool {
        let live = &mut self.live[s];
        let from = ParseFrom {
            names: live
                .shards
                .iter()
                .map(|&i| self.data.names[i].clone())
                .collect(),
            place: live.cursor.shard_pos,
            reader: live.reader.take(),
        };
        match StreamParser::start(from, self.data.storage.clone(), self.stop.clone()) {
            Ok(p) => {
                live.parser = Some(p);
                true
            }
            Err(e) => {
                self.end_shard(s, Some(format!("no parser thread: {e}")));
                false
            }
        }
    }

    /// Moves stream `s` past its current shard, recording `error` as the shard's failure.
    fn end_shard(&mut self, s: usize, error: Option<String>) {
        let live = &mut self.live[s];
        let shard = live.shards[live.cursor.shard_pos];
        if let Some(e) = error {
            let name = &self.data.names[shard];
            let read = live.cursor.read_in_shard;
            let message = if read == 0 {
                format!("{name}: gave 0 samples: {e}")
            } else {
                format!("{name}: ended after {read} samples: {e}")
            };
            self.errors.push(ShardFailure { shard, message });
        }
        live.cursor.shard_pos += 1;
        live.cursor.read_in_shard = 0;
    }
}

impl Iterator for StreamEpoch<'_> {
    type Item = StreamBatch;

    fn next(&mut self) -> Option<StreamBatch> {
        let o = &self.data.options;
        if o.epoch_batches.is_some_and(|n| self.next_batch >= n) {
            return None;
        }
        let streams = self.live.len();
        let mut samples = Vec::with_capacity(o.batch_size);
        let mut new_pass = false;
        self.start_parsers();
        while samples.len() < o.batch_size {
            if self.live.iter().all(|l| l.done) {
                // Another pass only to reach `epoch_batches`, and only if the last one gave
                // anything (shards that are all unreadable would loop forever).
                let gave = self.live.iter().any(|l| l.cursor.drawn > 0) || !samples.is_empty();
                if o.epoch_batches.is_none() || new_pass || !gave {
                    break;
                }
                new_pass = true;
                let pass = self.state.pass + 1;
                self.begin_pass(pass, vec![StreamCursor::default(); streams]);
                self.state.turn = 0;
                self.start_parsers();
                continue;
            }
            let s = self.state.turn;
            match self.pull(s) {
                Some(sample) => samples.push(sample),
                None => self.state.turn = (s + 1) % streams,
            }
        }
        self.state.turn = (self.state.turn + 1) % streams;
        let shard_errors = std::mem::take(&mut self.errors);
        if samples.is_empty() && shard_errors.is_empty() {
            return None;
        }
        let batch = StreamBatch {
            position: self.next_batch,
            samples,
            shard_errors,
        };
        self.next_batch += 1;
        Some(batch)
    }
}
