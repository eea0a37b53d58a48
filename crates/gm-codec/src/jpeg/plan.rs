//! The plan of a batch, made on the host before any decoding: each input's path from its
//! header, the engines' share, the regions the CUDA backend decodes, where each image lies in
//! the batch buffer and where its YCbCr planes lie, and the decoders' job lists.

use super::color;
use super::error::{ImageError, ImageErrorKind};
use super::formats::{SourceFormat, checked_dimensions, dimensions, sniff};
use super::header::{JpegInfo, parse};
use super::host::check_end_marker;
use super::nvjpeg::{GpuJob, NvFormat, destination, plane_destination};
use super::options::{BackendChoice, ChromaUpsampling, DecoderOptions};
use super::output::{DecodePath, DecodedImage, EncodedImage};
use super::route::{Backend, route};
use super::split::{engine_quota, runs_balanced};
use super::types::{PixelFormat, PlaneLayout, Roi};

/// Images and plane sets start at multiples of this in their buffers.
pub(crate) const ALIGN: usize = 256;

/// What the planner decided for one input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Plan {
    /// `planes`: decoded to YCbCr planes laid out so, then converted by our kernel.
    Gpu {
        backend: Backend,
        info: JpegInfo,
        planes: Option<PlaneLayout>,
    },
    CpuJpeg(JpegInfo),
    CpuOther(SourceFormat),
    Failed(ImageErrorKind),
}

/// The decoders a batch can use, as the planner needs to know them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Available {
    /// The NVJPG engines.
    pub hardware: bool,
    /// The batched GPU-Huffman call ([`Split::GpuHuffman`](super::Split::GpuHuffman)).
    pub gpu_batched: bool,
    /// CUDA-backend workers.
    pub cuda_workers: usize,
}

/// The plan of one input: its path, or why it cannot be decoded.
pub(crate) fn plan(input: &EncodedImage<'_>, o: &DecoderOptions, hardware: bool) -> Plan {
    let Some(format) = sniff(input.data) else {
        return Plan::Failed(ImageErrorKind::NotAnImage);
    };
    let planned = if format == SourceFormat::Jpeg {
        plan_jpeg(input.data, o, hardware)
    } else {
        plan_other(input.data, format, o)
    };
    planned.unwrap_or_else(Plan::Failed)
}

/// The name of a GPU-only backend choice in messages.
fn gpu_backend_name(b: BackendChoice) -> &'static str {
    if b == BackendChoice::Hardware {
        "hardware"
    } else {
        "CUDA"
    }
}

/// PNG, BMP, WebP and TIFF: on the CPU, once their header says their size is allowed.
fn plan_other(
    data: &[u8],
    format: SourceFormat,
    o: &DecoderOptions,
) -> Result<Plan, ImageErrorKind> {
    if matches!(o.backend, BackendChoice::Hardware | BackendChoice::Cuda) {
        return Err(ImageErrorKind::Unsupported(format!(
            "{} images are decoded on the CPU, not by the {} backend",
            format.name(),
            gpu_backend_name(o.backend)
        )));
    }
    checked_dimensions(data, format, o.max_pixels)?;
    Ok(Plan::CpuOther(format))
}

/// A JPEG: the path its header allows among the decoders allowed here.
fn plan_jpeg(data: &[u8], o: &DecoderOptions, hardware: bool) -> Result<Plan, ImageErrorKind> {
    let info = parse(data)?;
    let (hw_ok, cuda_ok) = match o.backend {
        BackendChoice::Auto => (hardware, true),
        BackendChoice::Hardware => (true, false),
        BackendChoice::Cuda => (false, true),
        BackendChoice::Cpu => (false, false),
    };
    let backend = route(&info, hw_ok, cuda_ok, o.max_pixels)?;
    check_end_marker(&info, data)?;
    match (backend, o.backend) {
        (Backend::Cpu, BackendChoice::Hardware | BackendChoice::Cuda) => {
            Err(ImageErrorKind::Unsupported(format!(
                "{:?} {:?} {}-bit JPEG with {} components is not decodable by the {} backend",
                info.coding,
                info.subsampling(),
                info.precision,
                info.components.len(),
                gpu_backend_name(o.backend)
            )))
        }
        (Backend::Cuda, BackendChoice::Hardware) => Err(ImageErrorKind::Unsupported(format!(
            "{:?} {:?} JPEG is not decodable by the hardware engines",
            info.coding,
            info.subsampling()
        ))),
        (Backend::Cpu, _) => Ok(Plan::CpuJpeg(info)),
        (b, _) => Ok(gpu_plan(b, info, o)),
    }
}

