//! What the image and clip loaders share on the Python side: one running epoch at a time,
//! `set_epoch`, `state_dict`/`load_state_dict` (torchdata's StatefulDataLoader convention),
//! waits that release the GIL and look for Ctrl-C, and iterators that stop their epoch when
//! abandoned.

use std::time::Duration;

use gm_loader::{
    ClipBatch, ClipEpoch, ClipLoader, Epoch, Loader, LoaderError, LoaderState, Waited,
};
use parking_lot::Mutex;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::loader_error;
use crate::tensor::Uploads;

/// How long a wait for a batch lasts before looking for Ctrl-C.
pub(crate) const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// Version of the dictionaries `state_dict` returns.
const STATE_VERSION: u32 = 1;

/// A loader whose epochs run without borrowing it.
pub(crate) trait Epochs: Send + 'static {
    type Epoch: Running;
    fn start(&mut self, epoch: u64) -> Self::Epoch;
    fn resume(&mut self, state: &LoaderState) -> Result<Self::Epoch, LoaderError>;
    fn position(&self, epoch: u64, next_batch: usize) -> LoaderState;
    /// Batches left in the running epoch when the next one starts ahead.
    fn prestart_at(&self) -> usize {
        gm_loader::PRESTART_AT
    }
}

/// A running epoch.
pub(crate) trait Running: Send {
    type Batch;
    fn next_within(&mut self, timeout: Duration) -> Waited<Result<Self::Batch, LoaderError>>;
    fn state(&self) -> LoaderState;
    fn remaining(&self) -> usize;
}

impl Epochs for Loader {
    type Epoch = Epoch<'static>;
    fn start(&mut self, epoch: u64) -> Self::Epoch {
        self.epoch_owned(epoch)
    }
    fn resume(&mut self, state: &LoaderState) -> Result<Self::Epoch, LoaderError> {
        self.resume_owned(state)
    }
    fn position(&self, epoch: u64, next_batch: usize) -> LoaderState {
        self.state(epoch, next_batch)
    }
    fn prestart_at(&self) -> usize {
        Loader::prestart_at(self)
    }
}

impl Running for Epoch<'static> {
    type Batch = gm_loader::Batch;
    fn next_within(&mut self, timeout: Duration) -> Waited<Result<Self::Batch, LoaderError>> {
        self.next_timeout(timeout)
    }
    fn state(&self) -> LoaderState {
        Epoch::state(self)
    }
    fn remaining(&self) -> usize {
        Epoch::remaining(self)
    }
}

impl Epochs for ClipLoader {
    type Epoch = ClipEpoch<'static>;
    fn start(&mut self, epoch: u64) -> Self::Epoch {
        self.epoch_owned(epoch)
    }
    fn resume(&mut self, state: &LoaderState) -> Result<Self::Epoch, LoaderError> {
        self.resume_owned(state)
    }
    fn position(&self, epoch: u64, next_batch: usize) -> LoaderState {
        self.state(epoch, next_batch)
    }
}

impl Running for ClipEpoch<'static> {
    type Batch = ClipBatch;
    fn next_within(&mut self, timeout: Duration) -> Waited<Result<Self::Batch, LoaderError>> {
        self.next_timeout(timeout)
    }
    fn state(&self) -> LoaderState {
        ClipEpoch::state(self)
    }
    fn remaining(&self) -> usize {
        ClipEpoch::remaining(self)
    }
}

/// A loader, its running epoch and where it stands.
pub(crate) struct Inner<L: Epochs> {
    pub(crate) loader: L,
    /// The epoch the next iteration runs.
    next_epoch: u64,
    /// A state to resume from at the next iteration (`load_state_dict`).
    resume: Option<LoaderState>,
    running: Option<(L::Epoch, u64)>,
    /// The next epoch, started while the running one hands out its last batches, so that the
    /// loop does not wait for a refill at each epoch start; used if the next iteration runs it.
    ahead: Option<(u64, L::Epoch)>,
    /// Whether to start epochs ahead (the loaders' `prefetch_next_epoch`).
    prestart: bool,
    generation: u64,
    /// The position after the last batch handed out.
    last: LoaderState,
    /// Labels go to the GPU through these (image loader on the GPU only).
    pub(crate) uploads: Option<Uploads>,
}

impl<L: Epochs> Inner<L> {
    pub(crate) fn new(loader: L, uploads: Option<Uploads>, prestart: bool) -> Inner<L> {
        let last = loader.position(0, 0);
        Inner {
            loader,
            next_epoch: 0,
            resume: None,
            running: None,
            ahead: None,
            prestart,
            generation: 0,
            last,
            uploads,
        }
    }

    /// Starts an iteration (stopping and joining the one running); its generation.
    pub(crate) fn start(&mut self) -> Result<u64, LoaderError> {
        self.running = None;
        let ahead = self.ahead.take();
        let epoch = match self.resume.take() {
            Some(state) => self.loader.resume(&state)?,
            None => {
                self.last = self.loader.position(self.next_epoch, 0);
                match ahead {
                    Some((e, epoch)) if e == self.next_epoch => epoch,
                    _ => self.loader.start(self.next_epoch),
                }
            }
        };
        self.generation += 1;
        self.running = Some((epoch, self.generation));
        Ok(self.generation)
    }

    /// Stops the running iteration; its iterator then says so.
    pub(crate) fn close(&mut self) {
        self.running = None;
        self.ahead = None;
        self.generation += 1;
    }

    /// Stops iteration `generation` if it is the running one (its iterator was dropped).
    pub(crate) fn abandon(&mut self, generation: u64) {
        if self.running.as_ref().is_some_and(|r| r.1 == generation) {
            self.running = None;
        }
    }

