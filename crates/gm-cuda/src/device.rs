//! A CUDA device and its primary context.

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use cudarc::driver::{CudaContext, result, sys};
use parking_lot::Mutex;

use crate::driver;
use crate::entries::EntryModules;
use crate::error::{CudaError, DriverResultExt, Result};
use crate::module::{Kernel, Module};

/// One GPU, through its primary context, so that memory and streams interoperate with any other
/// CUDA user in the process (PyTorch, JAX, nvJPEG, NVDEC all use the primary context).
///
/// Cheap to clone; every clone refers to the same context. [`Device::new`] returns the same
/// context for the same ordinal while one is alive, so PTX modules are loaded once per process.
#[derive(Clone)]
pub struct Device {
    inner: Arc<DeviceInner>,
}

/// An entry point's module once loaded.
type EntrySlot = Arc<Mutex<Option<Arc<Module>>>>;

struct DeviceInner {
    ctx: Arc<CudaContext>,
    ordinal: usize,
    name: String,
    compute_capability: (u32, u32),
    modules: Mutex<HashMap<&'static str, Arc<Module>>>,
    /// Modules of one entry point each, by whole module and entry point; each behind a lock
    /// of its own, so that threads compile different entry points at once.
    entry_modules: Mutex<HashMap<(&'static str, &'static str), EntrySlot>>,
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device")
            .field("ordinal", &self.inner.ordinal)
            .field("name", &self.inner.name)
            .finish()
    }
}

impl PartialEq for Device {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}
impl Eq for Device {}

/// What a device is, as `gm info` prints it.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceInfo {
    /// Device ordinal.
    pub ordinal: usize,
    /// Marketing name, e.g. `NVIDIA H100 80GB HBM3`.
    pub name: String,
    /// Compute capability (major, minor).
    pub compute_capability: (u32, u32),
    /// Total device memory in bytes.
    pub total_memory: usize,
    /// Free device memory in bytes at the time of the call.
    pub free_memory: usize,
    /// Number of streaming multiprocessors.
    pub multiprocessors: u32,
    /// PCI bus id, `domain:bus:device`.
    pub pci_bus_id: String,
    /// The CUDA version the driver supports.
    pub driver_cuda_version: (u32, u32),
    /// The NVIDIA kernel driver version, where it can be read.
    pub nvidia_driver_version: Option<String>,
}

fn registry() -> &'static Mutex<Vec<Weak<DeviceInner>>> {
    static REGISTRY: std::sync::OnceLock<Mutex<Vec<Weak<DeviceInner>>>> =
        std::sync::OnceLock::new();
    REGISTRY.get_or_init(|| Mutex::new(Vec::new()))
}

impl Device {
    /// Opens device `ordinal`: retains its primary context and turns off cudarc's automatic
    /// event tracking (this crate orders work with explicit events).
    ///
    /// Returns an error, never panics, when there is no driver, no device or no such ordinal.
    pub fn new(ordinal: usize) -> Result<Device> {
        let count = driver::available()?;
        if ordinal >= count {
            return Err(CudaError::NoSuchDevice { ordinal, count });
        }
        let mut reg = registry().lock();
        reg.retain(|w| w.strong_count() > 0);
        if let Some(inner) = reg
            .iter()
            .filter_map(Weak::upgrade)
            .find(|d| d.ordinal == ordinal)
        {
            return Ok(Device { inner });
        }
        let ctx = CudaContext::new(ordinal)
            .during(|| format!("retaining the primary context of device {ordinal}"))?;
        // SAFETY: no CudaSlice of this context exists yet; all our memory is ordered explicitly.
        unsafe { ctx.disable_event_tracking() };
        let name = ctx.name().during(|| "cuDeviceGetName".into())?;
        let (major, minor) = ctx
            .compute_capability()
            .during(|| "reading the compute capability".into())?;
        let inner = Arc::new(DeviceInner {
            ctx,
            ordinal,
            name,
            compute_capability: (major.max(0) as u32, minor.max(0) as u32),
            modules: Mutex::new(HashMap::new()),
            entry_modules: Mutex::new(HashMap::new()),
        });
        reg.push(Arc::downgrade(&inner));
        tracing::debug!(ordinal, name = %inner.name, "opened CUDA device");
        Ok(Device { inner })
    }

    /// The device ordinal.
    pub fn ordinal(&self) -> usize {
        self.inner.ordinal
    }

    /// The device's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Compute capability (major, minor); 9.0 for H100 and H200.
    pub fn compute_capability(&self) -> (u32, u32) {
        self.inner.compute_capability
    }

    /// Makes this device's context current on the calling thread. Every call of this crate does
    /// it; call it yourself before handing raw pointers to another CUDA library.
    pub fn bind_to_thread(&self) -> Result<()> {
        self.inner.ctx.bind_to_thread().during(|| {
            format!(
                "making the context of device {} current",
                self.inner.ordinal
            )
        })
    }

