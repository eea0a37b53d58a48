//! Threads that yield to the CPU decoders. Where a loader decodes some videos on NVDEC and the
//! rest on the CPU, its CPU decoders take every core and its NVDEC sessions wake every 100 µs
//! to read a picture's status. At Linux's default policy each wake-up preempts a CPU decoder
//! (about 16,000 a second on a 16-core H200 host in a 3 AV1 : 5 H.264 mix), costing it its
//! caches. Under `SCHED_BATCH` a waking thread never preempts a running one: it takes a free
//! core or waits for the scheduler's tick. The engines have slack in such a mix, since the CPU
//! side binds it, so the sessions can afford the wait.

use crate::error::LoaderError;

/// `f` on a setup thread under `SCHED_BATCH` (Linux; elsewhere on a plain thread), so that the
/// threads it starts inherit the policy; the caller's thread keeps its own. Whether the
/// policy was set comes back with `f`'s result (`false` where the kernel refused, logged).
pub(crate) fn on_batch_thread<T: Send>(
    f: impl FnOnce() -> Result<T, LoaderError> + Send,
) -> Result<(T, bool), LoaderError> {
    on_setup_thread(set_batch_policy, |batch| f().map(|t| (t, batch)))
}

/// `f` on a new thread named `gm-loader-setup`, after `prepare` (what the threads `f` starts
/// are to inherit: CPUs, a scheduling policy) whose result it gets; the caller's thread is
/// left as it was.
pub(crate) fn on_setup_thread<P, T: Send>(
    prepare: impl FnOnce() -> P + Send,
    f: impl FnOnce(P) -> Result<T, LoaderError> + Send,
) -> Result<T, LoaderError> {
    std::thread::scope(|s| {
        let setup = std::thread::Builder::new()
            .name("gm-loader-setup".into())
            .spawn_scoped(s, || f(prepare()))
            .map_err(|e| LoaderError::Config(format!("could not start the setup thread: {e}")))?;
        setup.join().unwrap_or_else(|_| {
            Err(LoaderError::Config(
                "the loader's setup thread stopped without a result".into(),
            ))
        })
    })
}

/// Moves the calling thread to `SCHED_BATCH` at its current nice value.
#[cfg(target_os = "linux")]
fn set_batch_policy() -> bool {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: 0 names the calling thread; `param` outlives the call. Lowering a thread's
    // policy from SCHED_OTHER to SCHED_BATCH needs no privilege.
    let done = unsafe { libc::sched_setscheduler(0, libc::SCHED_BATCH, &param) } == 0;
    if !done {
        tracing::warn!(
            error = %std::io::Error::last_os_error(),
            "NVDEC threads keep the default scheduling policy: SCHED_BATCH was refused"
        );
    }
    done
}

#[cfg(not(target_os = "linux"))]
fn set_batch_policy() -> bool {
    false
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn policy() -> i32 {
        // SAFETY: 0 names the calling thread.
        unsafe { libc::sched_getscheduler(0) }
    }

    /// Threads started inside run under SCHED_BATCH, as the NVDEC sessions will; the caller
    /// keeps its policy; errors come back.
    #[test]
    fn threads_started_inside_inherit_the_batch_policy() {
        let before = policy();
        let (inherited, set) = on_batch_thread(|| {
            let child = std::thread::spawn(policy).join().unwrap();
            Ok((policy(), child))
        })
        .unwrap();
        assert!(set);
        assert_eq!(inherited, (libc::SCHED_BATCH, libc::SCHED_BATCH));
        assert_eq!(policy(), before);
        assert_ne!(before, libc::SCHED_BATCH);
        let err = on_batch_thread::<()>(|| Err(LoaderError::Config("no".into())));
        assert!(matches!(err, Err(LoaderError::Config(m)) if m == "no"));
    }
}
