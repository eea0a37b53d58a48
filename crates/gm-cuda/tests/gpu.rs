//! GPU tests of gm-cuda. Without a GPU each prints `SKIP (no CUDA device): <name>`; with
//! GM_REQUIRE_GPU=1 (the GPU bundle) a missing GPU fails them.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use std::sync::Arc;

use gm_cuda::{
    CudaError, DType, Device, DeviceBuffer, DevicePool, Event, LaunchConfig, PinnedBuffer,
    PinnedPool, PoolConfig, Stream, Tensor, gpu_test_device, ops,
};
use rand::rngs::StdRng;
use rand::{Rng, RngCore, SeedableRng};

/// A fresh seed per run, printed so that a failure can be replayed.
fn rng(test: &str) -> StdRng {
    let seed = rand::rng().next_u64();
    eprintln!("{test}: seed {seed}");
    StdRng::seed_from_u64(seed)
}

fn random_bytes(rng: &mut StdRng, n: usize) -> Vec<u8> {
    let mut v = vec![0u8; n];
    rng.fill_bytes(&mut v);
    v
}

/// Enough work to keep a stream busy for milliseconds: repeated fills of a large buffer.
fn busy_work(stream: &Stream, scratch: &mut DeviceBuffer, rounds: u32) {
    for r in 0..rounds {
        ops::fill_u32(stream, scratch, r).unwrap();
    }
}

#[test]
fn round_trip_through_pinned_memory_on_a_non_default_stream_is_bit_exact() {
    let device =
        gpu_test_device!("round_trip_through_pinned_memory_on_a_non_default_stream_is_bit_exact");
    let mut rng = rng("round_trip");
    let stream = Stream::new(&device).unwrap();
    assert!(
        !stream.raw().is_null(),
        "must not be the legacy default stream"
    );
    for &n in &[1usize, 3, 4097, (1 << 20) + 13, 64 << 20] {
        let data = random_bytes(&mut rng, n);
        let mut up = PinnedBuffer::alloc(&device, n, true).unwrap();
        up.as_mut_slice().unwrap().copy_from_slice(&data);
        let mut a = DeviceBuffer::alloc(&device, n).unwrap();
        // A second device buffer at an odd offset exercises device-to-device copies too.
        let mut b = DeviceBuffer::alloc(&device, n + 7).unwrap();
        let mut down = PinnedBuffer::alloc(&device, n + 7, false).unwrap();
        down.as_mut_slice().unwrap().fill(0xA5);
        stream.copy_to_device(&mut up, 0, &mut a, 0, n).unwrap();
        stream.copy_on_device(&a, 0, &mut b, 7, n).unwrap();
        stream.copy_to_host(&b, 7, &mut down, 0, n).unwrap();
        // No synchronize: host access to `down` waits for its copy.
        let got = down.as_slice().unwrap();
        assert!(got[..n] == data[..], "round trip of {n} bytes differs");
        assert!(
            got[n..].iter().all(|&x| x == 0xA5),
            "bytes past the copy were written"
        );
    }
}

/// Uploads from one pinned buffer on one stream queue behind each other without a host wait
/// (the stream orders them); a copy on another stream, and host access, wait for them all.
#[test]
fn uploads_from_one_buffer_wait_only_across_streams() {
    let device = gpu_test_device!("uploads_from_one_buffer_wait_only_across_streams");
    let mut rng = rng("uploads_one_buffer");
    let (s, t) = (Stream::new(&device).unwrap(), Stream::new(&device).unwrap());
    let mut scratch = DeviceBuffer::alloc(&device, 256 << 20).unwrap();
    let n = 1 << 20;
    let (mut queued, rounds) = (0, 5);
    for _ in 0..rounds {
        let data = random_bytes(&mut rng, 2 * n);
        let mut up = PinnedBuffer::alloc(&device, 2 * n, false).unwrap();
        up.as_mut_slice().unwrap().copy_from_slice(&data);
        let mut dev = DeviceBuffer::alloc(&device, 3 * n).unwrap();
        busy_work(&s, &mut scratch, 40);
        let busy = Event::new(&device).unwrap();
        busy.record(&s).unwrap();
        stream_copies(&s, &mut up, &mut dev, n);
        // Had the second upload waited for the first, the busy work would be done.
        queued += usize::from(!busy.is_complete().unwrap());
        // Another stream: waits for both before it reads the buffer.
        t.copy_to_device(&mut up, 0, &mut dev, 2 * n, n).unwrap();
        assert!(
            busy.is_complete().unwrap(),
            "a copy on another stream did not wait"
        );
        // Host access waits for every copy: overwriting now must not reach the device.
        up.as_mut_slice().unwrap().fill(0);
        let mut down = PinnedBuffer::alloc(&device, 3 * n, false).unwrap();
        t.copy_to_host(&dev, 0, &mut down, 0, 3 * n).unwrap();
        let got = down.as_slice().unwrap();
        assert!(got[..2 * n] == data[..], "the uploads on one stream differ");
        assert!(
            got[2 * n..] == data[..n],
            "the upload on the other stream differs"
        );
    }
    assert!(
        queued > 0,
        "the busy work was too short to tell ({rounds} rounds)"
    );
}

