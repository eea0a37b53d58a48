//! An epoch as candle `(images, labels)` pairs, the iterator candle users expect.

use candle_core::{Device as CandleDevice, Tensor};
use gm_loader::{Batch, LoaderError};

use crate::error::InteropError;

/// How batches reach candle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Handoff {
    /// One device copy per batch; gm's pool stays allocation-free ([`super::images`]).
    #[default]
    Copy,
    /// The batch memory becomes candle's; gm's pool allocates anew per batch
    /// ([`super::into_images`]).
    Move,
}

/// Wraps an iterator of batches (an [`gm_loader::Epoch`]) into one of `(images, labels)`
/// candle tensors on `device`.
pub fn batches<I>(epoch: I, device: &CandleDevice, handoff: Handoff) -> Batches<I>
where
    I: Iterator<Item = Result<Batch, LoaderError>>,
{
    Batches {
        epoch,
        device: device.clone(),
        handoff,
    }
}

/// Iterator of `Result<(images, labels)>`; see [`batches`].
#[derive(Debug)]
pub struct Batches<I> {
    epoch: I,
    device: CandleDevice,
    handoff: Handoff,
}

impl<I> Iterator for Batches<I>
where
    I: Iterator<Item = Result<Batch, LoaderError>>,
{
    type Item = Result<(Tensor, Tensor), InteropError>;

    fn next(&mut self) -> Option<Self::Item> {
        let batch = match self.epoch.next()? {
            Ok(b) => b,
            Err(e) => return Some(Err(InteropError::Loader(e))),
        };
        Some(self.convert(batch))
    }
}

impl<I> Batches<I> {
    fn convert(&self, mut batch: Batch) -> Result<(Tensor, Tensor), InteropError> {
        let labels = super::labels(&batch, &self.device)?;
        let images = match self.handoff {
            Handoff::Copy => super::images(&mut batch, &self.device)?,
            Handoff::Move => super::into_images(batch, &self.device)?.0,
        };
        Ok((images, labels))
    }
}
