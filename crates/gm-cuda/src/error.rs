//! The error type of every fallible call in this crate.

use cudarc::driver::DriverError;

/// Result alias used throughout `gm-cuda`.
pub type Result<T, E = CudaError> = std::result::Result<T, E>;

/// What went wrong in the CUDA layer. Messages name what is missing and how to get it, so that
/// a user on a machine without a GPU learns why rather than reading a driver error code.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CudaError {
    /// libcuda could not be opened: there is no NVIDIA driver on this machine.
    #[error(
        "the CUDA driver library (libcuda.so.1) could not be loaded: this machine has no NVIDIA \
         driver. Install the NVIDIA driver or run on a GPU machine"
    )]
    DriverNotFound {
        /// The file names that were tried.
        searched: String,
    },
    /// The driver loaded but reports no usable device.
    #[error("no CUDA device is usable: {reason}")]
    NoDevice {
        /// Why, in the driver's words.
        reason: String,
    },
    /// A device ordinal past the number of devices.
    #[error("CUDA device {ordinal} does not exist: this machine has {count} CUDA device(s)")]
    NoSuchDevice {
        /// The ordinal asked for.
        ordinal: usize,
        /// How many devices there are.
        count: usize,
    },
    /// A driver call failed.
    #[error("{op} failed: {source}")]
    Driver {
        /// What we were doing, for example `cuMemAlloc(4096 bytes)`.
        op: String,
        /// The driver's error.
        #[source]
        source: DriverError,
    },
    /// A PTX module was rejected by the driver.
    #[error("PTX module `{module}` could not be loaded: {reason}")]
    ModuleLoad {
        /// The module's name.
        module: String,
        /// Why, with a hint where one helps (an unsupported PTX version means the PTX came from
        /// an nvcc newer than the driver).
        reason: String,
    },
    /// A bounded pool had no room left for a request.
    #[error(
        "{pool} pool exhausted: {requested} bytes requested, {in_use} bytes in use of a {limit}-byte \
         limit; return buffers (drop batches) or raise the limit"
    )]
    PoolExhausted {
        /// Which pool.
        pool: &'static str,
        /// Bytes asked for (after rounding to the size class).
        requested: usize,
        /// Bytes held by buffers currently handed out.
        in_use: usize,
        /// The pool's limit in bytes.
        limit: usize,
    },
    /// A call's arguments do not fit together (a copy past the end of a buffer, a tensor shape
    /// larger than its storage, ...).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The GPU (or, for pinned buffers, the host) had no memory left for an allocation.
    #[error(
        "out of {} memory: {what} needs {} but {} of the GPU's {} are free (other processes and \
         gm's own pools and caches hold the rest); lower the batch size or output size, the \
         number of workers, GPU stages or decode sessions, or the device cache, or free memory \
         elsewhere",
        if *.pinned { "pinned host" } else { "GPU" },
        human_bytes(*.bytes),
        human_bytes(*.free),
        human_bytes(*.total)
    )]
    OutOfMemory {
        /// What needed the memory (a pool's buffer, a cache, a kernel's parameters).
        what: String,
        /// Bytes asked for.
        bytes: usize,
        /// Whether it was pinned host memory rather than device memory.
        pinned: bool,
        /// Free device memory when the allocation failed (0 if it could not be read).
        free: usize,
        /// Total device memory (0 if it could not be read).
        total: usize,
    },
}

/// `bytes` as bytes, or MiB or GiB with one decimal, for messages.
fn human_bytes(bytes: usize) -> String {
    const MIB: f64 = (1u64 << 20) as f64;
    let b = bytes as f64;
    if bytes < 1 << 20 {
        format!("{bytes} bytes")
    } else if b >= 1024.0 * MIB {
        format!("{:.1} GiB", b / (1024.0 * MIB))
    } else {
        format!("{:.1} MiB", b / MIB)
    }
}

impl CudaError {
    pub(crate) fn driver(op: impl Into<String>, source: DriverError) -> Self {
        CudaError::Driver {
            op: op.into(),
            source,
        }
    }

    /// An allocation's error: [`CudaError::OutOfMemory`] (with the device's free and total
    /// memory read now) when the driver ran out of memory, else the driver error of `op`.
    pub(crate) fn allocation(
        source: DriverError,
        op: impl FnOnce() -> String,
        bytes: usize,
        pinned: bool,
    ) -> Self {
        if source.0 != cudarc::driver::sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
            return CudaError::driver(op(), source);
        }
        let (free, total) = cudarc::driver::result::mem_get_info().unwrap_or((0, 0));
        CudaError::OutOfMemory {
            what: if pinned {
                "a pinned buffer"
            } else {
                "a device buffer"
            }
            .into(),
            bytes,
            pinned,
            free,
            total,
        }
    }

    /// Whether the GPU (or pinned host memory) ran out: the loader may go on with smaller
    /// settings.
    pub fn is_out_of_memory(&self) -> bool {
        matches!(self, CudaError::OutOfMemory { .. })
    }

    /// The same error with an out-of-memory's `what` replaced by `what`, for the layer that
    /// knows what the memory was for; other errors pass through.
    pub fn needed_by(self, what: impl FnOnce() -> String) -> Self {
        match self {
            CudaError::OutOfMemory {
                bytes,
                pinned,
                free,
                total,
                ..
            } => CudaError::OutOfMemory {
                what: what(),
                bytes,
                pinned,
                free,
                total,
            },
            other => other,
        }
    }

    /// Whether the error means "no GPU here" (no driver or no device), as opposed to a failure
    /// on a working GPU. Tests use it to decide between skipping and failing.
    pub fn is_unavailable(&self) -> bool {
        matches!(
            self,
            CudaError::DriverNotFound { .. } | CudaError::NoDevice { .. }
        )
    }
}

/// Attaches the name of the operation to a driver result.
pub(crate) trait DriverResultExt<T> {
    fn during(self, op: impl FnOnce() -> String) -> Result<T>;
}

impl<T> DriverResultExt<T> for std::result::Result<T, DriverError> {
    fn during(self, op: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|e| CudaError::driver(op(), e))
    }
}
