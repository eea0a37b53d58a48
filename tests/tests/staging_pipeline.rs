//! The foundation's pieces together, the way the loaders will use them: host workers stage
//! bytes in pooled pinned memory, an upload stream copies them to pooled device memory, a
//! compute stream waits on the upload's event and runs an embedded kernel, and the result
//! leaves as a tensor with a ready event that a consumer stream waits on; nothing synchronizes
//! the device.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use std::sync::Arc;

use gm_cuda::{
    DType, DevicePool, Event, PinnedPool, PoolConfig, Stream, Tensor, gpu_test_device, ops,
};
use rand::{Rng, RngCore, SeedableRng, rngs::StdRng};

#[test]
fn staged_uploads_flow_through_two_streams_into_tensors() {
    let device = gpu_test_device!("staged_uploads_flow_through_two_streams_into_tensors");
    let seed = rand::rng().next_u64();
    eprintln!("seed {seed}");
    let mut rng = StdRng::seed_from_u64(seed);
    let upload = Stream::new(&device).unwrap();
    let compute = Stream::new(&device).unwrap();
    let consumer = Stream::new(&device).unwrap();
    let pinned = PinnedPool::new(&device, PoolConfig::bounded("staging", 64 << 20), true);
    let memory = DevicePool::new(&device, PoolConfig::bounded("batches", 512 << 20));

    let mut results = Vec::new();
    for _ in 0..64 {
        let n = rng.random_range(1..4_000_000usize);
        let mut bytes = vec![0u8; n];
        rng.fill_bytes(&mut bytes);
        let mut stage = pinned.acquire(n).unwrap();
        stage.as_mut_slice().unwrap()[..n].copy_from_slice(&bytes);
        let mut dev = memory.acquire(n, &upload).unwrap();
        upload
            .copy_to_device(&mut stage, 0, &mut *dev, 0, n)
            .unwrap();
        let uploaded = Event::new(&device).unwrap();
        uploaded.record(&upload).unwrap();
        compute.wait(&uploaded).unwrap();
        // The output lives on the compute stream, 4 bytes into its buffer; the upload buffer
        // goes back to the pool fenced on the upload stream.
        let mut out = memory.acquire(n + 4, &compute).unwrap();
        ops::fill_u32(&compute, &mut *out, 0).unwrap();
        compute.copy_on_device(&*dev, 0, &mut *out, 4, n).unwrap();
        drop(dev);
        let mut t = Tensor::with_layout(out, 4, &[n], &[1], DType::U8).unwrap();
        let ready = Arc::new(Event::new(&device).unwrap());
        ready.record(&compute).unwrap();
        t.set_ready_event(ready);
        results.push((t, bytes));
    }
    for (i, (t, bytes)) in results.iter().enumerate() {
        t.wait_on(&consumer).unwrap();
        let got =
            ops::checksum_range(&consumer, t.storage(), t.byte_offset(), bytes.len()).unwrap();
        assert_eq!(
            got,
            ops::checksum_host(bytes),
            "sample {i}: {} bytes",
            bytes.len()
        );
        if i % 16 == 0 {
            assert!(
                t.to_host_bytes(&consumer).unwrap() == *bytes,
                "sample {i} bytes"
            );
        }
    }
    drop(results);
    let (p, m) = (pinned.stats(), memory.stats());
    assert_eq!((p.bytes_in_use, m.bytes_in_use), (0, 0));
    assert!(p.high_water <= 64 << 20 && m.high_water <= 512 << 20);
    assert!(p.reuses > 0 && m.reuses > 0, "pools reused: {p:?} {m:?}");
}
