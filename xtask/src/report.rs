//! `cargo xtask bench --report DIR`: the report from the JSON lines `bench/run.sh` wrote on
//! the GPU machine. Every workload gets gm's best configuration, the best peer's, their ratio
//! and the goal the issues set; the raw lines are kept next to the report, with SVG charts.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use plotters::prelude::*;
use serde_json::Value;

use crate::rel;

mod host;

/// Every JSON object of every `*.jsonl` under the results directory, by file stem.
struct Results {
    lines: Vec<(String, Value)>,
    env: BTreeMap<String, String>,
}

impl Results {
    fn load(dir: &Path) -> Result<Results> {
        let mut lines = Vec::new();
        let mut env = BTreeMap::new();
        let mut files = Vec::new();
        collect(dir, &mut files)?;
        files.sort();
        for f in &files {
            let name = f
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let text = std::fs::read_to_string(f)?;
            // `.jsonl.txt`: the raw lines as committed next to a report.
            if let Some(stem) = name
                .strip_suffix(".jsonl")
                .or_else(|| name.strip_suffix(".jsonl.txt"))
            {
                for l in text.lines().filter(|l| l.starts_with('{')) {
                    if let Ok(v) = serde_json::from_str::<Value>(l) {
                        lines.push((stem.to_string(), v));
                    }
                }
            } else if name.starts_with("env") && name.ends_with(".txt") && !name.contains(".jsonl")
            {
                for l in text.lines() {
                    if let Some((k, v)) = l.split_once(": ") {
                        env.entry(k.to_string()).or_insert_with(|| v.to_string());
                    }
                }
            }
        }
        if lines.is_empty() {
            bail!("no results (*.jsonl) under {}", dir.display());
        }
        Ok(Results { lines, env })
    }

    /// Objects of files whose stem starts with `file`, passing `keep`.
    fn of<'a>(
        &'a self,
        file: &'a str,
        keep: impl Fn(&Value) -> bool + 'a,
    ) -> impl Iterator<Item = &'a Value> + 'a {
        self.lines
            .iter()
            .filter(move |(f, v)| f.starts_with(file) && keep(v))
            .map(|(_, v)| v)
    }

    /// The largest `field` among `file`'s objects passing `keep`, with the object.
    fn best<'a>(
        &'a self,
        file: &'a str,
        field: &str,
        keep: impl Fn(&Value) -> bool + 'a,
    ) -> Option<(f64, &'a Value)> {
        self.of(file, keep)
            .filter_map(|v| Some((v.get(field)?.as_f64()?, v)))
            .max_by(|a, b| a.0.total_cmp(&b.0))
    }
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for e in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let p = e?.path();
        if p.is_dir() {
            collect(&p, out)?;
        } else {
            out.push(p);
        }
    }
    Ok(())
}

fn s(v: &Value, k: &str) -> String {
    match v.get(k) {
        Some(Value::String(x)) => x.clone(),
        Some(x) => x.to_string(),
        None => String::new(),
    }
}

fn is(v: &Value, k: &str, want: &str) -> bool {
    v.get(k).and_then(Value::as_str) == Some(want)
}

/// One line of the table.
struct Row {
    workload: String,
    data: String,
    unit: &'static str,
    gm: f64,
    gm_config: String,
    peer: Option<(f64, String)>,
    /// gm over the peer (or the peer over gm, for latencies).
    ratio: Option<f64>,
    goal: Option<f64>,
    note: String,
}

fn ratio_row(
    workload: &str,
    data: &str,
    unit: &'static str,
    gm: Option<(f64, String)>,
    peer: Option<(f64, String)>,
    goal: Option<f64>,
    note: String,
) -> Option<Row> {
    let (gm, gm_config) = gm?;
    let ratio = peer
        .as_ref()
        .map(|p| if unit == "ms" { p.0 / gm } else { gm / p.0 });
    Some(Row {
        workload: workload.into(),
        data: data.into(),
        unit,
        gm,
        gm_config,
        peer,
        ratio,
        goal,
        note,
    })
}

