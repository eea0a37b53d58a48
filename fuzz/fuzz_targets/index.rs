//! Fuzzes the index builder, planning and packet reading on arbitrary bytes.
#![no_main]

use std::sync::Arc;

use gm_demux::{BitstreamScan, IndexOptions, IndexingDemuxer, MemSource, VideoIndex};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let src = Arc::new(MemSource::new("fuzz.mp4", data.to_vec()));
    let options = IndexOptions {
        scan: BitstreamScan::Full,
        ..Default::default()
    };
    if let Ok(index) = VideoIndex::from_source(&*src, options) {
        let n = index.frame_count();
        let demux = IndexingDemuxer::new(Arc::new(index), src);
        if n > 0
            && let Ok(plan) = demux.plan(&[n - 1, 0, n / 2])
        {
            for run in &plan.runs {
                let _ = demux.read_run(run);
            }
        }
    }
});
