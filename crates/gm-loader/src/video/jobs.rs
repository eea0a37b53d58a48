//! How an epoch's batches are cut into decoding jobs.
//!
//! A job is decoded by one session from start to end, so an epoch takes as long as its
//! busiest session. Cut into jobs of a fixed size, an epoch whose job count is not a multiple
//! of the sessions ends with a round in which only some sessions work: 74 batches in jobs of
//! 8 are 10 jobs, and 7 sessions spend two rounds on what fills 1.4 (stream access on the
//! bench's 16-copy datasets ran at 65-72% of the engines' rate for that reason). Jobs are
//! therefore cut into a multiple of the session count, as equal as batches allow, none
//! larger than the requested size. Cutting depends only on the batch count, the sessions and
//! the size, and a job's batches are the same frames whichever job decodes them, so batches
//! do not change with it.

/// The sizes of the jobs that `batches` consecutive batches are cut into for `sessions`
/// sessions, each at most `max_per_job`, in order; they sum to `batches`.
pub(crate) fn job_sizes(batches: usize, sessions: usize, max_per_job: usize) -> Vec<usize> {
    let (sessions, most) = (sessions.max(1), max_per_job.max(1));
    if batches == 0 {
        return Vec::new();
    }
    let rounds = batches.div_ceil(sessions * most);
    let jobs = (sessions * rounds).min(batches);
    let (base, longer) = (batches / jobs, batches % jobs);
    (0..jobs).map(|j| base + usize::from(j < longer)).collect()
}

/// `items` cut into consecutive jobs of the given sizes.
pub(crate) fn cut<T: Clone>(items: &[T], sizes: &[usize]) -> Vec<Vec<T>> {
    let mut rest = items;
    sizes
        .iter()
        .map(|&n| {
            let (job, tail) = rest.split_at(n.min(rest.len()));
            rest = tail;
            job.to_vec()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_bench_epoch_fills_two_rounds() {
        // 74 batches, 7 sessions, at most 8: 14 jobs of 5 or 6, not 9 of 8 and one of 2.
        let s = job_sizes(74, 7, 8);
        assert_eq!(s.len(), 14);
        assert_eq!(s.iter().sum::<usize>(), 74);
        assert!(s.iter().all(|&n| n == 5 || n == 6), "{s:?}");
    }

    #[test]
    fn one_batch_per_job_stays_one() {
        assert_eq!(job_sizes(10, 7, 1), vec![1; 10]);
        assert_eq!(job_sizes(3, 7, 8), vec![1; 3]);
        assert!(job_sizes(0, 7, 8).is_empty());
    }

    proptest! {
        #[test]
        fn jobs_cover_every_batch_in_whole_rounds(
            batches in 0usize..5000, sessions in 1usize..16, most in 1usize..16,
        ) {
            let s = job_sizes(batches, sessions, most);
            prop_assert_eq!(s.iter().sum::<usize>(), batches);
            prop_assert!(s.iter().all(|&n| (1..=most).contains(&n)));
            // As equal as can be, and a whole number of rounds unless batches run out.
            let (lo, hi) = (s.iter().min(), s.iter().max());
            if let (Some(lo), Some(hi)) = (lo, hi) {
                prop_assert!(hi - lo <= 1);
            }
            prop_assert!(s.len().is_multiple_of(sessions) || s.len() == batches);
            let items: Vec<usize> = (0..batches).collect();
            let jobs = cut(&items, &s);
            prop_assert_eq!(jobs.concat(), items);
        }
    }
}
