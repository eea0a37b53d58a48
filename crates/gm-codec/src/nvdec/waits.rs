//! Waiting for the decode engines by sleeping. nvcuvid's own waits, in `cuvidDecodePicture`
//! while the engines' queue is full and in `cuvidMapVideoFrame` until a picture is decoded,
//! keep the thread on a core: on an H200 host, 16 sessions of H.264 spent 0.8 of their 1.0
//! cores inside those two calls (thread CPU time read around them), cores that a dataset
//! mixing AV1 (CPU) and H.264 (NVDEC) takes from its CPU decoders. So a session keeps at
//! most [`SUBMITTED_AHEAD`] pictures submitted and not yet decoded, and maps a picture only
//! once it is decoded, asking `cuvidGetDecodeStatus` between short sleeps. Measured in
//! `bench/results/2026-11-29-h200-nvdec-sleeping-waits`.
//!
//! A picture known to be decoded is never waited for again: one the consumer waited for, the
//! pictures its decoder submitted before it (a decoder's pictures decode in order), and one
//! whose surface nvcuvid hands out again. Waiting for such entries before submitting left
//! sequential H.264 1-2% below nvcuvid's waits, probably because the entry's surface already
//! held a newer picture, whose decode the read then waited for. Sleeping for most of a
//! picture's expected decode time before the first read halved the reads but made random
//! single H.264 frames 10% slower, with either of two ways of expecting it, so reads start
//! at once. Both measured in `bench/results/2026-11-30-h200-paced-nvdec-waits`.

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

/// Reads a picture's status: [`status`] on a live session, a simulated engine in tests.
pub(super) trait ReadStatus: FnMut(sys::CUvideodecoder, c_int) -> Option<u32> {}

impl<F: FnMut(sys::CUvideodecoder, c_int) -> Option<u32>> ReadStatus for F {}

/// Reads picture `index`'s status every [`POLL_STEP`] while it is decoding (at most
/// [`POLL_LIMIT`]); its status once it is not, or `None` when nvcuvid cannot say, and the
/// reads it took.
fn poll(
    read: &mut impl ReadStatus,
    decoder: sys::CUvideodecoder,
    index: c_int,
) -> (Option<u32>, u64) {
    let started = Instant::now();
    let mut reads = 0;
    loop {
        let s = read(decoder, index);
        reads += 1;
        if s != Some(sys::cuvidDecodeStatus_enum_cuvidDecodeStatus_InProgress)
            || started.elapsed() > POLL_LIMIT
        {
            return (s, reads);
        }
        std::thread::sleep(POLL_STEP);
    }
}

/// A picture submitted to the engines.
#[derive(Clone, Copy)]
struct Submitted {
    decoder: sys::CUvideodecoder,
    index: c_int,
    /// Known to be decoded: it keeps its place among the [`SUBMITTED_AHEAD`] until it is the
    /// oldest, so that nvcuvid's own queue is not filled deeper, but is not waited for.
    decoded: bool,
}

/// Pictures submitted to the engines and perhaps not yet decoded, oldest first.
#[derive(Default)]
pub(super) struct InDecode {
    pictures: VecDeque<Submitted>,
}

impl InDecode {
    /// Before picture `index` of `decoder` is submitted: sleeps until fewer than
    /// [`SUBMITTED_AHEAD`] are out. nvcuvid hands a surface out again only once its last
    /// picture is decoded and no longer wanted, so an older entry of this surface is done.
    /// Returns the status reads it took.
    pub(super) fn make_room(
        &mut self,
        read: &mut impl ReadStatus,
        decoder: sys::CUvideodecoder,
        index: c_int,
    ) -> u64 {
        self.mark_decoded(decoder, index);
        let mut reads = 0;
        while self.pictures.len() >= SUBMITTED_AHEAD {
            if let Some(p) = self.pictures.pop_front().filter(|p| !p.decoded) {
                reads += poll(read, p.decoder, p.index).1;
            }
        }
        reads
    }

    /// Notes a picture submitted.
    pub(super) fn push(&mut self, decoder: sys::CUvideodecoder, index: c_int) {
        self.pictures.push_back(Submitted {
            decoder,
            index,
            decoded: false,
        });
    }

