//! Which live decoder takes a new sequence: a pure choice over plain values, so that a session
//! alternating codecs, bit depths and sizes reuses its decoders instead of re-creating them
//! (tens of milliseconds each).

use super::format::{Capacity, DecoderFormat, SequenceFormat};

/// Live decoders a session keeps by default: enough for H.264, HEVC, 10-bit HEVC, VP9 and
/// 10-bit VP9 at once, so a dataset mixing them never re-creates one (a session's memory
/// budget still evicts the least recently used first).
pub(super) const LIVE_DECODERS: usize = 5;

/// A live decoder as the choice sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Slot {
    /// What it was created for and is configured for now.
    pub(super) format: DecoderFormat,
    /// Its GPU memory (estimate), held in the budget.
    pub(super) bytes: usize,
    /// When it last took a sequence (a session-local tick): the least recent goes first.
    pub(super) last_used: u64,
}

/// What to do for a new sequence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Action {
    /// The decoder at this index is configured exactly for the sequence.
    Reuse(usize),
    /// The decoder at this index takes the sequence once reconfigured (same key, no larger
    /// than it was created for).
    Reconfigure(usize),
    /// Destroy the decoders at these indices (a same-key decoder too small for the sequence,
    /// the least recently used beyond the cap or the budget), then create one of `capacity`.
    Create {
        /// Indices into the live decoders, in the order to destroy them.
        evict: Vec<usize>,
        /// Size and surfaces to create the decoder for: the sequence's, grown to the
        /// largest the replaced same-key decoder held.
        capacity: Capacity,
        /// GPU memory of the new decoder (estimate).
        bytes: usize,
    },
}

