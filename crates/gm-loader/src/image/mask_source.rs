//! A sample's masks before their pixels are written: their shape known first, so that a GPU
//! loader's host worker can plan the sample and decode only the masks its geometry keeps,
//! straight into the pinned memory they are uploaded from.

use gm_transforms::targets::{MaskRuns, MaskStack};

use crate::error::SampleErrorKind;

/// A sample's masks, not yet written out ([`Dataset::mask_source`](crate::Dataset::mask_source)).
pub trait MaskSource: Send {
    /// Width, height and number of the masks.
    fn shape(&self) -> (u32, u32, u32);

    /// Writes the masks `keep` marks (all where `None`; a mask without an entry is left out),
    /// packed, row by row, one byte per pixel, into the start of `out`, which holds at least
    /// that many bytes.
    fn write(self: Box<Self>, keep: Option<&[bool]>, out: &mut [u8])
    -> Result<(), SampleErrorKind>;

    /// The masks `keep` marks as their spans of 1s, where the source holds them so (COCO's
    /// run-length masks): a GPU loader then uploads those and writes the planes on the
    /// device. `None` (the default): the loader takes the pixels of
    /// [`write`](Self::write).
    fn runs(&self, keep: Option<&[bool]>) -> Option<MaskRuns> {
        let _ = keep;
        None
    }
}

/// Whether mask `k` is kept.
pub(crate) fn is_kept(keep: Option<&[bool]>, k: usize) -> bool {
    keep.is_none_or(|keep| keep.get(k) == Some(&true))
}

/// How many of `planes` masks `keep` keeps.
pub(crate) fn kept_count(keep: Option<&[bool]>, planes: u32) -> u32 {
    (0..planes as usize).filter(|&k| is_kept(keep, k)).count() as u32
}

/// Every mask of `source` in a [`MaskStack`].
pub(crate) fn into_stack(source: Box<dyn MaskSource>) -> Result<MaskStack, SampleErrorKind> {
    let (width, height, planes) = source.shape();
    let mut data = vec![0u8; width as usize * height as usize * planes as usize];
    source.write(None, &mut data)?;
    MaskStack::new(width, height, planes, data).map_err(|e| SampleErrorKind::Targets(e.to_string()))
}

impl MaskSource for MaskStack {
    fn shape(&self) -> (u32, u32, u32) {
        (self.width, self.height, self.planes)
    }

    fn write(
        self: Box<Self>,
        keep: Option<&[bool]>,
        out: &mut [u8],
    ) -> Result<(), SampleErrorKind> {
        let plane = self.plane_bytes();
        let kept = self
            .data
            .chunks_exact(plane.max(1))
            .enumerate()
            .filter(|(k, _)| is_kept(keep, *k));
        for (at, (_, p)) in out.chunks_exact_mut(plane.max(1)).zip(kept) {
            at.copy_from_slice(p);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stack_writes_the_kept_planes_packed() {
        let stack = MaskStack::new(2, 1, 3, vec![1, 2, 3, 4, 5, 6]).unwrap();
        let mut out = [0u8; 4];
        Box::new(stack.clone())
            .write(Some(&[true, false, true]), &mut out)
            .unwrap();
        assert_eq!(out, [1, 2, 5, 6]);
        assert_eq!(kept_count(Some(&[true, false]), 3), 1);
        assert_eq!(into_stack(Box::new(stack.clone())).unwrap(), stack);
    }
}
