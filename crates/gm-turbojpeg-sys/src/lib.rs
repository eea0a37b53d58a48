//! Raw bindings to the part of libjpeg-turbo 3.1's TurboJPEG API that Gradient Mechanics calls
//! (decompressor handles, parameters, errors, 8-bit decompression), against the copy this
//! crate builds from bundled source with the `cc` crate and links statically.
//!
//! The declarations follow `turbojpeg.h` (bundled under `libjpeg-turbo/src`); the constants
//! are the values of its enums. Safe use is the caller's: gm-codec wraps these calls.

#![no_std]
#![allow(non_camel_case_types)]

use core::ffi::{c_char, c_int, c_uchar, c_void};

/// An opaque TurboJPEG instance (`tjhandle`).
pub type tjhandle = *mut c_void;

/// `TJINIT_DECOMPRESS`: [`tj3Init`] makes a decompressor.
pub const TJINIT_DECOMPRESS: c_int = 1;

/// `TJERR_WARNING`: [`tj3GetErrorCode`]'s answer when the last error was a warning (libjpeg
/// recovered, or the first of several messages was a warning).
pub const TJERR_WARNING: c_int = 0;
/// `TJERR_FATAL`: the last error was fatal.
pub const TJERR_FATAL: c_int = 1;

/// `TJPARAM_STOPONWARNING`: 1 makes a warning end the call as an error.
pub const TJPARAM_STOPONWARNING: c_int = 0;
/// `TJPARAM_JPEGWIDTH`: the image's width, after [`tj3DecompressHeader`].
pub const TJPARAM_JPEGWIDTH: c_int = 5;
/// `TJPARAM_JPEGHEIGHT`: the image's height, after [`tj3DecompressHeader`].
pub const TJPARAM_JPEGHEIGHT: c_int = 6;
/// `TJPARAM_PRECISION`: bits per sample, after [`tj3DecompressHeader`].
pub const TJPARAM_PRECISION: c_int = 7;

/// `TJPF_RGB`: interleaved 8-bit R, G, B.
pub const TJPF_RGB: c_int = 0;
/// `TJPF_CMYK`: interleaved 8-bit C, M, Y, K as stored.
pub const TJPF_CMYK: c_int = 11;

unsafe extern "C" {
    /// Creates a TurboJPEG instance of `initType` ([`TJINIT_DECOMPRESS`]); null on failure.
    pub fn tj3Init(initType: c_int) -> tjhandle;
    /// Destroys an instance made by [`tj3Init`].
    pub fn tj3Destroy(handle: tjhandle);
    /// The last error's message, a NUL-terminated string owned by the instance.
    pub fn tj3GetErrorStr(handle: tjhandle) -> *mut c_char;
    /// [`TJERR_WARNING`] or [`TJERR_FATAL`] for the last error.
    pub fn tj3GetErrorCode(handle: tjhandle) -> c_int;
    /// Sets parameter `param`; 0 on success, -1 on error.
    pub fn tj3Set(handle: tjhandle, param: c_int, value: c_int) -> c_int;
    /// Parameter `param`'s value; -1 when unset or unknown.
    pub fn tj3Get(handle: tjhandle, param: c_int) -> c_int;
    /// Reads the headers of `jpegSize` bytes at `jpegBuf`; 0 on success, -1 on error.
    pub fn tj3DecompressHeader(handle: tjhandle, jpegBuf: *const c_uchar, jpegSize: usize)
    -> c_int;
    /// Decompresses an 8-bit JPEG into `dstBuf` (`pitch` bytes a row) in `pixelFormat`;
    /// 0 on success, -1 on error.
    pub fn tj3Decompress8(
        handle: tjhandle,
        jpegBuf: *const c_uchar,
        jpegSize: usize,
        dstBuf: *mut c_uchar,
        pitch: c_int,
        pixelFormat: c_int,
    ) -> c_int;
}
