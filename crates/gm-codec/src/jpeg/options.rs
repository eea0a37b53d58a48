//! Settings of the batched decoder: which decoders may run, the output layout, and how the
//! images the NVJPG engines can take are shared between them and nvJPEG's CUDA backend.

use super::error::ParseOptionError;
use super::route::DEFAULT_MAX_PIXELS;
use super::types::PixelFormat;

/// Which decoders may be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendChoice {
    /// Each image on the best path for it: hardware, CUDA backend, then CPU.
    Auto,
    /// Only the NVJPG engines; other images are errors.
    Hardware,
    /// Only nvJPEG's CUDA backend; other images are errors.
    Cuda,
    /// Only the CPU.
    Cpu,
}

impl std::str::FromStr for BackendChoice {
    type Err = ParseOptionError;
    fn from_str(s: &str) -> Result<Self, ParseOptionError> {
        match s {
            "auto" => Ok(BackendChoice::Auto),
            "hw" | "hardware" => Ok(BackendChoice::Hardware),
            "cuda" => Ok(BackendChoice::Cuda),
            "cpu" => Ok(BackendChoice::Cpu),
            other => Err(ParseOptionError {
                option: "backend",
                given: other.to_string(),
                expected: "auto, hw, cuda, cpu",
            }),
        }
    }
}

/// How subsampled chroma is brought to full size on the GPU paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ChromaUpsampling {
    /// Interpolated like libjpeg-turbo's "fancy upsampling" (PIL, OpenCV, zune-jpeg): nvJPEG
    /// writes the planes and one kernel per batch interpolates, converts and turns them, so
    /// GPU images match CPU decodes to the IDCT's rounding. EXIF orientation then costs
    /// nothing on the engines.
    #[default]
    Smooth,
    /// nvJPEG's own conversion, each chroma sample repeated (what DALI, nvImageCodec and
    /// torchvision return): one pass less, and blockier colour edges.
    Replicate,
}

impl std::str::FromStr for ChromaUpsampling {
    type Err = ParseOptionError;
    fn from_str(s: &str) -> Result<Self, ParseOptionError> {
        match s {
            "smooth" => Ok(ChromaUpsampling::Smooth),
            "replicate" => Ok(ChromaUpsampling::Replicate),
            other => Err(ParseOptionError {
                option: "chroma upsampling",
                given: other.to_string(),
                expected: "smooth, replicate",
            }),
        }
    }
}

/// What to do with a JPEG whose data ends before its end-of-image marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Truncated {
    /// Refuse it as truncated, as PIL does by default: in a dataset a cut file is most often
    /// a failed copy, better reported than trained on.
    #[default]
    Refuse,
    /// Decode what is there, on the CPU, as libjpeg-turbo does after its "premature end of
    /// data" warning (the missing rows come out grey).
    Decode,
}

impl std::str::FromStr for Truncated {
    type Err = ParseOptionError;
    fn from_str(s: &str) -> Result<Self, ParseOptionError> {
        match s {
            "refuse" => Ok(Truncated::Refuse),
            "decode" => Ok(Truncated::Decode),
            other => Err(ParseOptionError {
                option: "truncated-JPEG policy",
                given: other.to_string(),
                expected: "refuse, decode",
            }),
        }
    }
}

/// How the images the NVJPG engines can take are shared between the engines and nvJPEG's
/// CUDA backend, which run at the same time, and how the CUDA backend takes its share. Each
/// variant's `hw_load` (0 to 1) is the fraction of those images the engines are given
/// (DALI's `hw_decoder_load`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Split {
    /// A share fixed before decoding; the CUDA backend decodes its images one by one on the
    /// [`CudaWorkers`].
    Fixed {
        /// The engines' share.
        hw_load: f32,
    },
    /// The share decided at run time: the engines take chunks from the front of the batch,
    /// the CUDA workers single images from the back, until they meet, so neither path waits
    /// for the other when a fixed share guessed wrong for this host and image mix. The
    /// engines and the CUDA backend differ in the last bit, so which path an image takes,
    /// and with it the pixels, then depends on timing.
    Balanced {
        /// The share the engines are sure to get: the CUDA backend takes at most the rest.
        hw_load: f32,
    },
    /// A fixed share, the CUDA backend's in one batched call that does the Huffman decoding
    /// on the GPU (nvJPEG's GPU_HYBRID backend) instead of image by image with the Huffman
    /// decoding on host threads: the SMs take the work the host cores did. The
    /// [`CudaWorkers`] then only decode again the images of a failed call.
    GpuHuffman {
        /// The engines' share.
        hw_load: f32,
    },
}

