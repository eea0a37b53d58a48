//! Fuzzes the bundled AV1 decoder (rav1d behind gm's CpuDecoder) with containers whose AV1
//! packets are arbitrary: every frame of whatever indexes is decoded. A panic inside rav1d
//! would abort through its C API, and a wait that never ends would time out: either is a bug.
#![no_main]

use std::sync::Arc;

use gm_codec::avcodec::{Av1Backend, CpuDecoder};
use gm_demux::{Codec, IndexOptions, IndexingDemuxer, MemSource, PacketSource, VideoIndex};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let src = Arc::new(MemSource::new("fuzz.webm", data.to_vec()));
    let Ok(index) = VideoIndex::from_source(&*src, IndexOptions::default()) else {
        return;
    };
    if index.codec.codec != Codec::Av1 {
        return;
    }
    let n = index.frame_count().min(64);
    let demux = IndexingDemuxer::new(Arc::new(index), src);
    let Ok(plan) = demux.plan(&(0..n).collect::<Vec<_>>()) else {
        return;
    };
    let mut decoder = CpuDecoder::with_av1(2, Av1Backend::Bundled);
    let _ = decoder.decode(&demux as &dyn PacketSource, &plan, &mut |f| {
        // Touch every plane byte the frame claims to have.
        let sum: u64 = f
            .planes
            .iter()
            .map(|p| p.iter().map(|&b| u64::from(b)).sum::<u64>())
            .sum();
        std::hint::black_box(sum);
        Ok(())
    });
});
