//! `cargo xtask gpu-bundle`: everything the GPU machine needs to run our tests, in one folder.
//!
//! The GPU machine has no Rust toolchain and no network, so the bundle holds stripped release
//! builds of every test binary, the `gm` binary and the benches, the test media, and `run.sh`,
//! which runs each test binary with GM_REQUIRE_GPU=1 and prints a summary.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::rel;

const PROFILE: &str = "bundle-release";
const LIMIT_BYTES: u64 = 60 << 20;
/// The feature that compiles NVTX ranges into every crate of the bundle.
const NVTX: &str = "gm-cli/nvtx";

pub(crate) struct Artifact {
    pub(crate) name: String,
    pub(crate) path: PathBuf,
}

pub fn run(root: &Path) -> Result<()> {
    let out = root.join("target/gpu-bundle");
    if out.exists() {
        std::fs::remove_dir_all(&out).with_context(|| format!("clearing {}", out.display()))?;
    }
    for d in ["bin", "tests", "bench", "media"] {
        std::fs::create_dir_all(out.join(d))?;
    }

    // With NVTX compiled in: the GPU tests then run the ranges' code too (a no-op with no
    // tool attached), `tests/nvtx` checks them on the GPU path, and `bin/gm` can be profiled
    // under Nsight Systems.
    let tests = cargo_artifacts(
        root,
        &[
            "test",
            "--workspace",
            "--exclude",
            "xtask",
            // candle/burn builds travel in their own bundle (examples/frameworks/scripts).
            "--exclude",
            "gm-frameworks",
            "--features",
            NVTX,
            "--no-run",
        ],
    )?;
    let built = cargo_artifacts(
        root,
        &[
            "build",
            "--workspace",
            "--exclude",
            "xtask",
            // candle/burn builds travel in their own bundle (examples/frameworks/scripts).
            "--exclude",
            "gm-frameworks",
            "--features",
            NVTX,
            "--bins",
            "--benches",
        ],
    )?;
    let mut n_tests = 0;
    for a in tests.iter().filter(|a| a.name.starts_with("test:")) {
        copy_exe(&a.path, &out.join("tests").join(&a.name[5..]))?;
        n_tests += 1;
    }
    for a in &built {
        if let Some(bin) = a.name.strip_prefix("bin:") {
            copy_exe(&a.path, &out.join("bin").join(bin))?;
        } else if let Some(bench) = a.name.strip_prefix("bench:") {
            copy_exe(&a.path, &out.join("bench").join(bench))?;
        }
    }
    if !out.join("bin/gm").exists() {
        bail!("the gm binary was not built");
    }

    let fixtures = root.join("tests/media");
    if fixtures.is_dir() {
        copy_tree(&fixtures, &out.join("media/fixtures"))?;
    }
    copy_tree(&root.join("assets/demo/images"), &out.join("media/demo"))?;
    copy_tree(
        &root.join("assets/demo/videos"),
        &out.join("media/demo-videos"),
    )?;
    let shared = root.join("../shared/media");
    if shared.is_dir() {
        copy_tree(&shared, &out.join("media/shared"))?;
    }
    let run_sh = out.join("run.sh");
    std::fs::write(&run_sh, RUN_SH)?;
    set_executable(&run_sh)?;
    // Test and bench binaries repeat the standard library, our crates and (since gm-storage)
    // the HTTP/TLS stack. xz with a dictionary larger than all of them together finds each
    // repeat across binaries, not only within one 8 MiB window, which keeps the bundle under
    // the device tool's carry limit. run.sh unpacks them.
    crate::run_cmd(
        std::process::Command::new("tar")
            .args([
                "-I",
                "xz -T1 --lzma2=preset=9e,dict=512MiB",
                "-cf",
                "tests.tar.xz",
                "tests",
                "bench",
            ])
            .current_dir(&out),
    )?;
    std::fs::remove_dir_all(out.join("tests"))?;
    std::fs::remove_dir_all(out.join("bench"))?;

    let size = tree_size(&out)?;
    println!(
        "{}: {n_tests} test binaries, {:.1} MiB",
        rel(root, &out),
        size as f64 / (1 << 20) as f64
    );
    if size > LIMIT_BYTES {
        bail!("the bundle is {size} bytes, over the {LIMIT_BYTES}-byte limit");
    }
    println!(
        "on the GPU machine, from the repository root: target/gpu-bundle/run.sh \
         (logs in target/gpu-bundle/logs, or GM_LOG_DIR)"
    );
    Ok(())
}

