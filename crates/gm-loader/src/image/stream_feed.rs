//! A streaming WebDataset through the image loader. A feeder thread reads the epoch's batches
//! from [`StreamEpoch`] and parks each sample's image bytes and label in [`StreamSlots`], a
//! dataset whose indices name parked samples; the host workers and stages then run as for any
//! dataset, so the GPU path, the CPU path, the bad-sample policy and the augmentations are the
//! same code. A shard that could not be read, or ended early, becomes one bad sample named
//! `shard#(end of shard)` (as in the indexed [`WebDataset`](crate::WebDataset)).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::Mutex;

use super::dataset::{Dataset, Label};
use crate::error::LoaderError;
use crate::shards::{StreamBatch, StreamEpoch, WebDatasetStream, raw_image, raw_label};
use crate::state::LoaderState;

/// Bits of a streamed sample's index below the epoch's tag.
const SEQ_BITS: u32 = 40;
/// Set in the indices of the bad samples that stand for shard errors: a batch may hold more
/// of them than it has slots, so they count apart from the samples.
const ERROR_BIT: u64 = 1 << (SEQ_BITS - 1);

/// The index of `seq` in `epoch`: the epoch's low 16 bits above it, so that two epochs
/// running at once (one started ahead, [`crate::Epochs`]) never share an index.
fn tagged(epoch: u64, seq: u64) -> usize {
    (((epoch & 0xffff) << SEQ_BITS) | (seq & ((1 << SEQ_BITS) - 1))) as usize
}

/// The index of slot `k` of batch `position` of `epoch`: the sample's place in the epoch's
/// stream, which a resumed epoch gives again (it seeds the augmentations).
pub(crate) fn slot_index(epoch: u64, position: usize, k: usize, batch_size: usize) -> usize {
    tagged(epoch, (position * batch_size + k) as u64 & (ERROR_BIT - 1))
}

/// A parked sample.
struct Slot {
    /// The batch it belongs to.
    position: usize,
    name: String,
    label: Label,
    /// The image bytes until a worker takes them, or why the sample is bad.
    image: Option<Result<Vec<u8>, String>>,
}

/// The samples of the batches in flight, by index: the streaming loader's dataset.
pub(crate) struct StreamSlots {
    slots: Mutex<HashMap<usize, Slot>>,
    json_key: String,
    batch_size: usize,
    /// Shard errors parked so far (their indices).
    errors: std::sync::atomic::AtomicU64,
}

impl StreamSlots {
    pub(crate) fn new(json_key: String, batch_size: usize) -> StreamSlots {
        StreamSlots {
            slots: Mutex::new(HashMap::new()),
            json_key,
            batch_size,
            errors: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Parks a batch's samples (and one bad sample per shard error); their indices.
    fn park(&self, epoch: u64, batch: StreamBatch, names: &[String]) -> Vec<usize> {
        let position = batch.position;
        let mut parked = Vec::with_capacity(batch.samples.len() + batch.shard_errors.len());
        for mut s in batch.samples {
            let shard = names.get(s.shard).map_or("?", String::as_str);
            let key = s.sample.key.clone();
            let label = match raw_label(&s.sample, &self.json_key) {
                Some(parsed) => parsed.map_err(|e| e.to_string()),
                None => Err(format!("sample {key} has no .cls, .txt or .json")),
            };
            let image = raw_image(&s.sample).map(|i| s.sample.members.swap_remove(i).1);
            let index = slot_index(epoch, position, parked.len(), self.batch_size);
            parked.push((
                index,
                Slot {
                    position,
                    name: format!("{shard}#{key}"),
                    label: label.as_ref().map_or(-1, |l| *l),
                    image: Some(match (image, label) {
                        (_, Err(reason)) => Err(reason),
                        (Some(bytes), Ok(_)) => Ok(bytes),
                        (None, Ok(_)) => Err(format!("sample {key} has no image member")),
                    }),
                },
            ));
        }
        for failure in batch.shard_errors {
            let shard = names.get(failure.shard).map_or("?", String::as_str);
            let n = self.errors.fetch_add(1, Ordering::Relaxed);
            parked.push((
                tagged(epoch, ERROR_BIT | n),
                Slot {
                    position,
                    name: format!("{shard}#(end of shard)"),
                    label: -1,
                    image: Some(Err(failure.message)),
                },
            ));
        }
        let mut slots = self.slots.lock();
        parked
            .into_iter()
            .map(|(i, slot)| {
                slots.insert(i, slot);
                i
            })
            .collect()
    }

    /// Lets go of `epoch`'s samples of batches before `due` (all of them: `usize::MAX`).
    pub(crate) fn release(&self, epoch: u64, due: usize) {
        let tag = (epoch & 0xffff) as usize;
        self.slots
            .lock()
            .retain(|&i, s| i >> SEQ_BITS != tag || s.position >= due);
    }
}

impl Dataset for StreamSlots {
    /// Samples parked now: a stream's length is known only at its end.
    fn len(&self) -> usize {
        self.slots.lock().len()
    }
    fn label(&self, index: usize) -> Label {
        self.slots.lock().get(&index).map_or(-1, |s| s.label)
    }
    fn name(&self, index: usize) -> String {
        self.slots
            .lock()
            .get(&index)
            .map_or_else(|| format!("streamed sample {index:#x}"), |s| s.name.clone())
    }
    fn read(&self, index: usize, buf: &mut Vec<u8>) -> std::io::Result<()> {
        let taken = self
            .slots
            .lock()
            .get_mut(&index)
            .and_then(|s| s.image.take());
        match taken {
            Some(Ok(bytes)) => {
                *buf = bytes;
                Ok(())
            }
            Some(Err(reason)) => Err(std::io::Error::new(std::io::ErrorKind::InvalidData, reason)),
            None => Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("streamed sample {index:#x} is not parked (read twice?)"),
            )),
        }
    }
}

