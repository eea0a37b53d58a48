//! The storage layer's own tokio runtime, so that synchronous loader threads (and threads
//! inside a user's runtime, where `Runtime::block_on` panics) can wait on requests.

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::runtime::{Handle, Runtime};

/// The runtime and the process that built it: a forked child (a Python DataLoader worker)
/// must not use its parent's threads, which do not exist in the child.
static RUNTIME: Mutex<Option<(u32, Arc<Runtime>)>> = Mutex::new(None);

/// Two I/O threads by default: the work is waiting on sockets, and loader threads do the CPU
/// work. [`IO_THREADS_VAR`] sets another count (streaming shards at 1 GB/s and more copies the
/// bodies on these threads).
const WORKER_THREADS: usize = 2;

/// The environment variable that sets the storage runtime's I/O threads (1 to 64).
pub const IO_THREADS_VAR: &str = "GM_STORAGE_IO_THREADS";

/// The I/O thread count: [`IO_THREADS_VAR`] when it holds a count from 1 to 64 (anything
/// else is logged and ignored), else [`WORKER_THREADS`].
fn worker_threads() -> usize {
    let Ok(text) = std::env::var(IO_THREADS_VAR) else {
        return WORKER_THREADS;
    };
    match text.trim().parse::<usize>() {
        Ok(n) if (1..=64).contains(&n) => n,
        _ => {
            tracing::warn!(value = %text, "{IO_THREADS_VAR} is not a count from 1 to 64; using {WORKER_THREADS}");
            WORKER_THREADS
        }
    }
}

fn handle() -> std::io::Result<Handle> {
    let mut slot = RUNTIME.lock().unwrap_or_else(PoisonError::into_inner);
    let pid = std::process::id();
    if let Some((_, rt)) = slot.as_ref().filter(|(owner, _)| *owner == pid) {
        return Ok(rt.handle().clone());
    }
    if let Some((_, inherited)) = slot.take() {
        // The parent's worker threads are gone in a forked child; dropping the runtime would
        // wait on them.
        std::mem::forget(inherited);
    }
    install_crypto_provider();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(worker_threads())
        .thread_name("gm-storage")
        .enable_all()
        .build()?;
    let handle = rt.handle().clone();
    *slot = Some((pid, Arc::new(rt)));
    Ok(handle)
}

/// rustls needs one process-wide crypto provider before any client is built (reqwest panics
/// without one); ring is ours (docs/design-log.md). An application that installed its own
/// first keeps it.
pub(crate) fn install_crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// Runs `fut` on the storage runtime and waits for it on this thread.
pub(crate) fn run<T, F>(fut: F) -> std::io::Result<T>
where
    T: Send + 'static,
    F: Future<Output = T> + Send + 'static,
{
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    handle()?.spawn(async move {
        let _ = tx.send(fut.await);
    });
    // A closed channel means the task panicked or the runtime shut down.
    rx.recv()
        .map_err(|_| std::io::Error::other("the storage runtime dropped a request"))
}
