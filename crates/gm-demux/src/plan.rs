//! Decode plans: which packets to feed a decoder, in which runs, to produce a set of frames.
//! Plain values, shared by indexes (which make them) and decoders (which execute them).

/// Frames to keep from one run, in display order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keep {
    /// The frame's presentation index.
    pub frame: u32,
    /// Its decode index (its packet).
    pub decode_index: u32,
    /// Its presentation time (ticks), which decoders report back with the decoded picture.
    pub pts: i64,
    /// Positions in the request list that want this frame (one frame may be asked for twice).
    pub slots: Vec<u32>,
}

/// Packets decoded in one go: starts at a GOP start (a valid decode start), ends with a flush.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeRun {
    /// Decode indices to feed, increasing; the first is a GOP start.
    pub packets: Vec<u32>,
    /// Frames to keep, in display order.
    pub keep: Vec<Keep>,
}

/// A plan for a list of requested frames.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DecodePlan {
    /// Runs in decode order of their first packet.
    pub runs: Vec<DecodeRun>,
    /// How many frames were requested (slots run from 0 to this).
    pub requested: usize,
}

impl DecodePlan {
    /// Packets to decode in all.
    pub fn packet_count(&self) -> usize {
        self.runs.iter().map(|r| r.packets.len()).sum()
    }

    /// The runs dealt to at most `limit` groups of about equal packet counts (largest run
    /// first, each to the least loaded group), for decoders that work in parallel: runs are
    /// independent (each starts at a GOP start and ends with a flush). Each group keeps its runs
    /// in decode order and the plan's `requested`, so slots stay those of the whole request;
    /// there is always at least one group.
    pub fn split(self, limit: usize) -> Vec<DecodePlan> {
        let k = self.runs.len().clamp(1, limit.max(1));
        let mut groups: Vec<DecodePlan> = (0..k)
            .map(|_| DecodePlan {
                runs: Vec::new(),
                requested: self.requested,
            })
            .collect();
        let mut load = vec![0usize; k];
        let mut runs = self.runs;
        runs.sort_by_key(|r| std::cmp::Reverse(r.packets.len()));
        for r in runs {
            let (i, _) = load
                .iter()
                .enumerate()
                .min_by_key(|&(_, l)| *l)
                .unwrap_or((0, &0));
            load[i] += r.packets.len();
            groups[i].runs.push(r);
        }
        for g in &mut groups {
            g.runs.sort_by_key(|r| r.packets.first().copied());
        }
        groups
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(first: u32, len: u32) -> DecodeRun {
        DecodeRun {
            packets: (first..first + len).collect(),
            keep: Vec::new(),
        }
    }

    #[test]
    fn split_balances_packets_and_keeps_decode_order() {
        let plan = DecodePlan {
            runs: vec![
                run(0, 30),
                run(30, 5),
                run(60, 20),
                run(90, 10),
                run(120, 15),
            ],
            requested: 5,
        };
        let groups = plan.split(3);
        assert_eq!(groups.len(), 3);
        let loads: Vec<usize> = groups.iter().map(|g| g.packet_count()).collect();
        assert_eq!(loads.iter().sum::<usize>(), 80);
        // Largest first to the least loaded: 30 | 20+5 | 15+10.
        let mut sorted = loads.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, vec![25, 25, 30]);
        for g in &groups {
            let firsts: Vec<u32> = g.runs.iter().map(|r| r.packets[0]).collect();
            assert!(firsts.windows(2).all(|w| w[0] < w[1]), "{firsts:?}");
            assert_eq!(g.requested, 5);
        }
    }

    #[test]
    fn split_never_makes_more_groups_than_runs_or_limit() {
        let one = DecodePlan {
            runs: vec![run(0, 4)],
            requested: 1,
        };
        assert_eq!(one.split(7).len(), 1);
        let none = DecodePlan::default();
        assert_eq!(none.split(7).len(), 1);
        let many = DecodePlan {
            runs: (0..10).map(|i| run(i * 10, 3)).collect(),
            requested: 10,
        };
        assert_eq!(many.clone().split(0).len(), 1);
        assert_eq!(many.split(4).len(), 4);
    }
}