    /// Sleeps while picture `index` of `decoder` is decoding; its status once it is not, or
    /// `None` when nvcuvid cannot say, and the status reads it took.
    pub(super) fn decoded(
        &mut self,
        read: &mut impl ReadStatus,
        decoder: sys::CUvideodecoder,
        index: c_int,
    ) -> (Option<u32>, u64) {
        let polled = poll(read, decoder, index);
        self.mark_decoded(decoder, index);
        polled
    }

    /// Marks the latest picture of surface `index` on `decoder` decoded, with the pictures
    /// the decoder submitted before it (they decode in order). Only the waits before
    /// submitting rely on this; a picture is mapped after its own status read.
    fn mark_decoded(&mut self, decoder: sys::CUvideodecoder, index: c_int) {
        let same = |p: &Submitted| p.decoder == decoder && p.index == index;
        if let Some(i) = self.pictures.iter().rposition(same) {
            for p in self.pictures.range_mut(..=i) {
                p.decoded |= p.decoder == decoder;
            }
        }
    }

    /// Forgets the pictures of a decoder about to be destroyed.
    pub(super) fn forget(&mut self, decoder: sys::CUvideodecoder) {
        self.pictures.retain(|p| p.decoder != decoder);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DONE: Option<u32> = Some(sys::cuvidDecodeStatus_enum_cuvidDecodeStatus_Success);
    const BUSY: Option<u32> = Some(sys::cuvidDecodeStatus_enum_cuvidDecodeStatus_InProgress);

    fn decoder(n: usize) -> sys::CUvideodecoder {
        n as sys::CUvideodecoder
    }

    /// Submits `index` on decoder `d` as the session does, returning the pictures whose
    /// status `make_room` read.
    fn submit(q: &mut InDecode, d: usize, index: c_int) -> Vec<(usize, c_int)> {
        let mut seen = Vec::new();
        let mut read = |dec: sys::CUvideodecoder, i| {
            seen.push((dec as usize, i));
            DONE
        };
        let reads = q.make_room(&mut read, decoder(d), index);
        assert_eq!(reads, seen.len() as u64, "every read counted");
        q.push(decoder(d), index);
        seen
    }

    #[test]
    fn pictures_known_decoded_are_not_waited_for_again() {
        let mut q = InDecode::default();
        for i in 0..4 {
            assert!(submit(&mut q, 1, i).is_empty(), "room for four");
        }
        // The consumer waits for picture 2: pictures 0-2 of decoder 1 are decoded.
        assert_eq!(q.decoded(&mut |_, _| DONE, decoder(1), 2), (DONE, 1));
        assert!(submit(&mut q, 1, 4).is_empty(), "0 left without a read");
        assert!(submit(&mut q, 1, 5).is_empty(), "1 left without a read");
        assert!(submit(&mut q, 1, 6).is_empty(), "2 left without a read");
        assert_eq!(submit(&mut q, 1, 7), [(1, 3)], "3 was never seen decoded");
        // Surface 4 comes back: its first picture was decoded and leaves without a read.
        assert!(submit(&mut q, 1, 4).is_empty(), "the old 4 waited for");
        assert_eq!(submit(&mut q, 1, 8), [(1, 5)], "5 was never seen decoded");
    }

    #[test]
    fn another_decoders_pictures_stay_out() {
        let mut q = InDecode::default();
        submit(&mut q, 1, 0);
        submit(&mut q, 2, 0);
        submit(&mut q, 1, 1);
        submit(&mut q, 2, 1);
        assert_eq!(q.decoded(&mut |_, _| DONE, decoder(1), 1), (DONE, 1));
        assert!(
            submit(&mut q, 1, 2).is_empty(),
            "decoder 1's picture 0 is done"
        );
        assert_eq!(submit(&mut q, 1, 3), [(2, 0)], "decoder 2's is not");
        q.forget(decoder(2));
        assert!(
            submit(&mut q, 1, 4).is_empty(),
            "decoder 2 forgotten, room left"
        );
    }

    #[test]
    fn a_wait_reads_until_the_picture_is_decoded() {
        let mut q = InDecode::default();
        q.push(decoder(1), 0);
        let mut left = 3;
        let mut engine = |_: sys::CUvideodecoder, _: c_int| {
            left -= 1;
            if left > 0 { BUSY } else { DONE }
        };
        assert_eq!(q.decoded(&mut engine, decoder(1), 0), (DONE, 3));
    }
}
