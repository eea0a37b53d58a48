//! `gm info`: what this machine offers the library.

use std::fmt::Write;

use gm_codec::libraries::{NvLibrary, open_library};

const GIB: f64 = (1u64 << 30) as f64;

/// The whole report as text. Never fails: what cannot be found is reported as missing.
pub fn report() -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "gm {}: Gradient Mechanics for Rust",
        env!("CARGO_PKG_VERSION")
    );
    let _ = writeln!(
        out,
        "NVTX ranges: {}",
        if gm_cuda::nvtx::ENABLED {
            "on (profile with nsys profile -t cuda,nvtx)"
        } else {
            "off (build with --features nvtx to see the pipeline in Nsight Systems)"
        }
    );
    gpus(&mut out);
    let _ = writeln!(out, "libraries:");
    for which in [NvLibrary::NvJpeg, NvLibrary::NvCuvid] {
        match open_library(which) {
            Ok(lib) => {
                let version = lib.version().map(|v| format!(" {v}")).unwrap_or_default();
                let _ = writeln!(out, "  {}{version}: loaded from {}", which.name(), lib.path);
            }
            Err(e) => {
                let _ = writeln!(out, "  {}: NOT AVAILABLE: {e}", which.name());
            }
        }
    }
    out
}

fn gpus(out: &mut String) {
    let (bmaj, bmin) = gm_cuda::BINDINGS_CUDA_VERSION;
    let count = match gm_cuda::available() {
        Ok(n) => n,
        Err(e) => {
            let _ = writeln!(out, "no CUDA GPU: {e}");
            let _ = writeln!(
                out,
                "(everything that needs a GPU will report this; CPU-only commands still work)"
            );
            return;
        }
    };
    let driver = gm_cuda::driver_cuda_version()
        .map(|(a, b)| format!("CUDA {a}.{b}"))
        .unwrap_or_else(|e| format!("unknown ({e})"));
    let nvidia = gm_cuda::nvidia_driver_version().unwrap_or_else(|| "unknown".into());
    let _ = writeln!(
        out,
        "driver: NVIDIA {nvidia}, supports {driver}; gm built against the CUDA {bmaj}.{bmin} driver API"
    );
    let _ = writeln!(
        out,
        "work queues per GPU: {} ({})",
        gm_cuda::max_connections().unwrap_or_else(|| "driver default".into()),
        gm_cuda::MAX_CONNECTIONS_VAR
    );
    for ordinal in 0..count {
        let info = gm_cuda::Device::new(ordinal).and_then(|d| d.info());
        match info {
            Ok(i) => {
                let _ = writeln!(out, "GPU {}: {}", i.ordinal, i.name);
                let _ = writeln!(
                    out,
                    "  compute capability {}.{}, {} SMs, {:.1} GiB memory ({:.1} GiB free), PCI {}",
                    i.compute_capability.0,
                    i.compute_capability.1,
                    i.multiprocessors,
                    i.total_memory as f64 / GIB,
                    i.free_memory as f64 / GIB,
                    i.pci_bus_id
                );
                match gm_codec::engines_for(&i.name) {
                    Some(e) => {
                        let _ = writeln!(
                            out,
                            "  decode engines: {} NVDEC, {} NVJPG (NVIDIA specifications)",
                            e.nvdec, e.nvjpg
                        );
                    }
                    None => {
                        let _ = writeln!(out, "  decode engines: unknown for this product");
                    }
                }
            }
            Err(e) => {
                let _ = writeln!(out, "GPU {ordinal}: could not be opened: {e}");
            }
        }
    }
}
