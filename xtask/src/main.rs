//! `cargo xtask`: developer tasks that need more than cargo.
#![allow(clippy::print_stdout)] // a developer tool reports on stdout

mod bench;
mod bindings;
mod bundle;
mod ptx;
mod report;
mod servers;
mod test;
mod tools;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

const USAGE: &str = "\
usage: cargo xtask <task>

tasks:
  ptx [--check]         compile crates/*/kernels/*.cu to the committed .ptx with NVRTC 12.0;
                        --check only reports PTX that is missing or older than its source
  bindings [--out FILE] generate the nvcuvid bindings from nv-codec-headers with bindgen
  demo [ARGS]           the main job: `gm demo` built in release
  test [--rust|--python] the tests: cargo test --workspace, then the Python package installed
                        with pip into a fresh virtual environment and its pytest suite
  test-servers          make (or reuse) gm-storage's test servers' venv and print the
                        exports that point tests at them: eval \"$(cargo xtask test-servers)\"
  readme                write README.md's results table from the newest bench report
  gpu-bundle            build stripped release test binaries, `gm` and benches, with the test
                        media and run.sh, into target/gpu-bundle (for the GPU machine)
";

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = workspace_root()?;
    if args.first().map(String::as_str) == Some("gpu-bundle") {
        tools::ensure_libclang()?;
    }
    match args.first().map(String::as_str) {
        Some("demo") => run_cmd(
            std::process::Command::new(test::cargo())
                .args(["run", "--release", "-q", "-p", "gm-cli", "--", "demo"])
                .args(&args[1..])
                .current_dir(&root),
        ),
        Some("ptx") => ptx::run(&root, args.iter().any(|a| a == "--check")),
        Some("bindings") => {
            let out = flag_value(&args, "--out")
                .map(PathBuf::from)
                .unwrap_or_else(|| root.join(bindings::DEFAULT_OUT));
            bindings::run(&out)
        }
        Some("gpu-bundle") => bundle::run(&root),
        Some("test-servers") => {
            let (moto, range_http) = servers::prepare(&root)?;
            println!("export GM_MOTO_SERVER='{}'", moto.display());
            println!("export GM_RANGE_HTTP='{}'", range_http.display());
            Ok(())
        }
        Some("test") => {
            let only = |f: &str| args.iter().any(|a| a == f);
            let parts = match (only("--rust"), only("--python")) {
                (true, false) => test::Parts {
                    rust: true,
                    python: false,
                },
                (false, true) => test::Parts {
                    rust: false,
                    python: true,
                },
                _ => test::Parts {
                    rust: true,
                    python: true,
                },
            };
            test::run(&root, &parts)
        }
        Some("readme") => report::readme(&root),
        Some("bench") => match flag_value(&args, "--report") {
            Some(dir) => report::run(&root, Path::new(dir)),
            None => bench::run(&root),
        },
        Some("help" | "--help" | "-h") | None => {
            print!("{USAGE}");
            Ok(())
        }
        Some(other) => bail!("unknown task `{other}`\n{USAGE}"),
    }
}

fn flag_value<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
}

fn workspace_root() -> Result<PathBuf> {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    Ok(manifest
        .parent()
        .context("xtask lives one level under the workspace root")?
        .to_path_buf())
}

/// Runs a command, failing with its name if it fails.
fn run_cmd(cmd: &mut std::process::Command) -> Result<()> {
    let status = cmd.status().with_context(|| format!("starting {cmd:?}"))?;
    if !status.success() {
        bail!("{cmd:?} failed with {status}");
    }
    Ok(())
}

fn rel(root: &Path, p: &Path) -> String {
    p.strip_prefix(root).unwrap_or(p).display().to_string()
}
