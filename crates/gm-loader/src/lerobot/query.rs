//! LeRobot's sample arithmetic, as its `DatasetReader` and torchcodec decoding do it: delta
//! timestamps to frame offsets, offsets clamped to the episode with a padding mask, query
//! times to video frames with the tolerance check.

use gm_episodes::Timeline;

use super::error::LeRobotError;

/// Python's `round`: halves go to the even integer.
fn round_even(x: f64) -> f64 {
    x.round_ties_even()
}

/// `check_delta_timestamps`: every delta a whole number of frames within `tolerance_s`.
pub(crate) fn check_deltas(
    key: &str,
    deltas: &[f64],
    fps: f64,
    tolerance_s: f64,
) -> Result<(), LeRobotError> {
    for &d in deltas {
        let frames = d * fps;
        if !d.is_finite() || (frames - round_even(frames)).abs() / fps > tolerance_s {
            return Err(LeRobotError::DeltaTimestamp {
                key: key.to_string(),
                delta: d,
                fps,
                tolerance_s,
            });
        }
    }
    Ok(())
}

/// `get_delta_indices`: each delta as a number of frames.
pub(crate) fn delta_indices(deltas: &[f64], fps: f64) -> Vec<i64> {
    deltas.iter().map(|d| round_even(d * fps) as i64).collect()
}

/// `_get_query_indices` for one key: the rows `index + delta` clamped to the episode's rows
/// `[start, end)`, and whether each fell outside (`{key}_is_pad`).
pub(crate) fn query_rows(
    index: usize,
    start: usize,
    end: usize,
    deltas: &[i64],
) -> (Vec<usize>, Vec<bool>) {
    let (i, start, end) = (index as i64, start as i64, end as i64);
    deltas
        .iter()
        .map(|&d| {
            let q = i + d;
            ((q.clamp(start, end - 1)) as usize, q < start || q >= end)
        })
        .unzip()
}

/// torchcodec's decoding of `queries` (seconds in the file): frame `round(t x average_fps)`
/// of each, then for each query the loaded frame nearest to it, which must lie within
/// `tolerance_s` (compared in `f32`, as torch compares them). Err: the first query out of
/// tolerance, as (query, nearest frame, its time, distance).
pub(crate) fn choose_frames(
    queries: &[f64],
    timeline: &Timeline,
    average_fps: f64,
    tolerance_s: f64,
) -> Result<Vec<usize>, (f64, usize, f64, f64)> {
    let last = timeline.len().saturating_sub(1);
    let loaded: Vec<usize> = queries
        .iter()
        .map(|&t| (round_even(t * average_fps).max(0.0) as usize).min(last))
        .collect();
    let times = timeline.times();
    queries
        .iter()
        .map(|&q| {
            let (best, dist) = loaded
                .iter()
                .map(|&f| (f, ((q as f32) - (times[f] as f32)).abs()))
                .fold(
                    (loaded[0], f32::INFINITY),
                    |a, b| if b.1 < a.1 { b } else { a },
                );
            if dist <= tolerance_s as f32 {
                Ok(best)
            } else {
                Err((q, best, times[best], f64::from(dist)))
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_round_half_to_even_and_are_checked_against_fps() {
        assert_eq!(
            delta_indices(&[-0.1, 0.0, 0.05, 0.15, 1.0], 10.0),
            vec![-1, 0, 0, 2, 10]
        );
        assert!(check_deltas("k", &[-0.2, 0.0, 0.1], 10.0, 1e-4).is_ok());
        let e = check_deltas("k", &[0.0, 0.033], 10.0, 1e-4)
            .unwrap_err()
            .to_string();
        assert!(e.contains("0.033") && e.contains("10 fps"), "{e}");
    }

    #[test]
    fn rows_clamp_to_the_episode_and_say_which_are_padding() {
        // Episode rows 10..15, sample 11, deltas -2..=+4.
        let (rows, pad) = query_rows(11, 10, 15, &[-2, -1, 0, 3, 4]);
        assert_eq!(rows, vec![10, 10, 11, 14, 14]);
        assert_eq!(pad, vec![true, false, false, false, true]);
    }

    #[test]
    fn frames_are_torchcodecs_choice_within_tolerance() {
        let t = Timeline::new((0..20).map(|i| f64::from(i) / 10.0).collect()).unwrap();
        assert_eq!(
            choose_frames(&[0.0, 0.3, 1.9], &t, 10.0, 1e-4),
            Ok(vec![0, 3, 19])
        );
        // 0.35 s lies between frames: round(3.5) = 4 at 0.4 s, 0.05 s away.
        let (q, f, found, d) = choose_frames(&[0.35], &t, 10.0, 1e-4).unwrap_err();
        assert_eq!((q, f, found), (0.35, 4, 0.4));
        assert!((d - 0.05).abs() < 1e-6);
        // Past the end: the last frame, reported out of tolerance.
        assert!(choose_frames(&[2.5], &t, 10.0, 1e-4).is_err());
    }
}
