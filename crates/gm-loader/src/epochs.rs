//! Several epochs in a row, the next one started behind the last batches of the running one.
//! Without it every epoch begins with an empty pipeline, and a training loop waits for the
//! first batches to be read, decoded and transformed: on a short epoch (10 batches of 256)
//! those waits were most of the loop's time on the loader. With it the next epoch's first
//! batches fill while the running epoch's last ones are consumed.

use std::ops::Range;

use crate::LoaderError;

/// Batches left in the running epoch when the next one starts, unless the loader says
/// otherwise ([`EpochSource::prestart_at`]; the Python package's `prefetch_next_epoch` uses the
/// same point): late enough that the running epoch's work is all submitted, early enough that
/// the next epoch's first batch is ready when it is due.
pub const PRESTART_AT: usize = 2;

/// A loader whose epochs [`Epochs`] can run back to back: [`crate::Loader`] and
/// [`crate::ClipLoader`].
pub trait EpochSource {
    /// What one epoch yields.
    type Batch;
    /// One epoch's iterator, not borrowing the loader.
    type Epoch: Iterator<Item = Result<Self::Batch, LoaderError>>;

    /// Starts `epoch` from its first batch.
    fn start_epoch(&mut self, epoch: u64) -> Self::Epoch;

    /// Batches `epoch` has still to yield.
    fn remaining(epoch: &Self::Epoch) -> usize;

    /// Batches left in the running epoch when the next one starts.
    fn prestart_at(&self) -> usize {
        PRESTART_AT
    }
}

/// The batches of a range of epochs, each with its epoch number: an iterator of
/// `(epoch, Result<batch, LoaderError>)`. Made by [`crate::Loader::epochs`] and
/// [`crate::ClipLoader::epochs`].
///
/// Epoch `e + 1` starts when epoch `e` has [`EpochSource::prestart_at`] batches left (the
/// image loader: [`crate::Loader::prestart_at`]; the clip loader: [`PRESTART_AT`]); its
/// batches are the same as [`crate::Loader::epoch`]'s would be (the order depends on the seed
/// and the epoch only). After an error nothing more is yielded: an error of the loader (a bad sample under
/// `Fail`, a GPU failure) ends the run, as it ends an epoch. Dropping it stops and joins both
/// epochs' threads.
pub struct Epochs<'a, L: EpochSource> {
    loader: &'a mut L,
    next: u64,
    end: u64,
    running: Option<(u64, L::Epoch)>,
    ahead: Option<(u64, L::Epoch)>,
}

impl<'a, L: EpochSource> Epochs<'a, L> {
    pub(crate) fn new(loader: &'a mut L, epochs: Range<u64>) -> Epochs<'a, L> {
        Epochs {
            loader,
            next: epochs.start,
            end: epochs.end.max(epochs.start),
            running: None,
            ahead: None,
        }
    }

    /// The epoch started ahead of the running one, if it has been started yet.
    pub fn started_ahead(&self) -> Option<u64> {
        self.ahead.as_ref().map(|a| a.0)
    }

    /// The next epoch's number, counted as started.
    fn take_next(&mut self) -> Option<u64> {
        (self.next < self.end).then(|| {
            self.next += 1;
            self.next - 1
        })
    }

    /// The epoch whose batches come next: the one started ahead, else a new one.
    fn ensure_running(&mut self) -> bool {
        if self.running.is_none() {
            self.running = self.ahead.take();
        }
        if self.running.is_none()
            && let Some(e) = self.take_next()
        {
            self.running = Some((e, self.loader.start_epoch(e)));
        }
        self.running.is_some()
    }
}

impl<L: EpochSource> Iterator for Epochs<'_, L> {
    type Item = (u64, Result<L::Batch, LoaderError>);

    fn next(&mut self) -> Option<Self::Item> {
        while self.ensure_running() {
            let (e, item, left) = {
                let (e, run) = self.running.as_mut()?;
                let item = run.next();
                (*e, item, L::remaining(run))
            };
            match item {
                Some(Ok(b)) => {
                    if self.ahead.is_none()
                        && left <= self.loader.prestart_at()
                        && let Some(n) = self.take_next()
                    {
                        self.ahead = Some((n, self.loader.start_epoch(n)));
                    }
                    return Some((e, Ok(b)));
                }
                Some(Err(err)) => {
                    self.running = None;
                    self.ahead = None;
                    self.next = self.end;
                    return Some((e, Err(err)));
                }
                None => self.running = None,
            }
        }
        None
    }
}

impl<L: EpochSource> std::fmt::Debug for Epochs<'_, L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Epochs")
            .field("running", &self.running.as_ref().map(|r| r.0))
            .field("ahead", &self.ahead.as_ref().map(|r| r.0))
            .field("next", &self.next)
            .field("end", &self.end)
            .finish()
    }
}

impl EpochSource for crate::Loader {
    type Batch = crate::Batch;
    type Epoch = crate::Epoch<'static>;

    fn start_epoch(&mut self, epoch: u64) -> Self::Epoch {
        self.epoch_owned(epoch)
    }

    fn remaining(epoch: &Self::Epoch) -> usize {
        epoch.remaining()
    }

    fn prestart_at(&self) -> usize {
        crate::Loader::prestart_at(self)
    }
}

impl EpochSource for crate::ClipLoader {
    type Batch = crate::ClipBatch;
    type Epoch = crate::ClipEpoch<'static>;

    fn start_epoch(&mut self, epoch: u64) -> Self::Epoch {
        self.epoch_owned(epoch)
    }

    fn remaining(epoch: &Self::Epoch) -> usize {
        epoch.remaining()
    }
}
