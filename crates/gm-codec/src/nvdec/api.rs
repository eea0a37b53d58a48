//! The nvcuvid functions we call, resolved once from libnvcuvid.so.1.

use std::sync::OnceLock;

use crate::error::{CodecError, Result};

use super::sys;
use crate::libraries::{LibraryError, LoadedLibrary, NvLibrary, open_library};

/// Why nvcuvid could not be used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum NvcuvidError {
    /// The library was not found or would not load.
    #[error(transparent)]
    Library(#[from] LibraryError),
    /// The library lacks a function we call (a driver older than the header).
    #[error("{path} lacks {symbol}")]
    MissingSymbol {
        /// The library's path.
        path: String,
        /// The function.
        symbol: &'static str,
    },
}

macro_rules! api {
    ($($field:ident: $ty:ident = $sym:literal;)*) => {
        /// Function pointers into libnvcuvid.
        pub(crate) struct Nvcuvid {
            _lib: LoadedLibrary,
            $(pub(crate) $field: <sys::$ty as OptionFn>::F,)*
        }

        impl Nvcuvid {
            fn load() -> Result<Nvcuvid, NvcuvidError> {
                let lib = open_library(NvLibrary::NvCuvid)?;
                $(
                    // SAFETY: the symbol's type is the header's declaration of it.
                    let $field = unsafe { lib.library.get::<sys::$ty>(concat!($sym, "\0").as_bytes()) }
                        .ok()
                        .and_then(|s| *s)
                        .ok_or_else(|| NvcuvidError::MissingSymbol {
                            path: lib.path.clone(),
                            symbol: $sym,
                        })?;
                )*
                Ok(Nvcuvid { _lib: lib, $($field,)* })
            }
        }
    };
}

/// `Option<fn>` -> `fn`, for the header's nullable function-pointer typedefs.
pub(crate) trait OptionFn {
    type F: Copy;
}
impl<F: Copy> OptionFn for Option<F> {
    type F = F;
}

api! {
    get_decoder_caps: tcuvidGetDecoderCaps = "cuvidGetDecoderCaps";
    create_decoder: tcuvidCreateDecoder = "cuvidCreateDecoder";
    destroy_decoder: tcuvidDestroyDecoder = "cuvidDestroyDecoder";
    decode_picture: tcuvidDecodePicture = "cuvidDecodePicture";
    get_decode_status: tcuvidGetDecodeStatus = "cuvidGetDecodeStatus";
    reconfigure_decoder: tcuvidReconfigureDecoder = "cuvidReconfigureDecoder";
    map_video_frame: tcuvidMapVideoFrame64 = "cuvidMapVideoFrame64";
    unmap_video_frame: tcuvidUnmapVideoFrame64 = "cuvidUnmapVideoFrame64";
    ctx_lock_create: tcuvidCtxLockCreate = "cuvidCtxLockCreate";
    ctx_lock_destroy: tcuvidCtxLockDestroy = "cuvidCtxLockDestroy";
    create_video_parser: tcuvidCreateVideoParser = "cuvidCreateVideoParser";
    parse_video_data: tcuvidParseVideoData = "cuvidParseVideoData";
    destroy_video_parser: tcuvidDestroyVideoParser = "cuvidDestroyVideoParser";
}

/// The loaded library, or why it could not be loaded (resolved once per process).
pub(crate) fn nvcuvid() -> Result<&'static Nvcuvid, &'static NvcuvidError> {
    static API: OnceLock<Result<Nvcuvid, NvcuvidError>> = OnceLock::new();
    API.get_or_init(Nvcuvid::load).as_ref()
}

/// A nvcuvid status as a result: `op` failed on `file` unless `code` is 0.
pub(crate) fn cu(code: sys::CUresult, op: &'static str, file: &std::path::Path) -> Result<()> {
    if code == 0 {
        Ok(())
    } else {
        Err(CodecError::Nvdec {
            file: file.to_path_buf(),
            op,
            code,
        })
    }
}
