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

/// `items` cut into jobs for two pools of decoders: the items whose `key` is false (NVDEC's)
/// and those whose key is true (the CPU's) are each cut, in order, as [`job_sizes`] cuts them
/// for that pool's `sessions` (false's, true's), and the jobs of both are ordered by their
/// first item. A job therefore holds items of one key, consecutive among that key's items, so
/// each pool gets whole rounds of equal jobs whatever the other holds (a job straddling a
/// CPU-routed video and an NVDEC one would leave part of it on the wrong pool, and jobs cut
/// where routes change are as unequal as the videos are long). Depends only on the items'
/// keys, the sessions and the size; batches do not change with it.
pub(crate) fn cut_by_key<T: Clone>(
    items: &[T],
    key: impl Fn(&T) -> bool,
    sessions: (usize, usize),
    most: usize,
) -> Vec<Vec<T>> {
    let keys: Vec<bool> = items.iter().map(key).collect();
    let mut jobs: Vec<(usize, Vec<T>)> = Vec::new();
    for (k, pool) in [(false, sessions.0), (true, sessions.1)] {
        let mine: Vec<usize> = (0..items.len()).filter(|&i| keys[i] == k).collect();
        for job in cut(&mine, &job_sizes(mine.len(), pool, most)) {
            if let Some(&first) = job.first() {
                jobs.push((first, job.iter().map(|&i| items[i].clone()).collect()));
            }
        }
    }
    jobs.sort_by_key(|(first, _)| *first);
    jobs.into_iter().map(|(_, job)| job).collect()
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

        #[test]
        fn jobs_by_key_hold_one_key_in_order_in_whole_rounds(
            keys in proptest::collection::vec(any::<bool>(), 0..300),
            pools in (1usize..8, 1usize..20), most in 1usize..12,
        ) {
            let items: Vec<(usize, bool)> = keys.iter().copied().enumerate().collect();
            let jobs = cut_by_key(&items, |&(_, k)| k, pools, most);
            let mut all: Vec<(usize, bool)> = jobs.concat();
            all.sort_unstable();
            prop_assert_eq!(&all, &items);
            let firsts: Vec<usize> = jobs.iter().map(|j| j[0].0).collect();
            prop_assert!(firsts.windows(2).all(|w| w[0] < w[1]));
            for (k, pool) in [(false, pools.0), (true, pools.1)] {
                let mine: Vec<&Vec<(usize, bool)>> = jobs.iter().filter(|j| j[0].1 == k).collect();
                prop_assert!(mine.iter().all(|j| j.iter().all(|x| x.1 == k)));
                let n = keys.iter().filter(|&&x| x == k).count();
                prop_assert_eq!(mine.iter().map(|j| j.len()).collect::<Vec<_>>(), job_sizes(n, pool, most));
            }
        }
    }
}
