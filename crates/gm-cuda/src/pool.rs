//! Pools of device and pinned buffers, handed out by size class and reused, so that steady
//! state allocates nothing.
//!
//! A request is rounded up to its size class (quarter-octave steps: at most 25% waste) and
//! served from that class's free list, oldest returned first, or else freshly allocated. A
//! bounded pool first gives cached buffers of other classes back to the driver to make room and
//! returns [`CudaError::PoolExhausted`] when that is not enough: it never blocks waiting for a
//! buffer to come back, because the buffer it would wait for may be held by its own caller.
//!
//! Device buffers carry a fence: dropping a [`Pooled`] device buffer records an event on the
//! stream it was acquired for, and the next acquirer's stream waits on that event, so a buffer
//! can move between streams without any host synchronization.

use std::collections::{BTreeMap, VecDeque};
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::device::Device;
use crate::error::{CudaError, Result};
use crate::memory::{DeviceBuffer, DeviceMemory, DevicePtr, PinnedBuffer};
use crate::stream::{Event, Stream};

/// Smallest size class; requests below it share one class.
pub const MIN_CLASS: usize = 512;

/// The size class (bytes actually allocated) for a request of `bytes`: the next multiple of a
/// quarter of the largest power of two not above `bytes`, and at least [`MIN_CLASS`].
pub fn size_class(bytes: usize) -> usize {
    if bytes <= MIN_CLASS {
        return MIN_CLASS;
    }
    let step = (1usize << (usize::BITS - 1 - bytes.leading_zeros())) / 4;
    bytes.div_ceil(step).saturating_mul(step)
}

/// How a pool is sized.
#[derive(Debug, Clone)]
pub struct PoolConfig {
    /// Name used in errors and logs.
    pub name: &'static str,
    /// Most bytes the pool may hold (in use plus cached); `None` for unbounded.
    pub limit_bytes: Option<usize>,
}

impl PoolConfig {
    /// An unbounded pool.
    pub fn unbounded(name: &'static str) -> Self {
        PoolConfig {
            name,
            limit_bytes: None,
        }
    }

    /// A pool holding at most `limit_bytes`.
    pub fn bounded(name: &'static str, limit_bytes: usize) -> Self {
        PoolConfig {
            name,
            limit_bytes: Some(limit_bytes),
        }
    }
}

/// What a pool has done so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Buffers obtained from the driver.
    pub allocations: u64,
    /// Requests served by a cached buffer.
    pub reuses: u64,
    /// Cached buffers given back to the driver (to make room, or by `trim`).
    pub releases: u64,
    /// Bytes of all buffers the pool owns, handed out or cached.
    pub bytes_held: usize,
    /// Bytes of buffers currently handed out.
    pub bytes_in_use: usize,
    /// The largest `bytes_held` so far.
    pub high_water: usize,
    /// Buffers currently handed out.
    pub buffers_in_use: usize,
    /// Buffers cached for reuse.
    pub buffers_free: usize,
    /// Buffers handed over for good ([`Pooled::detach`]): another owner frees them.
    pub detached: u64,
}

/// A buffer the pool can size.
pub trait PoolBuffer: Send + 'static {
    /// Capacity in bytes.
    fn capacity(&self) -> usize;
}

impl PoolBuffer for DeviceBuffer {
    fn capacity(&self) -> usize {
        self.len()
    }
}

impl PoolBuffer for PinnedBuffer {
    fn capacity(&self) -> usize {
        self.len()
    }
}

/// Stream-ordering state of a pooled device buffer.
struct Fence {
    event: Event,
    stream: Option<Stream>,
}

struct Slot<B> {
    buf: B,
    fence: Option<Fence>,
}

type AllocFn<B> = Box<dyn Fn(usize) -> Result<B> + Send + Sync>;

struct Core<B> {
    name: &'static str,
    limit: Option<usize>,
    alloc: AllocFn<B>,
    state: Mutex<State<B>>,
}

struct State<B> {
    free: BTreeMap<usize, VecDeque<Slot<B>>>,
    stats: PoolStats,
}

impl<B: PoolBuffer> Core<B> {
    fn new(config: PoolConfig, alloc: AllocFn<B>) -> Arc<Self> {
        Arc::new(Core {
            name: config.name,
            limit: config.limit_bytes,
            alloc,
            state: Mutex::new(State {
                free: BTreeMap::new(),
                stats: PoolStats::default(),
            }),
        })
    }

