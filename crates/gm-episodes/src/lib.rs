//! Episodes (clips) sampled from long and multi-camera videos. The crate exists so the
//! workspace has its final shape; its content arrives with the episodes issue (8).