/// Halves of `up` uploaded in reverse order on `s`, into `dev`'s first `2 n` bytes.
fn stream_copies(s: &Stream, up: &mut PinnedBuffer, dev: &mut DeviceBuffer, n: usize) {
    s.copy_to_device(up, n, dev, n, n).unwrap();
    s.copy_to_device(up, 0, dev, 0, n).unwrap();
}

#[test]
fn copies_out_of_bounds_are_errors_not_corruption() {
    let device = gpu_test_device!("copies_out_of_bounds_are_errors_not_corruption");
    let stream = Stream::new(&device).unwrap();
    let mut pinned = PinnedBuffer::alloc(&device, 16, false).unwrap();
    let mut dev = DeviceBuffer::alloc(&device, 8).unwrap();
    let e = stream
        .copy_to_device(&mut pinned, 0, &mut dev, 0, 16)
        .unwrap_err();
    assert!(matches!(e, CudaError::InvalidArgument(_)), "{e}");
    let e = stream.copy_to_host(&dev, 4, &mut pinned, 0, 5).unwrap_err();
    assert!(
        e.to_string()
            .contains("run past the end of a 8-byte buffer"),
        "{e}"
    );
    let e = ops::checksum_range(&stream, &dev, 8, 1).unwrap_err();
    assert!(matches!(e, CudaError::InvalidArgument(_)), "{e}");
}

#[test]
fn embedded_ptx_kernels_match_their_cpu_twins_on_random_input() {
    let device = gpu_test_device!("embedded_ptx_kernels_match_their_cpu_twins_on_random_input");
    let mut rng = rng("kernels");
    let stream = Stream::new(&device).unwrap();
    let mut sizes: Vec<usize> = vec![1, 2, 3, 4, 5, 1023, 1917 * 1079 * 3, 97 << 20];
    sizes.extend((0..8).map(|_| rng.random_range(1..5_000_000)));
    for n in sizes {
        let data = random_bytes(&mut rng, n);
        let mut buf = DeviceBuffer::alloc(&device, n).unwrap();
        stream.upload(&data, &mut buf, 0).unwrap();
        assert_eq!(
            ops::checksum(&stream, &buf).unwrap(),
            ops::checksum_host(&data),
            "checksum of {n} random bytes"
        );
        // Unaligned start and length take the byte-wise path of the kernel.
        let off = rng.random_range(0..n);
        let len = rng.random_range(0..=n - off);
        assert_eq!(
            ops::checksum_range(&stream, &buf, off, len).unwrap(),
            ops::checksum_host(&data[off..off + len]),
            "checksum of {len} bytes at offset {off} of {n}"
        );
    }
    for words in [1usize, 7, 1 << 20, 3_333_331] {
        let value: u32 = rng.random();
        let mut buf = DeviceBuffer::alloc(&device, words * 4).unwrap();
        stream.memset(&mut buf, 0x5A).unwrap();
        ops::fill_u32(&stream, &mut buf, value).unwrap();
        let mut host = vec![0u8; words * 4];
        stream.download(&buf, 0, &mut host).unwrap();
        assert!(
            host.chunks(4)
                .all(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]) == value),
            "fill of {words} words with {value:#x}"
        );
    }
    let mut odd = DeviceBuffer::alloc(&device, 10).unwrap();
    assert!(ops::fill_u32(&stream, &mut odd, 1).is_err());
}

