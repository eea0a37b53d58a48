//! `cargo xtask test`: the README's test command. The Rust tests (`cargo test --workspace`,
//! with gm-storage's S3 and HTTP test servers from a pinned venv: `servers.rs`),
//! then the Python package as a user gets it: `pip install crates/gm-python[test]` into a fresh
//! virtual environment (maturin builds the wheel), and pytest on its tests.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

/// Which halves to run.
pub struct Parts {
    pub rust: bool,
    pub python: bool,
}

pub fn run(root: &Path, parts: &Parts) -> Result<()> {
    if parts.rust {
        // gm-storage's tests find their S3 and HTTP servers through these.
        let (moto, range_http) = crate::servers::prepare(root)?;
        println!("== cargo test --workspace");
        status(
            Command::new(cargo())
                .args(["test", "-q", "--workspace"])
                .env("GM_MOTO_SERVER", moto)
                .env("GM_RANGE_HTTP", range_http)
                .current_dir(root),
        )?;
    }
    if parts.python {
        python(root)?;
    }
    Ok(())
}

/// The cargo that started this task.
pub fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

fn python(root: &Path) -> Result<()> {
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let venv = root.join("target").join("python-test").join("venv");
    if venv.exists() {
        std::fs::remove_dir_all(&venv).with_context(|| format!("removing {}", venv.display()))?;
    }
    println!("== a fresh virtual environment: {}", venv.display());
    status(Command::new(&python).arg("-m").arg("venv").arg(&venv))?;
    let pip = venv.join("bin").join("pip");
    let py = venv.join("bin").join("python");
    println!("== pip install crates/gm-python[test] (maturin builds the wheel)");
    // The test build reuses the workspace's compiled crates (a debug build, as `cargo test`
    // makes); a user's `pip install` builds the release profile.
    let target = root.join("target");
    status(
        Command::new(&pip)
            .args(["install", "--quiet", "--upgrade", "pip"])
            .current_dir(root),
    )?;
    let package = format!("{}[test]", root.join("crates").join("gm-python").display());
    status(
        Command::new(&pip)
            .args(["install", "--quiet", &package])
            .env("CARGO_TARGET_DIR", &target)
            .env("MATURIN_PEP517_ARGS", "--profile dev")
            .current_dir(root),
    )?;
    println!("== pytest crates/gm-python/tests");
    // From outside the source folder, so that `import gm` is the installed package.
    status(
        Command::new(&py)
            .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
            .arg(root.join("crates").join("gm-python").join("tests"))
            .current_dir(venv.parent().unwrap_or(root)),
    )
}

pub fn status(cmd: &mut Command) -> Result<()> {
    let what = format!("{cmd:?}");
    let s = cmd.status().with_context(|| format!("running {what}"))?;
    if !s.success() {
        bail!("{what} failed: {s}");
    }
    Ok(())
}
