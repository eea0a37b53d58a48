//! FFmpeg's libavcodec and libavutil, opened at run time: the calls the CPU decoder makes and
//! the field offsets of the structures it reads, per libavutil major (no FFmpeg headers are
//! needed to build, and one build serves every supported FFmpeg).

use std::ffi::{CStr, c_char, c_int, c_uint, c_void};
use std::path::PathBuf;
use std::sync::OnceLock;

use super::layout::{FrameLayout, frame_layout};
use crate::libraries::LibraryError;

/// `AVERROR(EAGAIN)` on Linux.
pub(super) const AVERROR_EAGAIN: c_int = -11;
/// `AVERROR_EOF`: `-MKTAG('E','O','F',' ')`.
pub(super) const AVERROR_EOF: c_int = -0x2046_4f45;
/// `AV_NOPTS_VALUE`.
pub(super) const AV_NOPTS_VALUE: i64 = i64::MIN;
/// `AV_LOG_QUIET`.
const AV_LOG_QUIET: c_int = -8;

// `AVPacket`'s head has kept this layout from FFmpeg 4.0 to 8.0: buf, pts, dts, data, size.
const PACKET_PTS: usize = 8;
const PACKET_DTS: usize = 16;
const PACKET_DATA: usize = 24;

/// The (libavcodec, libavutil) sonames of each supported FFmpeg, newest first: 8.x, 7.x, 6.x,
/// 5.x, 4.x, as Debian, Ubuntu and conda-forge ship them.
const SONAMES: &[(&str, &str)] = &[
    ("libavcodec.so.62", "libavutil.so.60"),
    ("libavcodec.so.61", "libavutil.so.59"),
    ("libavcodec.so.60", "libavutil.so.58"),
    ("libavcodec.so.59", "libavutil.so.57"),
    ("libavcodec.so.58", "libavutil.so.56"),
];

/// Environment variable naming a folder that holds `libavcodec.so.N` and `libavutil.so.M`,
/// tried before the loader's path.
pub const FFMPEG_DIR_VARIABLE: &str = "GM_FFMPEG_DIR";

const HINT: &str = "install FFmpeg's shared libraries (Debian/Ubuntu: `apt install libavcodec59` \
     or newer; conda: `conda install -c conda-forge ffmpeg`), or set GM_FFMPEG_DIR to the \
     folder holding libavcodec.so.N";

type Ptr = *mut c_void;

/// The loaded libraries and the calls we make.
pub(super) struct Ffmpeg {
    _avutil: libloading::Library,
    _avcodec: libloading::Library,
    /// Where libavcodec came from.
    pub(super) path: String,
    /// `avcodec_version()` and `avutil_version()`, as `major << 16 | minor << 8 | micro`.
    pub(super) versions: (u32, u32),
    pub(super) layout: FrameLayout,
    pub(super) find_decoder_by_name: unsafe extern "C" fn(*const c_char) -> *const c_void,
    pub(super) alloc_context3: unsafe extern "C" fn(*const c_void) -> Ptr,
    pub(super) open2: unsafe extern "C" fn(Ptr, *const c_void, *mut Ptr) -> c_int,
    pub(super) send_packet: unsafe extern "C" fn(Ptr, *const c_void) -> c_int,
    pub(super) receive_frame: unsafe extern "C" fn(Ptr, Ptr) -> c_int,
    pub(super) flush_buffers: unsafe extern "C" fn(Ptr),
    pub(super) free_context: unsafe extern "C" fn(*mut Ptr),
    pub(super) packet_alloc: unsafe extern "C" fn() -> Ptr,
    pub(super) packet_free: unsafe extern "C" fn(*mut Ptr),
    pub(super) new_packet: unsafe extern "C" fn(Ptr, c_int) -> c_int,
    pub(super) packet_unref: unsafe extern "C" fn(Ptr),
    pub(super) frame_alloc: unsafe extern "C" fn() -> Ptr,
    pub(super) frame_free: unsafe extern "C" fn(*mut Ptr),
    pub(super) frame_unref: unsafe extern "C" fn(Ptr),
    pub(super) dict_set:
        unsafe extern "C" fn(*mut Ptr, *const c_char, *const c_char, c_int) -> c_int,
    pub(super) dict_free: unsafe extern "C" fn(*mut Ptr),
    pub(super) pix_fmt_name: unsafe extern "C" fn(c_int) -> *const c_char,
    strerror: unsafe extern "C" fn(c_int, *mut c_char, usize) -> c_int,
}

