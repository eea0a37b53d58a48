//! Fuzzes the index builder, planning and packet reading on arbitrary bytes, and the chroma
//! location's parameter-set parsing (H.264 and HEVC SPS, AV1 sequence header) on the same bytes.
#![no_main]

use std::sync::Arc;

use gm_demux::{
    BitstreamScan, Codec, CodecInfo, IndexOptions, IndexingDemuxer, MemSource, VideoIndex,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for codec in [Codec::H264, Codec::Hevc, Codec::Av1] {
        let info = CodecInfo {
            codec,
            fourcc: String::new(),
            profile_idc: 0,
            level_idc: 0,
            chroma_format: 1,
            bit_depth: 8,
            width: 0,
            height: 0,
            nal_length_size: 4,
            parameter_sets: vec![data.to_vec()],
        };
        let _ = info.signalled_chroma_location();
    }
    let src = Arc::new(MemSource::new("fuzz.mp4", data.to_vec()));
    let options = IndexOptions {
        scan: BitstreamScan::Full,
        ..Default::default()
    };
    if let Ok(index) = VideoIndex::from_source(&*src, options) {
        let _ = index.chroma_location();
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
