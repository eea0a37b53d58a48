//! The CUDA driver layer of Gradient Mechanics: the devices, streams, memory and kernels the
//! other crates run on.
//!
//! Built on [cudarc](https://docs.rs/cudarc)'s driver API with libcuda loaded at run time, so
//! everything builds and the CPU tests run on machines without a GPU or a CUDA toolkit; there,
//! every constructor returns an error saying what is missing (call [`available`] first).
//!
//! - [`Device`]: a GPU through its primary context (shared with PyTorch, nvJPEG, NVDEC).
//! - [`Stream`] and [`Event`]: explicit ordering; cudarc's automatic event tracking is off.
//! - [`DeviceBuffer`], [`PinnedBuffer`], and their pools [`DevicePool`], [`PinnedPool`]: memory
//!   by size class, reused, with statistics and an optional bound.
//! - [`Tensor`]: shape, strides, dtype and ready event over device memory, exported to
//!   PyTorch/JAX without a copy through DLPack.
//! - [`Module`] and [`Kernel`]: PTX embedded in the binary, launched with typed arguments.
//! - [`EntryModules`]: a large PTX module loaded one entry point at a time, so that a first run
//!   on a fresh machine compiles only the kernels it launches.
//! - [`testing`]: the skip-or-fail helper for GPU tests.
//! - [`nvtx`]: ranges and stream names for Nsight Systems (the `nvtx` feature; free without it).
//!
//! ```no_run
//! use gm_cuda::{Device, DevicePool, PoolConfig, Stream};
//!
//! # fn main() -> gm_cuda::Result<()> {
//! let device = Device::new(0)?; // an error, not a panic, without a GPU
//! let stream = Stream::new(&device)?;
//! let pool = DevicePool::new(&device, PoolConfig::unbounded("scratch"));
//! let buffer = pool.acquire(1 << 20, &stream)?; // 1 MiB; back to the pool when dropped
//! # drop(buffer);
//! # Ok(())
//! # }
//! ```

mod device;
mod driver;
mod entries;
mod error;
mod import;
mod memory;
mod module;
pub mod nvtx;
pub mod ops;
mod pool;
mod stream;
mod tensor;
pub mod testing;

pub use device::{Device, DeviceInfo};
pub use driver::{
    BINDINGS_CUDA_VERSION, MAX_CONNECTIONS, MAX_CONNECTIONS_VAR, available, driver_cuda_version,
    init, max_connections, nvidia_driver_version,
};
pub use entries::EntryModules;
pub use error::{CudaError, Result};
pub use import::Imported;
pub use memory::{DeviceBuffer, DeviceMemory, DevicePtr, PinnedBuffer};
pub use module::{Kernel, KernelArg, KernelArgs, LaunchConfig, Module};
pub use pool::{
    DevicePool, MIN_CLASS, PinnedPool, PoolBuffer, PoolConfig, PoolStats, Pooled,
    PooledDeviceBuffer, PooledPinnedBuffer, size_class,
};
pub use stream::{Event, Stream};
pub use tensor::{DType, Storage, Tensor, contiguous_strides};

/// Raw driver types, for handing our streams and pointers to other CUDA libraries.
pub mod sys {
    pub use cudarc::driver::sys::{CUcontext, CUdevice_attribute, CUevent, CUstream};
}

/// DLPack types of the exports ([`Tensor::to_dlpack`]).
pub use dlpark;