/// Runs cargo with the bundle profile and returns its executables, named `test:`, `bin:` or
/// `bench:` plus a file name that says which crate and target they come from.
pub(crate) fn cargo_artifacts(root: &Path, args: &[&str]) -> Result<Vec<Artifact>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .current_dir(root)
        .args(args)
        .args([
            "--profile",
            PROFILE,
            "--message-format=json-render-diagnostics",
        ])
        .stderr(Stdio::inherit())
        .output()
        .context("running cargo")?;
    if !output.status.success() {
        bail!("cargo {} failed", args.join(" "));
    }
    let mut out = Vec::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Ok(msg) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if msg["reason"] != "compiler-artifact" {
            continue;
        }
        let Some(exe) = msg["executable"].as_str() else {
            continue;
        };
        let package = msg["package_id"]
            .as_str()
            .and_then(package_name)
            .unwrap_or("unknown");
        let target = msg["target"]["name"].as_str().unwrap_or("unknown");
        let kinds: Vec<&str> = msg["target"]["kind"]
            .as_array()
            .map(|k| k.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let is_test = msg["profile"]["test"].as_bool().unwrap_or(false);
        let name = if kinds.contains(&"bench") {
            format!("bench:{package}--{target}")
        } else if is_test {
            let what = match kinds.first().copied() {
                Some("lib") => "unit".to_owned(),
                Some("bin") => format!("bin-{target}"),
                _ => target.to_owned(),
            };
            format!("test:{package}--{what}")
        } else if kinds.contains(&"bin") {
            format!("bin:{target}")
        } else {
            continue;
        };
        out.push(Artifact {
            name,
            path: PathBuf::from(exe),
        });
    }
    Ok(out)
}

/// `path+file:///work/main/crates/gm-cuda#0.1.0` or `registry+...#name@1.0` -> the name.
fn package_name(id: &str) -> Option<&str> {
    let frag = id.rsplit('#').next()?;
    match frag.split_once('@') {
        Some((name, _)) => Some(name),
        None => id.split('#').next()?.rsplit('/').next(),
    }
}

pub(crate) fn copy_exe(from: &Path, to: &Path) -> Result<()> {
    std::fs::copy(from, to).with_context(|| format!("copying {}", from.display()))?;
    set_executable(to)
}

pub(crate) fn set_executable(p: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755))?;
    Ok(())
}

pub(crate) fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let dest = to.join(e.file_name());
        if e.file_type()?.is_dir() {
            copy_tree(&e.path(), &dest)?;
        } else {
            std::fs::copy(e.path(), &dest)?;
        }
    }
    Ok(())
}

pub(crate) fn tree_size(p: &Path) -> Result<u64> {
    let mut total = 0;
    for e in std::fs::read_dir(p)? {
        let e = e?;
        total += if e.file_type()?.is_dir() {
            tree_size(&e.path())?
        } else {
            e.metadata()?.len()
        };
    }
    Ok(total)
}

const RUN_SH: &str = r#"#!/usr/bin/env bash
# Runs every test binary of the GPU bundle with GM_REQUIRE_GPU=1 (a GPU test that cannot find
# a GPU fails instead of skipping), one summary line per binary, a total, and a non-zero exit
# status on any failure. Full logs: $GM_LOG_DIR (default: logs/ beside this script).
# GM_ONLY=REGEX runs only the binaries whose names match. GM_SANITIZE=memcheck (or racecheck,
# initcheck, synccheck) runs each under compute-sanitizer: a binary with sanitizer errors fails,
# and its summary line counts them.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export GM_REQUIRE_GPU=1
export GM_BIN="$here/bin/gm"
export GM_FIXTURES="$here/media/fixtures"
export GM_SHARED_MEDIA="$here/media/shared"
export GM_DEMO_IMAGES="$here/media/demo"
export GM_DEMO_VIDEOS="$here/media/demo-videos"
logs="${GM_LOG_DIR:-$here/logs}"
mkdir -p "$logs"
[ -d "$here/tests" ] || tar -xJf "$here/tests.tar.xz" -C "$here"

