//! Where a training loop's time goes (waiting for the loader, handing the batch over, the
//! step), and whether its loss fell.
#![allow(clippy::print_stdout)] // the examples report on stdout

use std::time::{Duration, Instant};

/// Accumulated time of each phase over the measured steps.
#[derive(Debug, Default, Clone, Copy)]
pub struct StepTimes {
    pub steps: usize,
    pub images: usize,
    pub wait: Duration,
    /// The part of `wait` spent on the first batch of each epoch (the pipeline filling).
    pub epoch_start_wait: Duration,
    pub epoch_starts: usize,
    pub handoff: Duration,
    pub step: Duration,
}

impl StepTimes {
    /// Adds one step; `first_of_epoch` when it took an epoch's first batch.
    pub fn add(
        &mut self,
        images: usize,
        [wait, handoff, step]: [Duration; 3],
        first_of_epoch: bool,
    ) {
        self.steps += 1;
        self.images += images;
        self.wait += wait;
        self.handoff += handoff;
        self.step += step;
        if first_of_epoch {
            self.epoch_starts += 1;
            self.epoch_start_wait += wait;
        }
    }

    /// Total time of the measured steps.
    pub fn total(&self) -> Duration {
        self.wait + self.handoff + self.step
    }

    /// One line: throughput, and the share of the time spent waiting on the loader.
    pub fn summary(&self) -> String {
        let total = self.total().as_secs_f64().max(1e-9);
        let per = |d: Duration| d.as_secs_f64() * 1e3 / self.steps.max(1) as f64;
        format!(
            "{} steps, {:.0} images/s; per step: wait {:.3} ms, handoff {:.3} ms, step {:.3} ms; \
             loader wait {:.1}% of the loop; without the {} epoch starts ({:.1} ms each) {:.2}%",
            self.steps,
            self.images as f64 / total,
            per(self.wait),
            per(self.handoff),
            per(self.step),
            100.0 * self.wait.as_secs_f64() / total,
            self.epoch_starts,
            self.epoch_start_wait.as_secs_f64() * 1e3 / self.epoch_starts.max(1) as f64,
            100.0 * (self.wait - self.epoch_start_wait).as_secs_f64()
                / (total - self.epoch_start_wait.as_secs_f64()).max(1e-9)
        )
    }
}

/// Times `f`.
pub fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let t = Instant::now();
    let v = f();
    (v, t.elapsed())
}

/// Prints the mean loss of the first and last quarter of `losses` (at most 20 steps each) and
/// fails unless it fell.
pub fn check_loss_fell(losses: &[f32]) -> anyhow::Result<()> {
    let k = (losses.len() / 4).clamp(1, 20);
    if losses.len() < 2 * k {
        anyhow::bail!(
            "{} steps are too few to tell whether the loss falls",
            losses.len()
        );
    }
    let mean = |v: &[f32]| v.iter().sum::<f32>() / v.len() as f32;
    let (first, last) = (mean(&losses[..k]), mean(&losses[losses.len() - k..]));
    println!("mean loss of the first {k} steps {first:.4}, of the last {k} {last:.4}");
    if last >= first {
        anyhow::bail!("the loss did not fall ({first:.4} -> {last:.4})");
    }
    Ok(())
}