impl Split {
    /// The engines' share.
    pub fn hw_load(&self) -> f32 {
        match *self {
            Split::Fixed { hw_load }
            | Split::Balanced { hw_load }
            | Split::GpuHuffman { hw_load } => hw_load,
        }
    }

    /// The same split with the engines' share `hw_load`.
    pub fn with_hw_load(self, hw_load: f32) -> Split {
        match self {
            Split::Fixed { .. } => Split::Fixed { hw_load },
            Split::Balanced { .. } => Split::Balanced { hw_load },
            Split::GpuHuffman { .. } => Split::GpuHuffman { hw_load },
        }
    }

    /// Whether the share is decided at run time ([`Split::Balanced`]).
    pub fn is_balanced(&self) -> bool {
        matches!(self, Split::Balanced { .. })
    }

    /// Whether the CUDA backend's share goes in one batched GPU-Huffman call
    /// ([`Split::GpuHuffman`]).
    pub fn is_gpu_huffman(&self) -> bool {
        matches!(self, Split::GpuHuffman { .. })
    }
}

/// Which of a batch's engine-capable images a fixed split ([`Split::Fixed`],
/// [`Split::GpuHuffman`]) gives the engines. The engines and the CUDA backend differ in the
/// last bit, so this decides whether an image's pixels depend on the batch it is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SplitKey {
    /// The first `hw_load` of them in batch order: the engines get exactly their share of
    /// every batch, and an image's path depends on its place in the batch.
    Position,
    /// Those whose name hashes below `hw_load` (a fixed 64-bit hash of
    /// [`EncodedImage::name`](super::EncodedImage::name)): an image takes the same path in any
    /// batch, so pixels do not change with the batch size, the sampler's world size or the
    /// other samples drawn beside it; a batch's share is `hw_load` on average.
    Name,
}

impl SplitKey {
    /// Whether the image named `name` goes to the engines at share `hw_load` (0 to 1).
    pub fn name_draws_engines(name: &str, hw_load: f32) -> bool {
        unit_hash(name) < f64::from(hw_load.clamp(0.0, 1.0))
    }
}

/// `name` mapped to [0, 1) by FNV-1a and SplitMix64's finalizer: fixed across runs, hosts and
/// versions (std's hasher promises none of that), and spread evenly for names that differ
/// only in their last characters.
fn unit_hash(name: &str) -> f64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h ^= h >> 30;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^= h >> 31;
    (h >> 11) as f64 / (1u64 << 53) as f64
}

/// The CUDA backend's worker threads, each with its own nvJPEG state and stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CudaWorkers {
    /// How many.
    pub threads: usize,
    /// Images of at least this many pixels get their Huffman decoding on the GPU; smaller
    /// ones on the worker's thread.
    pub gpu_huffman_pixels: u64,
}

impl Default for CudaWorkers {
    fn default() -> Self {
        CudaWorkers {
            threads: 2,
            gpu_huffman_pixels: 1_000_000,
        }
    }
}

/// Settings of an [`ImageDecoder`](super::ImageDecoder).
#[derive(Debug, Clone)]
pub struct DecoderOptions {
    /// Which decoders may be used.
    pub backend: BackendChoice,
    /// Output pixel layout.
    pub format: PixelFormat,
    /// Turn images upright as their EXIF orientation says (PIL's `exif_transpose`).
    pub apply_orientation: bool,
    /// Images with more pixels are refused before anything is allocated.
    pub max_pixels: u64,
    /// How the engine-capable images are shared between the engines and the CUDA backend.
    pub split: Split,
    /// Which images of a fixed split go to the engines: the first of the batch, or those
    /// whose names draw so.
    pub split_key: SplitKey,
    /// The CUDA backend's worker threads.
    pub cuda: CudaWorkers,
    /// Threads for CPU decoding within a batch.
    pub cpu_threads: usize,
    /// Expected batch size and image size, to size the engines' memory up front.
    pub preallocate: Option<(usize, u32, u32)>,
    /// How subsampled chroma is upsampled on the GPU paths (RGB outputs; grey has no chroma).
    pub chroma: ChromaUpsampling,
    /// JPEGs cut before their end-of-image marker: refused, or decoded as libjpeg-turbo does.
    pub truncated: Truncated,
}