#[test]
fn a_consumer_stream_sees_producer_writes_through_an_event_without_device_sync() {
    let device = gpu_test_device!(
        "a_consumer_stream_sees_producer_writes_through_an_event_without_device_sync"
    );
    let mut rng = rng("cross_stream");
    let producer = Stream::new(&device).unwrap();
    let consumer = Stream::new(&device).unwrap();
    let mut scratch = DeviceBuffer::alloc(&device, 512 << 20).unwrap();
    let n = 16 << 20;
    // Rounds in which the producer was still busy when the consumer was ordered after it.
    // Other tests' cuMemFree calls can stall this thread until the GPU idles, so not every
    // round exercises the ordering; every round must still read the right values.
    let mut exercised = 0;
    for round in 0..10 {
        let value: u32 = rng.random();
        let mut target = DeviceBuffer::alloc(&device, n).unwrap();
        ops::fill_u32(&consumer, &mut target, !value).unwrap();
        consumer.synchronize().unwrap();
        // The producer is busy for milliseconds before it writes `value`.
        busy_work(&producer, &mut scratch, 40);
        ops::fill_u32(&producer, &mut target, value).unwrap();
        let ready = Event::new(&device).unwrap();
        ready.record(&producer).unwrap();
        if !ready.is_complete().unwrap() {
            exercised += 1;
        }
        consumer.wait(&ready).unwrap();
        let mut copy = DeviceBuffer::alloc(&device, n).unwrap();
        consumer
            .copy_on_device(&target, 0, &mut copy, 0, n)
            .unwrap();
        let mut down = PinnedBuffer::alloc(&device, n, false).unwrap();
        consumer.copy_to_host(&copy, 0, &mut down, 0, n).unwrap();
        let host = down.as_slice().unwrap();
        let bad = host
            .chunks(4)
            .filter(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]) != value)
            .count();
        assert_eq!(bad, 0, "round {round}: consumer saw {bad} stale words");
    }
    assert!(
        exercised >= 3,
        "only {exercised} of 10 rounds had the producer still busy; the test proved too little"
    );
}

/// Nanoseconds the calling thread has run on a CPU (Linux's schedstat).
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

#[test]
fn with_blocking_sync_a_waiting_thread_sleeps_instead_of_spinning() {
    let device = gpu_test_device!("with_blocking_sync_a_waiting_thread_sleeps");
    let stream = Stream::new(&device).unwrap();
    let mut scratch = DeviceBuffer::alloc(&device, 256 << 20).unwrap();
    device.set_blocking_sync(true).unwrap();
    let mut measured = Vec::new();
    // Enqueueing blocks once the launch queue is full, so the wait measured is the queue's
    // tail: some milliseconds of work per round.
    for _ in 0..5 {
        busy_work(&stream, &mut scratch, 3000);
        let (t, cpu) = (std::time::Instant::now(), thread_cpu_ns());
        stream.synchronize().unwrap();
        let wall = t.elapsed().as_nanos() as u64;
        measured.push((wall, thread_cpu_ns() - cpu));
    }
    device.set_blocking_sync(false).unwrap();
    eprintln!("blocking sync: (wall ns, thread CPU ns) {measured:?}");
    let (wall, cpu) = measured.iter().fold((0, 0), |a, m| (a.0 + m.0, a.1 + m.1));
    assert!(
        wall > 5_000_000,
        "the GPU work was too short to tell: {measured:?}"
    );
    assert!(
        cpu * 4 < wall,
        "the waiting thread ran on a CPU: {measured:?}"
    );
    // The work itself is unaffected.
    ops::fill_u32(&stream, &mut scratch, 7).unwrap();
    let sum = ops::checksum(&stream, &scratch).unwrap();
    assert_eq!(sum, ops::checksum_host(&[7u8, 0, 0, 0].repeat(64 << 20)));
}

#[test]
fn timing_events_measure_gpu_work() {
    let device = gpu_test_device!("timing_events_measure_gpu_work");
    let stream = Stream::new(&device).unwrap();
    let mut scratch = DeviceBuffer::alloc(&device, 256 << 20).unwrap();
    let (start, end) = (
        Event::timing(&device).unwrap(),
        Event::timing(&device).unwrap(),
    );
    start.record(&stream).unwrap();
    busy_work(&stream, &mut scratch, 10);
    end.record(&stream).unwrap();
    let ms = start.elapsed_ms(&end).unwrap();
    // 10 x 256 MiB of writes: between 0.3 ms (8 TB/s) and 1 s.
    assert!(ms > 0.3 && ms < 1000.0, "{ms} ms");
    assert!(end.is_complete().unwrap());
}

