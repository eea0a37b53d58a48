//! The whole-host rows of the report (`run.sh host` on a machine of several GPUs, issue 45):
//! each GPU's image-pipeline rate with a loader on every GPU against one loader alone, gm's
//! aggregate against DALI's on the same host, and the multi-camera clip loader on 1, 2, 4 ...
//! GPUs against accvlab's published figures.

use serde_json::Value;

use super::{Results, Row, is, ratio_row};

/// What every whole-host row's workload starts with.
pub(super) const PREFIX: &str = "whole host: ";

/// accvlab's published one-A100 multi-camera rates (frames/s; six 1600x900 HEVC cameras, GOP
/// 30): stream and random access. Not run here.
const ACCVLAB_ONE_GPU: [(&str, f64); 2] = [("stream", 3270.0), ("random", 311.0)];
/// NVDEC engines of an H100 or H200 over an A100's: the scale the issue puts on accvlab's rate.
const ENGINE_SCALE: f64 = 7.0 / 5.0;

pub(super) fn rows(r: &Results, out: &mut Vec<Row>) {
    let Some(n) = most_gpus(r, "host-gm").filter(|&n| n > 1) else {
        return;
    };
    efficiency_row(r, n, out);
    aggregate_row(r, n, out);
    for (access, published) in ACCVLAB_ONE_GPU {
        clip_rows(r, access, published, out);
    }
}

fn gpus(v: &Value) -> Option<u64> {
    v.get("gpus")?.as_u64()
}

fn most_gpus(r: &Results, file: &str) -> Option<u64> {
    r.of(file, |_| true).filter_map(gpus).max()
}

/// `field` of `file`'s records of `n` processes at once passing `keep`, one per process.
fn at(r: &Results, file: &str, field: &str, n: u64, keep: impl Fn(&Value) -> bool) -> Vec<f64> {
    r.of(file, move |v| gpus(v) == Some(n) && keep(v))
        .filter_map(|v| v.get(field)?.as_f64())
        .collect()
}

/// Whether `x` holds every one of `n` processes' records, once or in several repetitions.
fn whole(x: &[f64], n: u64) -> bool {
    !x.is_empty() && (x.len() as u64).is_multiple_of(n)
}

/// The sum over `n` processes at once, averaged over repetitions.
fn total(x: &[f64], n: u64) -> f64 {
    x.iter().sum::<f64>() / (x.len() as u64 / n).max(1) as f64
}

fn mean(x: &[f64]) -> f64 {
    x.iter().sum::<f64>() / x.len().max(1) as f64
}

fn span(x: &[f64]) -> String {
    let lo = x.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = x.iter().copied().fold(0.0, f64::max);
    format!("{}-{}", super::fmt(lo), super::fmt(hi))
}

fn efficiency_row(r: &Results, n: u64, out: &mut Vec<Row>) {
    let all = at(r, "host-gm", "img_per_s", n, |_| true);
    let alone = at(r, "host-gm", "img_per_s", 1, |_| true);
    if !whole(&all, n) || alone.is_empty() {
        return;
    }
    let cores = mean(&at(r, "host-gm", "cpu_cores", n, |_| true));
    out.extend(ratio_row(
        &format!("{PREFIX}image pipeline, each of {n} GPUs against one alone"),
        "imagenet",
        "img/s",
        Some((
            mean(&all),
            format!("mean per GPU ({}), {cores:.1} host cores each", span(&all)),
        )),
        Some((mean(&alone), "gm alone on GPU 0, same call".into())),
        Some(0.95),
        format!("defaults under LOCAL_WORLD_SIZE={n}; ratio: per-GPU efficiency"),
    ));
}

