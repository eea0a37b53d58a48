//! Episode generation: the Python original's tests, dilation, time-based clips on synthetic
//! and real (VFR) timelines, and multi-camera alignment.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use gm_demux::{IndexOptions, VideoIndex};
use gm_episodes::{
    EpisodeError, EpisodeGenerator, GapPolicy, MultiCamera, TimedEpisodes, Timeline,
};
use proptest::prelude::*;

fn fixture(name: &str) -> PathBuf {
    std::env::var_os("GM_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/media"))
        .join("video")
        .join(name)
}

fn timeline(name: &str) -> Timeline {
    Timeline::from_index(&VideoIndex::open(&fixture(name), IndexOptions::default()).unwrap())
}

fn episodes(samples: usize, length: usize, stride: usize) -> EpisodeGenerator {
    EpisodeGenerator::new(samples, length, stride).unwrap()
}

// The Python Gradient Mechanics' episode tests, case for case.

#[test]
fn even_samples_episode_length_and_stride_one() {
    let g = episodes(4, 1, 1);
    assert_eq!(g.episode_count(), 4);
    for k in 0..4 {
        assert_eq!(g.episode(k).unwrap(), [k as usize]);
    }
}

#[test]
fn odd_samples_episode_length_and_stride_one() {
    let g = episodes(3, 1, 1);
    assert_eq!(g.episode_count(), 3);
    for k in 0..3 {
        assert_eq!(g.episode(k).unwrap(), [k as usize]);
    }
}

#[test]
fn even_samples_episode_length_and_stride_two() {
    let g = episodes(4, 2, 2);
    assert_eq!(g.episode_count(), 2);
    assert_eq!(g.episode(0).unwrap(), [0, 1]);
    assert_eq!(g.episode(1).unwrap(), [2, 3]);
}

#[test]
fn odd_samples_episode_length_and_stride_two() {
    let g = episodes(3, 2, 2);
    assert_eq!(g.episode_count(), 1);
    assert_eq!(g.episode(0).unwrap(), [0, 1]);
}

#[test]
fn even_samples_episode_length_two_stride_one() {
    let g = episodes(4, 2, 1);
    assert_eq!(g.episode_count(), 3);
    assert_eq!(g.episode(0).unwrap(), [0, 1]);
    assert_eq!(g.episode(1).unwrap(), [1, 2]);
    assert_eq!(g.episode(2).unwrap(), [2, 3]);
}

#[test]
fn odd_samples_episode_length_two_stride_one() {
    let g = episodes(3, 2, 1);
    assert_eq!(g.episode_count(), 2);
    assert_eq!(g.episode(0).unwrap(), [0, 1]);
    assert_eq!(g.episode(1).unwrap(), [1, 2]);
}

#[test]
fn episode_index_out_of_range() {
    let g = episodes(10, 2, 2);
    let count = g.episode_count();
    assert_eq!(
        g.episode(count as i64),
        Err(EpisodeError::OutOfRange {
            index: count as i64,
            count
        })
    );
}

#[test]
fn episode_index_negative_raises_error() {
    assert_eq!(
        episodes(10, 2, 2).episode(-1),
        Err(EpisodeError::Negative(-1))
    );
}

// Beyond the original.

#[test]
fn counts_match_the_python_formulas_and_never_go_negative() {
    for samples in 0..40usize {
        for length in 1..7usize {
            for stride in 1..7usize {
                let g = episodes(samples, length, stride);
                let python = if length == stride {
                    (samples / stride) as i64
                } else {
                    (samples as i64 - length as i64).div_euclid(stride as i64) + 1
                };
                assert_eq!(
                    g.episode_count() as i64,
                    python.max(0),
                    "{samples} {length} {stride}"
                );
                let all: Vec<Vec<usize>> = g.iter().collect();
                assert_eq!(all.len(), g.episode_count());
                assert!(all.iter().flatten().all(|&f| f < samples));
            }
        }
    }
    assert!(EpisodeGenerator::new(5, 0, 1).is_err());
    assert!(EpisodeGenerator::new(5, 1, 0).is_err());
}