/// The table, section by section: JPEG decoding, the image pipeline, video per file, indexes.
fn rows(r: &Results) -> Vec<Row> {
    let mut out = Vec::new();
    jpeg_rows(r, &mut out);
    loader_rows(r, &mut out);
    loader_two_gpu_row(r, &mut out);
    host::rows(r, &mut out);
    for video in videos(r) {
        nvdec_rows(r, &video, &mut out);
        episode_rows(r, &video, &mut out);
        first_frame_row(r, &video, &mut out);
    }
    index_rows(r, &mut out);
    out
}

/// JPEG decoding only, per image set.
fn jpeg_rows(r: &Results, out: &mut Vec<Row>) {
    for (set, goal) in [("imagenet", 1.25), ("large", 1.1)] {
        let gm = r
            // The default output (smooth chroma), not the replicate rows that price it.
            .best("jpeg-gm", "images_per_s", |v| {
                is(v, "set", set) && !is(v, "chroma", "replicate")
            })
            .map(|(x, v)| (x, s(v, "config")));
        let peer = r
            .best("jpeg-peers", "images_per_s", |v| is(v, "set", set))
            .map(|(x, v)| (x, s(v, "config")));
        out.extend(ratio_row(
            "JPEG decode",
            set,
            "img/s",
            gm,
            peer,
            Some(goal),
            String::new(),
        ));
    }
}

/// How one image-pipeline configuration of gm is named in the table.
fn loader_label(v: &Value) -> String {
    format!(
        "{} workers x {} stages, hw_load {}, {} CUDA threads, {} chroma{}{}{}{}",
        s(v, "workers"),
        s(v, "stages"),
        s(v, "hw_load"),
        s(v, "cuda_threads"),
        s(v, "chroma"),
        if v["balanced"].as_bool() == Some(true) {
            ", run-time split"
        } else {
            ""
        },
        if v["blocking_sync"].as_bool() == Some(true) {
            ", sleeping waits".to_string()
        } else {
            String::new()
        },
        match v["max_connections"].as_str() {
            Some(q) if q != "32" => format!(", {q} work queues"),
            _ => String::new(),
        },
        if v["region_decode"].as_bool() == Some(false) {
            ", whole-image decoding"
        } else {
            ""
        }
    )
}

/// The best DALI run, named by its version, threads and work queues.
fn dali_best(r: &Results) -> Option<(f64, String)> {
    r.best("loader-peers", "img_per_s", |v| is(v, "peer", "dali"))
        .map(|(x, v)| {
            (
                x,
                format!(
                    "DALI {} ({} threads{})",
                    s(v, "version"),
                    s(v, "num_threads"),
                    match v["max_connections"].as_str() {
                        Some(q) if q != "driver default" => format!(", {q} work queues"),
                        _ => String::new(),
                    }
                ),
            )
        })
}

/// DALI as its documentation runs it: the driver's default work queues (gm asks for 32 in its
/// own process; the strict row gives DALI the same).
fn dali_shipped(r: &Results) -> Option<(f64, String)> {
    r.best("loader-peers", "img_per_s", |v| {
        is(v, "peer", "dali") && v["max_connections"].as_str() != Some("32")
    })
    .map(|(x, v)| {
        (
            x,
            format!(
                "DALI {} ({} threads, driver's work queues)",
                s(v, "version"),
                s(v, "num_threads")
            ),
        )
    })
}

/// The image pipeline on one GPU: bit-reproducible configurations (a split of each batch fixed
/// before decoding), and apart, the run-time split, whose pixels depend on which decoder took
/// an image.
fn loader_rows(r: &Results, out: &mut Vec<Row>) {
    let balanced = |v: &Value| v["balanced"].as_bool() == Some(true);
    let gm = r
        .best("loader-gm", "img_per_s", |v| !balanced(v))
        .map(|(x, v)| (x, loader_label(v)));
    let gm_balanced = r
        .best("loader-gm", "img_per_s", balanced)
        .map(|(x, v)| (x, loader_label(v)));
    let dali = dali_best(r);
    let others: Vec<String> = r
        .of("loader-peers", |v| !is(v, "peer", "dali"))
        .map(|v| format!("{} {}", s(v, "peer"), s(v, "img_per_s")))
        .collect();
    out.extend(ratio_row(
        "image pipeline (decode, RRC 224, flip, normalize, f16)",
        "imagenet",
        "img/s",
        gm.clone(),
        dali.clone(),
        Some(1.15),
        others.join(", "),
    ));
    if r.of("loader-peers", |v| {
        v["max_connections"].as_str() == Some("32")
    })
    .next()
    .is_some()
    {
        out.extend(ratio_row(
            "image pipeline against DALI as shipped",
            "imagenet",
            "img/s",
            gm.clone(),
            dali_shipped(r),
            None,
            "DALI with the driver's default 8 work queues".into(),
        ));
    }
    if gm_balanced.is_some() {
        out.extend(ratio_row(
            "image pipeline, run-time split (not bit-reproducible)",
            "imagenet",
            "img/s",
            gm_balanced,
            dali,
            Some(1.15),
            String::new(),
        ));
    }
    let opencv = r
        .best("loader-peers", "img_per_s", |v| is(v, "peer", "opencv"))
        .map(|(x, v)| (x, format!("OpenCV, {} processes", s(v, "processes"))));
    out.extend(ratio_row(
        "image pipeline against the CPU",
        "imagenet",
        "img/s",
        gm,
        opencv,
        Some(3.0),
        String::new(),
    ));
}

