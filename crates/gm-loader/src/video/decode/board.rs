//! Where a job and the parts it handed out meet (see [`parts`](super::parts)): each part
//! posts how it ended, the job takes ends in as they come, and a job whose own videos are
//! decoded while parts are still out leaves its tail here for the last part to finish. All of
//! it happens under the one lock the board sits behind, so exactly one thread finishes a job:
//! the job itself when every part ended before it parked, else the part that ends last.

/// The ends (`E`) of a job's parts, by video, and the job's tail (`T`) once it is left.
pub(super) struct Board<E, T> {
    /// Parts ended and not yet taken in.
    ended: Vec<(usize, E)>,
    /// Parts not ended yet.
    out: usize,
    tail: Option<T>,
}

impl<E, T> Default for Board<E, T> {
    fn default() -> Self {
        Board::new(0)
    }
}

impl<E, T> Board<E, T> {
    /// A board for `out` parts.
    pub(super) fn new(out: usize) -> Self {
        Board {
            ended: Vec::new(),
            out,
            tail: None,
        }
    }

    /// Whether parts are out or ended and not taken in.
    pub(super) fn pending(&self) -> bool {
        self.out > 0 || !self.ended.is_empty()
    }

    /// The parts ended since the last call.
    pub(super) fn take_ended(&mut self) -> Vec<(usize, E)> {
        std::mem::take(&mut self.ended)
    }

    /// Leaves the tail (made by `tail`) for the last part: true when parts are still out and
    /// none ended untaken; false, `tail` not called, when the job must take ends in first.
    pub(super) fn park(&mut self, tail: impl FnOnce() -> T) -> bool {
        if self.out == 0 || !self.ended.is_empty() {
            return false;
        }
        self.tail = Some(tail());
        true
    }

    /// Posts part `v`'s end; the tail when this was the last part out and the job left it.
    pub(super) fn post(&mut self, v: usize, end: E) -> Option<T> {
        self.ended.push((v, end));
        self.out = self.out.saturating_sub(1);
        if self.out == 0 {
            self.tail.take()
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use parking_lot::Mutex;

    use super::Board;

    /// Spins for about `n` yields: the job's or a part's own work.
    fn work(n: usize) {
        for _ in 0..n {
            std::thread::yield_now();
        }
    }

    /// Parts ending on their threads while the job decodes and then parks (or takes them
    /// in): whoever finishes the job, exactly one does, and every part's end is taken in
    /// exactly once, by the job or by the finisher.
    #[test]
    fn exactly_one_thread_finishes_a_job_and_takes_each_end_once() {
        let mut parked_rounds = 0;
        for round in 0..800usize {
            let parts = 1 + round % 4;
            let board: Arc<Mutex<Board<usize, u64>>> = Arc::new(Mutex::new(Board::new(parts)));
            let threads: Vec<_> = (0..parts)
                .map(|v| {
                    let board = board.clone();
                    std::thread::spawn(move || {
                        work((round * 7 + v * 13) % 23);
                        let tail = board.lock().post(v, v * 10);
                        // The finisher takes in what is left, as `run_tail` does.
                        tail.map(|t| (t, board.lock().take_ended()))
                    })
                })
                .collect();
            work((round * 5) % 29);
            let mut taken = Vec::new();
            let mut parked = false;
            while board.lock().pending() {
                if board.lock().park(|| round as u64) {
                    parked = true;
                    break;
                }
                taken.extend(board.lock().take_ended());
            }
            let finishers: Vec<(u64, Vec<(usize, usize)>)> = threads
                .into_iter()
                .filter_map(|t| t.join().expect("a part thread"))
                .collect();
            assert_eq!(finishers.len(), usize::from(parked), "round {round}");
            for (tail, rest) in finishers {
                assert_eq!(tail, round as u64);
                taken.extend(rest);
            }
            taken.sort_unstable();
            let all: Vec<(usize, usize)> = (0..parts).map(|v| (v, v * 10)).collect();
            assert_eq!(taken, all, "round {round}: every end taken in once");
            parked_rounds += usize::from(parked);
        }
        // Both ways happened, or the test proved nothing about one of them.
        assert!((1..800).contains(&parked_rounds), "{parked_rounds} parked");
    }

    #[test]
    fn a_job_parks_only_with_parts_out_and_every_end_taken_in() {
        let mut b: Board<(), u8> = Board::new(2);
        assert_eq!(b.post(0, ()), None);
        assert!(!b.park(|| 1), "an end not taken in yet");
        assert_eq!(b.take_ended().len(), 1);
        assert!(b.park(|| 1), "one part is still out");
        assert_eq!(b.post(1, ()), Some(1), "the last part gets the tail");
        assert!(b.pending(), "its end is still to take in");
        assert_eq!(b.take_ended().len(), 1);
        assert!(!b.pending());
        let mut done: Board<(), u8> = Board::new(1);
        done.post(0, ());
        assert!(
            !done.park(|| 2),
            "an untaken end: the job takes it in itself"
        );
        done.take_ended();
        assert!(!done.park(|| 3), "nothing out: nothing to park for");
    }
}