    /// How host threads wait for this device's work, for the whole process (the primary
    /// context is shared with every CUDA library in it): `true` makes them sleep until the
    /// work is done, `false` restores the driver's default (spin while there are fewer
    /// contexts than cores, then yield). Sleeping costs a wake-up of some microseconds per
    /// wait and gives the cores that spinning burns to other threads: worth it where many host
    /// threads wait on the GPU while others need the cores (nvJPEG's CUDA backend).
    pub fn set_blocking_sync(&self, on: bool) -> Result<()> {
        let flags = if on {
            sys::CUctx_flags::CU_CTX_SCHED_BLOCKING_SYNC
        } else {
            sys::CUctx_flags::CU_CTX_SCHED_AUTO
        };
        self.inner
            .ctx
            .set_flags(flags)
            .during(|| format!("cuCtxSetFlags on device {}", self.inner.ordinal))
    }

    /// Keeps up to `bytes` of memory freed by stream-ordered frees (`cuMemFreeAsync`) in the
    /// device's default memory pool instead of returning it to the driver at the next
    /// synchronization, for the whole process. The driver's default, 0, makes every
    /// `cuMemAllocAsync` after a synchronizing step map fresh memory: frameworks that allocate
    /// per step from that pool (candle through cudarc) then pay for it at each step. PyTorch's
    /// caching allocator keeps its memory the same way.
    pub fn set_mempool_release_threshold(&self, bytes: u64) -> Result<()> {
        self.bind_to_thread()?;
        let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
        let mut value = bytes;
        // SAFETY: `pool` receives the device's default pool; the attribute takes a u64 by
        // pointer, which outlives the call.
        unsafe {
            sys::cuDeviceGetDefaultMemPool(&mut pool, self.inner.ctx.cu_device())
                .result()
                .during(|| "cuDeviceGetDefaultMemPool".into())?;
            sys::cuMemPoolSetAttribute(
                pool,
                sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                (&mut value as *mut u64).cast(),
            )
            .result()
            .during(|| "cuMemPoolSetAttribute(RELEASE_THRESHOLD)".into())
        }
    }

    /// Reads a device attribute.
    pub fn attribute(&self, attr: sys::CUdevice_attribute) -> Result<i32> {
        self.inner
            .ctx
            .attribute(attr)
            .during(|| format!("cuDeviceGetAttribute({attr:?})"))
    }

    /// Everything `gm info` reports about the device.
    pub fn info(&self) -> Result<DeviceInfo> {
        use sys::CUdevice_attribute as A;
        self.bind_to_thread()?;
        let (free, total) = result::mem_get_info().during(|| "cuMemGetInfo".into())?;
        let attr = |a| self.attribute(a).map(|v| v.max(0) as u32);
        let pci_bus_id = format!(
            "{:04x}:{:02x}:{:02x}",
            attr(A::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID)?,
            attr(A::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)?,
            attr(A::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)?
        );
        Ok(DeviceInfo {
            ordinal: self.ordinal(),
            name: self.name().to_owned(),
            compute_capability: self.compute_capability(),
            total_memory: total,
            free_memory: free,
            multiprocessors: attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
            pci_bus_id,
            driver_cuda_version: driver::driver_cuda_version()?,
            nvidia_driver_version: driver::nvidia_driver_version(),
        })
    }

    /// Waits for all work on the device. Tests and shutdown only: steady-state code orders
    /// work with events instead.
    pub fn synchronize(&self) -> Result<()> {
        self.inner
            .ctx
            .synchronize()
            .during(|| "cuCtxSynchronize".into())
    }

    /// The module `name` built from `ptx`, loaded on first use and cached for the device's
    /// lifetime.
    pub fn module(&self, name: &'static str, ptx: &'static str) -> Result<Arc<Module>> {
        let mut modules = self.inner.modules.lock();
        if let Some(m) = modules.get(name) {
            return Ok(m.clone());
        }
        let m = Arc::new(Module::load(self, name, ptx)?);
        modules.insert(name, m.clone());
        Ok(m)
    }

    /// Kernel `entry` of `ptx`, from a module holding that entry point alone (loaded on first
    /// use and cached for the device's lifetime), so that only the kernels a process launches
    /// are compiled (see [`EntryModules`]). Where the cut does not know `entry`, from the
    /// whole module.
    pub fn entry_kernel(&self, ptx: &'static EntryModules, entry: &str) -> Result<Kernel> {
        let Some(name) = ptx.entry_name(entry) else {
            tracing::debug!(
                module = ptx.name(),
                entry,
                "entry point not cut out; loading the whole module"
            );
            return self.module(ptx.name(), ptx.ptx())?.kernel(entry);
        };
        let slot = self
            .inner
            .entry_modules
            .lock()
            .entry((ptx.name(), name))
            .or_default()
            .clone();
        let mut loaded = slot.lock();
        let module = match &*loaded {
            Some(m) => m.clone(),
            None => {
                let text = ptx.module_text(name).unwrap_or_default();
                let m = Arc::new(Module::load(self, name, &text)?);
                *loaded = Some(m.clone());
                m
            }
        };
        drop(loaded);
        module.kernel(entry)
    }

    /// The raw primary context, for other CUDA libraries (NVDEC's context lock).
    pub fn raw_context(&self) -> sys::CUcontext {
        self.inner.ctx.cu_ctx()
    }

    pub(crate) fn context(&self) -> &Arc<CudaContext> {
        &self.inner.ctx
    }
}
