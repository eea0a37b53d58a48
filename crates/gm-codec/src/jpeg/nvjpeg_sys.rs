//! nvJPEG declarations, written by hand from NVIDIA's documented API (nvJPEG 12 and 13 share
//! them), and the table of entry points opened from the library at run time.
//!
//! Only what the decoders use is declared. Handles are opaque pointers; `cudaStream_t` is the
//! driver's `CUstream`, which the runtime accepts as it is.

#![allow(non_camel_case_types, non_snake_case, missing_docs)]

use std::os::raw::{c_int, c_uint, c_void};

use crate::libraries::{LibraryError, LoadedLibrary, NvLibrary, open_library};

pub type nvjpegStatus_t = c_int;
pub type nvjpegHandle_t = *mut c_void;
pub type nvjpegJpegState_t = *mut c_void;
pub type nvjpegJpegStream_t = *mut c_void;
pub type nvjpegJpegDecoder_t = *mut c_void;
pub type nvjpegDecodeParams_t = *mut c_void;
pub type nvjpegBufferPinned_t = *mut c_void;
pub type nvjpegBufferDevice_t = *mut c_void;
pub type cudaStream_t = *mut c_void;

pub const NVJPEG_STATUS_SUCCESS: nvjpegStatus_t = 0;

/// `nvjpegBackend_t`.
pub const NVJPEG_BACKEND_DEFAULT: c_int = 0;
pub const NVJPEG_BACKEND_HYBRID: c_int = 1;
pub const NVJPEG_BACKEND_GPU_HYBRID: c_int = 2;
pub const NVJPEG_BACKEND_HARDWARE: c_int = 3;

/// `nvjpegOutputFormat_t`.
pub const NVJPEG_OUTPUT_YUV: c_int = 1;
pub const NVJPEG_OUTPUT_Y: c_int = 2;
pub const NVJPEG_OUTPUT_RGB: c_int = 3;
pub const NVJPEG_OUTPUT_RGBI: c_int = 5;

/// `nvjpegChromaSubsampling_t`: 4:2:0, used for pre-allocation.
pub const NVJPEG_CSS_420: c_int = 2;

/// `nvjpegImage_t`: up to four planes, each a device pointer and a pitch in bytes.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct nvjpegImage_t {
    pub channel: [*mut u8; 4],
    pub pitch: [usize; 4],
}

impl Default for nvjpegImage_t {
    fn default() -> Self {
        nvjpegImage_t {
            channel: [std::ptr::null_mut(); 4],
            pitch: [0; 4],
        }
    }
}

/// The name of an nvJPEG status code.
pub fn status_name(s: nvjpegStatus_t) -> &'static str {
    match s {
        0 => "NVJPEG_STATUS_SUCCESS",
        1 => "NVJPEG_STATUS_NOT_INITIALIZED",
        2 => "NVJPEG_STATUS_INVALID_PARAMETER",
        3 => "NVJPEG_STATUS_BAD_JPEG",
        4 => "NVJPEG_STATUS_JPEG_NOT_SUPPORTED",
        5 => "NVJPEG_STATUS_ALLOCATOR_FAILURE",
        6 => "NVJPEG_STATUS_EXECUTION_FAILED",
        7 => "NVJPEG_STATUS_ARCH_MISMATCH",
        8 => "NVJPEG_STATUS_INTERNAL_ERROR",
        9 => "NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED",
        10 => "NVJPEG_STATUS_INCOMPLETE_BITSTREAM",
        _ => "unknown nvJPEG status",
    }
}

macro_rules! api {
    ($($name:ident : fn($($arg:ty),*);)*) => {
        /// nvJPEG's entry points, resolved once from the opened library.
        pub struct Api {
            $(pub $name: unsafe extern "C" fn($($arg),*) -> nvjpegStatus_t,)*
            /// Where the library was found and its version.
            pub path: String,
            pub version: Option<String>,
            // Keeps the code the pointers above point into mapped.
            _library: LoadedLibrary,
        }

        impl Api {
            /// Opens nvJPEG and resolves every entry point; a missing one is an error naming it.
            pub fn load() -> Result<Api, ApiError> {
                let library = open_library(NvLibrary::NvJpeg)?;
                // SAFETY: each symbol is declared above with the signature nvJPEG documents.
                unsafe {
                    Ok(Api {
                        $($name: *library
                            .library
                            .get::<unsafe extern "C" fn($($arg),*) -> nvjpegStatus_t>(
                                concat!(stringify!($name), "\0").as_bytes(),
                            )
                            .map_err(|_| ApiError::MissingSymbol {
                                path: library.path.clone(),
                                symbol: stringify!($name),
                            })?,)*
                        path: library.path.clone(),
                        version: library.version(),
                        _library: library,
                    })
                }
            }
        }
    };
}

