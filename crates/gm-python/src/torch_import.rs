//! Many gm tensors into torch at once: the views of one allocation (a batch's masks, its
//! uploaded boxes and labels) imported through one DLPack exchange per element type and taken
//! there with one `as_strided` each, rather than one `torch.from_dlpack` each (tens of µs:
//! torch's stream lookup, the export, the consumer's wait and its release's fence, per tensor).

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
    let mut flats: HashMap<Key, Bound<'py, PyAny>> = HashMap::new();
    let mut out = Vec::with_capacity(tensors.len());
    for (t, (key, p, size)) in tensors.iter().zip(&places) {
        let Some(Some(reach)) = reach.get(key) else {
            out.push(from_dlpack.call1((t,))?);
            continue;
        };
        let g = t.get();
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
        out.push(flat.call_method1("as_strided", (g.shape_vec(), g.strides_vec(), at))?);
    }
    Ok(out)
}
