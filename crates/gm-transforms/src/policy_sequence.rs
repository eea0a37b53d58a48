//! How a policy's sequence of operations (each applied by torchvision to the previous one's
//! uint8 output) becomes a plan.

use crate::plan::{PlanError, PlanState};
use crate::policies::AugmentOp;
use crate::types::Interp;

/// Plans torchvision's sequence `ops` (each applied to the previous one's output) in order.
/// The plan follows torchvision's uint8 image wherever one pass cannot: a warp after a
/// resize, after a colour operation or after another warp, and a second sharpness, start a
/// new pass ([`crate::PrePass`]) that reads the previous one's u8 output, as torchvision's
/// next operation does. A sequence is therefore exact wherever its single operations are;
/// colour operations after a warp, and a first warp of an image no resize has touched, stay
/// in one pass.
pub fn plan_sequence(
    st: &mut PlanState,
    step: &'static str,
    ops: &[(AugmentOp, f64)],
    interp: Interp,
    fill: Option<[f32; 3]>,
) -> Result<(), PlanError> {
    for &(op, m) in ops {
        match op.colour(m) {
            Some(c) => st.push_colour(step, c)?,
            None => op.plan(st, m, interp, fill)?,
        }
    }
    Ok(())
}