api! {
    nvjpegCreateEx: fn(c_int, *mut c_void, *mut c_void, c_uint, *mut nvjpegHandle_t);
    nvjpegDestroy: fn(nvjpegHandle_t);
    nvjpegGetHardwareDecoderInfo: fn(nvjpegHandle_t, *mut c_uint, *mut c_uint);
    nvjpegJpegStateCreate: fn(nvjpegHandle_t, *mut nvjpegJpegState_t);
    nvjpegJpegStateDestroy: fn(nvjpegJpegState_t);
    nvjpegDecodeBatchedInitialize: fn(nvjpegHandle_t, nvjpegJpegState_t, c_int, c_int, c_int);
    nvjpegDecodeBatchedEx: fn(
        nvjpegHandle_t,
        nvjpegJpegState_t,
        *const *const u8,
        *const usize,
        *mut nvjpegImage_t,
        *mut nvjpegDecodeParams_t,
        cudaStream_t
    );
    nvjpegDecodeBatched: fn(
        nvjpegHandle_t,
        nvjpegJpegState_t,
        *const *const u8,
        *const usize,
        *mut nvjpegImage_t,
        cudaStream_t
    );
    nvjpegDecodeBatchedPreAllocate: fn(
        nvjpegHandle_t,
        nvjpegJpegState_t,
        c_int,
        c_int,
        c_int,
        c_int,
        c_int
    );
    nvjpegDecodeBatchedSupportedEx: fn(
        nvjpegHandle_t,
        nvjpegJpegStream_t,
        nvjpegDecodeParams_t,
        *mut c_int
    );
    nvjpegJpegStreamCreate: fn(nvjpegHandle_t, *mut nvjpegJpegStream_t);
    nvjpegJpegStreamDestroy: fn(nvjpegJpegStream_t);
    nvjpegJpegStreamParse: fn(nvjpegHandle_t, *const u8, usize, c_int, c_int, nvjpegJpegStream_t);
    nvjpegJpegStreamParseHeader: fn(nvjpegHandle_t, *const u8, usize, nvjpegJpegStream_t);
    nvjpegDecoderCreate: fn(nvjpegHandle_t, c_int, *mut nvjpegJpegDecoder_t);
    nvjpegDecoderDestroy: fn(nvjpegJpegDecoder_t);
    nvjpegDecoderJpegSupported: fn(
        nvjpegJpegDecoder_t,
        nvjpegJpegStream_t,
        nvjpegDecodeParams_t,
        *mut c_int
    );
    nvjpegDecoderStateCreate: fn(nvjpegHandle_t, nvjpegJpegDecoder_t, *mut nvjpegJpegState_t);
    nvjpegDecodeParamsCreate: fn(nvjpegHandle_t, *mut nvjpegDecodeParams_t);
    nvjpegDecodeParamsDestroy: fn(nvjpegDecodeParams_t);
    nvjpegDecodeParamsSetOutputFormat: fn(nvjpegDecodeParams_t, c_int);
    nvjpegDecodeParamsSetExifOrientation: fn(nvjpegDecodeParams_t, c_int);
    nvjpegDecodeParamsSetROI: fn(nvjpegDecodeParams_t, c_int, c_int, c_int, c_int);
    nvjpegBufferPinnedCreate: fn(nvjpegHandle_t, *mut c_void, *mut nvjpegBufferPinned_t);
    nvjpegBufferPinnedDestroy: fn(nvjpegBufferPinned_t);
    nvjpegBufferDeviceCreate: fn(nvjpegHandle_t, *mut c_void, *mut nvjpegBufferDevice_t);
    nvjpegBufferDeviceDestroy: fn(nvjpegBufferDevice_t);
    nvjpegStateAttachPinnedBuffer: fn(nvjpegJpegState_t, nvjpegBufferPinned_t);
    nvjpegStateAttachDeviceBuffer: fn(nvjpegJpegState_t, nvjpegBufferDevice_t);
    nvjpegDecodeJpegHost: fn(
        nvjpegHandle_t,
        nvjpegJpegDecoder_t,
        nvjpegJpegState_t,
        nvjpegDecodeParams_t,
        nvjpegJpegStream_t
    );
    nvjpegDecodeJpegTransferToDevice: fn(
        nvjpegHandle_t,
        nvjpegJpegDecoder_t,
        nvjpegJpegState_t,
        nvjpegJpegStream_t,
        cudaStream_t
    );
    nvjpegDecodeJpegDevice: fn(
        nvjpegHandle_t,
        nvjpegJpegDecoder_t,
        nvjpegJpegState_t,
        *mut nvjpegImage_t,
        cudaStream_t
    );
}

/// Why nvJPEG could not be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApiError {
    /// The library is not there.
    #[error(transparent)]
    Library(#[from] LibraryError),
    /// The library is too old for an entry point we use.
    #[error("{path} has no `{symbol}` (nvJPEG 12.2 or newer is needed)")]
    MissingSymbol {
        /// The library file.
        path: String,
        /// The missing entry point.
        symbol: &'static str,
    },
}