#[test]
fn pools_reuse_buffers_with_no_allocation_after_warm_up_over_1000_iterations() {
    let device = gpu_test_device!(
        "pools_reuse_buffers_with_no_allocation_after_warm_up_over_1000_iterations"
    );
    let mut rng = rng("pool_reuse");
    let streams = [Stream::new(&device).unwrap(), Stream::new(&device).unwrap()];
    let dpool = DevicePool::new(&device, PoolConfig::unbounded("test device"));
    let ppool = PinnedPool::new(&device, PoolConfig::unbounded("test pinned"), true);
    // An image-loader-like mix: staging for JPEG bytes, a decoded image, a batch slot.
    let sizes = [90_000usize, 500 * 375 * 3, 3 * 224 * 224 * 2];
    let iteration = |i: usize, check: bool, rng: &mut StdRng| {
        let stream = &streams[i % 2];
        let mut staged = ppool.acquire(sizes[0]).unwrap();
        let data = random_bytes(rng, sizes[0]);
        staged.as_mut_slice().unwrap()[..sizes[0]].copy_from_slice(&data);
        let mut dev = dpool.acquire(sizes[0], stream).unwrap();
        stream
            .copy_to_device(&mut staged, 0, &mut *dev, 0, sizes[0])
            .unwrap();
        let mut img = dpool.acquire(sizes[1], stream).unwrap();
        let mut slot = dpool.acquire(sizes[2], stream).unwrap();
        stream
            .copy_on_device(&*dev, 0, &mut *img, 0, sizes[0])
            .unwrap();
        ops::fill_u32(stream, &mut *slot, i as u32).unwrap();
        if check {
            assert_eq!(
                ops::checksum_range(stream, &*img, 0, sizes[0]).unwrap(),
                ops::checksum_host(&data),
                "iteration {i}: data through pooled buffers"
            );
        }
    };
    for i in 0..10 {
        iteration(i, true, &mut rng);
    }
    let (d0, p0) = (dpool.stats(), ppool.stats());
    for i in 0..1000 {
        iteration(i, i % 97 == 0, &mut rng);
    }
    for s in &streams {
        s.synchronize().unwrap();
    }
    let (d1, p1) = (dpool.stats(), ppool.stats());
    assert_eq!(
        d1.allocations, d0.allocations,
        "device allocations after warm-up: {d0:?} -> {d1:?}"
    );
    assert_eq!(
        p1.allocations, p0.allocations,
        "pinned allocations after warm-up: {p0:?} -> {p1:?}"
    );
    assert_eq!(d1.reuses - d0.reuses, 3000);
    assert_eq!(p1.reuses - p0.reuses, 1000);
    assert_eq!(d1.high_water, d0.high_water);
    assert_eq!((d1.bytes_in_use, p1.bytes_in_use), (0, 0));
    eprintln!("device pool {d1:?}\npinned pool {p1:?}");
}

#[test]
fn a_pooled_buffer_moves_between_streams_ordered_by_its_fence() {
    let device = gpu_test_device!("a_pooled_buffer_moves_between_streams_ordered_by_its_fence");
    let mut rng = rng("fence");
    let (a, b) = (Stream::new(&device).unwrap(), Stream::new(&device).unwrap());
    let pool = DevicePool::new(&device, PoolConfig::unbounded("fence"));
    let mut scratch = DeviceBuffer::alloc(&device, 512 << 20).unwrap();
    let n = 8 << 20;
    for round in 0..5 {
        let value: u32 = rng.random();
        let mut buf = pool.acquire(n, &a).unwrap();
        let ptr = buf.device_ptr();
        busy_work(&a, &mut scratch, 20);
        ops::fill_u32(&a, &mut *buf, value).unwrap();
        drop(buf); // stream `a` is still working on it
        let buf = pool.acquire(n, &b).unwrap();
        assert_eq!(
            buf.device_ptr(),
            ptr,
            "round {round}: same class must reuse the buffer"
        );
        let mut host = vec![0u8; n];
        b.download(&*buf, 0, &mut host).unwrap();
        let bad = host
            .chunks(4)
            .filter(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]) != value)
            .count();
        assert_eq!(
            bad, 0,
            "round {round}: stream b read before stream a's writes landed"
        );
    }
}