    fn take(self: &Arc<Self>, bytes: usize) -> Result<Pooled<B>> {
        let class = size_class(bytes);
        let mut evicted = Vec::new();
        {
            let mut st = self.state.lock();
            if let Some(slot) = st.free.get_mut(&class).and_then(VecDeque::pop_front) {
                st.stats.reuses += 1;
                st.stats.buffers_free -= 1;
                st.stats.buffers_in_use += 1;
                st.stats.bytes_in_use += class;
                return Ok(self.handle(slot, class, bytes));
            }
            if let Some(limit) = self.limit {
                // Give back cached buffers of other classes, largest first, until it fits.
                while st.stats.bytes_held + class > limit {
                    let Some(slot) = pop_largest(&mut st.free) else {
                        break;
                    };
                    st.stats.bytes_held -= slot.buf.capacity();
                    st.stats.buffers_free -= 1;
                    st.stats.releases += 1;
                    evicted.push(slot);
                }
                if st.stats.bytes_held + class > limit {
                    return Err(CudaError::PoolExhausted {
                        pool: self.name,
                        requested: class,
                        in_use: st.stats.bytes_in_use,
                        limit,
                    });
                }
            }
            // Reserve before unlocking so concurrent requests cannot overshoot the limit.
            st.stats.bytes_held += class;
            st.stats.bytes_in_use += class;
            st.stats.buffers_in_use += 1;
            st.stats.high_water = st.stats.high_water.max(st.stats.bytes_held);
        }
        drop(evicted);
        let buf = match (self.alloc)(class) {
            Ok(buf) => Ok(buf),
            Err(first) => {
                // Out of memory is often cured by giving back what we cache.
                if self.trim() > 0 {
                    (self.alloc)(class)
                } else {
                    Err(first)
                }
            }
        };
        let buf = buf.map_err(|e| {
            e.needed_by(|| format!("a {class}-byte buffer of the `{}` pool", self.name))
        });
        let mut st = self.state.lock();
        match buf {
            Ok(buf) => {
                st.stats.allocations += 1;
                Ok(self.handle(Slot { buf, fence: None }, class, bytes))
            }
            Err(e) => {
                st.stats.bytes_held -= class;
                st.stats.bytes_in_use -= class;
                st.stats.buffers_in_use -= 1;
                Err(e)
            }
        }
    }

    fn handle(self: &Arc<Self>, slot: Slot<B>, class: usize, requested: usize) -> Pooled<B> {
        Pooled {
            slot: Some(slot),
            class,
            requested,
            core: self.clone(),
        }
    }

    fn give_back(&self, slot: Slot<B>, class: usize) {
        let mut st = self.state.lock();
        st.stats.bytes_in_use -= class;
        st.stats.buffers_in_use -= 1;
        st.stats.buffers_free += 1;
        st.free.entry(class).or_default().push_back(slot);
    }

    /// Frees every cached buffer; returns how many.
    fn trim(&self) -> usize {
        let evicted: Vec<Slot<B>> = {
            let mut st = self.state.lock();
            let all: Vec<Slot<B>> = std::mem::take(&mut st.free)
                .into_values()
                .flatten()
                .collect();
            for slot in &all {
                st.stats.bytes_held -= slot.buf.capacity();
            }
            st.stats.buffers_free = 0;
            st.stats.releases += all.len() as u64;
            all
        };
        evicted.len()
    }

    fn stats(&self) -> PoolStats {
        self.state.lock().stats
    }
}

fn pop_largest<B>(free: &mut BTreeMap<usize, VecDeque<Slot<B>>>) -> Option<Slot<B>> {
    loop {
        let mut entry = free.last_entry()?;
        if let Some(slot) = entry.get_mut().pop_front() {
            return Some(slot);
        }
        entry.remove();
    }
}

/// A buffer on loan from a pool; dropping it gives it back.
pub struct Pooled<B: PoolBuffer> {
    slot: Option<Slot<B>>,
    class: usize,
    requested: usize,
    core: Arc<Core<B>>,
}

impl<B: PoolBuffer> Pooled<B> {
    /// The size that was asked for; the buffer itself may be larger (its size class).
    pub fn requested_len(&self) -> usize {
        self.requested
    }

    fn slot(&self) -> &Slot<B> {
        // The slot is only taken out in Drop.
        self.slot
            .as_ref()
            .unwrap_or_else(|| unreachable!("pooled buffer used after drop"))
    }

