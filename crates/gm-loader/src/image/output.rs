//! The batch tensor's geometry, shared by the GPU and CPU stages.

use gm_transforms::{Layout, OutputSpec};

use crate::error::SampleErrorKind;

/// The shape of `n` images of `spec`.
pub(crate) fn batch_shape(n: usize, spec: &OutputSpec) -> Vec<usize> {
    let (h, w, c) = (spec.height as usize, spec.width as usize, spec.channels());
    match spec.layout {
        Layout::Chw => vec![n, c, h, w],
        Layout::Hwc => vec![n, h, w, c],
    }
}

/// The common output of a batch's images: the first one's, or the reason an image differs
/// (with its position in `specs`). `None` for an empty batch.
pub(crate) fn common_spec<'a>(
    specs: impl IntoIterator<Item = &'a OutputSpec>,
) -> Result<Option<OutputSpec>, (usize, SampleErrorKind)> {
    let mut first: Option<OutputSpec> = None;
    for (k, s) in specs.into_iter().enumerate() {
        match first {
            None => first = Some(*s),
            Some(want) if want != *s => {
                return Err((k, SampleErrorKind::OutputSize { got: *s, want }));
            }
            Some(_) => {}
        }
    }
    Ok(first)
}
