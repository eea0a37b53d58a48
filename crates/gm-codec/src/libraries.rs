//! Finding and opening nvJPEG and nvcuvid at run time.
//!
//! nvcuvid ships with the NVIDIA driver (`libnvcuvid.so.1`, on the loader's path wherever
//! libcuda is); nvJPEG ships with the CUDA toolkit or the `nvidia-nvjpeg` wheel, often outside
//! the loader's path, so the toolkit's usual folders are searched too.

use std::path::PathBuf;

/// A library we open at run time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NvLibrary {
    /// nvJPEG, CUDA 13 then CUDA 12 builds.
    NvJpeg,
    /// The NVDEC video decoding API, part of the driver.
    NvCuvid,
}

impl NvLibrary {
    /// Human name.
    pub fn name(self) -> &'static str {
        match self {
            NvLibrary::NvJpeg => "nvJPEG",
            NvLibrary::NvCuvid => "nvcuvid (NVDEC)",
        }
    }

    /// File names tried, in order of preference.
    pub fn file_names(self) -> &'static [&'static str] {
        match self {
            NvLibrary::NvJpeg => &["libnvjpeg.so.13", "libnvjpeg.so.12", "libnvjpeg.so"],
            NvLibrary::NvCuvid => &["libnvcuvid.so.1", "libnvcuvid.so"],
        }
    }

    /// Environment variable holding an explicit path that is tried first.
    pub fn path_variable(self) -> &'static str {
        match self {
            NvLibrary::NvJpeg => "GM_NVJPEG_PATH",
            NvLibrary::NvCuvid => "GM_NVCUVID_PATH",
        }
    }

    fn hint(self) -> &'static str {
        match self {
            NvLibrary::NvJpeg => {
                "install the CUDA toolkit's nvJPEG (or `pip install nvidia-nvjpeg`) and put its \
                 folder on LD_LIBRARY_PATH, or set GM_NVJPEG_PATH to the library file"
            }
            NvLibrary::NvCuvid => {
                "libnvcuvid.so.1 comes with the NVIDIA driver (video decode support); in a \
                 container, enable the `video` driver capability (NVIDIA_DRIVER_CAPABILITIES)"
            }
        }
    }
}

/// An opened library and where it came from.
#[derive(Debug)]
pub struct LoadedLibrary {
    /// Which library.
    pub which: NvLibrary,
    /// The file name or path that opened.
    pub path: String,
    /// The open library.
    pub library: libloading::Library,
}

/// Why a library could not be opened.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum LibraryError {
    /// None of the candidates opened.
    #[error("{library} could not be loaded (tried {tried}): {hint}", tried = .tried.join(", "))]
    NotFound {
        /// Library name.
        library: &'static str,
        /// Every file name and path tried.
        tried: Vec<String>,
        /// How to get it.
        hint: &'static str,
    },
}

/// Folders searched after the loader's own path.
fn extra_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(root) = std::env::var_os(var) {
            dirs.push(PathBuf::from(root).join("lib64"));
        }
    }
    for d in [
        "/usr/local/cuda/lib64",
        "/usr/local/cuda/targets/x86_64-linux/lib",
        "/usr/local/cuda/targets/sbsa-linux/lib",
        "/usr/local/nvidia/lib64",
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
    ] {
        dirs.push(PathBuf::from(d));
    }
    dirs
}

/// Every candidate for `which`, in the order they are tried.
pub fn candidates(which: NvLibrary) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(p) = std::env::var_os(which.path_variable()) {
        out.push(p.to_string_lossy().into_owned());
    }
    out.extend(which.file_names().iter().map(|s| s.to_string()));
    for dir in extra_dirs() {
        for name in which.file_names() {
            let p = dir.join(name);
            if p.exists() {
                out.push(p.to_string_lossy().into_owned());
            }
        }
    }
    out
}

/// Opens the first candidate of `which` that loads.
pub fn open_library(which: NvLibrary) -> Result<LoadedLibrary, LibraryError> {
    open_candidates(which, candidates(which))
}

/// Opens the first of `tried` that loads, as `which`.
fn open_candidates(which: NvLibrary, tried: Vec<String>) -> Result<LoadedLibrary, LibraryError> {
    for path in &tried {
        // SAFETY: these are NVIDIA's libraries, whose initializers have no preconditions.
        if let Ok(library) = unsafe { libloading::Library::new(path) } {
            tracing::debug!(library = which.name(), %path, "loaded");
            return Ok(LoadedLibrary {
                which,
                path: path.clone(),
                library,
            });
        }
    }
    Err(LibraryError::NotFound {
        library: which.name(),
        tried,
        hint: which.hint(),
    })
}

impl LoadedLibrary {
    /// The library's own version where it reports one (nvJPEG's `nvjpegGetProperty`).
    pub fn version(&self) -> Option<String> {
        match self.which {
            NvLibrary::NvJpeg => {
                type GetProperty = unsafe extern "C" fn(i32, *mut i32) -> i32;
                // SAFETY: documented signature: nvjpegStatus_t nvjpegGetProperty(
                // libraryPropertyType type, int* value).
                let f = unsafe { self.library.get::<GetProperty>(b"nvjpegGetProperty\0") }.ok()?;
                let mut parts = [0i32; 3];
                for (kind, v) in parts.iter_mut().enumerate() {
                    // MAJOR_VERSION = 0, MINOR_VERSION = 1, PATCH_LEVEL = 2.
                    // SAFETY: writes one int through a valid pointer.
                    if unsafe { f(kind as i32, v) } != 0 {
                        return None;
                    }
                }
                Some(format!("{}.{}.{}", parts[0], parts[1], parts[2]))
            }
            NvLibrary::NvCuvid => None,
        }
    }

    /// Whether the library exports `symbol`.
    pub fn has_symbol(&self, symbol: &str) -> bool {
        let mut name = symbol.as_bytes().to_vec();
        name.push(0);
        // SAFETY: only the address is looked up; nothing is called.
        unsafe { self.library.get::<*const ()>(&name) }.is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_library_is_an_error_naming_it_and_what_was_tried() {
        let tried = vec![
            "/nonexistent/libnvcuvid-test.so".to_string(),
            "libnvcuvid-none.so.9".into(),
        ];
        let msg = open_candidates(NvLibrary::NvCuvid, tried)
            .unwrap_err()
            .to_string();
        assert!(msg.contains("nvcuvid (NVDEC) could not be loaded"), "{msg}");
        assert!(
            msg.contains("/nonexistent/libnvcuvid-test.so, libnvcuvid-none.so.9"),
            "{msg}"
        );
        assert!(msg.contains("NVIDIA_DRIVER_CAPABILITIES"), "{msg}");
    }

    #[test]
    fn nvcuvid_found_on_a_machine_with_the_driver_is_the_real_one() {
        if let Ok(lib) = open_library(NvLibrary::NvCuvid) {
            assert!(
                lib.has_symbol("cuvidCreateDecoder"),
                "{} is not nvcuvid",
                lib.path
            );
            assert!(!lib.has_symbol("cuvidNoSuchFunction"));
        }
    }

    #[test]
    fn nvjpeg_candidates_prefer_cuda_13() {
        let c = candidates(NvLibrary::NvJpeg);
        let p13 = c.iter().position(|s| s == "libnvjpeg.so.13");
        let p12 = c.iter().position(|s| s == "libnvjpeg.so.12");
        assert!(p13.is_some() && p13 < p12);
    }
}