// SAFETY: the function pointers are plain C entry points of thread-safe libraries (libavcodec
// contexts are used by one thread at a time; the library-wide calls are reentrant).
unsafe impl Send for Ffmpeg {}
// SAFETY: as above.
unsafe impl Sync for Ffmpeg {}

static FFMPEG: OnceLock<Result<Ffmpeg, LibraryError>> = OnceLock::new();

/// FFmpeg, opened on first use.
pub(super) fn ffmpeg() -> Result<&'static Ffmpeg, LibraryError> {
    match FFMPEG.get_or_init(open) {
        Ok(f) => Ok(f),
        Err(e) => Err(e.clone()),
    }
}

/// Every (libavcodec, libavutil) pair tried, in order.
fn candidates() -> Vec<(String, String)> {
    let mut out = Vec::new();
    if let Some(dir) = std::env::var_os(FFMPEG_DIR_VARIABLE).map(PathBuf::from) {
        for (c, u) in SONAMES {
            out.push((
                dir.join(c).to_string_lossy().into_owned(),
                dir.join(u).to_string_lossy().into_owned(),
            ));
        }
    }
    out.extend(SONAMES.iter().map(|(c, u)| (c.to_string(), u.to_string())));
    out
}

fn open() -> Result<Ffmpeg, LibraryError> {
    open_from(candidates())
}

/// Opens the first (libavcodec, libavutil) pair of `tried` that loads and is supported.
fn open_from(tried: Vec<(String, String)>) -> Result<Ffmpeg, LibraryError> {
    let mut refused = Vec::new();
    for (codec, util) in &tried {
        // SAFETY: FFmpeg's libraries have no initializers with preconditions.
        let Ok(avutil) = (unsafe { libloading::Library::new(util) }) else {
            continue;
        };
        // SAFETY: as above.
        let Ok(avcodec) = (unsafe { libloading::Library::new(codec) }) else {
            continue;
        };
        match Ffmpeg::bind(avcodec, avutil, codec.clone()) {
            Ok(f) => {
                tracing::debug!(path = %codec, versions = ?f.versions, "FFmpeg loaded");
                return Ok(f);
            }
            Err(why) => refused.push(format!("{codec} ({why})")),
        }
    }
    let mut tried: Vec<String> = tried.into_iter().map(|(c, _)| c).collect();
    tried.extend(refused);
    Err(LibraryError::NotFound {
        library: "FFmpeg's libavcodec",
        tried,
        hint: HINT,
    })
}

/// Why a pair of libraries that opened is not used.
#[derive(Debug, thiserror::Error)]
enum BindError {
    #[error("no {0}")]
    MissingSymbol(&'static str),
    #[error("libavutil {0} is not a supported major")]
    UnsupportedMajor(u32),
}

/// Looks up `name` in `lib` as a function pointer of type `T`.
fn sym<T: Copy>(lib: &libloading::Library, name: &'static str) -> Result<T, BindError> {
    let mut c = name.as_bytes().to_vec();
    c.push(0);
    // SAFETY: the caller names the symbol's C signature in `T`, as FFmpeg's headers declare it.
    unsafe { lib.get::<T>(&c) }
        .map(|s| *s)
        .map_err(|_| BindError::MissingSymbol(name))
}

impl Ffmpeg {
    fn bind(
        avcodec: libloading::Library,
        avutil: libloading::Library,
        path: String,
    ) -> Result<Ffmpeg, BindError> {
        let codec_version: unsafe extern "C" fn() -> c_uint = sym(&avcodec, "avcodec_version")?;
        let util_version: unsafe extern "C" fn() -> c_uint = sym(&avutil, "avutil_version")?;
        // SAFETY: version queries without arguments.
        let versions = unsafe { (codec_version(), util_version()) };
        let layout =
            frame_layout(versions.1 >> 16).ok_or(BindError::UnsupportedMajor(versions.1 >> 16))?;
        let log_level: unsafe extern "C" fn(c_int) = sym(&avutil, "av_log_set_level")?;
        // Decoding errors reach the user as gm's errors; FFmpeg's own log would repeat them on
        // stderr.
        // SAFETY: sets a global integer.
        unsafe { log_level(AV_LOG_QUIET) };
        Ok(Ffmpeg {
            path,
            versions,
            layout,
            find_decoder_by_name: sym(&avcodec, "avcodec_find_decoder_by_name")?,
            alloc_context3: sym(&avcodec, "avcodec_alloc_context3")?,
            open2: sym(&avcodec, "avcodec_open2")?,
            send_packet: sym(&avcodec, "avcodec_send_packet")?,
            receive_frame: sym(&avcodec, "avcodec_receive_frame")?,
            flush_buffers: sym(&avcodec, "avcodec_flush_buffers")?,
            free_context: sym(&avcodec, "avcodec_free_context")?,
            packet_alloc: sym(&avcodec, "av_packet_alloc")?,
            packet_free: sym(&avcodec, "av_packet_free")?,
            new_packet: sym(&avcodec, "av_new_packet")?,
            packet_unref: sym(&avcodec, "av_packet_unref")?,
            frame_alloc: sym(&avutil, "av_frame_alloc")?,
            frame_free: sym(&avutil, "av_frame_free")?,
            frame_unref: sym(&avutil, "av_frame_unref")?,
            dict_set: sym(&avutil, "av_dict_set")?,
            dict_free: sym(&avutil, "av_dict_free")?,
            pix_fmt_name: sym(&avutil, "av_get_pix_fmt_name")?,
            strerror: sym(&avutil, "av_strerror")?,
            _avutil: avutil,
            _avcodec: avcodec,
        })
    }

