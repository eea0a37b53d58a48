//! gm's image loader as a burn [`DataLoader`], so burn's `Learner` (or any loop written against
//! burn's data API) trains on gm batches unchanged.
//!
//! - Each [`DataLoader::iter`] runs the next epoch (0, 1, 2, ...), as burn calls `iter` once
//!   per epoch; [`BurnLoader::set_epoch`] picks the next one (after a restart, say).
//! - Items are made by a converter from a gm [`Batch`]: [`ImageBatch`] through host memory for
//!   any backend by default ([`BurnLoader::new`]), or anything else ([`BurnLoader::with`],
//!   e.g. [`super::images_cuda`] for burn's CUDA backend).
//! - [`DataLoader::slice`] keeps whole batches: items `start..end` are rounded out to the
//!   batches that hold them, and the slice starts its epochs at its first batch (gm resumes
//!   there; nothing before it is decoded). Epochs of one gm loader run one at a time, so
//!   slices iterated from several threads take turns.
//! - burn's iterator yields items, not results. A loader error (a bad sample under the `Fail`
//!   policy, a CUDA failure) ends the epoch early: it is logged and kept for
//!   [`BurnLoader::take_error`]. Bad samples under `Skip`/`Substitute` never reach here.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use burn::data::dataloader::{DataLoader, DataLoaderIterator, Progress};
use burn::tensor::backend::{Backend, BackendTypes};
use burn::tensor::{Int, Tensor};
use gm_loader::{Batch, Epoch, Loader};
use parking_lot::{Mutex, MutexGuard};

use crate::error::InteropError;

/// A batch of images and their labels as burn tensors.
#[derive(Debug, Clone)]
pub struct ImageBatch<B: Backend> {
    /// `[B, C, H, W]` (or the chain's layout), burn's float type.
    pub images: Tensor<B, 4>,
    /// `[B]`, the dataset's labels.
    pub targets: Tensor<B, 1, Int>,
}

/// Makes a burn item from a gm batch on a burn device.
pub type Convert<B, O> =
    Arc<dyn Fn(&Batch, &<B as BackendTypes>::Device) -> Result<O, InteropError> + Send + Sync>;

/// What every view of one gm loader shares.
struct Shared {
    loader: Mutex<Loader>,
    next_epoch: AtomicU64,
    error: Mutex<Option<InteropError>>,
}

/// A gm [`Loader`] as a burn [`DataLoader`] of items `O` (default [`ImageBatch`]).
pub struct BurnLoader<B: Backend, O = ImageBatch<B>> {
    shared: Arc<Shared>,
    device: B::Device,
    convert: Convert<B, O>,
    /// Batches `first..end` of each epoch.
    batches: (usize, usize),
    /// Items of those batches.
    items: usize,
}

impl<B: Backend> BurnLoader<B, ImageBatch<B>> {
    /// The loader's batches as [`ImageBatch`]es on `device`, through host memory.
    pub fn new(loader: Loader, device: &B::Device) -> Self {
        Self::with(loader, device, Arc::new(image_batch::<B>))
    }
}

impl<B: Backend, O: 'static> BurnLoader<B, O> {
    /// The loader's batches as items made by `convert` on `device`.
    pub fn with(loader: Loader, device: &B::Device, convert: Convert<B, O>) -> Self {
        let batches = (0, loader.batches_per_epoch());
        let items = loader.samples_per_epoch();
        BurnLoader {
            shared: Arc::new(Shared {
                loader: Mutex::new(loader),
                next_epoch: AtomicU64::new(0),
                error: Mutex::new(None),
            }),
            device: device.clone(),
            convert,
            batches,
            items,
        }
    }

    /// The epoch the next [`DataLoader::iter`] runs (of this loader and its slices).
    pub fn set_epoch(&self, epoch: u64) {
        self.shared.next_epoch.store(epoch, Ordering::SeqCst);
    }

    /// The error that ended an epoch early, if one did since the last call.
    pub fn take_error(&self) -> Option<InteropError> {
        self.shared.error.lock().take()
    }

    /// The gm loader (its statistics, state, pools), waiting for a running epoch to end.
    pub fn loader(&self) -> MutexGuard<'_, Loader> {
        self.shared.loader.lock()
    }

    fn view(&self, device: B::Device, batches: (usize, usize), items: usize) -> Self {
        BurnLoader {
            shared: self.shared.clone(),
            device,
            convert: self.convert.clone(),
            batches,
            items,
        }
    }
}

