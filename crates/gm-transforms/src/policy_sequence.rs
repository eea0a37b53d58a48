//! How a policy's sequence of operations (each applied by torchvision to the previous one's
//! uint8 output) becomes one plan: one sampling grid, then the colour operations.

use crate::colour::{ColourOp, Stat, apply_pixel};
use crate::plan::{PlanError, PlanState};
use crate::policies::AugmentOp;
use crate::types::Interp;

/// Plans torchvision's sequence `ops` (each applied to the previous one's output) as one
/// sampling grid and the colour operations after it:
/// - the warps compose into one matrix (one resampling where torchvision resamples twice);
/// - colour operations keep their order and all run after the warps; one drawn before a
///   warp is pointwise and commutes with a nearest warp, and the warp's fill becomes a
///   value those operations map to the requested fill, so the filled pixels come out as
///   torchvision's;
/// - two sharpness operations become one with the product of the factors (a plan sharpens
///   once).
///
/// docs/transforms.md ("Augmentation policies") says where this equals torchvision and by
/// how much it differs elsewhere.
pub fn plan_sequence(
    st: &mut PlanState,
    step: &'static str,
    ops: &[(AugmentOp, f64)],
    interp: Interp,
    fill: Option<[f32; 3]>,
) -> Result<(), PlanError> {
    let had_warp = st.warp.is_some();
    let mut colour: Vec<ColourOp> = Vec::new();
    let mut warped = false;
    for &(op, m) in ops {
        if let Some(c) = op.colour(m) {
            push_merging_sharpness(&mut colour, c);
            continue;
        }
        if !op.is_geometric() {
            continue;
        }
        let fill_here = if warped {
            fill
        } else {
            fill_preimage(&colour, fill)
        };
        st.compose_warps = warped;
        let planned = op.plan(st, m, interp, fill_here);
        st.compose_warps = false;
        planned?;
        warped = !had_warp && st.warp.is_some();
    }
    colour.into_iter().try_for_each(|c| st.push_colour(step, c))
}

/// Appends `op`, folding a second sharpness into the first (product of the factors).
fn push_merging_sharpness(colour: &mut Vec<ColourOp>, op: ColourOp) {
    if let ColourOp::Sharpness(f) = op
        && let Some(ColourOp::Sharpness(f0)) = colour
            .iter_mut()
            .find(|c| matches!(c, ColourOp::Sharpness(_)))
    {
        *f0 *= f;
        return;
    }
    colour.push(op);
}

/// The fill a warp planned after the colour operations `before` (moved after it) needs so
/// that they map it to `fill` (zeros for `None`): `fill` itself when they leave it alone, else
/// per channel the smallest value they map to it. Left as `fill` where no such value exists
/// or an operation reads more than the pixel (statistics, sharpness).
fn fill_preimage(before: &[ColourOp], fill: Option<[f32; 3]>) -> Option<[f32; 3]> {
    let target = fill.unwrap_or([0.0; 3]);
    let run = |rgb: [f32; 3]| {
        before
            .iter()
            .fold(rgb, |v, &op| apply_pixel(op, v, &Stat::None))
    };
    let pointwise = before
        .iter()
        .all(|op| !op.needs_stats() && !op.reads_neighbours());
    if !pointwise || run(target) == target || target.iter().any(|v| v.fract() != 0.0) {
        return fill;
    }
    let channelwise = !before
        .iter()
        .any(|op| matches!(op, ColourOp::Saturation(_)));
    let mut out = target;
    for c in 0..3 {
        let hit = (0..=255u8).map(f32::from).find(|&v| {
            let mut rgb = target;
            if channelwise {
                rgb[c] = v;
            } else {
                rgb = [v; 3];
            }
            run(rgb)[c] == target[c]
        });
        match hit {
            Some(v) => out[c] = v,
            None => return fill,
        }
    }
    if run(out) == target { Some(out) } else { fill }
}
