//! The plan of a batch, made on the host before any decoding: each input's path from its
//! header, the engines' share, the regions the CUDA backend decodes, where each image lies in
//! the batch buffer and where its YCbCr planes lie, and the decoders' job lists.

use super::color;
use super::cpu::needs_libjpeg;
use super::error::{ImageError, ImageErrorKind};
use super::formats::{SourceFormat, checked_dimensions, dimensions, sniff};
use super::header::{JpegInfo, parse, scan_damaged};
use super::host::check_end_marker;
use super::nvjpeg::{GpuJob, NvFormat, destination, plane_destination};
use super::options::{BackendChoice, ChromaUpsampling, DecoderOptions, SplitKey, Truncated};
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
    if !info.has_end_marker(data) {
        // nvJPEG refuses a cut scan; the CPU decoder fills the rest as libjpeg-turbo does.
        if o.truncated == Truncated::Refuse
            || !matches!(o.backend, BackendChoice::Auto | BackendChoice::Cpu)
        {
            check_end_marker(&info, data)?;
        }
        return Ok(Plan::CpuJpeg(info));
    }
    match (backend, o.backend) {
        (Backend::Cpu, BackendChoice::Hardware | BackendChoice::Cuda)
            if !info.extraneous.is_empty() =>
        {
            Err(ImageErrorKind::Unsupported(format!(
                "a JPEG with extraneous bytes before its markers is decoded on the CPU, not by \
                 the {} backend",
                gpu_backend_name(o.backend)
            )))
        }
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
        // Where a choice is left to gm: the layouts nvJPEG decodes differently from
        // libjpeg-turbo (sub-MCU images: 20 dB against Pillow on an H100) and damaged files
        // (nvJPEG conceals damage its own way: 5-8 dB) are decoded as libjpeg-turbo does.
        // The damage check is one pass over the bytes (9 us for a 61 KB image).
        (_, BackendChoice::Auto) if needs_libjpeg(&info) || scan_damaged(data, &info) => {
            Ok(Plan::CpuJpeg(info))
        }
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
        p.assign_paths(inputs, o, available);
        p.regions(o, available, region);
        p
    }

    /// The share of the engines' images moved to the CUDA backend. nvJPEG's own check of each
    /// engine image runs on the engines' thread, at the same time as the CUDA workers, not
    /// here: parsing every header again took 2 ms a batch.
    fn assign_paths(
        &mut self,
        inputs: &[EncodedImage<'_>],
        o: &DecoderOptions,
        available: Available,
    ) {
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
        // Only the CUDA backend's absence forces every image on the engines.
        let by_name = o.split_key == SplitKey::Name && o.backend != BackendChoice::Hardware;
        let mut hw_count = 0usize;
        for (p, input) in self.plans.iter_mut().zip(inputs) {
            if let Plan::Gpu { backend, .. } = p
                && *backend == Backend::Hardware
            {
                let engines = if by_name {
                    SplitKey::name_draws_engines(input.name, o.split.hw_load())
                } else {
                    hw_count < self.hw_quota
                };
                if !available.hardware {
                    // Only reached with the hardware backend chosen (Auto routes by it).
                    *p = Plan::Failed(ImageErrorKind::Unsupported(
                        "this GPU has no NVJPG engines".into(),
                    ));
                } else if engines {
                    hw_count += 1;
                } else {
                    *backend = Backend::Cuda;
                }
            }
        }
        self.hw_quota = hw_count;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jpeg::options::Split;

    /// A JPEG that the header reader and the router accept: frame marker `sof`, `size`,
    /// components (id, sampling byte), EXIF `orientation` when not 1, a scan and an end
    /// marker. Its scan decodes to nothing; only the planner reads it.
    fn jpeg(sof: u8, (w, h): (u16, u16), comps: &[(u8, u8)], orientation: u16) -> Vec<u8> {
        let mut v = vec![0xFF, 0xD8];
        if orientation != 1 {
            let mut tiff = b"II".to_vec();
            tiff.extend_from_slice(&42u16.to_le_bytes());
            tiff.extend_from_slice(&8u32.to_le_bytes());
            tiff.extend_from_slice(&1u16.to_le_bytes());
            tiff.extend_from_slice(&0x0112u16.to_le_bytes());
            tiff.extend_from_slice(&3u16.to_le_bytes());
            tiff.extend_from_slice(&1u32.to_le_bytes());
            tiff.extend_from_slice(&orientation.to_le_bytes());
            tiff.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
            let len = (2 + 6 + tiff.len()) as u16;
            v.extend_from_slice(&[0xFF, 0xE1]);
            v.extend_from_slice(&len.to_be_bytes());
            v.extend_from_slice(b"Exif\0\0");
            v.extend_from_slice(&tiff);
        }
        let len = (8 + 3 * comps.len()) as u16;
        v.extend_from_slice(&[0xFF, sof]);
        v.extend_from_slice(&len.to_be_bytes());
        v.push(8);
        v.extend_from_slice(&h.to_be_bytes());
        v.extend_from_slice(&w.to_be_bytes());
        v.push(comps.len() as u8);
        for (id, hv) in comps {
            v.extend_from_slice(&[*id, *hv, 0]);
        }
        // One scan of every component (a scan of fewer is decoded as libjpeg-turbo does).
        v.extend_from_slice(&[0xFF, 0xDA, 0, 6 + 2 * comps.len() as u8, comps.len() as u8]);
        for (id, _) in comps {
            v.extend_from_slice(&[*id, 0]);
        }
        // A progressive frame starts with a DC scan (Ss = Se = 0).
        let se = if matches!(sof, 0xC2 | 0xC6 | 0xCA | 0xCE) {
            0
        } else {
            63
        };
        v.extend_from_slice(&[0, se, 0, 0x12, 0x34]);
        v.extend_from_slice(&[0xFF, 0xD9]);
        v
    }

    const S420: &[(u8, u8)] = &[(1, 0x22), (2, 0x11), (3, 0x11)];
    const S411: &[(u8, u8)] = &[(1, 0x41), (2, 0x11), (3, 0x11)];
    const CMYK: &[(u8, u8)] = &[(1, 0x11), (2, 0x11), (3, 0x11), (4, 0x11)];
    /// `name_draws_engines(.., 0.5)` of "a.jpg", "b.jpg", "train/n00000001.JPEG" and "" (their
    /// hashes: 0.187, 0.040, 0.627, 0.958), as a Python replica of the hash gives them.
    const DRAWN_AT_HALF: [bool; 4] = [true, true, false, false];

    const ENGINES: Available = Available {
        hardware: true,
        gpu_batched: false,
        cuda_workers: 2,
    };

    fn baseline(w: u16, h: u16) -> Vec<u8> {
        jpeg(0xC0, (w, h), S420, 1)
    }

    fn input(data: &[u8]) -> EncodedImage<'_> {
        EncodedImage { name: "in", data }
    }

    /// Where each planned input goes: "hw", "cuda" (with "+planes" when decoded to planes),
    /// "cpu", or the failure's kind.
    fn path(p: &Plan) -> String {
        match p {
            Plan::Gpu {
                backend, planes, ..
            } => format!(
                "{}{}",
                if *backend == Backend::Hardware {
                    "hw"
                } else {
                    "cuda"
                },
                if planes.is_some() { "+planes" } else { "" }
            ),
            Plan::CpuJpeg(_) => "cpu".into(),
            Plan::CpuOther(f) => format!("cpu-{}", f.name()),
            Plan::Failed(k) => format!("{k}").split(':').next().unwrap_or("").to_string(),
        }
    }

    fn opts(backend: BackendChoice) -> DecoderOptions {
        DecoderOptions {
            backend,
            ..DecoderOptions::default()
        }
    }

    #[test]
    fn each_header_goes_to_the_decoders_that_take_it() {
        let progressive = jpeg(0xC2, (64, 48), S420, 1);
        let cmyk = jpeg(0xC0, (64, 48), CMYK, 1);
        let s411 = jpeg(0xC0, (64, 48), S411, 1);
        let mut cut = baseline(64, 48);
        cut.truncate(cut.len() - 2);
        let png = b"\x89PNG\r\n\x1a\nnot really".to_vec();
        let giant = baseline(60_000, 60_000);
        let all = [
            baseline(64, 48),
            progressive,
            cmyk,
            s411,
            cut,
            png,
            giant,
            b"GIF89a".to_vec(),
        ];
        let paths = |o: &DecoderOptions, hardware: bool| -> Vec<String> {
            all.iter()
                .map(|d| path(&plan(&input(d), o, hardware)))
                .collect()
        };
        let o = opts(BackendChoice::Auto);
        assert_eq!(
            paths(&o, true),
            [
                "hw+planes",
                "cuda+planes",
                "cpu",
                "cuda",
                "truncated",
                "corrupt",
                "too large",
                "not an image (no JPEG, PNG, BMP, WebP or TIFF signature)"
            ]
        );
        // Without engines the CUDA backend takes what they would have.
        assert_eq!(paths(&o, false)[..2], ["cuda+planes", "cuda+planes"]);
        let hw = opts(BackendChoice::Hardware);
        assert_eq!(
            paths(&hw, true)[..6],
            [
                "hw+planes",
                "unsupported",
                "unsupported",
                "unsupported",
                "truncated",
                "unsupported"
            ]
        );
        let cuda = opts(BackendChoice::Cuda);
        assert_eq!(
            paths(&cuda, true)[..4],
            ["cuda+planes", "cuda+planes", "unsupported", "cuda"]
        );
        let cpu = opts(BackendChoice::Cpu);
        assert_eq!(paths(&cpu, true)[..4], ["cpu", "cpu", "cpu", "cpu"]);
    }

    #[test]
    fn planes_only_for_smooth_chroma_on_rgb_outputs() {
        let data = baseline(64, 48);
        let with = |o: DecoderOptions| path(&plan(&input(&data), &o, true));
        assert_eq!(with(DecoderOptions::default()), "hw+planes");
        let replicate = DecoderOptions {
            chroma: ChromaUpsampling::Replicate,
            ..DecoderOptions::default()
        };
        assert_eq!(with(replicate), "hw");
        let grey = DecoderOptions {
            format: PixelFormat::Grey,
            ..DecoderOptions::default()
        };
        assert_eq!(with(grey), "hw");
    }

    fn batch_plan(n: usize, o: &DecoderOptions, available: Available) -> BatchPlan {
        let data: Vec<Vec<u8>> = (0..n).map(|_| baseline(64, 48)).collect();
        let inputs: Vec<EncodedImage<'_>> = data.iter().map(|d| input(d)).collect();
        BatchPlan::new(&inputs, o, available, &mut |_, _, _| None)
    }

    #[test]
    fn a_fixed_share_gives_the_engines_the_first_images_up_to_their_quota() {
        let o = DecoderOptions {
            split: Split::Fixed { hw_load: 0.3 },
            ..DecoderOptions::default()
        };
        let p = batch_plan(10, &o, ENGINES);
        assert!(!p.balanced);
        assert_eq!(p.hw_quota, 3);
        let paths: Vec<String> = p.plans.iter().map(path).collect();
        assert_eq!(paths[..3], ["hw+planes"; 3]);
        assert_eq!(paths[3..], ["cuda+planes"; 7]);
        // The batched GPU-Huffman call takes the same share.
        let o = DecoderOptions {
            split: Split::GpuHuffman { hw_load: 0.5 },
            ..DecoderOptions::default()
        };
        let batched = Available {
            gpu_batched: true,
            ..ENGINES
        };
        let p = batch_plan(4, &o, batched);
        let paths: Vec<String> = p.plans.iter().map(path).collect();
        assert_eq!(
            paths,
            ["hw+planes", "hw+planes", "cuda+planes", "cuda+planes"]
        );
    }

    /// The paths of `names` planned as one batch, each a small baseline JPEG.
    fn named_paths(names: &[String], o: &DecoderOptions) -> Vec<String> {
        let data = baseline(64, 48);
        let inputs: Vec<EncodedImage<'_>> = names
            .iter()
            .map(|n| EncodedImage {
                name: n,
                data: &data,
            })
            .collect();
        let p = BatchPlan::new(&inputs, o, ENGINES, &mut |_, _, _| None);
        p.plans.iter().map(path).collect()
    }

    #[test]
    fn a_split_by_name_sends_each_image_the_same_way_in_any_batch() {
        let o = DecoderOptions {
            split: Split::Fixed { hw_load: 0.8 },
            split_key: SplitKey::Name,
            ..DecoderOptions::default()
        };
        let names: Vec<String> = (0..4000).map(|i| format!("train/n{i:08}.JPEG")).collect();
        let whole = named_paths(&names, &o);
        let on_engines = whole.iter().filter(|p| *p == "hw+planes").count();
        // 3,200 expected; a binomial's standard deviation here is 25.
        assert!((3100..=3300).contains(&on_engines), "{on_engines}");
        assert!(whole.iter().all(|p| p == "hw+planes" || p == "cuda+planes"));
        // Reversed, and cut into batches of 3 and of 256: every image keeps its path.
        let mut reversed = names.clone();
        reversed.reverse();
        let mut back = named_paths(&reversed, &o);
        back.reverse();
        assert_eq!(back, whole);
        for size in [3, 256] {
            let cut: Vec<String> = names
                .chunks(size)
                .flat_map(|c| named_paths(c, &o))
                .collect();
            assert_eq!(cut, whole, "batches of {size}");
        }
        // The engines' share moves the cut, not the order: an image on the engines at 0.5 is
        // on them at 0.8.
        let half = named_paths(
            &names,
            &DecoderOptions {
                split: Split::Fixed { hw_load: 0.5 },
                ..o.clone()
            },
        );
        assert!(
            half.iter()
                .zip(&whole)
                .all(|(h, w)| h != "hw+planes" || w == "hw+planes")
        );
        // The hash is fixed: these names draw as they did when it was written.
        let drawn: Vec<bool> = ["a.jpg", "b.jpg", "train/n00000001.JPEG", ""]
            .iter()
            .map(|n| SplitKey::name_draws_engines(n, 0.5))
            .collect();
        assert_eq!(drawn, DRAWN_AT_HALF);
        // With only the engines allowed, every engine image goes to them.
        let only = DecoderOptions {
            backend: BackendChoice::Hardware,
            ..o
        };
        assert!(
            named_paths(&names[..50], &only)
                .iter()
                .all(|p| p == "hw+planes")
        );
    }

    #[test]
    fn a_balanced_split_leaves_every_engine_image_to_the_run() {
        let o = DecoderOptions {
            split: Split::Balanced { hw_load: 0.3 },
            ..DecoderOptions::default()
        };
        let p = batch_plan(10, &o, ENGINES);
        assert!(p.balanced);
        assert_eq!(p.hw_quota, 3);
        assert!(p.plans.iter().all(|q| path(q) == "hw+planes"));
        // Without CUDA workers to share with, the share is fixed again.
        let alone = Available {
            cuda_workers: 0,
            ..ENGINES
        };
        let p = batch_plan(10, &o, alone);
        assert!(!p.balanced);
        assert_eq!(p.plans.iter().filter(|q| path(q) == "hw+planes").count(), 3);
    }

    #[test]
    fn only_the_engines_allowed_and_none_here_fails_every_engine_image() {
        let o = opts(BackendChoice::Hardware);
        let none = Available {
            hardware: false,
            ..ENGINES
        };
        let p = batch_plan(2, &o, none);
        for q in &p.plans {
            assert_eq!(
                q,
                &Plan::Failed(ImageErrorKind::Unsupported(
                    "this GPU has no NVJPG engines".into()
                ))
            );
        }
    }

    #[test]
    fn regions_go_only_to_whole_rgb_cuda_decodes_and_must_fit() {
        let data = [
            baseline(64, 48),
            jpeg(0xC2, (64, 48), S420, 1),
            jpeg(0xC2, (64, 48), S420, 6),
            jpeg(0xC2, (64, 48), S420, 1),
            jpeg(0xC2, (64, 48), S420, 1),
            jpeg(0xC2, (64, 48), S420, 1),
        ];
        let inputs: Vec<EncodedImage<'_>> = data.iter().map(|d| input(d)).collect();
        let o = DecoderOptions {
            chroma: ChromaUpsampling::Replicate,
            ..DecoderOptions::default()
        };
        let r = |x, y, width, height| Roi {
            x,
            y,
            width,
            height,
        };
        let mut asked = Vec::new();
        let mut region = |i: usize, w: u32, h: u32| {
            asked.push((i, w, h));
            match i {
                0..=2 => Some(r(8, 8, 16, 16)),
                3 => Some(r(0, 0, 64, 48)),
                4 => Some(r(60, 0, 8, 8)),
                _ => None,
            }
        };
        let mut p = BatchPlan::new(&inputs, &o, ENGINES, &mut region);
        // The engines' image and the one turned by orientation are not asked.
        assert_eq!(asked, [(1, 64, 48), (3, 64, 48), (4, 64, 48), (5, 64, 48)]);
        assert_eq!(
            p.rois,
            [None, Some(r(8, 8, 16, 16)), None, None, None, None]
        );
        p.output_layout(&inputs, &o);
        let img = |i: usize| p.results[i].clone().unwrap();
        assert_eq!(
            (img(1).width, img(1).height, img(1).origin),
            (16, 16, (8, 8))
        );
        assert_eq!(img(1).full_size, (64, 48));
        assert_eq!(img(1).len, 16 * 16 * 3);
        // Orientation 6 swaps the sides of the whole image.
        assert_eq!((img(2).width, img(2).height), (48, 64));
        // With a batched GPU-Huffman call nothing is decoded by region.
        let batched = Available {
            gpu_batched: true,
            ..ENGINES
        };
        let p = BatchPlan::new(&inputs, &o, batched, &mut |_, _, _| Some(r(8, 8, 16, 16)));
        assert!(p.rois.iter().all(Option::is_none));
    }

    #[test]
    fn images_and_planes_are_laid_out_aligned_and_jobs_point_into_them() {
        // At least one 4:2:0 MCU high (a smaller image is decoded on the CPU).
        let good = baseline(100, 16);
        let progressive = jpeg(0xC2, (30, 20), S420, 1);
        let inputs = [
            input(&good),
            input(b"junk"),
            input(&progressive),
            input(&good),
        ];
        let o = DecoderOptions {
            split: Split::Fixed { hw_load: 0.5 },
            ..DecoderOptions::default()
        };
        let mut p = BatchPlan::new(&inputs, &o, ENGINES, &mut |_, _, _| None);
        p.output_layout(&inputs, &o);
        let offsets: Vec<Option<usize>> = p
            .results
            .iter()
            .map(|r| r.as_ref().ok().map(|i| i.offset))
            .collect();
        // 100x16x3 = 4800 bytes, rounded up to 4864; 30x20x3 = 1800, to 2048.
        assert_eq!(offsets, [Some(0), None, Some(4864), Some(4864 + 2048)]);
        assert_eq!(p.total, 4864 + 2048 + 4864);
        assert_eq!(
            p.results[1],
            Err(ImageError {
                input: "in".into(),
                kind: ImageErrorKind::NotAnImage
            })
        );
        p.plane_layout();
        assert_eq!(p.plane_count(), 3);
        let first = PlaneLayout::for_jpeg(&parse(&good).unwrap()).unwrap();
        let second = PlaneLayout::for_jpeg(&parse(&progressive).unwrap()).unwrap();
        let second_at = first.bytes().div_ceil(ALIGN) * ALIGN;
        assert_eq!(
            p.plane_at,
            [
                Some(0),
                None,
                Some(second_at),
                Some(second_at + second.bytes().div_ceil(ALIGN) * ALIGN)
            ]
        );
        assert_eq!(p.table_len(), ALIGN);
        let (base, plane_base) = (1 << 20, 1 << 30);
        let jobs = p.jobs(&inputs, &o, base, plane_base);
        // The engines' share of two images is one: the first; the other two on CUDA.
        let idx = |v: &[(usize, GpuJob<'_>)]| v.iter().map(|(i, _)| *i).collect::<Vec<_>>();
        assert_eq!(idx(&jobs.hw), [0]);
        assert_eq!(idx(&jobs.cuda), [2, 3]);
        assert!(jobs.cpu.is_empty());
        let (_, job) = jobs.cuda[0];
        assert_eq!(job.format, NvFormat::Yuv);
        assert_eq!(job.dst.channel[0] as u64, plane_base + second_at as u64);
        assert_eq!(job.pixels, 600);
        // Without planes the decoder writes RGB straight into the batch buffer.
        let o = DecoderOptions {
            chroma: ChromaUpsampling::Replicate,
            ..o
        };
        let mut p = BatchPlan::new(&inputs, &o, ENGINES, &mut |_, _, _| None);
        p.output_layout(&inputs, &o);
        p.plane_layout();
        assert_eq!(p.plane_count(), 0);
        let jobs = p.jobs(&inputs, &o, base, plane_base);
        let (i, job) = jobs.cuda[1];
        assert_eq!(i, 3);
        assert_eq!(job.format, NvFormat::Rgbi);
        assert_eq!(job.dst.channel[0] as u64, base + 4864 + 2048);
        assert_eq!(job.dst.pitch[0], 300);
    }
}
