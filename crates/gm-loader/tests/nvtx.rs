//! With the `nvtx` feature, the loader's phases show up as NVTX ranges and its streams get
//! names. This test binary links a static NVTX injection, the entry point Nsight tools use
//! (`InitializeInjectionNvtx2_fnptr`), which records every range pushed and popped and every
//! stream named; then it runs epochs and checks what a profiler would have seen.
//!
//! `cargo test -p gm-loader --features nvtx --test nvtx` (CI runs it on the CPU path; the GPU
//! bundle is built with the feature and runs it on the GPU path).
#![cfg(feature = "nvtx")]
#![allow(clippy::unwrap_used, unsafe_code, missing_docs)]

#[path = "pipeline/common.rs"]
mod common;

use std::cell::Cell;
use std::collections::BTreeMap;
use std::ffi::{CStr, c_char, c_int, c_uint, c_void};

use common::*;
use gm_loader::{BadSamplePolicy, Dataset, InMemory, Loader, LoaderBuilder};
use parking_lot::Mutex;

/// `NvtxFunctionPointer`: a slot NVTX calls through, cast to each callback's real type.
type Slot = *const c_void;

/// `NvtxExportTableCallbacks` (nvtxTypes.h).
#[repr(C)]
struct ExportTableCallbacks {
    struct_size: usize,
    get_module_function_table:
        unsafe extern "C" fn(module: c_int, table: *mut *mut *mut Slot, size: *mut c_uint) -> c_int,
}

const ETID_CALLBACKS: u32 = 1;
const MODULE_CORE: c_int = 1;
const MODULE_CUDA: c_int = 2;
const CORE_MARK_A: usize = 2;
const CORE_RANGE_PUSH_A: usize = 9;
const CORE_RANGE_POP: usize = 11;
const CUDA_NAME_STREAM_A: usize = 5;

#[derive(Default)]
struct Seen {
    pushed: BTreeMap<String, usize>,
    marks: Vec<String>,
    streams: BTreeMap<String, usize>,
    pops: usize,
    unbalanced_pops: usize,
}

static SEEN: Mutex<Option<Seen>> = Mutex::new(None);

thread_local! {
    static DEPTH: Cell<i64> = const { Cell::new(0) };
}

fn record(f: impl FnOnce(&mut Seen)) {
    f(SEEN.lock().get_or_insert_with(Seen::default));
}

fn text(s: *const c_char) -> String {
    // SAFETY: NVTX passes the caller's NUL-terminated string, alive for the call.
    unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
}

unsafe extern "C" fn range_push(message: *const c_char) -> c_int {
    let name = text(message);
    record(|s| *s.pushed.entry(name).or_default() += 1);
    DEPTH.with(|d| {
        d.set(d.get() + 1);
        (d.get() - 1) as c_int
    })
}

unsafe extern "C" fn range_pop() -> c_int {
    let depth = DEPTH.with(|d| {
        d.set(d.get() - 1);
        d.get()
    });
    record(|s| {
        s.pops += 1;
        s.unbalanced_pops += usize::from(depth < 0);
    });
    depth as c_int
}

unsafe extern "C" fn mark(message: *const c_char) {
    let name = text(message);
    record(|s| s.marks.push(name));
}

unsafe extern "C" fn name_stream(_stream: *mut c_void, name: *const c_char) {
    let name = text(name);
    record(|s| *s.streams.entry(name).or_default() += 1);
}

/// Points the slots of `module`'s table at our callbacks.
///
/// # Safety
/// `callbacks` is NVTX's export table.
unsafe fn attach(callbacks: &ExportTableCallbacks, module: c_int, slots: &[(usize, Slot)]) -> bool {
    let (mut table, mut size): (*mut *mut Slot, c_uint) = (std::ptr::null_mut(), 0);
    // SAFETY: NVTX's own function, with out-parameters.
    if unsafe { (callbacks.get_module_function_table)(module, &mut table, &mut size) } == 0 {
        return false;
    }
    for &(id, f) in slots {
        if id >= size as usize {
            return false;
        }
        // SAFETY: `table` has `size` entries, each the address of one function-pointer slot.
        unsafe { **table.add(id) = f };
    }
    true
}

unsafe extern "C" fn initialize(
    get_export_table: unsafe extern "C" fn(u32) -> *const c_void,
) -> c_int {
    // SAFETY: NVTX returns its callbacks table for this id, alive for the process.
    let callbacks = unsafe { &*(get_export_table(ETID_CALLBACKS) as *const ExportTableCallbacks) };
    let core = [
        (CORE_MARK_A, mark as Slot),
        (CORE_RANGE_PUSH_A, range_push as Slot),
        (CORE_RANGE_POP, range_pop as Slot),
    ];
    // SAFETY: the table NVTX handed us; our callbacks have the slots' C signatures.
    let ok = unsafe {
        attach(callbacks, MODULE_CORE, &core)
            && attach(
                callbacks,
                MODULE_CUDA,
                &[(CUDA_NAME_STREAM_A, name_stream as Slot)],
            )
    };
    c_int::from(ok)
}

