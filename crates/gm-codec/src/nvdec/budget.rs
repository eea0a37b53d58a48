//! `DecoderBudget`: GPU memory the decoders of a pool may hold together.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::error::{CodecError, Result};

/// GPU memory shared by the decoders of a pool.
#[derive(Debug)]
pub struct DecoderBudget {
    limit: usize,
    used: AtomicUsize,
}

impl DecoderBudget {
    /// A budget of `limit` bytes.
    pub fn new(limit: usize) -> Arc<Self> {
        Arc::new(DecoderBudget {
            limit,
            used: AtomicUsize::new(0),
        })
    }

    pub(super) fn reserve(&self, bytes: usize) -> Result<()> {
        let mut cur = self.used.load(Ordering::Acquire);
        loop {
            if cur + bytes > self.limit {
                return Err(CodecError::OutOfDecoderMemory {
                    requested: bytes,
                    in_use: cur,
                    budget: self.limit,
                });
            }
            match self
                .used
                .compare_exchange(cur, cur + bytes, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Ok(()),
                Err(now) => cur = now,
            }
        }
    }

    pub(super) fn release(&self, bytes: usize) {
        self.used.fetch_sub(bytes, Ordering::AcqRel);
    }

    /// The budget in bytes.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Bytes held by live decoders.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }
}
