//! CUDA image transforms (colour conversion, resize, crop, flip, normalize) and their CPU
//! reference twins. The crate exists so the workspace has its final shape; its kernels arrive
//! with the transforms issue (6).