#[test]
fn a_frame_step_dilates_episodes() {
    let g = episodes(10, 3, 2).with_step(3).unwrap();
    assert_eq!(g.span(), 7);
    assert_eq!(g.episode_count(), 2);
    assert_eq!(g.episode(0).unwrap(), [0, 3, 6]);
    assert_eq!(g.episode(1).unwrap(), [2, 5, 8]);
    assert!(g.episode(2).is_err());
    assert!(episodes(10, 3, 2).with_step(0).is_err());
    assert_eq!(episodes(6, 4, 1).with_step(2).unwrap().episode_count(), 0);
}

#[test]
fn timed_clips_resample_a_constant_rate_video() {
    // 30 fps for 10 s; clips of 1 s at 10 fps every 2 s take every third frame.
    let t = Timeline::new((0..300).map(|i| f64::from(i) / 30.0).collect()).unwrap();
    let e = TimedEpisodes::new(t, 1.0, 10.0, 2.0).unwrap();
    assert_eq!(e.frames(), 10);
    // Start times 0, 2, 4, 6, 8 fit (8 + 0.9 <= 9.967).
    assert_eq!(e.episode_count(), 5);
    assert_eq!(
        e.episode(1).unwrap(),
        (0..10).map(|j| 60 + 3 * j).collect::<Vec<_>>()
    );
    assert!(e.episode(5).is_err());
    // Above the source rate frames repeat: at 90 fps, times j/90 against frames i/30.
    let t = Timeline::new((0..30).map(|i| f64::from(i) / 30.0).collect()).unwrap();
    let up = TimedEpisodes::new(t, 6.0 / 90.0, 90.0, 1.0).unwrap();
    assert_eq!(up.episode(0).unwrap(), [0, 0, 1, 1, 1, 2]);
}

#[test]
fn timed_clips_on_a_real_vfr_video_take_the_nearest_frames() {
    let t = timeline("h264_vfr.mp4");
    let times = t.times().to_vec();
    let gaps: Vec<f64> = times.windows(2).map(|w| w[1] - w[0]).collect();
    let (lo, hi) = gaps
        .iter()
        .fold((f64::MAX, 0.0f64), |(l, h), &g| (l.min(g), h.max(g)));
    assert!(hi - lo > 0.01, "the fixture is VFR: frame gaps {lo}..{hi}");
    let e = TimedEpisodes::new(t, 0.5, 24.0, 0.25).unwrap();
    assert!(e.episode_count() > 0);
    for k in 0..e.episode_count() {
        let frames = e.episode(k as i64).unwrap();
        for (f, want) in frames.iter().zip(e.times(k)) {
            let best = times
                .iter()
                .map(|&x| (x - want).abs())
                .fold(f64::MAX, f64::min);
            assert!(((times[*f] - want).abs() - best).abs() < 1e-12, "clip {k}");
        }
    }
    // A tolerance smaller than the frame spacing turns the misses into gaps.
    let strict = TimedEpisodes::new(timeline("h264_vfr.mp4"), 0.5, 24.0, 0.25)
        .unwrap()
        .with_tolerance(0.001)
        .unwrap();
    assert!(matches!(strict.episode(0), Err(EpisodeError::Gap { .. })));
}

