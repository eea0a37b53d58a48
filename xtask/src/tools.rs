//! Build tools beyond cargo and a C compiler. The crates need none (gm-turbojpeg-sys builds
//! libjpeg-turbo with the `cc` crate); the GPU bundle compiles the `nvtx` feature, whose
//! nvtx-sys runs bindgen, which loads libclang. Where no libclang is found and this runs as
//! root on a Debian-like machine, Debian's `libclang-dev` is installed, as `.ci/run` does;
//! otherwise the task stops with one line that says what to install.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

/// Makes sure bindgen, run by builds started from here, finds libclang.
pub fn ensure_libclang() -> Result<()> {
    if std::env::var_os("LIBCLANG_PATH").is_some() || find_libclang().is_some() {
        return Ok(());
    }
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.trim_ascii() == b"0");
    if !root || !on_path("apt-get") {
        bail!(
            "the GPU bundle's `nvtx` feature needs libclang for bindgen: install it \
             (Debian/Ubuntu: apt-get install libclang-dev) or set LIBCLANG_PATH"
        );
    }
    println!("== no libclang found: installing Debian's libclang-dev (for nvtx-sys's bindgen)");
    for args in [
        &["update", "-qq"][..],
        &[
            "install",
            "-y",
            "-qq",
            "--no-install-recommends",
            "libclang-dev",
        ],
    ] {
        crate::run_cmd(
            Command::new("apt-get")
                .args(args)
                .env("DEBIAN_FRONTEND", "noninteractive"),
        )
        .context("installing libclang-dev with apt-get")?;
    }
    if find_libclang().is_none() {
        bail!("apt-get installed libclang-dev, but no libclang.so was found; set LIBCLANG_PATH");
    }
    Ok(())
}

/// A libclang shared library where Debian, Ubuntu and most distributions put it.
fn find_libclang() -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = ["/usr/lib", "/usr/lib64", "/usr/local/lib"]
        .iter()
        .map(PathBuf::from)
        .collect();
    for parent in ["/usr/lib", "/usr/lib64"] {
        if let Ok(entries) = std::fs::read_dir(parent) {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if name.starts_with("llvm") {
                    dirs.push(e.path().join("lib"));
                } else if name.ends_with("-linux-gnu") {
                    dirs.push(e.path());
                }
            }
        }
    }
    dirs.into_iter().find_map(|d| libclang_in(&d))
}

fn libclang_in(dir: &Path) -> Option<PathBuf> {
    std::fs::read_dir(dir).ok()?.flatten().find_map(|e| {
        let name = e.file_name().to_string_lossy().into_owned();
        let versioned = name.starts_with("libclang-") && !name.starts_with("libclang-cpp");
        ((name.starts_with("libclang.so") || versioned) && name.contains(".so")).then(|| e.path())
    })
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths).any(|d: PathBuf| d.join(program).is_file())
    })
}
