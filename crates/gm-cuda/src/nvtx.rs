//! NVTX ranges and stream names for Nsight Systems.
//!
//! With the `nvtx` feature the calls go to NVIDIA's NVTX (the `nvtx-sys` crate, which compiles
//! NVTX's own headers): they cost one indirect call while no tool is attached and show up in
//! an `nsys profile` timeline when one is. Without the feature every function here is empty and
//! [`Range`] is a zero-sized guard, so the library's hot paths carry their ranges for free.
//!
//! Names are `&'static CStr` so a range allocates nothing.

use std::ffi::CStr;
use std::marker::PhantomData;

use crate::Stream;

/// Whether this build emits NVTX ranges (the `nvtx` feature).
pub const ENABLED: bool = cfg!(feature = "nvtx");

/// A range on the calling thread's NVTX stack, popped when dropped.
///
/// Not `Send`: NVTX push/pop ranges belong to the thread that pushed them.
#[must_use = "the range ends when this guard is dropped"]
pub struct Range {
    _thread_bound: PhantomData<*const ()>,
}

/// Opens a range named `name` on this thread until the guard drops.
#[inline]
pub fn range(name: &'static CStr) -> Range {
    #[cfg(feature = "nvtx")]
    {
        let _ = nvtx_sys::range_push_ascii(name);
    }
    #[cfg(not(feature = "nvtx"))]
    let _ = name;
    Range {
        _thread_bound: PhantomData,
    }
}

impl Drop for Range {
    #[inline]
    fn drop(&mut self) {
        #[cfg(feature = "nvtx")]
        {
            let _ = nvtx_sys::range_pop();
        }
    }
}

/// A point event on this thread's timeline (a failure, a retry, a resize of a pool).
#[inline]
pub fn mark(name: &'static CStr) {
    #[cfg(feature = "nvtx")]
    nvtx_sys::mark_ascii(name);
    #[cfg(not(feature = "nvtx"))]
    let _ = name;
}

/// Names `stream` in the profiler's timeline, which otherwise shows only stream numbers.
#[inline]
pub fn name_stream(stream: &Stream, name: &CStr) {
    #[cfg(feature = "nvtx")]
    // SAFETY: the stream is alive for this call (borrowed); NVTX only records the handle as
    // a key and never dereferences it after returning.
    unsafe {
        nvtx_sys::name_custream_ascii(stream.raw().cast(), name)
    };
    #[cfg(not(feature = "nvtx"))]
    let _ = (stream, name);
}
