//! Out of GPU memory as an error (issue 25): with another process holding nearly all of the
//! GPU, a loader whose batches cannot fit fails with an error that says what needed how much
//! and how to lower it, nothing hangs or panics, a loader with smaller settings runs beside
//! it, and once the memory is back the large settings run too. Skips without a GPU unless
//! GM_REQUIRE_GPU=1. A binary of its own: the hog would starve the GPU tests running beside
//! it in a shared binary (the device cache's test found no room).
#![allow(clippy::unwrap_used)]

#[path = "pipeline/common.rs"]
mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use common::*;
use gm_cuda::testing::hold_all_but;
use gm_cuda::{DType, Device, gpu_test_device};
use gm_loader::{Dataset, Loader, LoaderError};
use gm_transforms::{Layout, ToDtype};

/// Env var naming how many MiB the hog leaves free; set only in the hog's own process.
const LEAVE_MIB: &str = "GM_TEST_HOG_LEAVE_MIB";

/// The hog: run in a child process by the test below, never on its own (it returns at once
/// without its env var). It takes all but `GM_TEST_HOG_LEAVE_MIB` of the GPU's free memory,
/// says so on stdout, and holds it until its stdin closes.
#[test]
fn gpu_memory_hog_for_the_oom_test() {
    let Some(leave) = std::env::var(LEAVE_MIB)
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    else {
        return;
    };
    let device = Device::new(0).unwrap();
    let held = hold_all_but(&device, leave << 20).unwrap();
    let held_bytes: usize = held.iter().map(|b| b.len()).sum();
    println!("hog ready: holding {held_bytes} bytes");
    std::io::stdout().flush().unwrap();
    let mut line = String::new();
    while std::io::stdin()
        .read_line(&mut line)
        .map(|n| n > 0)
        .unwrap_or(false)
    {}
    drop(held);
}

/// Starts the hog in a child process and waits until it holds the memory.
fn start_hog(leave_mib: usize) -> Child {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "gpu_memory_hog_for_the_oom_test",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(LEAVE_MIB, leave_mib.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    // The harness prints the test's name and ` ... ` before the hog's own line.
    let ready = BufReader::new(out)
        .lines()
        .map_while(Result::ok)
        .find(|l| l.contains("hog ready"));
    eprintln!("{ready:?}");
    assert!(ready.is_some(), "the hog did not start");
    child
}

fn loader(
    device: &Device,
    data: &Arc<dyn Dataset>,
    batch: usize,
    size: u32,
) -> Result<Loader, LoaderError> {
    Loader::builder_shared(data.clone())
        .device(device)
        .workers(2)
        .batch_size(batch)
        .transforms(eval_chain(size).then(ToDtype(DType::F32, Layout::Chw)))
        .build()
}

/// The first error of building `loader` and running its first epoch, if any.
fn first_error(built: Result<Loader, LoaderError>) -> Option<LoaderError> {
    let mut l = match built {
        Ok(l) => l,
        Err(e) => return Some(e),
    };
    let mut epoch = l.epoch(0);
    epoch.find_map(|b| b.err())
}

#[test]
fn out_of_gpu_memory_says_what_needed_how_much_and_smaller_settings_go_on() {
    let device = gpu_test_device!("out_of_gpu_memory_says_what_needed_how_much");
    let data: Arc<dyn Dataset> = Arc::new(photos(10));
    assert!(data.len() >= 128);
    // 128 x 3 x 1024 x 1024 f32 = 1.5 GiB a batch, with 768 MiB left by the hog. (With a
    // 36-image batch, 453 MB, the loader ran beside the hog: an H100, 2026-11-23.)
    let mut hog = start_hog(768);
    let err = first_error(loader(&device, &data, 128, 1024)).expect("the large loader must fail");
    let message = err.to_string();
    eprintln!("{message}");
    assert!(err.is_out_of_memory(), "{err:?}");
    assert!(message.contains("out of GPU memory") && message.contains("lower the batch size"));
    assert!(
        message.contains(" needs ") && message.contains(" free"),
        "{message}"
    );
    // Beside the hog, small settings run a whole epoch.
    let mut small = loader(&device, &data, 8, 64).unwrap();
    let batches = run_epoch(&mut small, 0);
    assert_eq!(batches.len(), data.len().div_ceil(8));
    // The memory back, the large settings run.
    drop(hog.stdin.take());
    hog.wait().unwrap();
    let mut large = loader(&device, &data, 128, 1024).unwrap();
    let mut epoch = large.epoch(0);
    let batch = epoch.next().unwrap().unwrap();
    assert_eq!(batch.images.shape()[0], 128);
}
