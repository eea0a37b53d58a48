//! `gm`: the command-line face of Gradient Mechanics.
#![allow(clippy::print_stdout)] // a command-line tool prints its report

mod bars;
mod demo;
mod demo_video;
mod frames;
mod info;
mod jpeg;
mod probe;
mod probe_many;
mod shard;
mod source;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "gm",
    version,
    about = "GPU data loading: decode JPEG and video on the GPU"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Report the GPUs, the driver and CUDA versions, the decode engines and whether nvJPEG
    /// and nvcuvid can be loaded (the default command).
    Info,
    /// Index a video without decoding it and print its summary; with --frames, every frame.
    Probe(probe::ProbeArgs),
    /// Decode frames on the GPU (NVDEC) and write them to files, one per frame.
    Frames(frames::FramesArgs),
    /// Decode images on the GPU (NVJPG engines, CUDA backend, CPU fallback) and write PNGs.
    Jpeg(jpeg::JpegArgs),
    /// The image pipeline on the bundled sample images: throughput, where time went, and a
    /// contact sheet of the first augmented batch (the CPU path on machines without a GPU).
    Demo(demo::DemoArgs),
    /// Pack an image folder or a video directory into WebDataset tar shards with DALI `.idx`
    /// indexes (--from, --to, --size), or index existing shards (--index).
    Shard(shard::ShardArgs),
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("GM_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    match Cli::parse().command.unwrap_or(Command::Info) {
        Command::Info => {
            print!("{}", info::report());
            Ok(())
        }
        Command::Probe(args) => probe::run(&args),
        Command::Frames(args) => frames::run(&args),
        Command::Jpeg(args) => jpeg::run(&args),
        Command::Demo(args) => demo::run(&args),
        Command::Shard(args) => shard::run(&args),
    }
}
