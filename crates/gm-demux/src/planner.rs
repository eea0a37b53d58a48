//! Working out decode plans from an index: which runs of packets reproduce a set of frames
//! exactly, with as little decoding as the index allows.

use crate::codec::Codec;
use crate::error::Result;
use crate::index::VideoIndex;
use crate::plan::{DecodePlan, DecodeRun, Keep};

impl VideoIndex {
    /// Whether packet `d` is an HEVC leading picture of the CRA at packet `start` that needs
    /// the GOP before it (RASL, or assumed RASL without a full bitstream scan). A run starting
    /// at that CRA cannot decode it exactly and, by HEVC's rules, no trailing or RADL picture
    /// references it, so it is left out: NVDEC, fed those pictures, lost the CRA's own output
    /// (a batch asking for a CRA and later frames of an open-GOP HEVC stream failed).
    /// H.264 open GOPs have no such rule, so nothing is left out there.
    fn skipped_leading(&self, start: u32, d: u32) -> bool {
        let (s, p) = (&self.packets[start as usize], &self.packets[d as usize]);
        self.codec.codec == Codec::Hevc
            && d > start
            && p.presented_before(s)
            && p.decode_start < start
    }

    /// The plan producing frames `frames` (presentation indices, any order, repeats allowed):
    /// overlapping requests share a run, every run starts where decoding reproduces its frames
    /// exactly, pictures that cannot decode exactly from the run's start (leading pictures of
    /// the CRA it starts at) are left out, and pictures nothing requested and nothing
    /// references are skipped when the bitstream was scanned (`BitstreamScan::Full`).
    pub fn plan(&self, frames: &[usize]) -> Result<DecodePlan> {
        struct Want {
            start: u32,
            decode: u32,
            frame: u32,
            slot: u32,
        }
        let mut wants = Vec::with_capacity(frames.len());
        for (slot, &f) in frames.iter().enumerate() {
            let p = self.frame(f)?;
            wants.push(Want {
                start: p.decode_start,
                decode: p.decode_index,
                frame: f as u32,
                slot: slot as u32,
            });
        }
        wants.sort_by_key(|w| (w.start, w.decode));

        // Merge [start, decode] intervals that overlap or touch.
        let mut groups: Vec<(u32, u32, Vec<usize>)> = Vec::new();
        for (k, w) in wants.iter().enumerate() {
            match groups.last_mut() {
                Some((_, end, members)) if w.start <= end.saturating_add(1) => {
                    *end = (*end).max(w.decode);
                    members.push(k);
                }
                _ => groups.push((w.start, w.decode, vec![k])),
            }
        }

        let max_tid = self
            .packets
            .iter()
            .filter_map(|p| p.picture.map(|pic| pic.temporal_id))
            .max()
            .unwrap_or(0);
        let mut runs = Vec::with_capacity(groups.len());
        for (start, end, members) in groups {
            let requested: std::collections::HashSet<u32> =
                members.iter().map(|&k| wants[k].decode).collect();
            let packets: Vec<u32> = (start..=end)
                .filter(|&d| {
                    let p = &self.packets[d as usize];
                    let droppable = p
                        .picture
                        .is_some_and(|pic| !pic.reference && pic.temporal_id == max_tid);
                    d == start
                        || requested.contains(&d)
                        || !(droppable || self.skipped_leading(start, d))
                })
                .collect();
            let mut keep: Vec<Keep> = Vec::new();
            let mut by_decode: Vec<&Want> = members.iter().map(|&k| &wants[k]).collect();
            by_decode.sort_by_key(|w| (w.frame, w.slot));
            for w in by_decode {
                let p = &self.packets[w.decode as usize];
                match keep.last_mut() {
                    Some(k) if k.decode_index == w.decode => k.slots.push(w.slot),
                    _ => keep.push(Keep {
                        frame: w.frame,
                        decode_index: w.decode,
                        pts: p.pts,
                        slots: vec![w.slot],
                    }),
                }
            }
            runs.push(DecodeRun { packets, keep });
        }
        Ok(DecodePlan {
            runs,
            requested: frames.len(),
        })
    }
}
