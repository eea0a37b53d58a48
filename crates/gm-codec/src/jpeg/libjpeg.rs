//! libjpeg-turbo's decoder (the copy mozjpeg-sys builds and links statically), for what
//! zune-jpeg cannot decode as libjpeg-turbo does: arithmetic coding, baseline images coded as
//! one scan per component, images smaller than one MCU, and damaged files libjpeg recovers.
//!
//! Only the TurboJPEG API is used: it keeps libjpeg's `setjmp`/`longjmp` error handling inside
//! C and returns an error code, so no error unwinds through Rust (mozjpeg's own Rust wrapper
//! turns libjpeg errors into panics, which this project does not allow even when caught).

use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_uchar, c_ulong, c_void};

use super::error::ImageErrorKind;

// Links mozjpeg-sys's static library, which holds the functions declared below; without a
// use of the crate, rustc would leave it out of the link.
use mozjpeg_sys as _;

// The TurboJPEG 2.x API of mozjpeg-sys's `turbojpeg_api` feature (turbojpeg.h); mozjpeg-sys
// compiles it but declares no Rust bindings for it.
unsafe extern "C" {
    fn tjInitDecompress() -> *mut c_void;
    fn tjDecompress2(
        handle: *mut c_void,
        jpeg: *const c_uchar,
        jpeg_size: c_ulong,
        dst: *mut c_uchar,
        width: c_int,
        pitch: c_int,
        height: c_int,
        pixel_format: c_int,
        flags: c_int,
    ) -> c_int;
    fn tjGetErrorStr2(handle: *mut c_void) -> *mut c_char;
    fn tjGetErrorCode(handle: *mut c_void) -> c_int;
    fn tjDestroy(handle: *mut c_void) -> c_int;
}

/// `TJPF_RGB`: 3 bytes a pixel, R G B.
const TJPF_RGB: c_int = 0;
/// `TJPF_CMYK`: 4 bytes a pixel, C M Y K as stored (Adobe files store them inverted); YCCK
/// comes out converted to that CMYK.
const TJPF_CMYK: c_int = 11;
/// `TJERR_WARNING`: a warning was emitted (damaged or cut data recovered), and perhaps a fatal
/// error after it: TurboJPEG 2 reports a warning whenever one came first.
const TJERR_WARNING: c_int = 0;
/// `TJFLAG_STOPONWARNING`: stop at the first warning.
const TJFLAG_STOPONWARNING: c_int = 1 << 13;

/// A TurboJPEG decompressor, destroyed on drop.
struct Decompressor(*mut c_void);

impl Decompressor {
    fn new() -> Result<Self, ImageErrorKind> {
        // SAFETY: no arguments; a null handle is checked below.
        let h = unsafe { tjInitDecompress() };
        if h.is_null() {
            return Err(ImageErrorKind::Unsupported(
                "libjpeg-turbo could not create a decompressor (out of memory)".into(),
            ));
        }
        Ok(Self(h))
    }

