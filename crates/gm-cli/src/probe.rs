//! `gm probe`: a video's index, as a summary, a frame table, or JSON for scripts.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use gm_codec::Route;
use gm_codec::nvdec::DecoderSession;
use gm_demux::{BitstreamScan, IndexOptions, Sample, TrackSelect, VideoIndex};
use serde_json::{Value, json};

/// Arguments of `gm probe`.
#[derive(clap::Args)]
pub struct ProbeArgs {
    /// The video (MP4/MOV or Matroska/WebM): a path or a URL (`s3://`, `gs://`, `az://`,
    /// `http(s)://`), read by ranged GETs of only what the index needs. A directory or a
    /// bucket prefix ending in `/` indexes every video in it, with a progress bar, and reports
    /// what that cost per video.
    file: PathBuf,
    /// Print one JSON object (fields: codec, width, height, timescale, frame_count, ...).
    #[arg(long)]
    json: bool,
    /// Also list every frame in presentation order.
    #[arg(long)]
    frames: bool,
    /// Track ID to index (default: the first video track).
    #[arg(long)]
    track: Option<u32>,
    /// How much of the bitstream to read: none, keyframes (default), full (default with --frames).
    #[arg(long, value_parser = ["none", "keyframes", "full"])]
    scan: Option<String>,
    #[command(flatten)]
    storage: crate::source::StorageArgs,
}

pub fn run(args: &ProbeArgs) -> Result<()> {
    let scan = match args.scan.as_deref() {
        Some("none") => BitstreamScan::None,
        Some("full") => BitstreamScan::Full,
        Some(_) => BitstreamScan::Keyframes,
        None if args.frames => BitstreamScan::Full,
        None => BitstreamScan::Keyframes,
    };
    let options = IndexOptions {
        track: args.track.map(TrackSelect::Id).unwrap_or_default(),
        scan,
    };
    if crate::probe_many::is_many(&args.file) {
        if args.frames {
            anyhow::bail!("--frames lists the frames of one video, not of a folder");
        }
        let storage = args.storage.storage()?;
        return crate::probe_many::run(&args.file, options, &storage, args.json);
    }
    let start = Instant::now();
    let opened = crate::source::open(&args.file, &args.storage.storage()?)?;
    let idx = VideoIndex::from_source(opened.source.as_ref(), options)?;
    let ms = start.elapsed().as_secs_f64() * 1e3;
    let mut v = summary(&idx, ms);
    let (decoder, why) = decoder_route(&idx);
    v["decoder"] = json!(decoder);
    v["decoder_reason"] = json!(why);
    if let Some(remote) = &opened.remote {
        // What the network carried: requests, and their body bytes (at least bytes_read).
        v["requests"] = json!(idx.requests);
        v["bytes_fetched"] = json!(remote.bytes_fetched());
    }
    if args.frames {
        v["frames"] = Value::Array(
            idx.presentation
                .iter()
                .map(|&d| frame_json(&idx, &idx.packets[d as usize]))
                .collect(),
        );
    }
    if args.json {
        println!("{v}");
    } else {
        print_text(&idx, &v, args.frames);
    }
    Ok(())
}

/// Which decoder `decoder = auto` gives the stream on this machine, and why: NVDEC where the
/// GPU's decoder takes it, else the CPU (libavcodec, or the bundled rav1d for AV1) with NVDEC's
/// reason or "no CUDA device".
fn decoder_route(idx: &VideoIndex) -> (&'static str, String) {
    let route = match gm_cuda::Device::new(0) {
        Ok(device) => {
            DecoderSession::new(&device, None).and_then(|mut s| s.route(&idx.path, &idx.codec))
        }
        Err(_) => Ok(Route::Cpu {
            reason: "no CUDA device".into(),
        }),
    };
    let cpu_ok = || {
        let av1 = gm_codec::avcodec::Av1Backend::from_env().map_err(|e| e.to_string())?;
        gm_codec::avcodec::CpuDecoder::backend_for(idx.codec.codec, av1).map_err(|e| e.to_string())
    };
    match route {
        Ok(Route::Nvdec) => ("nvdec", String::new()),
        Ok(Route::Cpu { reason }) => match cpu_ok() {
            Ok(library) => ("cpu", format!("{reason}; {library}")),
            Err(e) => ("none", format!("{reason}; {e}")),
        },
        Err(e) => ("none", e.to_string()),
    }
}

/// The summary fields of `--json` (without `frames`).
pub(crate) fn summary(idx: &VideoIndex, ms: f64) -> Value {
    let gop_sizes: Vec<u32> = idx.gops.iter().map(|g| g.end - g.start).collect();
    let open = idx
        .gops
        .iter()
        .skip(1)
        .filter(|g| g.random_access.is_some_and(|r| r.is_open()))
        .count();
    let last = idx.presentation.last().map(|&d| &idx.packets[d as usize]);
    let duration = last.map(|p| p.pts + i64::from(p.duration)).unwrap_or(0);
    let (display_width, display_height) = idx
        .orientation
        .displayed_size(idx.codec.width, idx.codec.height);
    json!({
        "file": idx.path.display().to_string(),
        "container": idx.container.name(),
        "track_id": idx.track_id,
        "codec": idx.codec.codec.name(),
        "fourcc": idx.codec.fourcc,
        "profile": idx.codec.profile_name(),
        "level_idc": idx.codec.level_idc,
        "width": idx.codec.width,
        "height": idx.codec.height,
        "rotation": idx.orientation.rotation,
        "mirror": idx.orientation.mirror,
        "display_width": display_width,
        "display_height": display_height,
        "bit_depth": idx.codec.bit_depth,
        "chroma_format": idx.codec.chroma_format,
        "timescale": idx.timescale,
        "frame_count": idx.frame_count(),
        "packet_count": idx.packets.len(),
        "fps": idx.constant_fps(),
        "vfr": idx.constant_fps().is_none(),
        "duration_seconds": idx.time(duration).seconds(),
        "gop_count": idx.gops.len(),
        "gop_sizes": gop_sizes,
        "open_gops": open,
        "b_frames": idx.has_reordering(),
        "fragmented": idx.fragmented,
        "edit_shift": idx.edit_shift,
        "sync_mismatches": idx.sync_mismatches.len(),
        "scan": format!("{:?}", idx.scan).to_lowercase(),
        "bytes_read": idx.bytes_read,
        "file_size": idx.file_size,
        "index_ms": ms,
    })
}