echo "== gm info"
"$here/bin/gm" info 2>&1 | tee "$logs/gm-info.txt"
echo "== nvidia-smi"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | tee "$logs/nvidia-smi.txt"
echo "== tests"

bins=0; failed_bins=0; passed=0; failed=0; ignored=0; skipped=0
sanitize="${GM_SANITIZE:-}"
sanitizer=()
skips=()
if [ -n "$sanitize" ]; then
    cs="$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -n 1)"
    [ -n "$cs" ] || { echo "GM_SANITIZE=$sanitize: no compute-sanitizer found"; exit 2; }
    sanitizer=("$cs" --tool "$sanitize" --error-exitcode 86 --print-limit 50 --target-processes all)
    # Tests that make CUDA API calls fail on purpose (to check gm's error messages) would be
    # reported as API errors: skipped under the sanitizer.
    skips=(--skip launch_and_module_errors_name_the_kernel_and_module)
    echo "== under $cs --tool $sanitize"
fi
for t in "$here"/tests/*; do
    name="$(basename "$t")"
    if [ -n "${GM_ONLY:-}" ] && ! [[ "$name" =~ $GM_ONLY ]]; then continue; fi
    bins=$((bins + 1))
    start=$(date +%s%N)
    "${sanitizer[@]}" "$t" --test-threads="${GM_TEST_THREADS:-4}" "${skips[@]}" >"$logs/$name.log" 2>&1
    rc=$?
    ms=$(( ($(date +%s%N) - start) / 1000000 ))
    secs=$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))
    result="$(grep -E '^test result:' "$logs/$name.log" | tail -n 1)"
    p=$(echo "$result" | sed -nE 's/.* ([0-9]+) passed.*/\1/p'); p=${p:-0}
    f=$(echo "$result" | sed -nE 's/.* ([0-9]+) failed.*/\1/p'); f=${f:-0}
    i=$(echo "$result" | sed -nE 's/.* ([0-9]+) ignored.*/\1/p'); i=${i:-0}
    s=$(grep -c '^SKIP' "$logs/$name.log")
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
    passed=$((passed + p)); failed=$((failed + f)); ignored=$((ignored + i)); skipped=$((skipped + s))
    status=PASS
    if [ "$rc" -ne 0 ]; then status=FAIL; failed_bins=$((failed_bins + 1)); fi
    errors=""
    if [ -n "$sanitize" ]; then
        errors=" $(grep -E 'ERROR SUMMARY' "$logs/$name.log" | tail -n 1 | sed -E 's/^=+ //')"
    fi
    printf '%s %-36s %4d passed %3d failed %3d ignored %3d skipped  %ss%s\n' "$status" "$name" "$p" "$f" "$i" "$s" "$secs" "$errors"
    if [ "$rc" -ne 0 ]; then
        sed -n '/^failures:/,$p' "$logs/$name.log" | head -n 60
        [ -n "$result" ] || tail -n 30 "$logs/$name.log"
    fi
done
echo "TOTAL: $bins binaries ($failed_bins failed): $passed passed, $failed failed, $ignored ignored, $skipped skipped"
[ "$failed_bins" -eq 0 ]
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn package_names_from_cargo_ids() {
        assert_eq!(
            package_name("path+file:///work/main/crates/gm-cuda#0.1.0"),
            Some("gm-cuda")
        );
        assert_eq!(
            package_name("path+file:///work/main/tests#gm-tests@0.1.0"),
            Some("gm-tests")
        );
    }
}
