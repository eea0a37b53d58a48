//! What a decoding run owes its consumer: the frames its plan keeps, found by presentation
//! time among whatever the decoder outputs. Shared by the libavcodec and bundled AV1 decoders.

use std::collections::HashMap;
use std::ffi::c_int;
use std::path::Path;

use gm_demux::Keep;

use crate::error::{CodecError, Result};

/// What a run has delivered so far.
pub(crate) struct RunState<'k> {
    keeps: &'k [Keep],
    wanted: HashMap<i64, usize>,
    delivered: Vec<bool>,
    /// The first presentation times output, for the error when a frame never comes.
    output: Vec<i64>,
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

    /// Ok when every kept frame came out; otherwise the error for the first missing one,
    /// naming `decoder` and, through `failed`, the last failing packet's code.
    pub(crate) fn finish(
        &self,
        file: &Path,
        decoder: &str,
        failed: impl Fn(c_int) -> String,
    ) -> Result<()> {
        let Some(k) = self.missing() else {
            return Ok(());
        };
        let why = self.last_error.map_or_else(String::new, |(at, code)| {
            format!("; packet {at} failed: {}", failed(code))
        });
        Err(CodecError::Decode {
            file: file.to_path_buf(),
            frame: k.frame,
            reason: format!(
                "{decoder} did not output it (pts {}, packet {}); it output pts {:?}{why}",
                k.pts, k.decode_index, self.output
            ),
        })
    }
}