/// Scaling against one GPU running the same configuration, measured in the same phase.
fn loader_two_gpu_row(r: &Results, out: &mut Vec<Row>) {
    let two: Vec<&Value> = r.of("loader-2gpu", |_| true).collect();
    if two.len() != 2 {
        return;
    }
    let same = |v: &Value| {
        [
            "workers",
            "stages",
            "hw_load",
            "cuda_threads",
            "chroma",
            "balanced",
            "blocking_sync",
            "max_connections",
            "region_decode",
        ]
        .iter()
        .all(|k| v.get(*k) == two[0].get(*k))
    };
    let one = r
        .best("loader-gm", "img_per_s", same)
        .map(|(x, _)| (x, "gm on 1 GPU, same configuration".to_string()));
    let config = format!(
        "{}x{} per GPU, hw_load {}, {} CUDA threads",
        s(two[0], "workers"),
        s(two[0], "stages"),
        s(two[0], "hw_load"),
        s(two[0], "cuda_threads")
    );
    let sum: f64 = two.iter().filter_map(|v| v["img_per_s"].as_f64()).sum();
    out.extend(ratio_row(
        "image pipeline, 2 GPUs (one process each)",
        "imagenet",
        "img/s",
        Some((sum, config)),
        one,
        None,
        "ratio: scaling over one GPU".into(),
    ));
}

/// `nvdec-gm` objects of one video and workload.
fn nvdec_of<'a>(video: &'a str, workload: &'static str) -> impl Fn(&Value) -> bool + 'a {
    move |x: &Value| is(x, "video", video) && is(x, "workload", workload)
}

/// PyNvVideoCodec's best run of a workload on a video, with `sessions` decoders if given.
fn nvdec_peer(
    r: &Results,
    video: &str,
    workload: &str,
    sessions: Option<u64>,
) -> Option<(f64, String)> {
    r.best("nvdec-peers", "fps", |x| {
        is(x, "video", video)
            && is(x, "workload", workload)
            && sessions.is_none_or(|n| x["sessions"].as_u64() == Some(n))
    })
    .map(|(f, x)| (f, format!("PyNvVideoCodec, {} decoders", s(x, "sessions"))))
}

/// Plain NVDEC decoding of one video: sequential on all engines, random clips and frames.
fn nvdec_rows(r: &Results, v: &str, out: &mut Vec<Row>) {
    let gm_seq = r
        .best("nvdec-gm", "fps", nvdec_of(v, "sequential"))
        .map(|(f, x)| (f, format!("{} sessions", s(x, "sessions"))));
    out.extend(ratio_row(
        "sequential decode, all engines",
        v,
        "fps",
        gm_seq,
        nvdec_peer(r, v, "sequential", None),
        Some(1.2),
        String::new(),
    ));
    for w in ["random 8-frame clips", "random single frames"] {
        let gm = r
            .best("nvdec-gm", "fps", nvdec_of(v, w))
            .map(|(f, x)| (f, format!("{} sessions", s(x, "sessions"))));
        out.extend(ratio_row(
            w,
            v,
            "fps",
            gm,
            nvdec_peer(r, v, w, Some(1)),
            Some(5.0),
            String::new(),
        ));
    }
}

