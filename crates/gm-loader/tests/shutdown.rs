//! Stopping: dropping an epoch mid-way, and a panicking worker. One test in its own binary,
//! because it counts the process's loader threads.
#![allow(clippy::unwrap_used)]

#[path = "pipeline/common.rs"]
mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use gm_loader::{Loader, LoaderBuilder, LoaderError};

#[test]
fn dropping_mid_epoch_and_worker_panics_stop_every_thread() {
    check(|b| b.cpu());
    // The same on the GPU (the bundle runs it with GM_REQUIRE_GPU=1).
    let Some(device) = gm_cuda::testing::device_or_skip("shutdown on the GPU") else {
        return;
    };
    check(move |b| b.device(&device).gpu_stages(3));
}

fn check(place: impl Fn(LoaderBuilder) -> LoaderBuilder) {
    assert_eq!(loader_threads(), 0);
    // Slow reads: 30 ms per image, many batches queued.
    let slow = Misbehaving {
        inner: Arc::new(photos(8)),
        delay: Duration::from_millis(30),
        panic_at: None,
    };
    let mut l = place(Loader::builder(slow))
        .batch_size(4)
        .workers(4)
        .prefetch(2)
        .transforms(eval_chain(16))
        .build()
        .unwrap();
    let mut epoch = l.epoch(0);
    let first = epoch.next().unwrap().unwrap();
    assert_eq!(first.position, 0);
    assert!(loader_threads() >= 5, "4 workers and the stages");
    let t = Instant::now();
    drop(epoch);
    let took = t.elapsed();
    assert!(took < Duration::from_secs(1), "drop took {took:?}");
    assert_eq!(loader_threads_after_join(), 0, "threads left behind");

    let boom = Misbehaving {
        inner: Arc::new(photos(2)),
        delay: Duration::ZERO,
        panic_at: Some(9),
    };
    let mut l = place(Loader::builder(boom))
        .batch_size(4)
        .workers(3)
        .transforms(eval_chain(16))
        .build()
        .unwrap();
    let results: Vec<_> = l.epoch(0).collect();
    assert_eq!(results.len(), 3, "batches 0 and 1, then the error");
    assert!(results[..2].iter().all(Result::is_ok));
    match &results[2] {
        Err(LoaderError::WorkerPanic { stage, message }) => {
            assert_eq!(*stage, "host worker");
            assert!(message.contains("exploded at 9"), "{message}");
        }
        other => panic!("expected a worker panic, got {other:?}"),
    }
    assert_eq!(loader_threads_after_join(), 0);
    // The loader still works after a panic in an earlier epoch's worker.
    let again: Vec<_> = l.epoch(1).take(2).collect();
    assert!(again.iter().all(Result::is_ok));
}
