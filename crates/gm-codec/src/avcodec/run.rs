//! What a decoding run owes its consumer: the frames its plan keeps, found by presentation
//! time among whatever the decoder outputs. Shared by the libavcodec and bundled AV1 decoders.

use std::collections::HashMap;
use std::ffi::c_int;

use gm_demux::Keep;

/// What a run has delivered so far.
pub(crate) struct RunState<'k> {
    pub(crate) keeps: &'k [Keep],
    pub(crate) wanted: HashMap<i64, usize>,
    pub(crate) delivered: Vec<bool>,
    /// The first presentation times output, for the error when a frame never comes.
    pub(crate) output: Vec<i64>,
    /// The last failing packet (decode index, or `u32::MAX` when receiving) and its code.
    pub(crate) last_error: Option<(u32, c_int)>,
}

impl<'k> RunState<'k> {
    pub(crate) fn new(keeps: &'k [Keep]) -> RunState<'k> {
        RunState {
            keeps,
            wanted: keeps.iter().enumerate().map(|(i, k)| (k.pts, i)).collect(),
            delivered: vec![false; keeps.len()],
            output: Vec::new(),
            last_error: None,
        }
    }

    /// Records a frame output at `pts`; the kept frame it is, the first time it comes.
    pub(crate) fn take(&mut self, pts: i64) -> Option<&'k Keep> {
        if self.output.len() < 64 {
            self.output.push(pts);
        }
        match self.wanted.get(&pts).copied() {
            Some(k) if !self.delivered[k] => {
                self.delivered[k] = true;
                Some(&self.keeps[k])
            }
            _ => None,
        }
    }

    /// The first kept frame not delivered.
    pub(crate) fn missing(&self) -> Option<&'k Keep> {
        self.delivered
            .iter()
            .position(|d| !d)
            .map(|i| &self.keeps[i])
    }
}