/// What a streamed epoch's feeder and consumer share.
pub(crate) struct StreamProgress {
    /// Batches in the epoch: known once the stream has ended (`usize::MAX` before).
    total: AtomicUsize,
    /// The state after each batch fed and not yet passed by the consumer.
    states: Mutex<BTreeMap<usize, LoaderState>>,
}

impl StreamProgress {
    pub(crate) fn new() -> StreamProgress {
        StreamProgress {
            total: AtomicUsize::new(usize::MAX),
            states: Mutex::new(BTreeMap::new()),
        }
    }

    /// Batches in the epoch, `usize::MAX` while unknown.
    pub(crate) fn total(&self) -> usize {
        self.total.load(Ordering::Acquire)
    }

    /// The state to resume after batch `position`, once it is passed.
    pub(crate) fn passed(&self, position: usize) -> Option<LoaderState> {
        let mut states = self.states.lock();
        let state = states.remove(&position);
        states.retain(|&p, _| p > position);
        state
    }
}

/// What the feeder of one epoch reads, and from where.
pub(crate) struct Feed {
    pub(crate) stream: Arc<WebDatasetStream>,
    pub(crate) slots: Arc<StreamSlots>,
    /// Resume after this state; from the epoch's start when `None`.
    pub(crate) resume: Option<LoaderState>,
}

/// How far ahead of the consumer the feeder may park batches.
pub(crate) struct Lead {
    pub(crate) epoch: u64,
    pub(crate) batches: usize,
}

/// The feeder: parks each batch of the stream and sends its job, at most `lead.batches`
/// ahead of the batch the consumer waits for (`due`); records the epoch's length at its end.
pub(crate) fn feed(
    feed: &Feed,
    lead: &Lead,
    progress: &StreamProgress,
    send: impl Fn(usize, Vec<usize>) -> bool,
    due: &AtomicUsize,
    stop: &Arc<AtomicBool>,
) -> Result<(), LoaderError> {
    let mut epoch: StreamEpoch<'_> = match &feed.resume {
        Some(state) => feed.stream.resume(state)?,
        None => feed.stream.epoch(lead.epoch),
    };
    epoch.stop_on(stop.clone());
    let mut end = feed.resume.as_ref().map_or(0, |s| s.next_batch);
    while wait_for_room(end, lead.batches, due, stop) {
        let Some(batch) = epoch.next() else { break };
        if stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        let position = batch.position;
        for failure in &batch.shard_errors {
            tracing::warn!(record = %failure.message, "a shard could not be read to its end");
        }
        feed.slots.release(lead.epoch, due.load(Ordering::Acquire));
        let indices = feed.slots.park(lead.epoch, batch, feed.stream.shards());
        progress.states.lock().insert(position, epoch.state());
        if !send(position, indices) {
            return Ok(());
        }
        end = position + 1;
    }
    progress.total.store(end, Ordering::Release);
    Ok(())
}

/// Waits until batch `position` may be parked; false when the epoch stops.
fn wait_for_room(position: usize, lead: usize, due: &AtomicUsize, stop: &AtomicBool) -> bool {
    while position >= due.load(Ordering::Acquire) + lead {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    !stop.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::shards::ShardFailure;

    #[test]
    fn slot_indices_of_two_epochs_never_meet_and_release_takes_only_its_own() {
        let a = slot_index(7, 3, 1, 4);
        let b = slot_index(8, 3, 1, 4);
        assert_ne!(a, b);
        assert_eq!(a & ((1 << SEQ_BITS) - 1), 13);
        let slots = StreamSlots::new("label".into(), 4);
        for (epoch, position) in [(7, 0), (7, 2), (8, 0)] {
            let batch = StreamBatch {
                position,
                samples: Vec::new(),
                shard_errors: vec![ShardFailure {
                    shard: 0,
                    message: format!("s{epoch}.tar: gave 0 samples: gone"),
                }],
            };
            slots.park(epoch, batch, &[format!("s{epoch}.tar")]);
        }
        assert_eq!(slots.len(), 3);
        slots.release(7, 1);
        assert_eq!(slots.len(), 2);
        let e8 = tagged(8, ERROR_BIT | 2);
        assert_eq!(slots.name(e8), "s8.tar#(end of shard)");
        let e = slots.read(e8, &mut Vec::new()).unwrap_err();
        assert!(e.to_string().contains("gave 0 samples: gone"), "{e}");
        slots.release(7, usize::MAX);
        assert_eq!(slots.len(), 1);
    }
}
