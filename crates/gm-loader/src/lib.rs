//! The loading pipeline: datasets, samplers, host workers, the GPU stage and batches. The
//! crate exists so the workspace has its final shape; its content arrives with the loader
//! issues (7, 8).