/// A JPEG for GPU backend `b`: to planes for our chroma upsampling where its layout allows.
fn gpu_plan(b: Backend, info: JpegInfo, o: &DecoderOptions) -> Plan {
    let smooth = o.chroma == ChromaUpsampling::Smooth && o.format != PixelFormat::Grey;
    let planes = if smooth {
        PlaneLayout::for_jpeg(&info)
    } else {
        None
    };
    Plan::Gpu {
        // Every layout the engines take has planes; this only guards the split.
        backend: if b == Backend::Hardware && planes.is_none() && smooth {
            Backend::Cuda
        } else {
            b
        },
        info,
        planes,
    }
}

/// The plan of a batch, built step by step: [`BatchPlan::new`] (paths and regions, the part
/// timed as planning), then [`BatchPlan::output_layout`] and [`BatchPlan::plane_layout`],
/// then [`BatchPlan::jobs`] once the buffers' addresses are known.
#[derive(Debug)]
pub(crate) struct BatchPlan {
    /// One plan per input.
    pub(crate) plans: Vec<Plan>,
    /// Whether the engines and the CUDA workers share the engines' images at run time.
    pub(crate) balanced: bool,
    /// The engines' share of the engine-capable images.
    pub(crate) hw_quota: usize,
    /// The region the CUDA backend decodes, per input.
    pub(crate) rois: Vec<Option<Roi>>,
    /// One result per input; `Ok` ones say where the image goes.
    pub(crate) results: Vec<Result<DecodedImage, ImageError>>,
    /// Bytes of the batch buffer.
    pub(crate) total: usize,
    /// Where each input's planes start after the job table, for images decoded to planes.
    pub(crate) plane_at: Vec<Option<usize>>,
    /// Bytes of all planes.
    pub(crate) plane_total: usize,
}