fn aggregate_row(r: &Results, n: u64, out: &mut Vec<Row>) {
    let gm = at(r, "host-gm", "img_per_s", n, |_| true);
    if !whole(&gm, n) {
        return;
    }
    let cores = total(&at(r, "host-gm", "cpu_cores", n, |_| true), n);
    let mut threads: Vec<u64> = r
        .of("host-dali", |v| gpus(v) == Some(n) && is(v, "peer", "dali"))
        .filter_map(|v| v.get("num_threads")?.as_u64())
        .collect();
    threads.sort_unstable();
    threads.dedup();
    let dali = threads
        .iter()
        .filter_map(|&t| {
            let each = at(r, "host-dali", "img_per_s", n, |v| {
                v.get("num_threads").and_then(Value::as_u64) == Some(t)
            });
            whole(&each, n).then(|| (total(&each, n), t))
        })
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(sum, t)| {
            (
                sum,
                format!("DALI, {t} threads a process, best of {threads:?}"),
            )
        });
    out.extend(ratio_row(
        &format!("{PREFIX}image pipeline, {n} GPUs, one process each"),
        "imagenet",
        "img/s",
        Some((
            total(&gm, n),
            format!("sum of {n}, defaults, {cores:.1} host cores in all"),
        )),
        dali,
        Some(1.3),
        format!(
            "gm's host cores per GPU: {:.1} (the goal allows 10)",
            cores / n as f64
        ),
    ));
}

fn clip_rows(r: &Results, access: &str, published: f64, out: &mut Vec<Row>) {
    let keep = |v: &Value| is(v, "access", access) && v["gop_cache"] == false;
    let one = at(r, "host-clips", "fps", 1, keep);
    let Some(most) = most_gpus(r, "host-clips") else {
        return;
    };
    let mut n = 1;
    while n <= most {
        let each = at(r, "host-clips", "fps", n, keep);
        let cached = at(r, "host-clips", "fps", n, |v| {
            is(v, "access", access) && v["gop_cache"] == true
        });
        if whole(&each, n) {
            let scaling = if one.is_empty() {
                String::new()
            } else {
                format!("; {:.2} of one GPU's rate", mean(&each) / mean(&one))
            };
            out.extend(ratio_row(
                &format!("{PREFIX}multi-camera clips, {access} access, {n} GPU(s) at once"),
                "6 x 1600x900 HEVC",
                "fps",
                Some((
                    mean(&each),
                    format!("per GPU ({}), 7 NVDEC sessions", span(&each)),
                )),
                Some((
                    published * ENGINE_SCALE,
                    "accvlab's one-A100 figure x 7/5 NVDEC engines (published)".into(),
                )),
                Some(2.0),
                format!(
                    "sum {}{scaling}; with the GOP cache {} per GPU",
                    super::fmt(total(&each, n)),
                    super::fmt(mean(&cached))
                ),
            ));
        }
        n *= 2;
    }
    let each = at(r, "host-clips", "fps", most, keep);
    if most > 1 && whole(&each, most) && !one.is_empty() {
        out.extend(ratio_row(
            &format!("{PREFIX}multi-camera clips, {access} access, {most} GPUs against one"),
            "6 x 1600x900 HEVC",
            "fps",
            Some((mean(&each), format!("mean per GPU of {most}"))),
            Some((mean(&one), "one GPU alone, same call".into())),
            Some(0.95),
            "ratio: per-GPU scaling".into(),
        ));
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::path::Path;

    use super::super::{Results, rows, table};

    /// The committed whole-host report: its table comes from its raw lines, and its ratios are
    /// the per-GPU efficiency, the sums against DALI's best sum, and accvlab's scaled figures.
    #[test]
    fn the_committed_host_report_is_made_from_its_raw_lines() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench/results/2026-11-28-h200-x2");
        let r = Results::load(&dir.join("raw")).unwrap();
        let rows = rows(&r);
        let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
        assert!(report.contains(&table(&rows)), "report.md is stale");
        let ratio = |start: &str| {
            rows.iter()
                .find(|x| x.workload.starts_with(start))
                .and_then(|x| x.ratio)
                .unwrap()
        };
        let each = (32794.0 + 33861.0) / 2.0;
        assert!((ratio("whole host: image pipeline, each of 2") - each / 31681.0).abs() < 1e-9);
        let dali = 27363.0 + 28674.0;
        assert!((ratio("whole host: image pipeline, 2 GPUs") - 2.0 * each / dali).abs() < 1e-9);
        let stream = ratio("whole host: multi-camera clips, stream access, 2 GPU(s)");
        assert!((stream - (10655.0 + 10699.0) / 2.0 / (3270.0 * 1.4)).abs() < 1e-9);
        assert!(
            rows.iter()
                .all(|x| !x.workload.starts_with("image pipeline ("))
        );
    }
}
