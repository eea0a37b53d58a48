//! A small CNN in candle: four strided 3x3 convolutions, global average pooling, a linear head.

use candle_core::{D, Result, Tensor};
use candle_nn::{Conv2d, Conv2dConfig, Linear, Module, VarBuilder, VarMap, conv2d, linear};
use rand::{Rng, SeedableRng, rngs::StdRng};

/// The network.
pub struct Cnn {
    convs: Vec<Conv2d>,
    head: Linear,
}

impl Cnn {
    /// `classes` outputs; the variables live in `vb`.
    pub fn new(vb: VarBuilder, classes: usize) -> Result<Cnn> {
        let cfg = Conv2dConfig {
            padding: 1,
            stride: 2,
            ..Default::default()
        };
        let widths = [3, 16, 32, 64, 64];
        let convs = widths
            .windows(2)
            .enumerate()
            .map(|(i, w)| conv2d(w[0], w[1], 3, cfg, vb.pp(format!("conv{i}"))))
            .collect::<Result<Vec<_>>>()?;
        let head = linear(widths[widths.len() - 1], classes, vb.pp("head"))?;
        Ok(Cnn { convs, head })
    }
}

impl Module for Cnn {
    /// `[B, 3, H, W]` f32 -> `[B, classes]` logits.
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let mut x = x.clone();
        for c in &self.convs {
            x = c.forward(&x)?.relu()?;
        }
        self.head.forward(&x.mean(D::Minus1)?.mean(D::Minus1)?)
    }
}

/// Re-initializes every variable from `seed` (candle's CPU generator cannot be seeded), so a
/// run is reproducible: weights uniform in +-sqrt(6 / fan_in) (Kaiming for ReLU), biases 0.
pub fn seeded_init(vars: &VarMap, seed: u64) -> Result<()> {
    let mut rng = StdRng::seed_from_u64(seed);
    let data = vars
        .data()
        .lock()
        .map_err(|_| candle_core::Error::Msg("var map lock".into()))?;
    let mut named: Vec<_> = data.iter().collect();
    named.sort_by(|a, b| a.0.cmp(b.0));
    for (name, var) in named {
        let dims = var.dims().to_vec();
        let n: usize = dims.iter().product();
        let values: Vec<f32> = if name.ends_with("bias") {
            vec![0.0; n]
        } else {
            let fan_in: usize = dims[1..].iter().product();
            let bound = (6.0 / fan_in.max(1) as f32).sqrt();
            (0..n).map(|_| rng.random_range(-bound..bound)).collect()
        };
        let t = Tensor::from_vec(values, dims, var.device())?.to_dtype(var.dtype())?;
        var.set(&t)?;
    }
    Ok(())
}