/// `clips-gm` objects of one video and access pattern, without the GOP cache.
fn clips_of<'a>(video: &'a str, access: &'static str) -> impl Fn(&Value) -> bool + 'a {
    move |x: &Value| is(x, "video", video) && is(x, "access", access) && x["gop_cache"] == false
}

/// The note on the same clips decoded with the GOP cache on.
fn with_gop_cache(r: &Results, video: &str, access: &str) -> String {
    r.best("clips-gm", "fps", |x| {
        is(x, "video", video) && is(x, "access", access) && x["gop_cache"] == true
    })
    .map_or(String::new(), |(f, _)| format!("with the GOP cache {f:.0}"))
}

/// The clip loader on one video: stream and random access, and their scaling to 2 GPUs.
fn episode_rows(r: &Results, v: &str, out: &mut Vec<Row>) {
    let stream = r
        .best("clips-gm", "fps", clips_of(v, "stream"))
        .map(|(f, x)| (f, format!("{} sessions", s(x, "sessions"))));
    out.extend(ratio_row(
        "8-frame episodes, stream access (224x224 RGB out)",
        v,
        "fps",
        stream,
        nvdec_peer(r, v, "sequential", None),
        Some(1.2),
        format!(
            "peer: its best sequential decode; {}",
            with_gop_cache(r, v, "stream")
        ),
    ));
    let random = r
        .best("clips-gm", "fps", clips_of(v, "random"))
        .map(|(f, x)| {
            (
                f,
                format!(
                    "{} sessions, {} decoded per frame",
                    s(x, "sessions"),
                    s(x, "decoded_per_returned")
                ),
            )
        });
    let seven = nvdec_peer(r, v, "random 8-frame episodes", Some(7)).map_or(String::new(), |p| {
        format!(
            "{} with 7 decoders: {:.2}x",
            p.0,
            random.as_ref().map_or(0.0, |g| g.0 / p.0)
        )
    });
    out.extend(ratio_row(
        "8-frame episodes, random access (224x224 RGB out)",
        v,
        "fps",
        random,
        nvdec_peer(r, v, "random 8-frame episodes", Some(1)),
        Some(5.0),
        format!(
            "same episodes; PyNvVideoCodec {seven}; {}",
            with_gop_cache(r, v, "random")
        ),
    ));
    for access in ["stream", "random"] {
        let two: Vec<f64> = r
            .of("clips-2gpu", |x| {
                is(x, "video", v) && is(x, "access", access) && x["gop_cache"] == false
            })
            .filter_map(|x| x["fps"].as_f64())
            .collect();
        let one = r
            .best("clips-gm", "fps", clips_of(v, access))
            .map(|(f, _)| (f, "gm on 1 GPU".to_string()));
        if two.len() == 2 {
            out.extend(ratio_row(
                &format!("8-frame episodes, {access} access, 2 GPUs"),
                v,
                "fps",
                Some((two.iter().sum(), "7 sessions per GPU".into())),
                one,
                None,
                "ratio: scaling over one GPU".into(),
            ));
        }
    }
}

/// Time to the first frame of one video: gm's index, session and decode against a fresh
/// `SimpleDecoder`.
fn first_frame_row(r: &Results, v: &str, out: &mut Vec<Row>) {
    let ff = r
        .best("nvdec-gm", "ms", nvdec_of(v, "first frame"))
        .map(|(m, _)| (m, "index + session + decode".to_string()));
    let pff = r
        .best("first-frame-peers", "ms", |x| is(x, "video", v))
        .map(|(m, x)| (m, format!("SimpleDecoder (open {} ms)", s(x, "open_ms"))));
    out.extend(ratio_row(
        "first frame (open, decode frame 0)",
        v,
        "ms",
        ff,
        pff,
        None,
        String::new(),
    ));
}

/// Index builds of long videos (no peer builds one up front).
fn index_rows(r: &Results, out: &mut Vec<Row>) {
    for v in r.of("index-gm", |v| is(v, "scan", "Keyframes")) {
        out.extend(ratio_row(
            "index build, long video",
            &s(v, "video"),
            "ms",
            v["ms"]
                .as_f64()
                .map(|m| (m, format!("{} frames, keyframe scan", s(v, "frames")))),
            None,
            None,
            "no peer builds a frame-exact index up front; see the first-frame row".into(),
        ));
    }
}