/// Chooses for the sequence `want` among `live` decoders, keeping at most `cap` of them and,
/// when `free` is given (budget bytes not held by anyone), evicting idle decoders until the
/// new one fits. Every live decoder is idle here: the sequence callback runs between runs'
/// pictures, and the caller drains mapped frames before it destroys any.
pub(super) fn choose(
    live: &[Slot],
    want: &SequenceFormat,
    cap: usize,
    free: Option<usize>,
) -> Action {
    let same_key = live.iter().position(|s| s.format.key() == want.key());
    let mut capacity = want.capacity();
    let mut evict = Vec::new();
    if let Some(i) = same_key {
        let f = &live[i].format;
        if f.fits(want) {
            return if f.same_size(want) {
                Action::Reuse(i)
            } else {
                Action::Reconfigure(i)
            };
        }
        // Too small: replace it with one for the larger of both, so that alternating sizes
        // settle on one decoder.
        capacity = capacity.union(f.capacity());
        evict.push(i);
    }
    let bytes = want.decoder_bytes(capacity);
    let mut idle: Vec<usize> = (0..live.len()).filter(|i| !evict.contains(i)).collect();
    idle.sort_by_key(|&i| live[i].last_used);
    let mut idle = idle.into_iter();
    while live.len() - evict.len() + 1 > cap.max(1) {
        match idle.next() {
            Some(i) => evict.push(i),
            None => break,
        }
    }
    if let Some(free) = free {
        let mut freed: usize = evict.iter().map(|&i| live[i].bytes).sum();
        while free + freed < bytes {
            match idle.next() {
                Some(i) => {
                    freed += live[i].bytes;
                    evict.push(i);
                }
                None => break,
            }
        }
    }
    Action::Create {
        evict,
        capacity,
        bytes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const H264: u32 = 4;
    const HEVC: u32 = 8;

    fn seq(codec: u32, depth_minus8: u32, w: u32, h: u32) -> SequenceFormat {
        SequenceFormat {
            codec,
            chroma: 1,
            depth_minus8,
            coded_width: w,
            coded_height: h,
            display: [0, 0, w as i32, h as i32],
            target_width: w,
            target_height: h,
            surfaces: 8,
            progressive: true,
        }
    }

    /// Applies `choose` the way a session does; returns (created, destroyed).
    fn apply(
        live: &mut Vec<Slot>,
        tick: &mut u64,
        want: &SequenceFormat,
        cap: usize,
        free: Option<usize>,
    ) -> (u32, u32) {
        *tick += 1;
        match choose(live, want, cap, free) {
            Action::Reuse(i) => {
                live[i].last_used = *tick;
                (0, 0)
            }
            Action::Reconfigure(i) => {
                live[i].format = live[i].format.reconfigured(want);
                live[i].last_used = *tick;
                (0, 0)
            }
            Action::Create {
                mut evict,
                capacity,
                bytes,
            } => {
                let destroyed = evict.len() as u32;
                evict.sort_unstable();
                for i in evict.into_iter().rev() {
                    live.remove(i);
                }
                live.push(Slot {
                    format: DecoderFormat::created(want, capacity),
                    bytes,
                    last_used: *tick,
                });
                (1, destroyed)
            }
        }
    }

    #[test]
    fn alternating_h264_and_hevc_creates_two_then_only_reuses() {
        let (mut live, mut tick) = (Vec::new(), 0);
        let h264 = seq(H264, 0, 1920, 1088);
        let hevc = seq(HEVC, 0, 1920, 1088);
        let mut created = 0;
        for round in 0..10 {
            for want in [&h264, &hevc] {
                let before = live.clone();
                let (c, d) = apply(&mut live, &mut tick, want, LIVE_DECODERS, None);
                assert_eq!(d, 0);
                created += c;
                if round > 0 {
                    assert!(matches!(choose(&before, want, 3, None), Action::Reuse(_)));
                }
            }
        }
        assert_eq!(created, 2);
        assert_eq!(live.len(), 2);
    }

    #[test]
    fn five_codec_and_depth_keys_stay_live_together() {
        const VP9: u32 = 10;
        let (mut live, mut tick) = (Vec::new(), 0);
        let keys = [
            seq(H264, 0, 640, 360),
            seq(HEVC, 0, 640, 360),
            seq(HEVC, 2, 640, 360),
            seq(VP9, 0, 426, 240),
            seq(VP9, 2, 426, 240),
        ];
        let mut created = 0;
        for _ in 0..4 {
            for want in &keys {
                let (c, d) = apply(&mut live, &mut tick, want, LIVE_DECODERS, None);
                assert_eq!(d, 0, "nothing destroyed");
                created += c;
            }
        }
        assert_eq!(created as usize, keys.len());
    }

    #[test]
    fn eight_and_ten_bit_hevc_are_two_keys() {
        let (mut live, mut tick) = (Vec::new(), 0);
        let main = seq(HEVC, 0, 640, 360);
        let main10 = seq(HEVC, 2, 640, 360);
        assert_eq!(apply(&mut live, &mut tick, &main, 3, None), (1, 0));
        assert_eq!(apply(&mut live, &mut tick, &main10, 3, None), (1, 0));
        assert_eq!(choose(&live, &main, 3, None), Action::Reuse(0));
        assert_eq!(choose(&live, &main10, 3, None), Action::Reuse(1));
    }

    #[test]
    fn growing_replaces_at_the_larger_size_and_shrinking_reconfigures() {
        let (mut live, mut tick) = (Vec::new(), 0);
        let small = seq(H264, 0, 640, 360);
        let mut tall = seq(H264, 0, 320, 720);
        tall.surfaces = 4;
        apply(&mut live, &mut tick, &small, 3, None);
        // Taller but narrower: the replacement holds both.
        assert_eq!(apply(&mut live, &mut tick, &tall, 3, None), (1, 1));
        assert_eq!(live.len(), 1);
        assert_eq!(
            live[0].format.capacity(),
            Capacity {
                width: 640,
                height: 720,
                surfaces: 8
            }
        );
        assert_eq!(choose(&live, &small, 3, None), Action::Reconfigure(0));
        apply(&mut live, &mut tick, &small, 3, None);
        assert_eq!(choose(&live, &small, 3, None), Action::Reuse(0));
        assert_eq!(choose(&live, &tall, 3, None), Action::Reconfigure(0));
    }

    #[test]
    fn the_least_recently_used_goes_at_the_cap() {
        let (mut live, mut tick) = (Vec::new(), 0);
        let a = seq(H264, 0, 640, 360);
        let b = seq(HEVC, 0, 640, 360);
        let c = seq(HEVC, 2, 640, 360);
        let d = seq(H264, 2, 640, 360);
        for w in [&a, &b, &c] {
            apply(&mut live, &mut tick, w, 3, None);
        }
        apply(&mut live, &mut tick, &a, 3, None); // a is now the most recent; b the least
        match choose(&live, &d, 3, None) {
            Action::Create { evict, .. } => assert_eq!(evict, vec![1]),
            other => panic!("{other:?}"),
        }
        assert_eq!(apply(&mut live, &mut tick, &d, 3, None), (1, 1));
        let keys: Vec<_> = live.iter().map(|s| s.format.key()).collect();
        assert_eq!(keys, vec![a.key(), c.key(), d.key()]);
    }

    #[test]
    fn a_short_budget_evicts_idle_decoders_then_creates() {
        let (mut live, mut tick) = (Vec::new(), 0);
        let a = seq(H264, 0, 640, 360);
        let b = seq(HEVC, 0, 640, 360);
        let c = seq(HEVC, 2, 640, 360);
        apply(&mut live, &mut tick, &a, 3, None);
        apply(&mut live, &mut tick, &b, 3, None);
        let need = c.decoder_bytes(c.capacity());
        // Room for the new one once the least recent (a) goes.
        match choose(&live, &c, 3, Some(need - live[0].bytes)) {
            Action::Create { evict, bytes, .. } => {
                assert_eq!(evict, vec![0]);
                assert_eq!(bytes, need);
            }
            other => panic!("{other:?}"),
        }
        // Enough room: nothing goes.
        assert!(matches!(
            choose(&live, &c, 3, Some(need)),
            Action::Create { evict, .. } if evict.is_empty()
        ));
        // Never enough: everything idle goes, and the reservation will report the shortage.
        match choose(&live, &c, 3, Some(0)) {
            Action::Create { evict, .. } => assert_eq!(evict, vec![0, 1]),
            other => panic!("{other:?}"),
        }
    }
}