    /// FFmpeg's text for an error code.
    pub(super) fn error_text(&self, code: c_int) -> String {
        let mut buf = [0 as c_char; 128];
        // SAFETY: writes at most `buf.len()` bytes, NUL-terminated.
        let ok = unsafe { (self.strerror)(code, buf.as_mut_ptr(), buf.len()) } == 0;
        if !ok {
            return format!("FFmpeg error {code}");
        }
        // SAFETY: av_strerror NUL-terminates within the buffer.
        unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_string_lossy()
            .into_owned()
    }

    /// "FFmpeg 5.1 (libavcodec 59.37.100 from PATH)"-style description.
    pub(super) fn describe(&self) -> String {
        let v = |x: u32| format!("{}.{}.{}", x >> 16, (x >> 8) & 0xff, x & 0xff);
        format!("libavcodec {} from {}", v(self.versions.0), self.path)
    }
}

/// An `AVPacket` we own.
pub(super) struct Packet<'f> {
    ff: &'f Ffmpeg,
    ptr: Ptr,
}

impl<'f> Packet<'f> {
    pub(super) fn new(ff: &'f Ffmpeg) -> Option<Packet<'f>> {
        // SAFETY: allocation without arguments.
        let ptr = unsafe { (ff.packet_alloc)() };
        (!ptr.is_null()).then_some(Packet { ff, ptr })
    }

    pub(super) fn raw(&self) -> *const c_void {
        self.ptr
    }

    /// Makes the packet own a padded copy of `data` with this pts. Err: FFmpeg's code.
    pub(super) fn fill(&mut self, data: &[u8], pts: i64) -> Result<(), c_int> {
        let size = c_int::try_from(data.len()).map_err(|_| -22)?;
        // SAFETY: `ptr` is our packet; unref before refilling frees the previous payload.
        unsafe {
            (self.ff.packet_unref)(self.ptr);
            let code = (self.ff.new_packet)(self.ptr, size);
            if code < 0 {
                return Err(code);
            }
            let base = self.ptr.cast::<u8>();
            let dst = base.add(PACKET_DATA).cast::<*mut u8>().read_unaligned();
            std::ptr::copy_nonoverlapping(data.as_ptr(), dst, data.len());
            base.add(PACKET_PTS).cast::<i64>().write_unaligned(pts);
            base.add(PACKET_DTS)
                .cast::<i64>()
                .write_unaligned(AV_NOPTS_VALUE);
        }
        Ok(())
    }
}

impl Drop for Packet<'_> {
    fn drop(&mut self) {
        // SAFETY: frees our packet and its payload.
        unsafe { (self.ff.packet_free)(&mut self.ptr) };
    }
}

/// An `AVFrame` we own, read through the layout of the loaded libavutil.
pub(super) struct Frame<'f> {
    ff: &'f Ffmpeg,
    ptr: Ptr,
}