fn videos(r: &Results) -> Vec<String> {
    let mut v: Vec<String> = r
        .of("nvdec-gm", |_| true)
        .chain(r.of("clips-gm", |_| true))
        .filter_map(|x| x["video"].as_str().map(str::to_string))
        .collect();
    v.sort();
    v.dedup();
    v
}

fn fmt(x: f64) -> String {
    if x >= 100.0 {
        let n = x.round() as u64;
        let s = n.to_string();
        let mut out = String::new();
        for (i, c) in s.chars().enumerate() {
            if i > 0 && (s.len() - i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(c);
        }
        out
    } else {
        format!("{x:.2}")
    }
}

fn table(rows: &[Row]) -> String {
    let mut t = String::from(
        "| workload | data | gm | best peer | ratio | goal |\n|---|---|---|---|---|---|\n",
    );
    for r in rows {
        let peer = r
            .peer
            .as_ref()
            .map_or("-".into(), |p| format!("{} {} ({})", fmt(p.0), r.unit, p.1));
        let goal = match (r.goal, r.ratio) {
            (Some(g), Some(x)) if x >= g => format!("{g}x: **met**"),
            (Some(g), Some(_)) => format!("{g}x: **not met**"),
            (Some(g), None) => format!("{g}x: no peer result"),
            (None, _) => "-".into(),
        };
        let note = if r.note.is_empty() {
            String::new()
        } else {
            format!("<br>{}", r.note)
        };
        let _ = writeln!(
            t,
            "| {} | {} | {} {} ({}) | {} | {} | {}{} |",
            r.workload,
            r.data,
            fmt(r.gm),
            r.unit,
            r.gm_config,
            peer,
            r.ratio.map_or("-".into(), |x| format!("{x:.2}x")),
            goal,
            note
        );
    }
    t
}

/// Horizontal bars, one per row, labelled with workload and data; `marks` draws a goal line
/// on a bar and colours it by whether the bar reaches it.
fn bar_chart(
    path: &Path,
    title: &str,
    x_desc: &str,
    rows: &[&Row],
    value: impl Fn(&Row) -> f64,
    marks: bool,
) -> Result<()> {
    let n = rows.len().max(1);
    let top = rows
        .iter()
        .map(|r| value(r).max(if marks { r.goal.unwrap_or(0.0) } else { 0.0 }))
        .fold(1.0, f64::max)
        * 1.1;
    let root = SVGBackend::new(path, (1000, 60 + 34 * n as u32)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(420)
        .build_cartesian_2d(0.0..top, (0..n).into_segmented())?;
    let labels: Vec<String> = rows
        .iter()
        .map(|r| format!("{} / {}", r.workload, r.data))
        .collect();
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(n)
        .y_label_formatter(&|y| match y {
            SegmentValue::CenterOf(i) => labels.get(*i).cloned().unwrap_or_default(),
            _ => String::new(),
        })
        .x_desc(x_desc)
        .draw()?;
    for (i, r) in rows.iter().enumerate() {
        let x = value(r);
        let goal = r.goal.filter(|_| marks);
        let color = match goal {
            Some(g) if x >= g => RGBColor(46, 125, 50),
            Some(_) => RGBColor(198, 40, 40),
            None => RGBColor(21, 101, 192),
        };
        chart.draw_series(std::iter::once(Rectangle::new(
            [
                (0.0, SegmentValue::Exact(i)),
                (x, SegmentValue::Exact(i + 1)),
            ],
            color.filled(),
        )))?;
        if let Some(g) = goal {
            chart.draw_series(std::iter::once(PathElement::new(
                vec![(g, SegmentValue::Exact(i)), (g, SegmentValue::Exact(i + 1))],
                BLACK.stroke_width(3),
            )))?;
        }
    }
    root.present()?;
    Ok(())
}

/// gm over the best peer per workload, with the goal marked.
fn ratio_chart(path: &Path, rows: &[Row]) -> Result<()> {
    let rows: Vec<&Row> = rows
        .iter()
        .filter(|r| r.ratio.is_some() && r.goal.is_some())
        .collect();
    bar_chart(
        path,
        "gm over the best peer (bar) and the goal (line), same run, same GPU",
        "ratio",
        &rows,
        |r| r.ratio.unwrap_or(0.0),
        true,
    )
}

/// Frames per second against NVDEC sessions: gm's decoder, gm's clip loader (stream access)
/// and PyNvVideoCodec's sequential decode.
fn scaling_chart(path: &Path, r: &Results) -> Result<()> {
    let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for v in videos(r) {
        let short = v.trim_end_matches(".mp4").replace("bench_1080p_", "");
        let pts = |file: &str, keep: &dyn Fn(&Value) -> bool| -> Vec<(f64, f64)> {
            let mut p: Vec<(f64, f64)> = r
                .of(file, |x| is(x, "video", &v) && keep(x))
                .filter_map(|x| Some((x["sessions"].as_f64()?, x["fps"].as_f64()?)))
                .collect();
            p.sort_by(|a, b| a.0.total_cmp(&b.0));
            p
        };
        let seq = |x: &Value| is(x, "workload", "sequential");
        let stream = |x: &Value| is(x, "access", "stream") && x["gop_cache"] == false;
        for (name, p) in [
            (format!("gm decode {short}"), pts("nvdec-gm", &seq)),
            (
                format!("gm episodes (stream) {short}"),
                pts("clips-gm", &stream),
            ),
            (
                format!("PyNvVideoCodec decode {short}"),
                pts("nvdec-peers", &seq),
            ),
        ] {
            if !p.is_empty() {
                series.push((name, p));
            }
        }
    }
    if series.is_empty() {
        return Ok(());
    }
    let ymax = series
        .iter()
        .flat_map(|s| s.1.iter().map(|p| p.1))
        .fold(1.0, f64::max)
        * 1.1;
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "1080p frames per second against NVDEC sessions (one GPU)",
            ("sans-serif", 18),
        )
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(60)
        .build_cartesian_2d(0.5..8.5, 0.0..ymax)?;
    chart
        .configure_mesh()
        .x_desc("sessions (decoders)")
        .y_desc("frames/s")
        .draw()?;
    for (i, (name, pts)) in series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))?
            .label(name.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
            });
        chart.draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