    fn slot_mut(&mut self) -> &mut Slot<B> {
        self.slot
            .as_mut()
            .unwrap_or_else(|| unreachable!("pooled buffer used after drop"))
    }
}

impl<B: PoolBuffer> Pooled<B> {
    /// Takes the buffer out of the pool for good: the pool forgets it (its bytes leave
    /// `bytes_held` and `bytes_in_use`, `detached` counts it) and the caller owns it. For
    /// handing memory to a framework that frees it itself; the pool allocates a replacement
    /// when next asked. Work still queued on the buffer is the new owner's to order after.
    pub fn detach(mut self) -> B {
        let slot = self
            .slot
            .take()
            .unwrap_or_else(|| unreachable!("pooled buffer detached after drop"));
        let mut st = self.core.state.lock();
        st.stats.bytes_in_use -= self.class;
        st.stats.bytes_held -= self.class;
        st.stats.buffers_in_use -= 1;
        st.stats.detached += 1;
        slot.buf
    }
}

impl<B: PoolBuffer> Deref for Pooled<B> {
    type Target = B;
    fn deref(&self) -> &B {
        &self.slot().buf
    }
}

impl<B: PoolBuffer> DerefMut for Pooled<B> {
    fn deref_mut(&mut self) -> &mut B {
        &mut self.slot_mut().buf
    }
}

impl<B: PoolBuffer> Drop for Pooled<B> {
    fn drop(&mut self) {
        let Some(slot) = self.slot.take() else {
            return;
        };
        if let Some(Fence {
            event,
            stream: Some(stream),
        }) = &slot.fence
            && let Err(e) = event.record(stream)
        {
            // Without the fence the next user could race pending work: free the buffer
            // instead of caching it.
            tracing::error!(pool = self.core.name, error = %e, "could not fence a returned buffer; freeing it");
            let mut st = self.core.state.lock();
            st.stats.bytes_in_use -= self.class;
            st.stats.bytes_held -= self.class;
            st.stats.buffers_in_use -= 1;
            st.stats.releases += 1;
            return;
        }
        self.core.give_back(slot, self.class);
    }
}

impl<B: PoolBuffer> std::fmt::Debug for Pooled<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pooled")
            .field("pool", &self.core.name)
            .field("class", &self.class)
            .field("requested", &self.requested)
            .finish()
    }
}

impl DeviceMemory for Pooled<DeviceBuffer> {
    fn device_ptr(&self) -> DevicePtr {
        (**self).device_ptr()
    }
    fn byte_len(&self) -> usize {
        (**self).len()
    }
}

/// A device buffer on loan from a [`DevicePool`].
pub type PooledDeviceBuffer = Pooled<DeviceBuffer>;
/// A pinned buffer on loan from a [`PinnedPool`].
pub type PooledPinnedBuffer = Pooled<PinnedBuffer>;

/// A pool of device memory.
#[derive(Clone)]
pub struct DevicePool {
    core: Arc<Core<DeviceBuffer>>,
    device: Device,
}

impl DevicePool {
    /// An empty pool on `device`.
    pub fn new(device: &Device, config: PoolConfig) -> DevicePool {
        let d = device.clone();
        DevicePool {
            core: Core::new(
                config,
                Box::new(move |bytes| DeviceBuffer::alloc(&d, bytes)),
            ),
            device: device.clone(),
        }
    }

    /// A buffer of at least `bytes`, ready for use on `stream`: if its previous user worked on
    /// another stream, `stream` waits (on the device) for that work.
    pub fn acquire(&self, bytes: usize, stream: &Stream) -> Result<PooledDeviceBuffer> {
        let mut buf = self.core.take(bytes)?;
        let slot = buf.slot_mut();
        match &mut slot.fence {
            Some(fence) => {
                let same = fence
                    .stream
                    .as_ref()
                    .is_some_and(|s| s.raw() == stream.raw());
                if !same {
                    stream.wait(&fence.event)?;
                }
                fence.stream = Some(stream.clone());
            }
            None => {
                slot.fence = Some(Fence {
                    event: Event::new(&self.device)?,
                    stream: Some(stream.clone()),
                });
            }
        }
        Ok(buf)
    }

    /// Counters so far.
    pub fn stats(&self) -> PoolStats {
        self.core.stats()
    }

    /// Frees every cached buffer; returns how many.
    pub fn trim(&self) -> usize {
        self.core.trim()
    }
}

/// A pool of pinned host memory (upload staging, download targets).
#[derive(Clone)]
pub struct PinnedPool {
    core: Arc<Core<PinnedBuffer>>,
}