    pub(crate) fn set_epoch(&mut self, epoch: u64) {
        self.next_epoch = epoch;
        self.resume = None;
        if self.ahead.as_ref().is_some_and(|a| a.0 != epoch) {
            self.ahead = None;
        }
    }

    pub(crate) fn remaining(&self, generation: u64) -> usize {
        match &self.running {
            Some((e, g)) if *g == generation => e.remaining(),
            _ => 0,
        }
    }

    pub(crate) fn state_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let state = self.resume.as_ref().unwrap_or(&self.last);
        state_dict_of(py, state)
    }

    pub(crate) fn load_state_dict(&mut self, state: &Bound<'_, PyDict>) -> PyResult<()> {
        let s = state_of(state)?;
        self.loader
            .position(0, 0)
            .check_same_loader(&s)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        self.next_epoch = s.epoch;
        self.last = s.clone();
        self.resume = Some(s);
        self.ahead = None;
        Ok(())
    }

    /// Waits at most `timeout` for iteration `generation`'s next batch.
    fn next_within(&mut self, generation: u64, timeout: Duration) -> Result<Next<L>, NextError> {
        let Some((run, _)) = self.running.as_mut().filter(|r| r.1 == generation) else {
            return if self.generation == generation {
                Ok(Next::End)
            } else {
                Err(NextError::Superseded)
            };
        };
        match run.next_within(timeout) {
            Waited::Pending => Ok(Next::Pending),
            Waited::Ready(Some(Ok(b))) => {
                self.last = run.state();
                let remaining = run.remaining();
                // The last batches are in flight: the next epoch starts filling behind them.
                if self.prestart
                    && self.ahead.is_none()
                    && self.resume.is_none()
                    && remaining <= self.loader.prestart_at()
                {
                    let next = self.last.epoch + 1;
                    self.ahead = Some((next, self.loader.start(next)));
                }
                Ok(Next::Batch(b))
            }
            Waited::Ready(Some(Err(e))) => {
                self.running = None;
                Err(NextError::Loader(e))
            }
            Waited::Ready(None) => {
                // The epoch is over: the next iteration runs the one after, and a checkpoint
                // taken now resumes there.
                let done = run.state().epoch;
                self.running = None;
                self.next_epoch = done + 1;
                self.last = self.loader.position(done + 1, 0);
                Ok(Next::End)
            }
        }
    }
}

/// What one wait gave.
pub(crate) enum Next<L: Epochs> {
    Batch(<L::Epoch as Running>::Batch),
    End,
    Pending,
}

/// Why a wait failed; an exception once the GIL is held again.
pub(crate) enum NextError {
    Superseded,
    Loader(LoaderError),
}

impl NextError {
    pub(crate) fn into_py(self, py: Python<'_>) -> PyErr {
        match self {
            NextError::Superseded => PyRuntimeError::new_err(
                "this iteration was stopped: the loader started another one, or was closed",
            ),
            NextError::Loader(e) => loader_error(py, e),
        }
    }
}

/// The next batch of iteration `generation`, or `None` at its end: waits with the GIL
/// released, looking for Ctrl-C between waits.
pub(crate) fn next_batch<L: Epochs>(
    py: Python<'_>,
    inner: &std::sync::Arc<Mutex<Inner<L>>>,
    generation: u64,
) -> PyResult<Option<<L::Epoch as Running>::Batch>>
where
    <L::Epoch as Running>::Batch: Send,
{
    loop {
        let got = py.detach(|| inner.lock().next_within(generation, SIGNAL_POLL));
        crate::logging::flush(py);
        match got {
            Ok(Next::Batch(b)) => return Ok(Some(b)),
            Ok(Next::End) => return Ok(None),
            Ok(Next::Pending) => py.check_signals()?,
            Err(e) => return Err(e.into_py(py)),
        }
    }
}

/// A `state_dict` of `state`.
fn state_dict_of<'py>(py: Python<'py>, state: &LoaderState) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("version", STATE_VERSION)?;
    d.set_item("epoch", state.epoch)?;
    d.set_item("next_batch", state.next_batch)?;
    d.set_item("loader_state", state.to_json())?;
    Ok(d)
}

/// The `LoaderState` a `state_dict` holds.
fn state_of(state: &Bound<'_, PyDict>) -> PyResult<LoaderState> {
    let version: u32 = state
        .get_item("version")?
        .ok_or_else(|| PyValueError::new_err("not a gm loader state: no \"version\""))?
        .extract()?;
    if version != STATE_VERSION {
        return Err(PyValueError::new_err(format!(
            "loader state version {version}; this gm reads version {STATE_VERSION}"
        )));
    }
    let json: String = state
        .get_item("loader_state")?
        .ok_or_else(|| PyValueError::new_err("not a gm loader state: no \"loader_state\""))?
        .extract()?;
    LoaderState::from_json(&json).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// The `state_dict`s every rank of a job saved (one each, any order), merged into one that a
/// job of any world size resumes from: each new rank passes it to `load_state_dict`, and gets
/// its share of the rest of the epoch, no sample repeated or skipped.
#[pyfunction]
pub(crate) fn merge_states<'py>(
    py: Python<'py>,
    states: Vec<Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyDict>> {
    let parsed = states.iter().map(state_of).collect::<PyResult<Vec<_>>>()?;
    let merged = LoaderState::merge(&parsed).map_err(|e| PyValueError::new_err(e.to_string()))?;
    state_dict_of(py, &merged)
}
