//! Build tools beyond cargo and a C compiler: cmake, for the libjpeg-turbo that gm-codec
//! builds from source (turbojpeg-sys). Where none is on the PATH, PyPI's `cmake` wheel is
//! installed with pip under target/tools/cmake and handed to every cargo this task starts
//! through `CMAKE`, which the cmake crate reads; so the README's commands work on a machine
//! with only Rust, gcc and Python. (nasm, when installed, adds libjpeg-turbo's SIMD code.)

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};

/// Makes sure cargo builds started from here find cmake.
pub fn ensure_cmake(root: &Path) -> Result<()> {
    if std::env::var_os("CMAKE").is_some() || on_path("cmake") {
        return Ok(());
    }
    let dir = root.join("target").join("tools").join("cmake");
    let bin = dir.join("cmake").join("data").join("bin").join("cmake");
    if !bin.exists() {
        println!(
            "== no cmake on the PATH: installing PyPI's cmake into {}",
            crate::rel(root, &dir)
        );
        crate::run_cmd(
            Command::new("python3")
                .args(["-m", "pip", "install", "--quiet", "--target"])
                .arg(&dir)
                .arg("cmake"),
        )
        .context("installing cmake with pip (or install cmake: apt-get install cmake)")?;
    }
    // SAFETY: called from main before any thread is started.
    unsafe { std::env::set_var("CMAKE", &bin) };
    Ok(())
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths).any(|d: PathBuf| d.join(program).is_file())
    })
}