    fn message(&self) -> String {
        // SAFETY: the handle is live; TurboJPEG returns a pointer to a NUL-terminated string
        // it owns (per handle), valid until the next call on the handle.
        let p = unsafe { tjGetErrorStr2(self.0) };
        if p.is_null() {
            return "unknown error".into();
        }
        // SAFETY: non-null and NUL-terminated, as above.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}

impl Drop for Decompressor {
    fn drop(&mut self) {
        // SAFETY: the handle came from tjInitDecompress and is destroyed once.
        unsafe { tjDestroy(self.0) };
    }
}

/// What libjpeg-turbo gave: the pixels, and its warning when it recovered from damage.
#[derive(Debug)]
pub(crate) struct Decoded {
    /// `width * height * 3` bytes of RGB.
    pub rgb: Vec<u8>,
    /// libjpeg's warning ("Premature end of JPEG file", "Corrupt JPEG data: ..."), if any.
    pub warning: Option<String>,
}

/// Decodes `data`, a `width` x `height` JPEG (as its frame header says), to interleaved RGB
/// with libjpeg-turbo's default settings (accurate integer IDCT, fancy upsampling), as
/// `djpeg` and Pillow decode it. Four-component (`cmyk`) images are decoded to CMYK and
/// turned into RGB as zune-jpeg turns them (each channel times K, Adobe's inverted storage).
pub(crate) fn decode_rgb(
    data: &[u8],
    width: u32,
    height: u32,
    cmyk: bool,
) -> Result<Decoded, ImageErrorKind> {
    let too_large = || ImageErrorKind::TooLarge(format!("{width}x{height} for libjpeg-turbo"));
    let (format, bytes_per_pixel) = if cmyk { (TJPF_CMYK, 4) } else { (TJPF_RGB, 3) };
    let w = c_int::try_from(width).map_err(|_| too_large())?;
    let h = c_int::try_from(height).map_err(|_| too_large())?;
    let pitch = w.checked_mul(bytes_per_pixel).ok_or_else(too_large)?;
    let size = c_ulong::try_from(data.len()).map_err(|_| too_large())?;
    let mut out = vec![0u8; width as usize * height as usize * bytes_per_pixel as usize];
    let tj = Decompressor::new()?;
    // Ok, or whether TurboJPEG called it a warning and its message.
    let mut run = |flags: c_int| -> Result<(), (bool, String)> {
        // SAFETY: `data` is `size` readable bytes; `out` holds `height` rows of `pitch`
        // bytes, and with the frame's own size asked for, TurboJPEG scales by 1/1 and writes
        // exactly that. libjpeg's errors return here through its own setjmp inside
        // tjDecompress2.
        let rc = unsafe {
            tjDecompress2(
                tj.0,
                data.as_ptr(),
                size,
                out.as_mut_ptr(),
                w,
                pitch,
                h,
                format,
                flags,
            )
        };
        if rc == 0 {
            return Ok(());
        }
        // SAFETY: the handle is live.
        let warned = unsafe { tjGetErrorCode(tj.0) } == TJERR_WARNING;
        Err((warned, tj.message()))
    };
    // TurboJPEG 2 cannot say whether a fatal error followed a warning, and keeps the message
    // of the first warning or of the fatal error. So: stop at the first warning and note its
    // message; then decode through the damage. If the final message is still that warning,
    // libjpeg recovered; any other message is the fatal error that ended the decode.
    let warning = match run(TJFLAG_STOPONWARNING) {
        Ok(()) => None,
        Err((false, fatal)) => return Err(kind_of(&fatal)),
        Err((true, first_warning)) => match run(0) {
            Ok(()) => None,
            Err((_, message)) if message == first_warning => Some(message),
            Err((_, fatal)) => return Err(kind_of(&fatal)),
        },
    };
    let rgb = if cmyk { cmyk_to_rgb(&out) } else { out };
    Ok(Decoded { rgb, warning })
}

/// Inverted CMYK to RGB: each of C, M, Y times K / 255, rounded as zune-jpeg rounds it
/// (Blinn's exact 8-bit product), so both CPU decoders give the same colours.
fn cmyk_to_rgb(cmyk: &[u8]) -> Vec<u8> {
    let times = |a: u8, k: u8| {
        let t = u32::from(a) * u32::from(k) + 128;
        ((t + (t >> 8)) >> 8) as u8
    };
    cmyk.chunks_exact(4)
        .flat_map(|p| [times(p[0], p[3]), times(p[1], p[3]), times(p[2], p[3])])
        .collect()
}

/// The kind of a libjpeg error message: libjpeg says "Unsupported" for codings and formats
/// it does not read, "Premature end" for cut data; everything else is damage.
fn kind_of(message: &str) -> ImageErrorKind {
    let reason = format!("libjpeg-turbo: {message}");
    let lower = message.to_ascii_lowercase();
    if lower.contains("unsupported") || lower.contains("not supported") {
        ImageErrorKind::Unsupported(reason)
    } else if lower.contains("premature end") {
        ImageErrorKind::Truncated(reason)
    } else {
        ImageErrorKind::Corrupt(reason)
    }
}
