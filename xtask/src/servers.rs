//! The test servers of gm-storage's tests (moto's S3, RangeHTTPServer) in a virtual
//! environment under target/test-servers, made from the pinned xtask/test-servers.txt and
//! reused while that file is unchanged.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};

/// Makes (or reuses) the venv and writes the two launchers; returns `(moto, range_http)`,
/// the executables that `GM_MOTO_SERVER` and `GM_RANGE_HTTP` name.
pub fn prepare(root: &Path) -> Result<(PathBuf, PathBuf)> {
    let pins_path = root.join("xtask").join("test-servers.txt");
    let pins =
        std::fs::read(&pins_path).with_context(|| format!("reading {}", pins_path.display()))?;
    let hash = format!("{:x}", Sha256::digest(&pins));
    let dir = root.join("target").join("test-servers");
    let venv = dir.join("venv");
    let stamp = dir.join("pins.sha256");
    if std::fs::read_to_string(&stamp).ok().as_deref() != Some(hash.as_str()) {
        install(&venv, &pins_path)?;
        std::fs::write(&stamp, &hash)?;
    }
    let servers = root.join("xtask").join("servers");
    let moto = launcher(&venv, "gm-moto-s3", &servers.join("moto_s3.py"))?;
    let range = launcher(&venv, "gm-range-http", &servers.join("range_http.py"))?;
    Ok((moto, range))
}

fn install(venv: &Path, pins: &Path) -> Result<()> {
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    if venv.exists() {
        std::fs::remove_dir_all(venv).with_context(|| format!("removing {}", venv.display()))?;
    }
    eprintln!(
        "== test servers: a virtual environment from {}",
        pins.display()
    );
    crate::test::status(Command::new(&python).arg("-m").arg("venv").arg(venv))?;
    crate::test::status(
        Command::new(venv.join("bin").join("pip"))
            .args(["install", "--quiet", "--disable-pip-version-check", "-r"])
            .arg(pins),
    )
}

/// A shell launcher that runs `script` with the venv's Python.
fn launcher(venv: &Path, name: &str, script: &Path) -> Result<PathBuf> {
    let path = venv.join("bin").join(name);
    let python = venv.join("bin").join("python");
    let text = format!(
        "#!/bin/sh\nexec '{}' '{}' \"$@\"\n",
        python.display(),
        script.display()
    );
    std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
    Ok(path)
}
