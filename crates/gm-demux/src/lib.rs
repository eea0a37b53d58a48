//! MP4/MOV indexing, H.264 and HEVC parameter sets, and decode planning (`IndexingDemuxer`),
//! all on the CPU. The crate exists so the workspace has its final shape; its content arrives
//! with the frame-exact index (issue 3).