fn frame_json(idx: &VideoIndex, p: &Sample) -> Value {
    let pic = p.picture;
    json!({
        "index": p.presentation_index.map(u32::from),
        "decode_index": p.decode_index,
        "pts": p.pts,
        "dts": p.dts,
        "pts_seconds": idx.time(p.pts).seconds(),
        "duration": p.duration,
        "offset": p.offset,
        "size": p.size,
        "keyframe": p.keyframe,
        "gop": p.gop,
        "decode_start": p.decode_start,
        "type": pic.and_then(|q| q.slice_type).map(|t| format!("{t:?}")),
        "random_access": pic.map(|q| format!("{:?}", q.random_access)),
        "reference": pic.map(|q| q.reference),
        "leading": pic.map(|q| format!("{:?}", q.leading)),
    })
}

fn print_text(idx: &VideoIndex, v: &Value, frames: bool) {
    println!("{} ({})", idx.path.display(), idx.container.name());
    println!(
        "  track {}: {} ({}) {}, {}x{}, {}-bit, chroma format {}",
        idx.track_id,
        idx.codec.codec.name(),
        idx.codec.fourcc,
        idx.codec.profile_name(),
        idx.codec.width,
        idx.codec.height,
        idx.codec.bit_depth,
        idx.codec.chroma_format
    );
    if idx.orientation.is_turned() {
        println!(
            "  shown turned {} degrees counter-clockwise{}: {}x{} as displayed",
            idx.orientation.rotation,
            if idx.orientation.mirror {
                ", then mirrored"
            } else {
                ""
            },
            v["display_width"],
            v["display_height"]
        );
    }
    match v["decoder_reason"].as_str() {
        Some(why) if !why.is_empty() => {
            println!("  decoder: {} ({why})", v["decoder"].as_str().unwrap_or(""))
        }
        _ => println!("  decoder: {}", v["decoder"].as_str().unwrap_or("")),
    }
    let rate = match idx.constant_fps() {
        Some(f) => format!("{f:.3} fps"),
        None => "variable frame rate".into(),
    };
    println!(
        "  {} frames, {rate}, {:.3} s, timescale {}",
        idx.frame_count(),
        v["duration_seconds"].as_f64().unwrap_or(0.0),
        idx.timescale
    );
    let sizes: Vec<u32> = idx.gops.iter().map(|g| g.end - g.start).collect();
    println!(
        "  {} GOPs (sizes {}..{}), {} open, B-frames: {}, fragmented: {}",
        idx.gops.len(),
        sizes.iter().min().unwrap_or(&0),
        sizes.iter().max().unwrap_or(&0),
        v["open_gops"],
        if idx.has_reordering() { "yes" } else { "no" },
        if idx.fragmented { "yes" } else { "no" },
    );
    if !idx.sync_mismatches.is_empty() {
        println!(
            "  {} sync flags disagree with the bitstream",
            idx.sync_mismatches.len()
        );
    }
    println!(
        "  indexed in {:.2} ms, {} of {} bytes read",
        v["index_ms"].as_f64().unwrap_or(0.0),
        idx.bytes_read,
        idx.file_size
    );
    if let (Some(requests), Some(fetched)) = (v["requests"].as_u64(), v["bytes_fetched"].as_u64()) {
        println!("  {requests} requests, {fetched} bytes fetched");
    }
    if frames {
        println!("  frame decode      pts      dts   offset    size key type ra  ref gop start");
        for &d in &idx.presentation {
            let p = &idx.packets[d as usize];
            let pic = p.picture;
            println!(
                "  {:5} {:6} {:8} {:8} {:8} {:7} {:>3} {:>4} {:>3} {:>3} {:3} {:5}",
                p.presentation_index.map(u32::from).unwrap_or_default(),
                p.decode_index,
                p.pts,
                p.dts,
                p.offset,
                p.size,
                if p.keyframe { "K" } else { "" },
                pic.and_then(|q| q.slice_type)
                    .map(|t| format!("{t:?}"))
                    .unwrap_or_default(),
                pic.map(|q| ra_short(q.random_access)).unwrap_or(""),
                pic.map(|q| if q.reference { "r" } else { "" })
                    .unwrap_or(""),
                p.gop,
                p.decode_start
            );
        }
    }
}

fn ra_short(r: gm_demux::RandomAccess) -> &'static str {
    match r {
        gm_demux::RandomAccess::None => "",
        gm_demux::RandomAccess::Idr => "IDR",
        gm_demux::RandomAccess::Cra => "CRA",
        gm_demux::RandomAccess::Bla => "BLA",
        gm_demux::RandomAccess::RecoveryPoint => "RP",
    }
}