#[test]
fn cameras_align_by_timestamp_and_gaps_follow_the_policy() {
    // Camera 0 at 30 fps from 0 s; camera 1 at 25 fps from 0.5 s; camera 2 at 30 fps with a
    // hole from 4 s to 5 s. Clips of 0.5 s at 10 fps every second, tolerance 0.05 s.
    let c0 = Timeline::new((0..300).map(|i| f64::from(i) / 30.0).collect()).unwrap();
    let c1 = Timeline::new((0..240).map(|i| 0.5 + f64::from(i) / 25.0).collect()).unwrap();
    let c2 = Timeline::new(
        (0..300)
            .map(|i| f64::from(i) / 30.0)
            .filter(|t| !(4.0..5.0).contains(t))
            .collect(),
    )
    .unwrap();
    let m = MultiCamera::new(vec![c0.clone(), c1.clone(), c2.clone()], 0.5, 10.0, 1.0).unwrap();
    assert_eq!(m.overlap(), Some((0.5, 299.0 / 30.0)));
    let count = m.episode_count();
    assert_eq!(count, 10, "starts 0.5, 1.5, ... 9.5 (9.5 + 0.4 <= 9.967)");
    let mut gaps = 0;
    for k in 0..count {
        match m.episode(k as i64) {
            Ok(Some(frames)) => {
                assert_eq!(frames.len(), 3);
                for (cam, tl) in [&c0, &c1, &c2].iter().enumerate() {
                    for (f, t) in frames[cam].iter().zip(m.times(k)) {
                        assert!(
                            (tl.times()[*f] - t).abs() <= 0.05 + 1e-9,
                            "cam {cam} clip {k}"
                        );
                    }
                }
            }
            Err(EpisodeError::Gap { camera, .. }) => {
                assert_eq!(camera, 2);
                gaps += 1;
            }
            other => panic!("clip {k}: {other:?}"),
        }
    }
    assert_eq!(gaps, 1, "the clip at 4.5-4.9 s falls in the hole");
    let skip = m.clone().with_gap_policy(GapPolicy::Skip);
    let kept = (0..count)
        .filter(|&k| skip.episode(k as i64).unwrap().is_some())
        .count();
    assert_eq!(kept, count - 1);
}

#[test]
fn two_encodes_of_one_recording_align_frame_for_frame() {
    // Two fixtures encoded from the same source (H.264 and HEVC): the same timestamps.
    let a = timeline("h264_no_bframes.mp4");
    let b = timeline("hevc_closed_gop.mp4");
    assert_eq!(a.len(), b.len());
    let fps = (a.len() - 1) as f64 / (a.range().unwrap().1 - a.range().unwrap().0);
    let m = MultiCamera::new(vec![a, b], 8.0 / fps, fps, 8.0 / fps).unwrap();
    assert!(m.episode_count() > 0);
    for k in 0..m.episode_count() {
        let f = m.episode(k as i64).unwrap().unwrap();
        assert_eq!(f[0], f[1]);
        assert_eq!(f[0], (0..8).map(|j| k * 8 + j).collect::<Vec<_>>());
    }
}

proptest! {
    #[test]
    fn nearest_is_the_closest_frame(
        mut times in proptest::collection::vec(0.0f64..100.0, 1..60),
        t in -10.0f64..110.0,
    ) {
        times.sort_by(f64::total_cmp);
        let tl = Timeline::new(times.clone()).unwrap();
        let (i, at) = tl.nearest(t).unwrap();
        prop_assert_eq!(at, times[i]);
        let best = times.iter().map(|&x| (x - t).abs()).fold(f64::MAX, f64::min);
        prop_assert!(((at - t).abs() - best).abs() < 1e-12);
    }
}

#[test]
fn bad_timelines_and_settings_are_errors() {
    assert!(Timeline::new(vec![0.0, 1.0, 0.5]).is_err());
    assert!(Timeline::new(vec![0.0, f64::NAN]).is_err());
    let t = Timeline::new(vec![0.0, 1.0]).unwrap();
    assert!(TimedEpisodes::new(t.clone(), 0.0, 10.0, 1.0).is_err());
    assert!(TimedEpisodes::new(t.clone(), 1.0, -1.0, 1.0).is_err());
    assert!(MultiCamera::new(vec![], 1.0, 10.0, 1.0).is_err());
    assert!(MultiCamera::new(vec![t, Timeline::new(vec![]).unwrap()], 1.0, 10.0, 1.0).is_err());
    // Longer than the video: no clips, not an error.
    let short = Timeline::new(vec![0.0, 0.1]).unwrap();
    assert_eq!(
        TimedEpisodes::new(short, 5.0, 10.0, 1.0)
            .unwrap()
            .episode_count(),
        0
    );
}
