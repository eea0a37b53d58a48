//! A video track's display orientation: the rotation and mirror of its display matrix (MP4's
//! `tkhd` matrix), as ffmpeg applies it when it autorotates. Phone and dashcam footage is
//! stored landscape and marked with a 90-degree matrix.

/// How a track's stored frames are shown: turned counter-clockwise by `rotation` degrees,
/// then mirrored left-right where `mirror`. ffmpeg reports the same turn as its `rotation`
/// side data (counter-clockwise; ffprobe prints 270 as -90).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct DisplayOrientation {
    /// Degrees counter-clockwise: 0, 90, 180 or 270.
    pub rotation: u16,
    /// Mirrored left-right after the turn.
    pub mirror: bool,
}

impl DisplayOrientation {
    /// Shown as stored.
    pub const STORED: DisplayOrientation = DisplayOrientation {
        rotation: 0,
        mirror: false,
    };

    /// The orientation of the display matrix whose first two rows are `[a b _]`, `[c d _]`
    /// (16.16 fixed point, ISO/IEC 14496-12's `tkhd` layout: a stored pixel (x, y) is shown
    /// at (a x + c y, b x + d y) plus a translation); `None` unless the matrix turns by a
    /// multiple of 90 degrees.
    pub fn from_matrix(a: i32, b: i32, c: i32, d: i32) -> Option<DisplayOrientation> {
        let (rotation, mirror) = match (a.signum(), b.signum(), c.signum(), d.signum()) {
            (1, 0, 0, 1) => (0, false),
            (-1, 0, 0, 1) => (0, true),
            (-1, 0, 0, -1) => (180, false),
            (1, 0, 0, -1) => (180, true),
            (0, -1, 1, 0) => (90, false),
            (0, -1, -1, 0) => (90, true),
            (0, 1, -1, 0) => (270, false),
            (0, 1, 1, 0) => (270, true),
            _ => return None,
        };
        Some(DisplayOrientation { rotation, mirror })
    }

    /// The orientation of a Matroska rectangular Projection's pose (degrees), as ffmpeg's
    /// Matroska demuxer turns it into a display matrix: a yaw of ±180 mirrors left-right
    /// (applied first, so it reverses the roll's direction), the roll turns
    /// counter-clockwise. `None` where the pose is not a mirror and a quarter turn (a pitch,
    /// another yaw or roll, NaN), which ffmpeg also leaves as stored.
    pub fn from_projection_pose(yaw: f64, pitch: f64, roll: f64) -> Option<DisplayOrientation> {
        let mirror = match yaw {
            0.0 => false,
            180.0 | -180.0 => true,
            _ => return None,
        };
        if pitch != 0.0 || !roll.is_finite() {
            return None;
        }
        let quarters = roll / 90.0;
        if quarters.fract() != 0.0 {
            return None;
        }
        // ffmpeg: av_display_rotation_set(roll * (2 * hflip - 1)), then the flip, which
        // negates the matrix's first column; the quarter turn's matrix is read back through
        // `from_matrix` so both containers share one arithmetic.
        let clockwise = if mirror { roll } else { -roll };
        let turns = ((clockwise / 90.0).rem_euclid(4.0)) as u8;
        let (cos, sin) = [(1, 0), (0, 1), (-1, 0), (0, -1)][usize::from(turns & 3)];
        // rotation_set(angle) stores a = cos(-angle), b = -sin(-angle), c = sin(-angle).
        let (a, b, c, d) = (cos, sin, -sin, cos);
        let (a, c) = if mirror { (-a, -c) } else { (a, c) };
        DisplayOrientation::from_matrix(a, b, c, d)
    }

    /// Whether frames are shown other than stored.
    pub fn is_turned(self) -> bool {
        self != DisplayOrientation::STORED
    }

    /// The shown size of a `width` x `height` stored frame.
    pub fn displayed_size(self, width: u32, height: u32) -> (u32, u32) {
        if self.rotation % 180 == 90 {
            (height, width)
        } else {
            (width, height)
        }
    }

    /// One byte for saved indexes: the quarter turns, and the mirror in bit 2.
    pub(crate) fn to_byte(self) -> u8 {
        (self.rotation / 90) as u8 & 3 | u8::from(self.mirror) << 2
    }

    /// The inverse of [`to_byte`](Self::to_byte).
    pub(crate) fn from_byte(b: u8) -> DisplayOrientation {
        DisplayOrientation {
            rotation: u16::from(b & 3) * 90,
            mirror: b & 4 != 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE: i32 = 1 << 16;

    #[test]
    fn matrices_as_ffmpeg_writes_and_reads_them() {
        // ffmpeg 5.1's `-metadata:s:v rotate=90` writes (0, -1, 1, 0): shown turned 90 degrees
        // counter-clockwise (its autorotated frame, and ffprobe's rotation=90).
        let m = |a, b, c, d| DisplayOrientation::from_matrix(a, b, c, d).unwrap();
        assert_eq!(m(ONE, 0, 0, ONE), DisplayOrientation::STORED);
        assert_eq!(m(0, -ONE, ONE, 0).rotation, 90);
        assert_eq!(m(-ONE, 0, 0, -ONE).rotation, 180);
        assert_eq!(m(0, ONE, -ONE, 0).rotation, 270);
        assert_eq!(
            m(-ONE, 0, 0, ONE),
            DisplayOrientation {
                rotation: 0,
                mirror: true
            }
        );
        // 45 degrees, a shear: not a quarter turn.
        assert_eq!(
            DisplayOrientation::from_matrix(46341, 46341, -46341, 46341),
            None
        );
        assert_eq!(DisplayOrientation::from_matrix(ONE, ONE, 0, ONE), None);
    }

    #[test]
    fn matroska_poses_as_ffmpeg_9_writes_them() {
        // What ffmpeg 9.0's Matroska muxer writes for `-display_rotation R [-display_hflip]`
        // (tests/media/rotated/make.sh), and the orientation its demuxer reads back.
        let pose = |y, p, r| DisplayOrientation::from_projection_pose(y, p, r);
        let o = |rotation, mirror| Some(DisplayOrientation { rotation, mirror });
        assert_eq!(pose(0.0, 0.0, 0.0), o(0, false));
        assert_eq!(pose(0.0, 0.0, 90.0), o(90, false));
        assert_eq!(pose(0.0, 0.0, -180.0), o(180, false));
        assert_eq!(pose(0.0, 0.0, 180.0), o(180, false));
        assert_eq!(pose(0.0, 0.0, -90.0), o(270, false));
        assert_eq!(pose(180.0, 0.0, 0.0), o(0, true));
        assert_eq!(pose(180.0, 0.0, -90.0), o(90, true));
        assert_eq!(pose(-180.0, 0.0, 90.0), o(270, true));
        assert_eq!(pose(0.0, 0.0, 45.0), None);
        assert_eq!(pose(0.0, 10.0, 0.0), None);
        assert_eq!(pose(90.0, 0.0, 0.0), None);
        assert_eq!(pose(0.0, 0.0, f64::NAN), None);
        assert_eq!(pose(0.0, 0.0, f64::INFINITY), None);
    }

    #[test]
    fn bytes_round_trip_and_sizes_swap_on_quarter_turns() {
        for rotation in [0, 90, 180, 270] {
            for mirror in [false, true] {
                let o = DisplayOrientation { rotation, mirror };
                assert_eq!(DisplayOrientation::from_byte(o.to_byte()), o);
                let swapped = rotation % 180 == 90;
                assert_eq!(
                    o.displayed_size(4, 3),
                    if swapped { (3, 4) } else { (4, 3) }
                );
            }
        }
    }
}
