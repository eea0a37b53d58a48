//! Trains a small CNN with candle on batches from gm's image loader (random-resized crop,
//! flip, normalize, f16 CHW), printing the loss, the throughput and the share of the loop
//! spent waiting on the loader.
//!
//! ```text
//! cargo run -p gm-frameworks --example train_cnn -- --device cpu --steps 40 --batch 16 --size 64
//! cargo run -p gm-frameworks --features candle-cuda --release --example train_cnn -- \
//!     --device cuda --steps 300 --batch 256 --size 224 [--handoff move]
//! ```
//! `--driver-pool-default` leaves CUDA's memory pool returning freed memory at each sync
//! (see `gm_interop::candle::keep_freed_memory`). `--one-epoch-at-a-time` runs `loader.epoch(e)`
//! after `loader.epoch(e - 1)` instead of `loader.epochs(..)`, which starts each epoch behind
//! the last batches of the one before (for comparing the two). Without `--data DIR` it first writes a seeded dataset of striped/checkered JPEGs (4 classes).
#![allow(clippy::print_stdout)] // an example reports on stdout

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, bail};
use candle_core::{DType as CandleDType, Device};
use candle_nn::{AdamW, Module, Optimizer, ParamsAdamW, VarBuilder, VarMap, loss};
use gm_cuda::DType;
use gm_frameworks::cnn::{Cnn, seeded_init};
use gm_frameworks::patterns::{CLASSES, write_dataset};
use gm_frameworks::timing::{StepTimes, check_loss_fell, timed};
use gm_interop::candle::{self, Handoff};
use gm_loader::{Batch, ImageFolder, Loader, LoaderError, Sampler};
use gm_transforms::{HorizontalFlip, Layout, Normalize, RandomResizedCrop, ToDtype};

struct Args {
    data: Option<PathBuf>,
    device: String,
    steps: usize,
    batch: usize,
    size: usize,
    images: usize,
    handoff: Handoff,
    keep_memory: bool,
    one_epoch_at_a_time: bool,
}

fn args() -> anyhow::Result<Args> {
    let mut a = Args {
        data: None,
        device: "cpu".into(),
        steps: 40,
        batch: 16,
        size: 64,
        images: 512,
        handoff: Handoff::Copy,
        keep_memory: true,
        one_epoch_at_a_time: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().with_context(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--data" => a.data = Some(value()?.into()),
            "--device" => a.device = value()?,
            "--steps" => a.steps = value()?.parse()?,
            "--batch" => a.batch = value()?.parse()?,
            "--size" => a.size = value()?.parse()?,
            "--images" => a.images = value()?.parse()?,
            "--driver-pool-default" => a.keep_memory = false,
            "--one-epoch-at-a-time" => a.one_epoch_at_a_time = true,
            "--handoff" => {
                a.handoff = match value()?.as_str() {
                    "copy" => Handoff::Copy,
                    "move" => Handoff::Move,
                    other => bail!("--handoff copy|move, not {other}"),
                }
            }
            other => bail!("unknown argument {other}"),
        }
    }
    Ok(a)
}

fn main() -> anyhow::Result<()> {
    let a = args()?;
    let data = match &a.data {
        Some(d) => d.clone(),
        None => {
            let d = std::env::temp_dir().join(format!("gm-patterns-{}-{}", a.images, a.size + 32));
            if !d.exists() {
                let (r, t) = timed(|| write_dataset(&d, a.images, (a.size + 32) as u32, 7));
                r?;
                println!(
                    "wrote {} JPEGs to {} in {:.1} s",
                    a.images,
                    d.display(),
                    t.as_secs_f64()
                );
            }
            d
        }
    };
    let device = match a.device.as_str() {
        "cpu" => Device::Cpu,
        "cuda" => Device::new_cuda(0)?,
        other => bail!("--device cpu|cuda, not {other}"),
    };
    if a.keep_memory {
        candle::keep_freed_memory(&device)?;
    }
    let mut builder = Loader::builder(ImageFolder::new(&data)?)
        .sampler(Sampler::shuffled(1))
        .batch_size(a.batch)
        .drop_last(true)
        .transform(RandomResizedCrop::new(a.size as u32, a.size as u32))
        .transform(HorizontalFlip(0.5))
        .transform(Normalize::IMAGENET)
        .transform(ToDtype(DType::F16, Layout::Chw));
    if device.is_cpu() {
        builder = builder.cpu();
    }
    let mut loader = builder.build()?;
    println!(
        "data {}, loader on {}, model on {:?}, batch {}, {}x{}, handoff {:?}, keep freed memory {}",
        data.display(),
        loader.placement(),
        device,
        a.batch,
        a.size,
        a.size,
        a.handoff,
        a.keep_memory
    );
    train(&mut loader, &device, &a)
}

/// Every epoch's batches, tagged with their epoch: back to back with the next epoch started
/// ahead (`Loader::epochs`), or one epoch after the other.
fn epochs(
    loader: &mut Loader,
    one_at_a_time: bool,
) -> Box<dyn Iterator<Item = (u64, Result<Batch, LoaderError>)> + '_> {
    if one_at_a_time {
        // The next epoch starts once this one has ended.
        Box::new((0..).flat_map(|e| loader.epoch_owned(e).map(move |b| (e, b))))
    } else {
        Box::new(loader.epochs(0..u64::MAX))
    }
}

fn train(loader: &mut Loader, device: &Device, a: &Args) -> anyhow::Result<()> {
    let vars = VarMap::new();
    let model = Cnn::new(
        VarBuilder::from_varmap(&vars, CandleDType::F32, device),
        CLASSES.len(),
    )?;
    seeded_init(&vars, 17)?;
    let params = ParamsAdamW {
        lr: 2e-3,
        ..Default::default()
    };
    let mut opt = AdamW::new(vars.all_vars(), params)?;
    let (mut times, mut losses) = (StepTimes::default(), Vec::new());
    let warmup = 5.min(a.steps / 4);
    let mut batches = epochs(loader, a.one_epoch_at_a_time);
    let mut last_epoch = None;
    while losses.len() < a.steps {
        let t0 = Instant::now();
        let Some((epoch, batch)) = batches.next() else {
            break;
        };
        let mut batch = batch?;
        let first_of_epoch = last_epoch != Some(epoch);
        last_epoch = Some(epoch);
        let t1 = Instant::now();
        let labels = candle::labels(&batch, device)?;
        let images = match a.handoff {
            Handoff::Copy => candle::images(&mut batch, device)?,
            Handoff::Move => candle::into_images(batch, device)?.0,
        };
        let t2 = Instant::now();
        let logits = model.forward(&images.to_dtype(CandleDType::F32)?)?;
        let l = loss::cross_entropy(&logits, &labels)?;
        opt.backward_step(&l)?;
        let value = l.to_scalar::<f32>()?; // waits for the step on the GPU
        let step = losses.len();
        if step >= warmup {
            times.add(a.batch, [t1 - t0, t2 - t1, t2.elapsed()], first_of_epoch);
        }
        losses.push(value);
        if step % 20 == 0 || step + 1 == a.steps {
            println!("step {step:4} epoch {epoch} loss {value:.4}");
        }
    }
    println!("{}", times.summary());
    check_loss_fell(&losses)
}