/// One GPU against two, per workload that ran on both.
fn gpus_chart(path: &Path, rows: &[Row]) -> Result<()> {
    let rows: Vec<&Row> = rows
        .iter()
        .filter(|r| r.workload.contains("2 GPUs") && !r.workload.starts_with(host::PREFIX))
        .collect();
    if rows.is_empty() {
        return Ok(());
    }
    bar_chart(
        path,
        "two GPUs over one (one process per GPU)",
        "speed-up",
        &rows,
        |r| r.ratio.unwrap_or(0.0),
        false,
    )
}

/// Correctness riding along: PyNvVideoCodec's random access against its own sequential decode.
fn correctness(r: &Results) -> String {
    let mut t = String::new();
    for v in r.of("nvdec-peers", |v| {
        v.get("differs_from_own_sequential").is_some()
    }) {
        let _ = writeln!(
            t,
            "- PyNvVideoCodec, {} ({}): {} of {} frames differ from its own sequential decode",
            s(v, "video"),
            s(v, "workload"),
            s(v, "differs_from_own_sequential"),
            s(v, "frames")
        );
    }
    t
}

pub fn run(root: &Path, dir: &Path) -> Result<()> {
    let r = Results::load(dir)?;
    let gpu = r
        .env
        .get("gpu")
        .cloned()
        .unwrap_or_else(|| "unknown GPU".into());
    let date = r
        .env
        .get("date")
        .cloned()
        .unwrap_or_else(|| "undated".into());
    let slug = gpu
        .to_lowercase()
        .replace("nvidia ", "")
        .replace(|c: char| !c.is_ascii_alphanumeric(), "-")
        + &match r.env.get("gpus").and_then(|g| g.parse::<u32>().ok()) {
            Some(n) if n > 1 => format!("-x{n}"),
            _ => String::new(),
        };
    let out = root.join("bench/results").join(format!("{date}-{slug}"));
    let raw = out.join("raw");
    std::fs::create_dir_all(&raw)?;
    let mut files = Vec::new();
    collect(dir, &mut files)?;
    for f in files {
        let name = f
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        // Made again from its own raw/ (`--report bench/results/X/raw`): copying a file
        // onto itself would empty it.
        if f.parent().and_then(|p| p.canonicalize().ok()) == raw.canonicalize().ok() {
            continue;
        }
        if name.ends_with(".jsonl") {
            // The `.txt` suffix keeps the raw lines out of tools that parse every .jsonl;
            // `--report` reads them back, so the report can be made again from `raw/`.
            std::fs::copy(&f, raw.join(format!("{name}.txt")))?;
        } else if name.starts_with("env") && name.ends_with(".txt") {
            std::fs::copy(&f, raw.join(&name))?;
        }
    }
    let rows = rows(&r);
    ratio_chart(&out.join("ratios.svg"), &rows)?;
    scaling_chart(&out.join("scaling.svg"), &r)?;
    gpus_chart(&out.join("gpus.svg"), &rows)?;
    let met = rows
        .iter()
        .filter(|x| x.goal.is_some() && x.ratio >= x.goal)
        .count();
    let goals = rows.iter().filter(|x| x.goal.is_some()).count();
    let mut md = format!(
        "# gm against its peers: {gpu}, {date}\n\n\
         Made by `cargo xtask bench --report` from one `cargo xtask bench` bundle run on the GPU \
         machine: {} GPU(s), driver {}, {} host cores, Python {}. For each workload gm and its \
         peers ran in the same call, one after the other, on the same files; each number is the median of \
         several repetitions after warm-up (spread, host CPU time and GPU memory are in the raw \
         lines under `raw/`). Goals met: {met} of {goals}.\n\n",
        r.env.get("gpus").map_or("?", String::as_str),
        r.env.get("driver").map_or("?", String::as_str),
        r.env.get("cores").map_or("?", String::as_str),
        r.env.get("python").map_or("?", String::as_str),
    );
    md.push_str(&table(&rows));
    md.push_str("\n![ratios](ratios.svg)\n\n");
    if out.join("scaling.svg").exists() {
        md.push_str("![scaling](scaling.svg)\n\n");
    }
    if out.join("gpus.svg").exists() {
        md.push_str("![two GPUs](gpus.svg)\n\n");
    }
    let c = correctness(&r);
    if !c.is_empty() {
        md.push_str("## Correctness riding along\n\n");
        md.push_str(&c);
        md.push_str(
            "- gm: every frame of the clip loader and of random access equals ffmpeg's decode \
             (the GPU tests `gm-codec--nvdec` and `gm-loader--video`; they must pass for a \
             bundle to be benchmarked).\n",
        );
    }
    std::fs::write(out.join("report.md"), &md)?;
    println!(
        "{}: report.md, ratios.svg, scaling.svg, raw/",
        rel(root, &out)
    );
    print!("{}", table(&rows));
    readme(root)
}

