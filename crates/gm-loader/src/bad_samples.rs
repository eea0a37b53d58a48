//! What both loaders do with a sample (an image, a clip) that cannot be loaded: skip it,
//! substitute another, or fail, with substitutes drawn from (seed, epoch, batch, slot, try)
//! so that runs repeat.

use gm_transforms::SampleRng;

use crate::error::{LoaderError, SampleError};

/// What happens to a sample that cannot be read or decoded. Whatever the policy, the sample
/// is counted and the first errors are kept ([`Stats::first_errors`](crate::Stats)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BadSamplePolicy {
    /// Leave it out: its batch is one image shorter.
    #[default]
    Skip,
    /// Put another sample in its place (drawn from the seed, the epoch and the position, so
    /// runs repeat); after [`MAX_SUBSTITUTES`] failed tries the slot is skipped.
    Substitute,
    /// End the epoch with [`LoaderError::BadSample`].
    Fail,
}

/// How many substitutes are tried for one bad sample.
pub const MAX_SUBSTITUTES: u32 = 8;

/// Mixed into the seed of substitute draws, so that they differ from the augmentations'.
const SUBSTITUTE_SEED: u64 = 0x5ab5_7170_7e00_0000;

/// What becomes of a slot whose sample failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    /// Leave the slot out of its batch.
    Skip,
    /// Try this dataset index in the slot.
    Substitute(usize),
}

/// The bad-sample policy of one loader, with what its substitute draws depend on.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BadSamples {
    policy: BadSamplePolicy,
    seed: u64,
    /// Samples in the dataset: substitutes are drawn below it.
    len: usize,
}

impl BadSamples {
    pub(crate) fn new(policy: BadSamplePolicy, seed: u64, len: usize) -> BadSamples {
        BadSamples { policy, seed, len }
    }

    /// Logs a bad sample (a warning the first time it is counted, `first` from the caller's
    /// stats) and ends the epoch under [`BadSamplePolicy::Fail`].
    pub(crate) fn report(&self, e: SampleError, first: bool) -> Result<(), LoaderError> {
        gm_cuda::nvtx::mark(c"gm-loader: bad sample");
        if first {
            tracing::warn!(sample = e.index, name = %e.name, reason = %e.reason, "bad sample");
        } else {
            tracing::debug!(sample = e.index, name = %e.name, reason = %e.reason, "bad sample");
        }
        match self.policy {
            BadSamplePolicy::Fail => Err(LoaderError::BadSample(e)),
            _ => Ok(()),
        }
    }

    /// Whether a slot that has failed `tries` times (its first sample included) gets another
    /// sample.
    pub(crate) fn may_substitute(&self, tries: u32) -> bool {
        self.policy == BadSamplePolicy::Substitute && tries <= MAX_SUBSTITUTES
    }

    /// The dataset index drawn for slot `slot` of batch `position`, draw number `draw`.
    pub(crate) fn substitute(&self, epoch: u64, position: usize, slot: usize, draw: u32) -> usize {
        let key = ((position as u64) << 24) ^ ((slot as u64) << 4) ^ u64::from(draw);
        let mut rng = SampleRng::new(self.seed ^ SUBSTITUTE_SEED, epoch, key);
        rng.below(self.len as u64) as usize
    }

    /// The image loader's step after try `attempt` (0: the batch's own sample) of `slot`
    /// failed: skip the slot, or the sample to try next (draw number `attempt`).
    pub(crate) fn next(&self, epoch: u64, position: usize, slot: usize, attempt: u32) -> Next {
        if self.may_substitute(attempt + 1) {
            Next::Substitute(self.substitute(epoch, position, slot, attempt))
        } else {
            Next::Skip
        }
    }
}

/// A batch's bad-sample counts, added to the loader's stats once the batch is done.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Tally {
    /// Slots left out.
    pub(crate) skipped: u64,
    /// Slots filled by a substitute.
    pub(crate) substituted: u64,
}

impl Tally {
    /// Counts a slot filled on try `attempt`.
    pub(crate) fn filled(&mut self, attempt: u32) {
        self.substituted += u64::from(attempt > 0);
    }

    /// Counts a slot left out.
    pub(crate) fn skip(&mut self) {
        self.skipped += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::SampleErrorKind;

    fn error(index: usize) -> SampleError {
        SampleError {
            index,
            name: format!("sample-{index}"),
            reason: SampleErrorKind::Internal("test"),
        }
    }

    #[test]
    fn skip_never_substitutes() {
        let b = BadSamples::new(BadSamplePolicy::Skip, 3, 100);
        assert_eq!(b.next(0, 0, 0, 0), Next::Skip);
        assert!(!b.may_substitute(1));
        assert!(b.report(error(4), true).is_ok());
    }

    #[test]
    fn fail_ends_the_epoch_with_the_sample() {
        let b = BadSamples::new(BadSamplePolicy::Fail, 3, 100);
        match b.report(error(7), false) {
            Err(LoaderError::BadSample(e)) => assert_eq!(e, error(7)),
            other => panic!("expected a bad-sample error, got {other:?}"),
        }
        assert_eq!(b.next(0, 0, 0, 0), Next::Skip);
    }

    #[test]
    fn substitutes_are_drawn_from_seed_epoch_batch_slot_and_try() {
        let b = BadSamples::new(BadSamplePolicy::Substitute, 11, 1000);
        // The draw the loaders made before this type existed, kept bit for bit.
        let expected = |epoch: u64, position: usize, slot: usize, draw: u32| {
            let key = ((position as u64) << 24) ^ ((slot as u64) << 4) ^ u64::from(draw);
            SampleRng::new(11 ^ 0x5ab5_7170_7e00_0000, epoch, key).below(1000) as usize
        };
        for (epoch, position, slot, attempt) in [(0, 0, 0, 0), (2, 5, 3, 1), (9, 1000, 31, 7)] {
            let want = expected(epoch, position, slot, attempt);
            assert_eq!(b.substitute(epoch, position, slot, attempt), want);
            assert_eq!(
                b.next(epoch, position, slot, attempt),
                Next::Substitute(want)
            );
            assert!(want < 1000);
        }
        let draws: Vec<usize> = (0..8).map(|a| b.substitute(1, 2, 3, a)).collect();
        let again: Vec<usize> = (0..8).map(|a| b.substitute(1, 2, 3, a)).collect();
        assert_eq!(draws, again);
        let other_epoch: Vec<usize> = (0..8).map(|a| b.substitute(2, 2, 3, a)).collect();
        assert_ne!(draws, other_epoch);
    }

    #[test]
    fn a_slot_gets_max_substitutes_tries_then_is_skipped() {
        let b = BadSamples::new(BadSamplePolicy::Substitute, 0, 50);
        let tries: Vec<Next> = (0..=MAX_SUBSTITUTES).map(|a| b.next(0, 1, 2, a)).collect();
        assert!(
            tries[..MAX_SUBSTITUTES as usize]
                .iter()
                .all(|n| matches!(n, Next::Substitute(_)))
        );
        assert_eq!(tries[MAX_SUBSTITUTES as usize], Next::Skip);
        assert!(b.may_substitute(MAX_SUBSTITUTES));
        assert!(!b.may_substitute(MAX_SUBSTITUTES + 1));
    }

    #[test]
    fn the_tally_counts_substitutes_only_after_a_failure() {
        let mut t = Tally::default();
        t.filled(0);
        t.filled(2);
        t.skip();
        assert_eq!(
            t,
            Tally {
                skipped: 1,
                substituted: 1
            }
        );
    }
}
