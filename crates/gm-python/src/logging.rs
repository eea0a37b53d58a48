//! gm's log records into Python's `logging`, under the logger "gm".
//!
//! The loader's threads log too (a bad sample is a warning), and a thread that waited for the
//! GIL to log could deadlock against a Python thread that holds the GIL while it joins them.
//! So records are queued, whatever thread they come from, and handed to `logging` by the
//! Python-facing calls (each batch, each constructor), which hold the GIL anyway.

use std::collections::VecDeque;
use std::sync::OnceLock;

use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Records kept between flushes; beyond it the oldest go, counted.
const QUEUE: usize = 4096;

struct Record {
    level: log::Level,
    target: String,
    message: String,
}

#[derive(Default)]
struct Queue {
    records: VecDeque<Record>,
    dropped: u64,
}

struct Logger {
    queue: Mutex<Queue>,
}

impl log::Log for Logger {
    fn enabled(&self, m: &log::Metadata<'_>) -> bool {
        m.level() <= log::max_level()
    }

    fn log(&self, r: &log::Record<'_>) {
        if !self.enabled(r.metadata()) {
            return;
        }
        let mut q = self.queue.lock();
        if q.records.len() >= QUEUE {
            q.records.pop_front();
            q.dropped += 1;
        }
        q.records.push_back(Record {
            level: r.level(),
            target: r.target().to_string(),
            message: r.args().to_string(),
        });
    }

    fn flush(&self) {}
}

fn logger() -> &'static Logger {
    static LOGGER: OnceLock<Logger> = OnceLock::new();
    LOGGER.get_or_init(|| Logger {
        queue: Mutex::new(Queue::default()),
    })
}

/// Installs the queueing logger (once per process) at the level of Python's "gm" logger.
pub(crate) fn init(py: Python<'_>) -> PyResult<()> {
    // Another extension module may have installed a `log` logger first: then it gets ours.
    if log::set_logger(logger()).is_err() {
        tracing::debug!("a log logger was already installed; gm's records go there");
    }
    sync_level(py)
}

/// Sets the records gm produces to what Python's "gm" logger lets through.
pub(crate) fn sync_level(py: Python<'_>) -> PyResult<()> {
    let lg = py.import("logging")?.call_method1("getLogger", ("gm",))?;
    let level: i64 = lg.call_method0("getEffectiveLevel")?.extract()?;
    log::set_max_level(match level {
        l if l <= 5 => log::LevelFilter::Trace,
        l if l <= 10 => log::LevelFilter::Debug,
        l if l <= 20 => log::LevelFilter::Info,
        l if l <= 30 => log::LevelFilter::Warn,
        _ => log::LevelFilter::Error,
    });
    Ok(())
}

/// Hands the queued records to `logging` ("gm" or "gm.<crate>").
pub(crate) fn flush(py: Python<'_>) {
    let (records, dropped) = {
        let mut q = logger().queue.lock();
        if q.records.is_empty() && q.dropped == 0 {
            return;
        }
        (
            std::mem::take(&mut q.records),
            std::mem::take(&mut q.dropped),
        )
    };
    // Logging must never turn into an exception of the call that flushes.
    let _ = emit(py, records, dropped);
}

fn emit(py: Python<'_>, records: VecDeque<Record>, dropped: u64) -> PyResult<()> {
    let logging = py.import("logging")?;
    if dropped > 0 {
        let lg = logging.call_method1("getLogger", ("gm",))?;
        lg.call_method1(
            "warning",
            (format!(
                "{dropped} log records of gm were dropped (the queue was full)"
            ),),
        )?;
    }
    for r in records {
        let name = match r.target.split("::").next() {
            Some(c) if c.starts_with("gm_") => format!("gm.{}", &c[3..]),
            _ => "gm".to_string(),
        };
        let lg = logging.call_method1("getLogger", (name,))?;
        let level = match r.level {
            log::Level::Error => 40,
            log::Level::Warn => 30,
            log::Level::Info => 20,
            log::Level::Debug => 10,
            log::Level::Trace => 5,
        };
        let kw = PyDict::new(py);
        kw.set_item("stacklevel", 1)?;
        lg.call_method("log", (level, r.message), Some(&kw))?;
    }
    Ok(())
}