impl BatchPlan {
    /// Each input's path, the engines' share and the regions; `region(input index, width,
    /// height)` names the part of each image its user reads.
    pub(crate) fn new(
        inputs: &[EncodedImage<'_>],
        o: &DecoderOptions,
        available: Available,
        region: &mut dyn FnMut(usize, u32, u32) -> Option<Roi>,
    ) -> BatchPlan {
        let mut p = BatchPlan {
            plans: inputs
                .iter()
                .map(|i| plan(i, o, available.hardware))
                .collect(),
            balanced: false,
            hw_quota: 0,
            rois: Vec::new(),
            results: Vec::with_capacity(inputs.len()),
            total: 0,
            plane_at: Vec::new(),
            plane_total: 0,
        };
        p.assign_paths(o, available);
        p.regions(o, available, region);
        p
    }

    /// The share of the engines' images moved to the CUDA backend. nvJPEG's own check of each
    /// engine image runs on the engines' thread, at the same time as the CUDA workers, not
    /// here: parsing every header again took 2 ms a batch.
    fn assign_paths(&mut self, o: &DecoderOptions, available: Available) {
        let on_engines = |p: &Plan| {
            matches!(
                p,
                Plan::Gpu {
                    backend: Backend::Hardware,
                    ..
                }
            )
        };
        let hw_total = self.plans.iter().filter(|p| on_engines(p)).count();
        self.hw_quota = engine_quota(o.backend, hw_total, o.split.hw_load());
        self.balanced = runs_balanced(
            &o.split,
            o.backend,
            available.hardware,
            available.gpu_batched,
            available.cuda_workers,
        );
        if self.balanced {
            return;
        }
        let mut hw_count = 0usize;
        for p in self.plans.iter_mut() {
            if let Plan::Gpu { backend, .. } = p
                && *backend == Backend::Hardware
            {
                if !available.hardware {
                    // Only reached with the hardware backend chosen (Auto routes by it).
                    *p = Plan::Failed(ImageErrorKind::Unsupported(
                        "this GPU has no NVJPG engines".into(),
                    ));
                } else if hw_count >= self.hw_quota {
                    *backend = Backend::Cuda;
                } else {
                    hw_count += 1;
                }
            }
        }
    }

    /// Regions, for the images the CUDA workers decode to RGB as they are (not turned by
    /// orientation, not to planes); a region that is the whole image or leaves it is ignored.
    fn regions(
        &mut self,
        o: &DecoderOptions,
        available: Available,
        region: &mut dyn FnMut(usize, u32, u32) -> Option<Roi>,
    ) {
        self.rois = self
            .plans
            .iter()
            .enumerate()
            .map(|(i, p)| match p {
                Plan::Gpu {
                    backend: Backend::Cuda,
                    info,
                    planes: None,
                } if !available.gpu_batched && (info.orientation == 1 || !o.apply_orientation) => {
                    let (w, h) = (info.width, info.height);
                    region(i, w, h).filter(|r| {
                        r.width > 0
                            && r.height > 0
                            && r.x.checked_add(r.width).is_some_and(|e| e <= w)
                            && r.y.checked_add(r.height).is_some_and(|e| e <= h)
                            && (r.width, r.height) != (w, h)
                    })
                }
                _ => None,
            })
            .collect();
    }

    /// Sizes and offsets in the batch buffer, and the result of every input that failed.
    pub(crate) fn output_layout(&mut self, inputs: &[EncodedImage<'_>], o: &DecoderOptions) {
        let ch = o.format.channels();
        for (i, (p, input)) in self.plans.iter().zip(inputs).enumerate() {
            let dims = match p {
                Plan::Gpu { info, .. } | Plan::CpuJpeg(info) => {
                    Ok(info.oriented_size(o.apply_orientation))
                }
                Plan::CpuOther(f) => dimensions(input.data, *f, o.max_pixels),
                Plan::Failed(k) => Err(k.clone()),
            };
            let full_size = match dims {
                Ok(s) => s,
                Err(kind) => {
                    self.results.push(Err(ImageError {
                        input: input.name.to_string(),
                        kind,
                    }));
                    continue;
                }
            };
            let (origin, (w, h)) = match self.rois[i] {
                Some(r) => ((r.x, r.y), (r.width, r.height)),
                None => ((0, 0), full_size),
            };
            let len = w as usize * h as usize * ch;
            let offset = self.total;
            self.total += len.div_ceil(ALIGN) * ALIGN;
            self.results.push(Ok(DecodedImage {
                width: w,
                height: h,
                origin,
                full_size,
                format: o.format,
                offset,
                len,
                path: match p {
                    Plan::Gpu {
                        backend: Backend::Hardware,
                        ..
                    } => DecodePath::Hardware,
                    Plan::Gpu { .. } => DecodePath::Cuda,
                    _ => DecodePath::Cpu,
                },
                source: match p {
                    Plan::CpuOther(f) => *f,
                    _ => SourceFormat::Jpeg,
                },
            }));
        }
    }

    /// Images decoded to planes: the job table first, then each image's planes.
    pub(crate) fn plane_layout(&mut self) {
        self.plane_at = vec![None; self.plans.len()];
        self.plane_total = 0;
        for (i, p) in self.plans.iter().enumerate() {
            if let (
                Plan::Gpu {
                    planes: Some(l), ..
                },
                Ok(_),
            ) = (p, &self.results[i])
            {
                self.plane_at[i] = Some(self.plane_total);
                self.plane_total += l.bytes().div_ceil(ALIGN) * ALIGN;
            }
        }
    }

    /// How many images are decoded to planes.
    pub(crate) fn plane_count(&self) -> usize {
        self.plane_at.iter().flatten().count()
    }

    /// Bytes of the colour kernel's job table, rounded up to [`ALIGN`].
    pub(crate) fn table_len(&self) -> usize {
        color::table_bytes(self.plane_count()).div_ceil(ALIGN) * ALIGN
    }

    /// The decoders' jobs, with the batch buffer at `base` and the planes (after the job
    /// table) at `plane_base`.
    pub(crate) fn jobs<'a>(
        &self,
        inputs: &[EncodedImage<'a>],
        o: &DecoderOptions,
        base: u64,
        plane_base: u64,
    ) -> Jobs<'a> {
        let mut jobs = Jobs::default();
        for (i, (p, input)) in self.plans.iter().zip(inputs).enumerate() {
            let Ok(img) = &self.results[i] else { continue };
            match p {
                Plan::Gpu {
                    backend,
                    info,
                    planes,
                } => {
                    let fmt = NvFormat::from(o.format);
                    let (format, dst, orientation) = match (planes, self.plane_at[i]) {
                        (Some(l), Some(at)) => (
                            NvFormat::Yuv,
                            plane_destination(plane_base + at as u64, l),
                            1,
                        ),
                        _ => (
                            fmt,
                            destination(base + img.offset as u64, img.width, img.height, fmt),
                            if o.apply_orientation {
                                info.orientation
                            } else {
                                1
                            },
                        ),
                    };
                    let job = GpuJob {
                        data: input.data,
                        orientation,
                        pixels: u64::from(info.width) * u64::from(info.height),
                        format,
                        dst,
                        roi: self.rois[i],
                    };
                    if *backend == Backend::Hardware {
                        jobs.hw.push((i, job));
                    } else {
                        jobs.cuda.push((i, job));
                    }
                }
                Plan::CpuJpeg(_) | Plan::CpuOther(_) => jobs.cpu.push(i),
                Plan::Failed(_) => {}
            }
        }
        jobs
    }
}

/// The decoders' work of a batch: (input index, job) per GPU image, input indices for the CPU.
#[derive(Default)]
pub(crate) struct Jobs<'a> {
    /// The engines' images, in input order.
    pub(crate) hw: Vec<(usize, GpuJob<'a>)>,
    /// The CUDA backend's images.
    pub(crate) cuda: Vec<(usize, GpuJob<'a>)>,
    /// The CPU's images.
    pub(crate) cpu: Vec<usize>,
}