#[test]
fn a_bounded_device_pool_returns_an_error_when_exhausted() {
    let device = gpu_test_device!("a_bounded_device_pool_returns_an_error_when_exhausted");
    let stream = Stream::new(&device).unwrap();
    let pool = DevicePool::new(&device, PoolConfig::bounded("bounded", 1 << 20));
    let a = pool.acquire(512 << 10, &stream).unwrap();
    let b = pool.acquire(512 << 10, &stream).unwrap();
    let err = pool.acquire(1, &stream).unwrap_err();
    assert!(
        matches!(
            err,
            CudaError::PoolExhausted {
                limit: 1_048_576,
                ..
            }
        ),
        "{err}"
    );
    drop(a);
    let c = pool.acquire(100_000, &stream).unwrap();
    assert!(pool.stats().bytes_held <= 1 << 20);
    drop((b, c));
    assert_eq!(pool.stats().bytes_in_use, 0);
}

#[test]
fn dlpack_export_describes_the_tensor_and_keeps_its_memory_alive() {
    use gm_cuda::dlpark::ffi::{DLDataTypeCode, DLDeviceType};
    let device = gpu_test_device!("dlpack_export_describes_the_tensor_and_keeps_its_memory_alive");
    let producer = Stream::new(&device).unwrap();
    let consumer = Stream::new(&device).unwrap();
    let pool = DevicePool::new(&device, PoolConfig::unbounded("dlpack"));
    for (dtype, code, bits) in [
        (DType::U8, DLDataTypeCode::UINT, 8),
        (DType::F16, DLDataTypeCode::FLOAT, 16),
        (DType::BF16, DLDataTypeCode::BFLOAT, 16),
        (DType::F32, DLDataTypeCode::FLOAT, 32),
    ] {
        let mut t = Tensor::empty(&pool, &producer, &[2, 3, 5, 7], dtype).unwrap();
        let ready = Arc::new(Event::new(&device).unwrap());
        ready.record(&producer).unwrap();
        t.set_ready_event(ready);
        let base = t.data_ptr();
        let dl = t.to_dlpack(Some(&consumer)).unwrap();
        let v = dl.validate().unwrap();
        assert_eq!(v.shape(), &[2, 3, 5, 7]);
        assert_eq!(v.strides(), Some(&[105i64, 35, 7, 1][..]));
        assert_eq!(v.dtype().code, code);
        assert_eq!(v.dtype().bits, bits);
        assert_eq!(v.dtype().lanes, 1);
        assert_eq!(v.device().device_type, DLDeviceType::CUDA);
        assert_eq!(v.device().device_id, device.ordinal() as i32);
        assert_eq!(v.data_ptr() as u64, base.0);
        assert_eq!(v.byte_offset(), 0);
        assert_eq!(dl.version().major, 1);
        // The export owns a reference: dropping the tensor keeps the buffer on loan.
        drop(t);
        assert_eq!(pool.stats().buffers_in_use, 1);
        drop(dl);
        assert_eq!(
            pool.stats().buffers_in_use,
            0,
            "the deleter returned the buffer"
        );
    }
    // A strided view (a horizontal flip of a 4x6 u8 image) exports its layout as is.
    let buf = DeviceBuffer::alloc(&device, 24).unwrap();
    let base = buf.device_ptr();
    let flipped = Tensor::with_layout(buf, 5, &[4, 6], &[6, -1], DType::U8).unwrap();
    assert!(!flipped.is_contiguous());
    let dl = flipped.to_dlpack_legacy(None).unwrap();
    let v = dl.validate().unwrap();
    assert_eq!(v.strides(), Some(&[6i64, -1][..]));
    assert_eq!(v.byte_offset(), 5);
    assert_eq!(v.data_ptr() as u64, base.0);
    // A layout past its storage is refused.
    let small = DeviceBuffer::alloc(&device, 23).unwrap();
    assert!(Tensor::new(small, &[4, 6], DType::U8).is_err());
}

