//! Waiting for the decode engines by sleeping. nvcuvid's own waits, in `cuvidDecodePicture`
//! while the engines' queue is full and in `cuvidMapVideoFrame` until a picture is decoded,
//! keep the thread on a core: on an H200 host, 16 sessions of H.264 spent 0.8 of their 1.0
//! cores inside those two calls (thread CPU time read around them), cores that a dataset
//! mixing AV1 (CPU) and H.264 (NVDEC) takes from its CPU decoders. So a session keeps at
//! most [`SUBMITTED_AHEAD`] pictures submitted and not yet decoded, and maps a picture only
//! once it is decoded, asking `cuvidGetDecodeStatus` between short sleeps. Measured in
//! `bench/results/2026-11-29-h200-nvdec-sleeping-waits`.

use std::collections::VecDeque;
use std::ffi::c_int;
use std::time::{Duration, Instant};

use super::api::Nvcuvid;
use super::sys;

/// Pictures a session keeps submitted and not known to be decoded: with 16 sessions, 64
/// pictures queued on the engines, which kept an H200's NVDEC as busy as nvcuvid's own
/// blocking did.
pub(super) const SUBMITTED_AHEAD: usize = 4;

/// Sleep between two status reads: a 1080p picture takes about a millisecond on a busy
/// engine, so a few reads a picture.
const POLL_STEP: Duration = Duration::from_micros(100);

/// Longest a session polls one picture before leaving the wait to nvcuvid (which then
/// blocks, or reports the engine's error): a stuck engine is nvcuvid's to report.
const POLL_LIMIT: Duration = Duration::from_secs(2);

/// The environment variable that chooses how sessions wait: `sleep` (default) or `nvcuvid`
/// (inside nvcuvid's calls, as before; for measuring).
pub const WAIT_VARIABLE: &str = "GM_NVDEC_WAIT";

/// Whether sessions wait by sleeping ([`WAIT_VARIABLE`] is not `nvcuvid`).
pub(super) fn sleeping() -> bool {
    static SLEEP: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *SLEEP.get_or_init(|| {
        std::env::var(WAIT_VARIABLE).map_or(true, |v| !v.trim().eq_ignore_ascii_case("nvcuvid"))
    })
}

/// Picture `index`'s decode status on `decoder` (`None` when nvcuvid cannot say).
pub(super) fn status(api: &Nvcuvid, decoder: sys::CUvideodecoder, index: c_int) -> Option<u32> {
    let mut status = sys::CUVIDGETDECODESTATUS::default();
    // SAFETY: a picture index of a live decoder of ours; nvcuvid writes `status`.
    let code = unsafe { (api.get_decode_status)(decoder, index, &mut status) };
    (code == 0).then_some(status.decodeStatus)
}

/// Sleeps while picture `index` of `decoder` is decoding (at most [`POLL_LIMIT`]); its
/// status once it is not, or `None` when nvcuvid cannot say.
pub(super) fn decoded(api: &Nvcuvid, decoder: sys::CUvideodecoder, index: c_int) -> Option<u32> {
    let started = Instant::now();
    loop {
        let s = status(api, decoder, index);
        if s != Some(sys::cuvidDecodeStatus_enum_cuvidDecodeStatus_InProgress)
            || started.elapsed() > POLL_LIMIT
        {
            return s;
        }
        std::thread::sleep(POLL_STEP);
    }
}

/// Pictures submitted to the engines and perhaps not yet decoded, oldest first.
#[derive(Default)]
pub(super) struct InDecode {
    pictures: VecDeque<(sys::CUvideodecoder, c_int)>,
}

impl InDecode {
    /// Before a picture is submitted: sleeps until fewer than [`SUBMITTED_AHEAD`] are out.
    pub(super) fn make_room(&mut self, api: &Nvcuvid) {
        while self.pictures.len() >= SUBMITTED_AHEAD {
            if let Some((decoder, index)) = self.pictures.pop_front() {
                decoded(api, decoder, index);
            }
        }
    }

    /// Notes a picture submitted.
    pub(super) fn push(&mut self, decoder: sys::CUvideodecoder, index: c_int) {
        self.pictures.push_back((decoder, index));
    }

    /// Forgets the pictures of a decoder about to be destroyed.
    pub(super) fn forget(&mut self, decoder: sys::CUvideodecoder) {
        self.pictures.retain(|&(d, _)| d != decoder);
    }
}