impl Default for DecoderOptions {
    fn default() -> Self {
        DecoderOptions {
            backend: BackendChoice::Auto,
            format: PixelFormat::Rgb,
            apply_orientation: true,
            max_pixels: DEFAULT_MAX_PIXELS,
            split: Split::Fixed { hw_load: 0.9 },
            split_key: SplitKey::Position,
            cuda: CudaWorkers::default(),
            cpu_threads: 2,
            preallocate: None,
            chroma: ChromaUpsampling::Smooth,
            truncated: Truncated::Refuse,
        }
    }
}

impl DecoderOptions {
    /// The settings gm-loader's image pipelines start from: a fixed 0.8 share for the engines
    /// with 4 CUDA workers (throughput near the best for a third fewer host cores, and
    /// batches bit-identical across runs), drawn by each sample's name so that a sample's
    /// pixels are the same in any batch and at any world size, and nvJPEG's own chroma, since
    /// the loader's random resized crop resamples the colours anyway.
    pub fn for_loader() -> DecoderOptions {
        DecoderOptions {
            split: Split::Fixed { hw_load: 0.8 },
            split_key: SplitKey::Name,
            cuda: CudaWorkers {
                threads: 4,
                ..CudaWorkers::default()
            },
            chroma: ChromaUpsampling::Replicate,
            ..DecoderOptions::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_unknown_names_say_what_is_accepted() {
        assert_eq!("hw".parse::<BackendChoice>(), Ok(BackendChoice::Hardware));
        assert_eq!("hardware".parse(), Ok(BackendChoice::Hardware));
        assert_eq!("cpu".parse(), Ok(BackendChoice::Cpu));
        assert_eq!("replicate".parse(), Ok(ChromaUpsampling::Replicate));
        let e = "gpu".parse::<BackendChoice>().unwrap_err();
        assert_eq!(e.to_string(), "unknown backend `gpu` (auto, hw, cuda, cpu)");
        let e = "fancy".parse::<ChromaUpsampling>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown chroma upsampling `fancy` (smooth, replicate)"
        );
    }

    #[test]
    fn a_split_keeps_its_kind_when_its_share_changes() {
        let s = Split::Balanced { hw_load: 0.9 }.with_hw_load(0.3);
        assert_eq!(s, Split::Balanced { hw_load: 0.3 });
        assert!(s.is_balanced() && !s.is_gpu_huffman());
        assert_eq!(s.hw_load(), 0.3);
        let g = Split::GpuHuffman { hw_load: 0.5 }.with_hw_load(1.0);
        assert_eq!(g, Split::GpuHuffman { hw_load: 1.0 });
    }

    #[test]
    fn the_loader_settings_differ_from_the_defaults_only_where_documented() {
        let (l, d) = (DecoderOptions::for_loader(), DecoderOptions::default());
        assert_eq!(l.split, Split::Fixed { hw_load: 0.8 });
        assert_eq!(l.cuda.threads, 4);
        assert_eq!(l.cuda.gpu_huffman_pixels, d.cuda.gpu_huffman_pixels);
        assert_eq!(l.chroma, ChromaUpsampling::Replicate);
        assert_eq!(d.split, Split::Fixed { hw_load: 0.9 });
        assert_eq!(d.cuda.threads, 2);
        assert_eq!(d.chroma, ChromaUpsampling::Smooth);
        assert_eq!(
            (l.backend, l.format, l.max_pixels),
            (d.backend, d.format, d.max_pixels)
        );
        assert_eq!(
            (l.cpu_threads, l.apply_orientation),
            (d.cpu_threads, d.apply_orientation)
        );
    }
}