/// The README's markers around its results table.
const README_BEGIN: &str =
    "<!-- results: begin (cargo xtask readme writes this table; do not edit it by hand) -->";
const README_END: &str = "<!-- results: end -->";

/// Which runs a report holds: one GPU's workloads (`run.sh images`/`video`), the whole host's
/// (`run.sh host`), or both.
#[derive(Clone, Copy)]
enum Kind {
    OneGpu,
    Host,
}

impl Kind {
    fn holds(self, r: &Results) -> bool {
        match self {
            Kind::OneGpu => r.lines.iter().any(|(f, _)| !f.starts_with("host-")),
            Kind::Host => r.lines.iter().any(|(f, _)| f.starts_with("host-gm")),
        }
    }
}

/// The newest report under bench/results holding `kind`'s runs: the last, by name (dates
/// first), that has its raw lines beside it.
fn newest_report(root: &Path, kind: Kind) -> Result<PathBuf> {
    let results = root.join("bench/results");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&results)
        .with_context(|| format!("reading {}", results.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|d| d.join("report.md").is_file() && d.join("raw").is_dir())
        .collect();
    dirs.sort();
    while let Some(d) = dirs.pop() {
        if Results::load(&d.join("raw")).is_ok_and(|r| kind.holds(&r)) {
            return Ok(d);
        }
    }
    bail!("no report (report.md and raw/) under {}", results.display())
}

/// The README's tables: one GPU's workloads from the newest report that has them, and the
/// whole host's from the newest that has those, when it is another report.
fn readme_tables(root: &Path) -> Result<String> {
    let one = newest_report(root, Kind::OneGpu)?;
    let mut t = readme_table(root, &one, Kind::OneGpu)?;
    if let Ok(host) = newest_report(root, Kind::Host)
        && host != one
    {
        t.push('\n');
        t.push_str(&readme_table(root, &host, Kind::Host)?);
    }
    Ok(t)
}