/// The static injection NVTX looks for before `NVTX_INJECTION64_PATH`: this strong symbol
/// replaces NVTX's weak null one.
#[unsafe(no_mangle)]
pub static InitializeInjectionNvtx2_fnptr: unsafe extern "C" fn(
    unsafe extern "C" fn(u32) -> *const c_void,
) -> c_int = initialize;

fn take_seen() -> Seen {
    SEEN.lock().take().unwrap_or_default()
}

fn pushed(s: &Seen, name: &str) -> usize {
    s.pushed.get(name).copied().unwrap_or(0)
}

/// The demo photos three times and one file that is not an image.
fn photos_and_garbage() -> InMemory {
    let good = photos(3);
    let mut samples: Vec<_> = (0..good.len())
        .map(|i| {
            let mut b = Vec::new();
            good.read(i, &mut b).unwrap();
            (good.name(i), b, good.label(i))
        })
        .collect();
    samples.insert(5, ("garbage.jpg".into(), b"not an image".to_vec(), 0));
    InMemory::new(samples)
}

/// One epoch in batches of 4: the ranges every loader pushes, once per batch, and a mark
/// for the bad sample.
fn check_epoch(place: impl Fn(LoaderBuilder) -> LoaderBuilder) -> (Seen, gm_loader::Stats) {
    let _ = take_seen();
    let mut loader = place(Loader::builder(photos_and_garbage()))
        .batch_size(4)
        .workers(2)
        .bad_samples(BadSamplePolicy::Skip)
        .transforms(train_chain(32))
        .build()
        .unwrap();
    let mut batches = 0;
    for b in loader.epoch(0) {
        b.unwrap();
        batches += 1;
    }
    let stats = loader.stats();
    drop(loader);
    let seen = take_seen();
    assert!(batches >= 2, "{batches} batches");
    const { assert!(gm_cuda::nvtx::ENABLED) };
    for name in ["gm-loader: read batch", "gm-loader: stage runs batch"] {
        assert_eq!(pushed(&seen, name), batches, "{name}: {:?}", seen.pushed);
    }
    // The consumer waits at least once (the first batch is never ready at once) and at most
    // once per batch.
    let waits = pushed(&seen, "gm-loader: consumer waits for a batch");
    assert!(
        (1..=batches).contains(&waits),
        "{waits} waits: {:?}",
        seen.pushed
    );
    assert_eq!(
        seen.marks,
        ["gm-loader: bad sample"],
        "one bad sample, one mark"
    );
    let total: usize = seen.pushed.values().sum();
    assert_eq!(
        seen.pops, total,
        "every range pushed was popped: {:?}",
        seen.pushed
    );
    assert_eq!(seen.unbalanced_pops, 0);
    (seen, stats)
}

#[test]
fn the_loaders_phases_are_nvtx_ranges() {
    let (seen, _) = check_epoch(|b| b.cpu());
    assert_eq!(
        pushed(&seen, "gm-loader: decode batch"),
        0,
        "no GPU decoding on the CPU path"
    );

    let Some(device) = gm_cuda::testing::device_or_skip("NVTX ranges on the GPU") else {
        return;
    };
    let (seen, stats) = check_epoch(move |b| b.device(&device).gpu_stages(2));
    let batches = pushed(&seen, "gm-loader: stage runs batch");
    for name in [
        "gm-loader: decode batch",
        "gm-codec: plan JPEG batch",
        "gm-loader: launch fused transform",
    ] {
        assert_eq!(pushed(&seen, name), batches, "{name}: {:?}", seen.pushed);
    }
    // Each decoder path that decoded images shows its own range.
    if stats.paths.hardware > 0 {
        assert!(
            pushed(&seen, "nvJPEG engines: batch") > 0,
            "{:?}",
            seen.pushed
        );
    }
    if stats.paths.cuda > 0 {
        assert!(
            pushed(&seen, "nvJPEG CUDA backend: worker") > 0,
            "{:?}",
            seen.pushed
        );
        assert!(
            pushed(&seen, "nvJPEG CUDA backend: host phase and enqueue") as u64 >= stats.paths.cuda,
            "{:?}",
            seen.pushed
        );
    }
    // Every stage's decoder stream, named as it was created.
    assert!(
        seen.streams
            .get("gm-codec: JPEG batches")
            .copied()
            .unwrap_or(0)
            >= 2,
        "{:?}",
        seen.streams
    );
    if stats.paths.cuda > 0 {
        assert!(
            seen.streams.contains_key("nvJPEG CUDA backend"),
            "{:?}",
            seen.streams
        );
    }
    eprintln!(
        "NVTX on the GPU: {} ranges over {batches} batches, streams {:?}, paths {:?}",
        seen.pops, seen.streams, stats.paths
    );
}