fn image_batch<B: Backend>(
    batch: &Batch,
    device: &B::Device,
) -> Result<ImageBatch<B>, InteropError> {
    Ok(ImageBatch {
        images: super::images::<B, 4>(batch, device)?,
        targets: super::labels::<B>(batch, device),
    })
}

impl<B: Backend, O: Send + 'static> DataLoader<B, O> for BurnLoader<B, O> {
    fn iter<'a>(&'a self) -> Box<dyn DataLoaderIterator<O> + 'a> {
        let mut loader = self.shared.loader.lock();
        let epoch = self.shared.next_epoch.fetch_add(1, Ordering::SeqCst);
        let running = if self.batches.0 == 0 {
            Ok(loader.epoch_owned(epoch))
        } else {
            let state = loader.state(epoch, self.batches.0);
            loader.resume_owned(&state)
        };
        let running = match running {
            Ok(r) => Some(r),
            Err(e) => {
                self.keep(e.into(), epoch);
                None
            }
        };
        Box::new(BurnEpoch {
            running,
            _loader: loader,
            view: self,
            epoch,
            left: self.batches.1 - self.batches.0,
            done: 0,
        })
    }

    fn num_items(&self) -> usize {
        self.items
    }

    fn to_device(&self, device: &B::Device) -> Arc<dyn DataLoader<B, O>> {
        Arc::new(self.view(device.clone(), self.batches, self.items))
    }

    fn slice(&self, start: usize, end: usize) -> Arc<dyn DataLoader<B, O>> {
        let (size, total) = {
            let loader = self.shared.loader.lock();
            (loader.batch_size().max(1), loader.samples_per_epoch())
        };
        let first = (self.batches.0 + start / size).min(self.batches.1);
        let last = (self.batches.0 + end.div_ceil(size)).clamp(first, self.batches.1);
        let items = (last * size).min(total) - (first * size).min(total);
        Arc::new(self.view(self.device.clone(), (first, last), items))
    }
}

impl<B: Backend, O> BurnLoader<B, O> {
    fn keep(&self, error: InteropError, epoch: u64) {
        tracing::error!(epoch, %error, "gm loader: the epoch ends early");
        *self.shared.error.lock() = Some(error);
    }
}

/// One epoch of a [`BurnLoader`]: holds the gm loader, so epochs run one at a time.
struct BurnEpoch<'a, B: Backend, O> {
    /// Declared (so dropped) before the guard: the epoch stops before the loader is free.
    running: Option<Epoch<'static>>,
    _loader: MutexGuard<'a, Loader>,
    view: &'a BurnLoader<B, O>,
    epoch: u64,
    /// Batches still to deliver.
    left: usize,
    /// Items delivered.
    done: usize,
}

impl<B: Backend, O> Iterator for BurnEpoch<'_, B, O> {
    type Item = O;

    fn next(&mut self) -> Option<O> {
        if self.left == 0 {
            self.running = None;
            return None;
        }
        let result = self.running.as_mut()?.next()?;
        let item = result.map_err(InteropError::from).and_then(|batch| {
            self.done += batch.len();
            (self.view.convert)(&batch, &self.view.device)
        });
        match item {
            Ok(item) => {
                self.left -= 1;
                Some(item)
            }
            Err(e) => {
                self.view.keep(e, self.epoch);
                self.running = None;
                None
            }
        }
    }
}

impl<B: Backend, O> DataLoaderIterator<O> for BurnEpoch<'_, B, O> {
    fn progress(&self) -> Progress {
        Progress::new(self.done, self.view.items)
    }
}
