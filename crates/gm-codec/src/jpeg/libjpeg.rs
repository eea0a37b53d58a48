//! libjpeg-turbo's decoder (3.1, the copy gm-turbojpeg-sys builds from source and links
//! statically), for what zune-jpeg cannot decode as libjpeg-turbo does: arithmetic coding,
//! baseline images coded as one scan per component, images smaller than one MCU and damaged
//! files libjpeg recovers.
//!
//! Only the TurboJPEG API is used: it keeps libjpeg's `setjmp`/`longjmp` error handling inside
//! C and returns an error code, so no error unwinds through Rust.

use std::ffi::CStr;
use std::os::raw::c_int;

use gm_turbojpeg_sys as tj;

use super::error::ImageErrorKind;

/// A TurboJPEG decompressor, destroyed on drop.
struct Decompressor(tj::tjhandle);

impl Decompressor {
    fn new() -> Result<Self, ImageErrorKind> {
        // SAFETY: no pointers passed; a null handle is checked below.
        let h = unsafe { tj::tj3Init(tj::TJINIT_DECOMPRESS) };
        if h.is_null() {
            return Err(ImageErrorKind::Unsupported(
                "libjpeg-turbo could not create a decompressor (out of memory)".into(),
            ));
        }
        Ok(Self(h))
    }

    /// Sets TurboJPEG parameter `param`; its refusal as an error of the kind its message says.
    fn set(&self, param: c_int, value: c_int) -> Result<(), ImageErrorKind> {
        // SAFETY: the handle is live; parameters are plain integers.
        if unsafe { tj::tj3Set(self.0, param, value) } == 0 {
            Ok(())
        } else {
            Err(kind_of(&self.message()))
        }
    }

    /// TurboJPEG parameter `param` (after a header was read: the image's).
    fn get(&self, param: c_int) -> c_int {
        // SAFETY: the handle is live.
        unsafe { tj::tj3Get(self.0, param) }
    }

    /// Whether the last call's error was a warning (libjpeg recovered, or went on to a fatal
    /// error: TurboJPEG reports the first).
    fn warned(&self) -> bool {
        // SAFETY: the handle is live.
        unsafe { tj::tj3GetErrorCode(self.0) == tj::TJERR_WARNING }
    }

    fn message(&self) -> String {
        // SAFETY: the handle is live; TurboJPEG returns a pointer to a NUL-terminated string
        // it owns (per handle), valid until the next call on the handle.
        let p = unsafe { tj::tj3GetErrorStr(self.0) };
        if p.is_null() {
            return "unknown error".into();
        }
        // SAFETY: non-null and NUL-terminated, as above.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}

impl Drop for Decompressor {
    fn drop(&mut self) {
        // SAFETY: the handle came from tj3Init and is destroyed once.
        unsafe { tj::tj3Destroy(self.0) };
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
    let (format, bytes_per_pixel) = if cmyk {
        (tj::TJPF_CMYK, 4)
    } else {
        (tj::TJPF_RGB, 3)
    };
    let w = c_int::try_from(width).map_err(|_| too_large())?;
    let pitch = w.checked_mul(bytes_per_pixel).ok_or_else(too_large)?;
    let mut out = vec![0u8; width as usize * height as usize * bytes_per_pixel as usize];
    let size = data.len();
    let tj = Decompressor::new()?;
    read_header(&tj, data, size, width, height)?;
    // Ok, or whether TurboJPEG called it a warning and its message.
    let mut run = || -> Result<(), (bool, String)> {
        // SAFETY: `data` is `size` readable bytes; the header read above says the image
        // is `width` x `height` at 8 bits, and with no scaling factor set TurboJPEG writes
        // exactly `height` rows of `pitch` bytes, which `out` holds. libjpeg's errors return
        // here through its own setjmp inside tj3Decompress8.
        let rc = unsafe {
            tj::tj3Decompress8(tj.0, data.as_ptr(), size, out.as_mut_ptr(), pitch, format)
        };
        if rc == 0 {
            return Ok(());
        }
        Err((tj.warned(), tj.message()))
    };
    // TurboJPEG cannot say whether a fatal error followed a warning, and keeps the message of
    // the first warning or of the fatal error. So: stop at the first warning and note its
    // message; then decode through the damage. If the final message is still that warning,
    // libjpeg recovered; any other message is the fatal error that ended the decode.
    tj.set(tj::TJPARAM_STOPONWARNING, 1)?;
    let warning = match run() {
        Ok(()) => None,
        Err((false, fatal)) => return Err(kind_of(&fatal)),
        Err((true, first_warning)) => {
            tj.set(tj::TJPARAM_STOPONWARNING, 0)?;
            match run() {
                Ok(()) => None,
                Err((_, message)) if message == first_warning => Some(message),
                Err((_, fatal)) => return Err(kind_of(&fatal)),
            }
        }
    };
    let rgb = if cmyk { cmyk_to_rgb(&out) } else { out };
    Ok(Decoded { rgb, warning })
}

/// Reads `data`'s header into `tj` and checks that libjpeg sees the `width` x `height`
/// 8-bit image gm's header reader saw: the output buffer is sized from gm's reading.
fn read_header(
    tj: &Decompressor,
    data: &[u8],
    size: usize,
    width: u32,
    height: u32,
) -> Result<(), ImageErrorKind> {
    // SAFETY: `data` is `size` readable bytes; errors return through setjmp in C.
    let rc = unsafe { tj::tj3DecompressHeader(tj.0, data.as_ptr(), size) };
    let seen = (
        tj.get(tj::TJPARAM_JPEGWIDTH),
        tj.get(tj::TJPARAM_JPEGHEIGHT),
        tj.get(tj::TJPARAM_PRECISION),
    );
    // A warning (junk before a marker, an odd JFIF version) still gives the header; the
    // decode below tells whether libjpeg recovers. A fatal error after a warning is also
    // reported as a warning, but leaves the header unread (-1): the message is the error's.
    if rc != 0 && (!tj.warned() || seen.0 <= 0 || seen.1 <= 0) {
        return Err(kind_of(&tj.message()));
    }
    if seen.2 != 8 {
        return Err(ImageErrorKind::Unsupported(format!(
            "{}-bit samples (8-bit JPEGs are decoded)",
            seen.2
        )));
    }
    if (u32::try_from(seen.0), u32::try_from(seen.1)) != (Ok(width), Ok(height)) {
        return Err(ImageErrorKind::Corrupt(format!(
            "libjpeg-turbo reads the image as {}x{}, the first frame header says \
             {width}x{height}",
            seen.0, seen.1
        )));
    }
    Ok(())
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
