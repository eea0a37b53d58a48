//! The loader's pipeline tests, one binary (the GPU bundle has a size limit): the CPU path
//! (`cpu`, runs everywhere) and the GPU path (`gpu`, skips without a GPU unless
//! GM_REQUIRE_GPU=1).
#![allow(clippy::unwrap_used)]

mod augment;
mod common;
mod cpu;
mod epochs;
mod gpu;
mod remote;
mod shards;
mod stream;
mod stream_loader;
