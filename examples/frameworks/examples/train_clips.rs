//! Trains a frame-averaging classifier with candle on `ClipLoader` batches of the bundled demo
//! videos (NVDEC decode, resize, normalize, f16 `[B, T, C, H, W]`): which of the two videos a
//! clip comes from. Needs a GPU (the clip loader decodes on NVDEC) and the `candle-cuda`
//! feature for candle's CUDA backend.
//!
//! `cargo run -p gm-frameworks --features candle-cuda --release --example train_clips [-- --steps 100 --videos DIR]`
#![allow(clippy::print_stdout)] // an example reports on stdout

use std::path::PathBuf;
use std::time::Instant;

use anyhow::bail;
use candle_core::{DType as CandleDType, Device, Tensor};
use candle_nn::{AdamW, Module, Optimizer, ParamsAdamW, VarBuilder, VarMap, loss};
use gm_cuda::DType;
use gm_frameworks::cnn::{Cnn, seeded_init};
use gm_frameworks::timing::{StepTimes, check_loss_fell};
use gm_interop::candle;
use gm_loader::{ClipLoader, Sampler, VideoDataset};
use gm_transforms::{Layout, Normalize, Resize, ToDtype};

fn main() -> anyhow::Result<()> {
    let steps: usize = match std::env::args().skip_while(|a| a != "--steps").nth(1) {
        Some(n) => n.parse()?,
        None => 100,
    };
    let videos = match std::env::args().skip_while(|a| a != "--videos").nth(1) {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../assets/demo/videos"),
    };
    let paths = vec![
        videos.join("phone_360p_h264.mp4"),
        videos.join("phone_360p_hevc_mirrored.mp4"),
    ];
    let Ok(gpu) = gm_cuda::Device::new(0) else {
        println!("train_clips needs a GPU: the clip loader decodes on NVDEC");
        return Ok(());
    };
    let device = Device::new_cuda(0)?;
    if device.is_cpu() {
        bail!("build with --features candle-cuda");
    }
    candle::keep_freed_memory(&device)?;
    let dataset = VideoDataset::builder().videos(&paths).frames(8, 2).open()?;
    let mut loader = ClipLoader::builder(dataset)
        .device(&gpu)
        .sampler(Sampler::shuffled(4))
        .batch_size(16)
        .transform(Resize::Exact(112, 112))
        .transform(Normalize::IMAGENET)
        .transform(ToDtype(DType::F16, Layout::Chw))
        .build()?;
    let vars = VarMap::new();
    let model = Cnn::new(VarBuilder::from_varmap(&vars, CandleDType::F32, &device), 2)?;
    seeded_init(&vars, 17)?;
    let mut opt = AdamW::new(
        vars.all_vars(),
        ParamsAdamW {
            lr: 2e-3,
            ..Default::default()
        },
    )?;
    let (mut times, mut losses) = (StepTimes::default(), Vec::<f32>::new());
    // Epochs back to back, each started behind the last batches of the one before.
    let mut batches = loader.epochs(0..u64::MAX);
    let mut last_epoch = None;
    while losses.len() < steps {
        let t0 = Instant::now();
        let Some((epoch, batch)) = batches.next() else {
            break;
        };
        let mut batch = batch?;
        let first_of_epoch = last_epoch != Some(epoch);
        last_epoch = Some(epoch);
        let t1 = Instant::now();
        let labels: Vec<u32> = batch.sources.iter().map(|s| s[0].0 as u32).collect();
        let labels = Tensor::new(labels.as_slice(), &device)?;
        let clips = candle::clips(&mut batch, &device)?; // [B, T, C, H, W]
        drop(batch);
        let t2 = Instant::now();
        // Average the frames, then the image CNN.
        let x = clips.to_dtype(CandleDType::F32)?.mean(1)?;
        let l = loss::cross_entropy(&model.forward(&x)?, &labels)?;
        opt.backward_step(&l)?;
        let value = l.to_scalar::<f32>()?;
        times.add(16, [t1 - t0, t2 - t1, t2.elapsed()], first_of_epoch);
        if losses.len() % 20 == 0 {
            println!("step {:4} epoch {epoch} loss {value:.4}", losses.len());
        }
        losses.push(value);
    }
    println!("{}", times.summary());
    check_loss_fell(&losses)
}