#[test]
fn tensors_round_trip_and_wait_for_their_ready_event() {
    let device = gpu_test_device!("tensors_round_trip_and_wait_for_their_ready_event");
    let mut rng = rng("tensor");
    let producer = Stream::new(&device).unwrap();
    let consumer = Stream::new(&device).unwrap();
    let pool = DevicePool::new(&device, PoolConfig::unbounded("tensor"));
    let mut scratch = DeviceBuffer::alloc(&device, 256 << 20).unwrap();
    let shape = [3usize, 37, 53];
    let mut t = Tensor::empty(&pool, &producer, &shape, DType::F32).unwrap();
    let values: Vec<f32> = (0..t.numel()).map(|_| rng.random()).collect();
    let mut bytes = Vec::with_capacity(values.len() * 4);
    for v in &values {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    let mut staging = PinnedBuffer::alloc(&device, bytes.len(), true).unwrap();
    staging.as_mut_slice().unwrap().copy_from_slice(&bytes);
    busy_work(&producer, &mut scratch, 10);
    let mut dst = DeviceBuffer::alloc(&device, bytes.len()).unwrap();
    producer
        .copy_to_device(&mut staging, 0, &mut dst, 0, bytes.len())
        .unwrap();
    let t2 = {
        let mut t2 = Tensor::new(dst, &shape, DType::F32).unwrap();
        let ready = Arc::new(Event::new(&device).unwrap());
        ready.record(&producer).unwrap();
        t2.set_ready_event(ready);
        t2
    };
    // The consumer stream's read waits for the ready event (no host or device sync).
    assert_eq!(t2.to_host_bytes(&consumer).unwrap(), bytes);
    t.set_ready_event(Arc::new(Event::new(&device).unwrap()));
    assert_eq!(t.to_host_bytes(&consumer).unwrap().len(), bytes.len());
}

#[test]
fn launch_and_module_errors_name_the_kernel_and_module() {
    let device = gpu_test_device!("launch_and_module_errors_name_the_kernel_and_module");
    let stream = Stream::new(&device).unwrap();
    let module = device.module("gm_cuda.memops", ops::MEMOPS_PTX).unwrap();
    let again = device.module("gm_cuda.memops", ops::MEMOPS_PTX).unwrap();
    assert!(
        Arc::ptr_eq(&module, &again),
        "modules are cached per device"
    );
    let k = module.kernel("gm_fill_u32").unwrap();
    let buf = DeviceBuffer::alloc(&device, 4096).unwrap();
    let too_big = LaunchConfig {
        grid: (1, 1, 1),
        block: (4096, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: the arguments match gm_fill_u32; the launch is rejected before it runs.
    let err = unsafe { k.launch(&stream, too_big, (buf.device_ptr(), 1024u64, 7u32)) }.unwrap_err();
    assert!(err.to_string().contains("gm_fill_u32"), "{err}");
    let err = module.kernel("no_such_kernel").unwrap_err();
    assert!(err.to_string().contains("no_such_kernel"), "{err}");
    let err = device.module("broken", "this is not PTX").unwrap_err();
    assert!(matches!(err, CudaError::ModuleLoad { .. }), "{err}");
    assert!(err.to_string().contains("broken"), "{err}");
    // The device still works after the failures.
    assert_eq!(ops::checksum(&stream, &buf).map(|_| ()).ok(), Some(()));
}

#[test]
fn devices_are_shared_and_bad_ordinals_are_errors() {
    let device = gpu_test_device!("devices_are_shared_and_bad_ordinals_are_errors");
    let same = Device::new(0).unwrap();
    assert_eq!(device, same);
    let count = gm_cuda::available().unwrap();
    match Device::new(count) {
        Err(CudaError::NoSuchDevice { ordinal, count: c }) => {
            assert_eq!((ordinal, c), (count, count))
        }
        other => panic!("expected NoSuchDevice, got {other:?}"),
    }
    let info = device.info().unwrap();
    assert_eq!(info.name, device.name());
    assert!(info.total_memory > info.free_memory && info.free_memory > 0);
    assert!(info.multiprocessors > 0);
    assert!(
        info.driver_cuda_version.0 >= 12,
        "{:?}",
        info.driver_cuda_version
    );
}

#[test]
fn views_share_memory_and_are_bounds_checked() {
    let device = gpu_test_device!("views_share_memory_and_are_bounds_checked");
    let stream = Stream::new(&device).unwrap();
    let bytes: Vec<u8> = (0..=255u8).collect();
    let mut buf = DeviceBuffer::alloc(&device, bytes.len()).unwrap();
    stream.upload(&bytes, &mut buf, 0).unwrap();
    let whole = Tensor::new(buf, &[256], DType::U8).unwrap();
    let v = whole.view(100, &[3, 5], DType::U8).unwrap();
    assert_eq!(v.data_ptr().0, whole.data_ptr().0 + 100);
    assert_eq!(v.to_host_bytes(&stream).unwrap(), bytes[100..115]);
    // A view of a view counts from the view's start.
    let vv = v.view(5, &[1], DType::F32).unwrap();
    assert_eq!(vv.to_host_bytes(&stream).unwrap(), bytes[105..109]);
    assert!(whole.view(250, &[7], DType::U8).is_err());
    assert!(whole.view(usize::MAX, &[1], DType::U8).is_err());
}
