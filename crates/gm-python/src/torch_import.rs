//! Many gm tensors into torch at once: the views of one allocation (a batch's masks, its
//! uploaded boxes and labels) imported through one DLPack exchange per element type and taken
//! there, rather than with one `torch.from_dlpack` each (tens of µs: torch's stream lookup,
//! the export, the consumer's wait and its release's fence, per tensor). Views that lie row
//! after row (a batch's boxes, its labels) are cut with one `split_with_sizes` per run, the
//! rest with one `as_strided` each: torch's per-call cost (µs) is what is left.

use std::collections::HashMap;

use pyo3::prelude::*;

use crate::tensor::Tensor;

/// Where a tensor lies within what it shares: the allocation's key (owner, base address,
/// ready event), its first byte and its extent in bytes.
pub(crate) struct Place {
    pub(crate) group: (usize, u64, usize),
    pub(crate) offset: u64,
    pub(crate) end: u64,
}

/// `tensors` as torch tensors, in order: equal to `torch.from_dlpack(t)` of each.
pub(crate) fn to_torch<'py>(
    py: Python<'py>,
    tensors: &[Bound<'py, Tensor>],
) -> PyResult<Vec<Bound<'py, PyAny>>> {
    let torch = py.import("torch")?;
    let from_dlpack = torch.getattr("from_dlpack")?;
    type Key = ((usize, u64, usize), &'static str);
    let places: Vec<(Key, Place, usize)> = tensors
        .iter()
        .map(|t| {
            let g = t.get();
            let p = g.place();
            ((p.group, g.elem_name()), p, g.elem_size().max(1))
        })
        .collect();
    // Each allocation's reach per element type, where every view of that type lies on
    // whole elements from its base.
    let mut reach: HashMap<Key, Option<u64>> = HashMap::new();
    for (key, p, size) in &places {
        let whole = p.offset % *size as u64 == 0 && p.end % *size as u64 == 0;
        let r = reach.entry(*key).or_insert(Some(0));
        *r = r.filter(|_| whole).map(|r| r.max(p.end));
    }
    let runs = contiguous_runs(tensors, &places);
    let mut flats: HashMap<Key, Bound<'py, PyAny>> = HashMap::new();
    let mut out: Vec<Option<Bound<'py, PyAny>>> = vec![None; tensors.len()];
    for run in runs {
        let first = run[0];
        let (key, p, size) = &places[first];
        let Some(Some(reach)) = reach.get(key) else {
            for k in run {
                out[k] = Some(from_dlpack.call1((&tensors[k],))?);
            }
            continue;
        };
        let g = tensors[first].get();
        let flat = match flats.get(key) {
            Some(f) => f.clone(),
            None => {
                let flat = g.flat_elements(reach / *size as u64);
                let f = from_dlpack.call1((Py::new(py, flat)?,))?;
                flats.insert(*key, f.clone());
                f
            }
        };
        let at = p.offset / *size as u64;
        if let [k] = run[..] {
            out[k] = Some(flat.call_method1("as_strided", (g.shape_vec(), g.strides_vec(), at))?);
            continue;
        }
        // One region of all the run's rows, cut in one call.
        let rows: Vec<i64> = run
            .iter()
            .map(|&k| tensors[k].get().shape_vec()[0])
            .collect();
        let mut shape = g.shape_vec();
        shape[0] = rows.iter().sum();
        let strides = g.strides_vec();
        let region = flat.call_method1("as_strided", (shape, strides, at))?;
        let pieces = region.call_method1("split_with_sizes", (rows,))?;
        for (k, piece) in run.iter().zip(pieces.try_iter()?) {
            out[*k] = Some(piece?);
        }
    }
    out.into_iter()
        .map(|t| t.ok_or_else(|| pyo3::exceptions::PyRuntimeError::new_err("a tensor left out")))
        .collect()
}

/// The tensors in runs that one region holds row after row: of one allocation and element
/// type, contiguous, of one row shape, each starting where the one before ends (in memory,
/// whatever their order in `tensors`). Every tensor is in exactly one run (most alone).
fn contiguous_runs<K: Ord + Copy>(
    tensors: &[Bound<'_, Tensor>],
    places: &[(K, Place, usize)],
) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..tensors.len()).collect();
    order.sort_by_key(|&k| (places[k].0, places[k].1.offset, places[k].1.end));
    let rows = |k: usize| {
        let g = tensors[k].get();
        let shape = g.shape_vec();
        (!shape.is_empty() && g.strides_vec() == contiguous(&shape)).then_some(shape)
    };
    let mut runs: Vec<Vec<usize>> = Vec::new();
    for k in order {
        let joins = |prev: usize| match (rows(prev), rows(k)) {
            (Some(a), Some(b)) => {
                places[prev].0 == places[k].0
                    && places[prev].1.end == places[k].1.offset
                    && a.get(1..) == b.get(1..)
            }
            _ => false,
        };
        match runs.last_mut() {
            Some(run) if run.last().is_some_and(|&prev| joins(prev)) => run.push(k),
            _ => runs.push(vec![k]),
        }
    }
    runs
}

/// Row-major strides of `shape`, in elements.
fn contiguous(shape: &[i64]) -> Vec<i64> {
    let mut strides = vec![1i64; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * shape[d + 1].max(1);
    }
    strides
}