impl PinnedPool {
    /// An empty pool; `write_combined` for buffers the host only writes.
    pub fn new(device: &Device, config: PoolConfig, write_combined: bool) -> PinnedPool {
        let d = device.clone();
        PinnedPool {
            core: Core::new(
                config,
                Box::new(move |bytes| PinnedBuffer::alloc(&d, bytes, write_combined)),
            ),
        }
    }

    /// A buffer of at least `bytes`. Its host access waits for copies its previous user left
    /// in flight.
    pub fn acquire(&self, bytes: usize) -> Result<PooledPinnedBuffer> {
        self.core.take(bytes)
    }

    /// Counters so far.
    pub fn stats(&self) -> PoolStats {
        self.core.stats()
    }

    /// Frees every cached buffer; returns how many.
    pub fn trim(&self) -> usize {
        self.core.trim()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Host memory standing in for device memory, to test the bookkeeping without a GPU;
    /// `live` counts the bytes currently allocated, like the device would.
    struct HostBuf(Vec<u8>, Arc<AtomicUsize>);
    impl PoolBuffer for HostBuf {
        fn capacity(&self) -> usize {
            self.0.len()
        }
    }
    impl Drop for HostBuf {
        fn drop(&mut self) {
            self.1.fetch_sub(self.0.len(), Ordering::SeqCst);
        }
    }

    /// A pool over host memory; allocations fail past `device_bytes`, as cuMemAlloc would.
    fn host_pool(
        limit: Option<usize>,
        device_bytes: Option<usize>,
    ) -> (Arc<Core<HostBuf>>, Arc<AtomicUsize>) {
        let live = Arc::new(AtomicUsize::new(0));
        let l = live.clone();
        let core = Core::new(
            PoolConfig {
                name: "test",
                limit_bytes: limit,
            },
            Box::new(move |bytes| {
                let held = l.load(Ordering::SeqCst);
                if device_bytes.is_some_and(|max| held + bytes > max) {
                    return Err(CudaError::OutOfMemory {
                        what: "a device buffer".into(),
                        bytes,
                        pinned: false,
                        free: device_bytes.unwrap_or(0) - held,
                        total: device_bytes.unwrap_or(0),
                    });
                }
                l.fetch_add(bytes, Ordering::SeqCst);
                Ok(HostBuf(vec![0; bytes], l.clone()))
            }),
        );
        (core, live)
    }

    #[test]
    fn size_classes_round_up_by_at_most_a_quarter() {
        assert_eq!(size_class(0), MIN_CLASS);
        assert_eq!(size_class(512), 512);
        assert_eq!(size_class(513), 640);
        assert_eq!(size_class(1024), 1024);
        assert_eq!(size_class(1025), 1280);
        assert_eq!(size_class(224 * 224 * 3), 163_840);
    }

    proptest! {
        #[test]
        fn size_class_is_monotonic_and_tight(a in 0usize..1 << 40, b in 0usize..1 << 40) {
            let ca = size_class(a);
            prop_assert!(ca >= a);
            prop_assert!(ca <= (a + a / 4).max(MIN_CLASS) + 1);
            prop_assert_eq!(size_class(ca), ca, "a class is its own class");
            if a <= b { prop_assert!(ca <= size_class(b)); }
        }
    }

    #[test]
    fn a_detached_buffer_leaves_the_pool_and_is_replaced() {
        let (core, live) = host_pool(Some(1 << 20), None);
        let a = core.take(4096).unwrap();
        drop(core.take(4096).unwrap()); // one cached buffer of the class
        let owned = a.detach();
        let s = core.stats();
        assert_eq!((s.detached, s.buffers_in_use, s.buffers_free), (1, 0, 1));
        assert_eq!((s.bytes_held, s.bytes_in_use), (4096, 0));
        // The new owner holds the memory; the pool never hands it out or frees it.
        assert_eq!(live.load(Ordering::SeqCst), 8192);
        let (b, c) = (core.take(4096).unwrap(), core.take(4096).unwrap());
        assert_eq!(
            core.stats().allocations,
            3,
            "the detached buffer was replaced"
        );
        assert_eq!(core.stats().reuses, 1);
        drop((b, c));
        assert_eq!(live.load(Ordering::SeqCst), 3 * 4096);
        drop(owned);
        assert_eq!(live.load(Ordering::SeqCst), 2 * 4096);
        assert_eq!(core.stats().bytes_held, 2 * 4096);
    }

    #[test]
    fn steady_state_reuses_and_allocates_nothing() {
        let (core, _) = host_pool(None, None);
        let sizes = [1000usize, 150_528, 37, 150_000, 4096];
        for _ in 0..3 {
            let held: Vec<_> = sizes.iter().map(|&s| core.take(s).unwrap()).collect();
            drop(held);
        }
        let warm = core.stats();
        // 150_000 and 150_528 share a class but are held at once, so each has its own buffer.
        assert_eq!(size_class(150_000), size_class(150_528));
        assert_eq!(warm.allocations, sizes.len() as u64);
        for i in 0..1000 {
            let a = core.take(sizes[i % sizes.len()]).unwrap();
            let b = core.take(sizes[(i + 1) % sizes.len()]).unwrap();
            assert!(a.capacity() >= a.requested_len());
            drop((a, b));
        }
        let after = core.stats();
        assert_eq!(after.allocations, warm.allocations);
        assert_eq!(after.reuses, warm.reuses + 2000);
        assert_eq!(after.bytes_in_use, 0);
        assert_eq!(after.buffers_in_use, 0);
        assert_eq!(after.high_water, warm.high_water);
    }

    #[test]
    fn bounded_pool_errors_instead_of_blocking() {
        let (core, _) = host_pool(Some(4096), None);
        let a = core.take(2048).unwrap();
        let b = core.take(2048).unwrap();
        let err = core.take(512).unwrap_err();
        match &err {
            CudaError::PoolExhausted {
                requested,
                in_use,
                limit,
                ..
            } => {
                assert_eq!((*requested, *in_use, *limit), (512, 4096, 4096));
            }
            other => panic!("wrong error: {other}"),
        }
        assert!(err.to_string().contains("test pool exhausted"));
        drop(a);
        // The cached 2048-byte buffer is given back to make room for another class.
        let c = core.take(1024).unwrap();
        let s = core.stats();
        assert_eq!(s.releases, 1);
        assert_eq!(s.bytes_held, 2048 + 1024);
        assert!(s.high_water <= 4096);
        drop((b, c));
    }

    #[test]
    fn allocation_failure_trims_the_cache_and_retries() {
        let (core, live) = host_pool(None, Some(8192));
        drop(core.take(4096).unwrap());
        drop(core.take(2048).unwrap());
        assert_eq!(live.load(Ordering::SeqCst), 6144, "both cached");
        let big = core.take(8192).unwrap();
        let s = core.stats();
        assert_eq!((s.allocations, s.releases), (3, 2));
        assert_eq!((s.bytes_held, s.bytes_in_use), (8192, 8192));
        assert_eq!(live.load(Ordering::SeqCst), 8192);
        // Nothing left to give back: the driver's error comes through and the books balance.
        // It says which pool's buffer needed how much, and how to need less.
        let err = core.take(512).unwrap_err();
        assert!(err.is_out_of_memory());
        assert_eq!(
            err.to_string(),
            "out of GPU memory: a 512-byte buffer of the `test` pool needs 512 bytes but 0 bytes \
             of the GPU's 8192 bytes are free (other processes and gm's own pools and caches hold \
             the rest); lower the batch size or output size, the number of workers, GPU stages \
             or decode sessions, or the device cache, or free memory elsewhere"
        );
        let s = core.stats();
        assert_eq!(
            (s.bytes_held, s.bytes_in_use, s.buffers_in_use),
            (8192, 8192, 1)
        );
        drop(big);
        assert_eq!(core.trim(), 1);
        assert_eq!(live.load(Ordering::SeqCst), 0);
        assert_eq!(core.stats().bytes_held, 0);
    }

    #[test]
    fn concurrent_takers_never_pass_the_limit() {
        let (core, live) = host_pool(Some(64 * 1024), None);
        std::thread::scope(|s| {
            for t in 0..8 {
                let core = core.clone();
                let live = live.clone();
                s.spawn(move || {
                    for i in 0..500 {
                        let bytes = 512 << ((t + i) % 5);
                        if let Ok(b) = core.take(bytes) {
                            assert!(live.load(Ordering::SeqCst) <= 64 * 1024);
                            drop(b);
                        }
                    }
                });
            }
        });
        let s = core.stats();
        assert!(s.high_water <= 64 * 1024);
        assert_eq!((s.bytes_in_use, s.buffers_in_use), (0, 0));
        assert_eq!(s.bytes_held, live.load(Ordering::SeqCst));
    }
}
