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
}

impl CudaError {
    pub(crate) fn driver(op: impl Into<String>, source: DriverError) -> Self {
        CudaError::Driver {
            op: op.into(),
            source,
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
