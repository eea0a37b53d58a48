//! Samples as nested structures: images (or video frames) with labels, in tuples, vectors,
//! options, arrays or your own structs. A transform chain reaches every image through the
//! [`Visit`] trait (no runtime type checks), draws its random parameters once per sample, and
//! gives every image of the sample the same geometry (the frames of a clip, the cameras of a
//! scene stay aligned); labels pass through untouched.

use crate::plan::{Compose, Passes, PlanError, SampleRng};
use crate::types::{FusedOp, OutputSpec};

/// An image leaf: its size, and the kernel parameters once planned. `T` is whatever the
/// pipeline carries with it (a decoded buffer, a surface handle, an index).
#[derive(Debug, Clone, PartialEq)]
pub struct Image<T> {
    /// Width of the source image.
    pub width: u32,
    /// Height of the source image.
    pub height: u32,
    /// The caller's payload.
    pub payload: T,
    /// Set by [`plan_sample`]: the final pass's parameters and output, and the passes
    /// around it ([`Compose::plan_post`]).
    pub planned: Option<(FusedOp, OutputSpec, Passes)>,
}

impl<T> Image<T> {
    /// An unplanned image.
    pub fn new(width: u32, height: u32, payload: T) -> Self {
        Image {
            width,
            height,
            payload,
            planned: None,
        }
    }
}

/// A label or other data that transforms leave alone.
#[derive(Debug, Clone, PartialEq)]
pub struct Label<L>(pub L);

/// Calls `f` on every image inside `self`, in a fixed order.
pub trait Visit<T> {
    /// Visits each image.
    fn visit(&mut self, f: &mut dyn FnMut(&mut Image<T>));
}

impl<T> Visit<T> for Image<T> {
    fn visit(&mut self, f: &mut dyn FnMut(&mut Image<T>)) {
        f(self)
    }
}

impl<T, L> Visit<T> for Label<L> {
    fn visit(&mut self, _: &mut dyn FnMut(&mut Image<T>)) {}
}

impl<T, A: Visit<T>> Visit<T> for Vec<A> {
    fn visit(&mut self, f: &mut dyn FnMut(&mut Image<T>)) {
        self.iter_mut().for_each(|a| a.visit(f))
    }
}

impl<T, A: Visit<T>, const N: usize> Visit<T> for [A; N] {
    fn visit(&mut self, f: &mut dyn FnMut(&mut Image<T>)) {
        self.iter_mut().for_each(|a| a.visit(f))
    }
}

impl<T, A: Visit<T>> Visit<T> for Option<A> {
    fn visit(&mut self, f: &mut dyn FnMut(&mut Image<T>)) {
        if let Some(a) = self {
            a.visit(f)
        }
    }
}

macro_rules! visit_tuple {
    ($($n:ident . $i:tt),+) => {
        impl<T, $($n: Visit<T>),+> Visit<T> for ($($n,)+) {
            fn visit(&mut self, f: &mut dyn FnMut(&mut Image<T>)) {
                $(self.$i.visit(f);)+
            }
        }
    };
}
visit_tuple!(A.0);
visit_tuple!(A.0, B.1);
visit_tuple!(A.0, B.1, C.2);
visit_tuple!(A.0, B.1, C.2, D.3);
visit_tuple!(A.0, B.1, C.2, D.3, E.4);

/// Plans `chain` for every image of `sample` with one draw of random parameters (from the
/// sample's own generator). Returns how many images were planned.
pub fn plan_sample<T, S: Visit<T>>(
    sample: &mut S,
    chain: &Compose,
    rng: &mut SampleRng,
) -> Result<usize, PlanError> {
    let mut size: Option<(u32, u32)> = None;
    let mut mixed = None;
    sample.visit(&mut |img| match size {
        None => size = Some((img.width, img.height)),
        Some((w, h)) if (w, h) != (img.width, img.height) && mixed.is_none() => {
            mixed = Some(PlanError::MixedSizes(w, h, img.width, img.height));
        }
        Some(_) => {}
    });
    if let Some(e) = mixed {
        return Err(e);
    }
    let Some((w, h)) = size else {
        return Ok(0);
    };
    let planned = chain.plan_post(w, h, rng)?;
    let mut n = 0;
    sample.visit(&mut |img| {
        img.planned = Some(planned.clone());
        n += 1;
    });
    Ok(n)
}
