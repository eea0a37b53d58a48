//! `progress=`: long one-off work (indexing a video dataset, filling the device cache) shown as
//! a tqdm bar or reported to a callable. The work runs on a thread of its own; this thread
//! holds the GIL only to update the display, between waits that release it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use gm_loader::Progress;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::GmError;

/// How often the display is updated.
const EVERY: Duration = Duration::from_millis(100);

/// How `progress=` asked for it to be shown.
enum Show<'py> {
    Bar(Bound<'py, PyAny>),
    Call(Bound<'py, PyAny>),
}

fn show<'py>(
    py: Python<'py>,
    arg: Option<&Bound<'py, PyAny>>,
    desc: &str,
    unit: &str,
) -> PyResult<Option<Show<'py>>> {
    let Some(a) = arg.filter(|a| !a.is_none()) else {
        return Ok(None);
    };
    if a.is_callable() {
        return Ok(Some(Show::Call(a.clone())));
    }
    if !a.is_truthy()? {
        return Ok(None);
    }
    let tqdm = py.import("tqdm.auto").map_err(|_| {
        PyValueError::new_err(
            "progress=True shows a tqdm bar: pip install tqdm (or pass a callable)",
        )
    })?;
    let kw = PyDict::new(py);
    kw.set_item("desc", desc)?;
    kw.set_item("unit", unit)?;
    kw.set_item("total", 0)?;
    Ok(Some(Show::Bar(tqdm.getattr("tqdm")?.call((), Some(&kw))?)))
}

impl Show<'_> {
    fn update(&self, done: u64, total: u64, shown: &mut u64) -> PyResult<()> {
        match self {
            Show::Call(f) => {
                if done != *shown {
                    f.call1((done, total))?;
                }
            }
            Show::Bar(bar) => {
                if bar.getattr("total")?.extract::<u64>().unwrap_or(0) != total {
                    bar.setattr("total", total)?;
                }
                if done > *shown {
                    bar.call_method1("update", (done - *shown,))?;
                }
            }
        }
        *shown = done;
        Ok(())
    }

    fn close(&self) -> PyResult<()> {
        if let Show::Bar(bar) = self {
            bar.call_method0("close")?;
        }
        Ok(())
    }
}

/// Runs `work`, which counts into `progress`, showing it as `progress_arg` asks (None or
/// False: not at all; True: a tqdm bar; a callable: called with (done, total) as it moves).
pub(crate) fn run<T: Send>(
    py: Python<'_>,
    progress_arg: Option<&Bound<'_, PyAny>>,
    progress: &Arc<Progress>,
    (desc, unit): (&str, &str),
    work: impl FnOnce() -> T + Send,
) -> PyResult<T> {
    let Some(display) = show(py, progress_arg, desc, unit)? else {
        return Ok(py.detach(work));
    };
    let result = std::thread::scope(|s| -> PyResult<T> {
        let handle = std::thread::Builder::new()
            .name("gm-progress-work".into())
            .spawn_scoped(s, work)
            .map_err(|e| GmError::new_err(format!("could not start a thread: {e}")))?;
        let mut shown = 0;
        loop {
            let finished = py.detach(|| {
                let until = Instant::now() + EVERY;
                while !handle.is_finished() && Instant::now() < until {
                    std::thread::sleep(Duration::from_millis(5));
                }
                handle.is_finished()
            });
            crate::logging::flush(py);
            // A display that fails (a closed notebook) must not stop the work.
            if let Err(e) = display.update(progress.done(), progress.total(), &mut shown) {
                tracing::debug!(error = %e, "progress display failed");
            }
            if finished {
                break;
            }
        }
        handle
            .join()
            .map_err(|_| GmError::new_err("the worker thread panicked"))
    });
    let _ = display.close();
    result
}