/// The README's table, from the report in `dir`: for each workload with a goal, its first
/// row (gm's best configuration against the best peer), the GPU and date above it.
fn readme_table(root: &Path, dir: &Path, kind: Kind) -> Result<String> {
    let r = Results::load(&dir.join("raw"))?;
    let env = |k: &str| r.env.get(k).map_or("?", String::as_str).to_string();
    let used = match kind {
        Kind::OneGpu => "one used unless a row says otherwise",
        Kind::Host => "the whole host: one process per GPU",
    };
    let mut t = format!(
        "{} ({} GPU(s) on the machine, {used}), {} host cores, \
         {}: [report]({}/report.md).\n\n",
        env("gpu"),
        env("gpus"),
        env("cores"),
        env("date"),
        rel(root, dir)
    );
    t.push_str("| workload | data | gm | best peer | ratio |\n|---|---|---|---|---|\n");
    let mut seen = Vec::new();
    for row in rows(&r) {
        let (Some(peer), Some(ratio)) = (&row.peer, row.ratio) else {
            continue;
        };
        if row.goal.is_none() || seen.contains(&row.workload) {
            continue;
        }
        let _ = writeln!(
            t,
            "| {} | {} | {} {} | {} {} ({}) | {ratio:.2}x |",
            row.workload,
            row.data,
            fmt(row.gm),
            row.unit,
            fmt(peer.0),
            row.unit,
            peer.1
        );
        seen.push(row.workload);
    }
    Ok(t)
}

/// `text` with the part between the README's markers replaced by `table`.
fn with_table(text: &str, table: &str) -> Result<String> {
    let (Some(b), Some(e)) = (text.find(README_BEGIN), text.find(README_END)) else {
        bail!("README.md has no results markers ({README_BEGIN} ... {README_END})");
    };
    let start = b + README_BEGIN.len();
    Ok(format!("{}\n{table}{}", &text[..start], &text[e..]))
}

/// `cargo xtask readme`: writes the results table of README.md from the newest report.
pub fn readme(root: &Path) -> Result<()> {
    let path = root.join("README.md");
    let text = std::fs::read_to_string(&path)?;
    let updated = with_table(&text, &readme_tables(root)?)?;
    std::fs::write(&path, updated)?;
    println!("README.md: results tables from the newest reports");
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// The committed report's table comes from its committed raw lines.
    #[test]
    fn the_committed_report_is_made_from_its_raw_lines() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench/results/2026-11-21-h200-x2");
        let r = Results::load(&dir.join("raw")).unwrap();
        let rows = rows(&r);
        let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
        assert!(
            report.contains(&table(&rows)),
            "report.md is stale: run cargo xtask bench --report"
        );
        let pipeline = rows
            .iter()
            .find(|x| x.workload.starts_with("image pipeline ("))
            .unwrap();
        assert!((pipeline.ratio.unwrap() - 45319.0 / 37743.0).abs() < 1e-9);
        let shipped = rows
            .iter()
            .find(|x| x.workload == "image pipeline against DALI as shipped")
            .unwrap();
        assert!((shipped.ratio.unwrap() - 45319.0 / 36886.0).abs() < 1e-9);
        assert!(table(&rows).contains("| 1.20x | 1.15x: **met**"));
        let first = rows
            .iter()
            .find(|x| x.unit == "ms" && x.peer.is_some())
            .unwrap();
        assert!((first.ratio.unwrap() - first.peer.as_ref().unwrap().0 / first.gm).abs() < 1e-12);
    }

    /// README.md's results table is the one `cargo xtask readme` makes from the newest report.
    #[test]
    fn the_readme_table_comes_from_the_newest_report() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let table = readme_tables(&root).unwrap();
        let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
        assert_eq!(
            with_table(&readme, &table).unwrap(),
            readme,
            "README.md's results table is stale: run cargo xtask readme"
        );
        assert!(table.contains("| image pipeline (decode, RRC 224, flip, normalize, f16) |"));
    }

    #[test]
    fn numbers_are_grouped_by_thousands() {
        assert_eq!(fmt(1234567.4), "1,234,567");
        assert_eq!(fmt(100.0), "100");
        assert_eq!(fmt(30.104), "30.10");
    }
}
