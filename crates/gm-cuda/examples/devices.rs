//! Lists the CUDA devices this machine has, or says why there are none.
//!
//! `cargo run -p gm-cuda --example devices`
#![allow(clippy::print_stdout)] // an example reports on stdout

use gm_cuda::Device;

fn main() -> anyhow::Result<()> {
    let count = match gm_cuda::available() {
        Ok(n) => n,
        Err(e) => {
            // No driver or no device is an error value, not a panic: report it and stop.
            println!("no CUDA device: {e}");
            return Ok(());
        }
    };
    let (major, minor) = gm_cuda::driver_cuda_version()?;
    println!("{count} CUDA device(s); the driver supports CUDA {major}.{minor}");
    for ordinal in 0..count {
        let info = Device::new(ordinal)?.info()?;
        println!(
            "GPU {}: {}, compute capability {}.{}, {} SMs, {:.1} GiB ({:.1} GiB free)",
            info.ordinal,
            info.name,
            info.compute_capability.0,
            info.compute_capability.1,
            info.multiprocessors,
            info.total_memory as f64 / f64::from(1u32 << 30),
            info.free_memory as f64 / f64::from(1u32 << 30),
        );
    }
    Ok(())
}