impl<'f> Frame<'f> {
    pub(super) fn new(ff: &'f Ffmpeg) -> Option<Frame<'f>> {
        // SAFETY: allocation without arguments.
        let ptr = unsafe { (ff.frame_alloc)() };
        (!ptr.is_null()).then_some(Frame { ff, ptr })
    }

    pub(super) fn raw(&self) -> Ptr {
        self.ptr
    }

    pub(super) fn unref(&mut self) {
        // SAFETY: our frame; unref leaves it blank and reusable.
        unsafe { (self.ff.frame_unref)(self.ptr) };
    }

    fn read<T: Copy>(&self, offset: usize) -> T {
        // SAFETY: offsets come from the loaded libavutil's own `AVFrame` layout
        // (`FrameLayout`), and every field read lies inside the allocated frame.
        unsafe {
            self.ptr
                .cast::<u8>()
                .add(offset)
                .cast::<T>()
                .read_unaligned()
        }
    }

    /// Plane `i`'s start and bytes between rows (0..8).
    pub(super) fn plane(&self, i: usize) -> (*const u8, c_int) {
        (
            self.read(self.ff.layout.data + 8 * i),
            self.read(self.ff.layout.linesize + 4 * i),
        )
    }

    pub(super) fn width(&self) -> c_int {
        self.read(self.ff.layout.width)
    }

    pub(super) fn height(&self) -> c_int {
        self.read(self.ff.layout.height)
    }

    pub(super) fn format(&self) -> c_int {
        self.read(self.ff.layout.format)
    }

    /// The frame's pts, or its best-effort timestamp when the decoder set none.
    pub(super) fn pts(&self) -> i64 {
        let pts: i64 = self.read(self.ff.layout.pts);
        if pts != AV_NOPTS_VALUE {
            return pts;
        }
        self.read(self.ff.layout.best_effort_timestamp)
    }

    /// (`colorspace`, `color_range`) code points.
    pub(super) fn colour(&self) -> (c_int, c_int) {
        (
            self.read(self.ff.layout.colorspace),
            self.read(self.ff.layout.color_range),
        )
    }

    /// Whether the decoder flagged the frame as damaged or concealed.
    pub(super) fn damaged(&self) -> bool {
        let errors: c_int = self.read(self.ff.layout.decode_error_flags);
        let flags: c_int = self.read(self.ff.layout.flags);
        errors != 0 || flags & FRAME_FLAG_CORRUPT != 0
    }

    /// The pixel format's FFmpeg name (`yuv420p`, `yuv420p10le`, ...).
    pub(super) fn format_name(&self) -> String {
        // SAFETY: returns a static string or null for an unknown format.
        let p = unsafe { (self.ff.pix_fmt_name)(self.format()) };
        if p.is_null() {
            return format!("pixel format {}", self.format());
        }
        // SAFETY: a static NUL-terminated name.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}

/// `AV_FRAME_FLAG_CORRUPT`.
const FRAME_FLAG_CORRUPT: c_int = 1;

impl Drop for Frame<'_> {
    fn drop(&mut self) {
        // SAFETY: frees our frame and its references.
        unsafe { (self.ff.frame_free)(&mut self.ptr) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_ffmpeg_is_one_line_naming_what_was_tried_and_what_to_install() {
        let tried = vec![(
            "/nonexistent/libavcodec.so.61".to_string(),
            "/nonexistent/libavutil.so.59".to_string(),
        )];
        let msg = match open_from(tried) {
            Ok(_) => panic!("a missing library opened"),
            Err(e) => e.to_string(),
        };
        assert!(!msg.contains('\n'), "{msg}");
        assert!(
            msg.starts_with(
                "FFmpeg's libavcodec could not be loaded (tried /nonexistent/libavcodec.so.61)"
            ),
            "{msg}"
        );
        assert!(msg.contains("apt install libavcodec59"), "{msg}");
        assert!(msg.contains("GM_FFMPEG_DIR"), "{msg}");
    }

    #[test]
    fn every_supported_soname_pair_has_a_layout() {
        for (codec, util) in SONAMES {
            let major: u32 = util
                .rsplit('.')
                .next()
                .and_then(|m| m.parse().ok())
                .unwrap_or(0);
            let codec_major: u32 = codec
                .rsplit('.')
                .next()
                .and_then(|m| m.parse().ok())
                .unwrap_or(0);
            assert_eq!(codec_major, major + 2, "{codec} pairs with {util}");
            assert!(
                frame_layout(major).is_some(),
                "no AVFrame layout for {util}"
            );
        }
    }
}
