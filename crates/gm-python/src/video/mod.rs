//! `gm.VideoDecoder`: frame-exact random access to one video in the style of torchcodec's
//! VideoDecoder. The index (metadata, timestamps, key frames) is read without decoding and
//! without a GPU; frames decode on NVDEC into GPU tensors, as RGB through the fused kernel
//! (optionally resized) or as the decoder's NV12. Without a GPU (or with `device="cpu"`)
//! they decode on the CPU into host tensors, through the kernel's CPU twin.

mod frames;
mod host;
mod sessions;

use std::path::PathBuf;
use std::sync::Arc;

use gm_codec::{DecoderChoice, Routing};
use gm_demux::{BitstreamScan, CodecInfo, IndexOptions, IndexingDemuxer, VideoIndex};
use gm_transforms::Orientation;
use parking_lot::Mutex;
use pyo3::exceptions::{PyIndexError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PySlice};

use crate::device::{self, Placement};
use crate::errors::{GmError, NoGpuError};
use crate::owner::{Fenced, Owner};
use crate::tensor::{Elem, Tensor};
use sessions::{DEFAULT_SESSIONS, Sessions, Setup};

/// Where a request decodes.
enum Ready {
    /// NVDEC: the device and the threads' setup when they are not started yet.
    Gpu(Option<(gm_cuda::Device, Setup)>),
    /// The CPU decoder.
    Cpu(Setup),
}

/// What frames come out as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Output {
    /// `[3, H, W]` uint8 RGB, through the fused kernel (the stream's matrix and range).
    Rgb,
    /// `[H * 3 / 2, W]` uint8: the luma plane, then the interleaved chroma plane.
    Nv12,
    /// `[H * 3 / 2, W]` uint16 laid out as NV12, each sample in the high bits (NVDEC's P016,
    /// FFmpeg's `p010le` for 10-bit video): for streams above 8 bits.
    P016,
}

impl Output {
    fn dtype(self) -> gm_cuda::DType {
        match self {
            Output::P016 => gm_cuda::DType::U16,
            Output::Rgb | Output::Nv12 => gm_cuda::DType::U8,
        }
    }

    /// Whether the output is the decoder's planes as they come (no conversion, no resize).
    fn is_planar(self) -> bool {
        self != Output::Rgb
    }
}

/// Frame-exact access to the frames of one video (MP4/MOV or WebM/Matroska; H.264, HEVC, VP9,
/// and AV1 where the GPU's NVDEC has it).
///
/// `decoder[i]`, `decoder[a:b:c]`, `get_frames_at([...])` and `get_frames_played_at([...])`
/// return frames in presentation order exactly as ffmpeg's decoder outputs them (open GOPs,
/// B-frames, edit lists and variable frame rates included), decoded on the GPU. `metadata`
/// needs no GPU.
#[pyclass(module = "gm")]
pub struct VideoDecoder {
    path: PathBuf,
    demux: Arc<IndexingDemuxer>,
    placement: Placement,
    output: Output,
    /// Output (height, width) for RGB; the video's size (as displayed) when not given.
    size: Option<(u32, u32)>,
    /// How RGB frames are turned: the display matrix's turn, or as stored.
    shown: Orientation,
    /// Most NVDEC sessions one request decodes on.
    sessions_limit: usize,
    /// auto, gpu or cpu.
    decoder: DecoderChoice,
    /// The decode threads, started at the first request.
    sessions: Mutex<Option<Sessions>>,
    /// The CPU path's decoder, opened at the first request where there is no GPU.
    host: Mutex<Option<host::HostDecoder>>,
}

/// Frames and their timing: `data` (`[N, 3, H, W]` RGB or `[N, H * 3 / 2, W]` NV12, on the
/// GPU), `pts_seconds` and `duration_seconds` (lists), and their `indices`.
#[pyclass(module = "gm", frozen)]
pub struct FrameBatch {
    /// The frames.
    #[pyo3(get)]
    data: Py<Tensor>,
    /// Presentation time of each frame, in seconds.
    #[pyo3(get)]
    pts_seconds: Vec<f64>,
    /// Duration of each frame, in seconds.
    #[pyo3(get)]
    duration_seconds: Vec<f64>,
    /// Frame index of each frame.
    #[pyo3(get)]
    indices: Vec<usize>,
}

#[pymethods]
impl FrameBatch {
    fn __len__(&self) -> usize {
        self.indices.len()
    }
}

fn index_of(v: &VideoIndex, i: isize) -> PyResult<usize> {
    let n = v.frame_count() as isize;
    let j = if i < 0 { i + n } else { i };
    if j < 0 || j >= n {
        return Err(PyIndexError::new_err(format!(
            "{}: frame {i} of a video of {n} frames",
            v.path.display()
        )));
    }
    Ok(j as usize)
}

impl VideoDecoder {
    fn index(&self) -> &Arc<VideoIndex> {
        self.demux.index()
    }

    fn seconds(&self, ticks: i64) -> f64 {
        ticks as f64 / f64::from(self.index().timescale)
    }

    /// Presentation time and duration of frame `i`, in ticks.
    fn timing(&self, i: usize) -> PyResult<(i64, u32)> {
        let s = self
            .index()
            .frame(i)
            .map_err(|e| GmError::new_err(e.to_string()))?;
        Ok((s.pts, s.duration))
    }

    fn output_size(&self) -> (u32, u32) {
        let c = &self.index().codec;
        match (self.output, self.size) {
            (Output::Rgb, Some((h, w))) => (w, h),
            (Output::Rgb, None) => self.shown.displayed_size(c.width, c.height),
            (Output::Nv12 | Output::P016, _) => (c.width, c.height),
        }
    }

    fn decode(&self, py: Python<'_>, frames: &[usize]) -> PyResult<FrameBatch> {
        let data = match self.setup(py)? {
            Ready::Gpu(setup) => self.decode_gpu(py, setup, frames)?,
            Ready::Cpu(setup) => self.decode_cpu(py, &setup, frames)?,
        };
        let mut pts = Vec::with_capacity(frames.len());
        let mut dur = Vec::with_capacity(frames.len());
        for &i in frames {
            let (p, d) = self.timing(i)?;
            pts.push(self.seconds(p));
            dur.push(self.seconds(i64::from(d)));
        }
        Ok(FrameBatch {
            data: Py::new(py, data)?,
            pts_seconds: pts,
            duration_seconds: dur,
            indices: frames.to_vec(),
        })
    }

    /// Frames on the CPU decoder, into a host tensor.
    fn decode_cpu(&self, py: Python<'_>, setup: &Setup, frames: &[usize]) -> PyResult<Tensor> {
        let got = py.detach(|| {
            let mut host = self.host.lock();
            let h = match &mut *host {
                Some(h) => h,
                slot => slot.insert(host::HostDecoder::new(setup.routing.cpu_threads)?),
            };
            h.decode(setup, frames)
        });
        crate::logging::flush(py);
        let (shape, bytes) =
            got.map_err(|e| GmError::new_err(format!("{}: {e}", self.path.display())))?;
        Tensor::host(&shape, Elem::of(setup.output.dtype()), bytes)
    }

    /// Frames on NVDEC, into a GPU tensor; `setup` when the sessions are not started yet.
    fn decode_gpu(
        &self,
        py: Python<'_>,
        setup: Option<(gm_cuda::Device, Setup)>,
        frames: &[usize],
    ) -> PyResult<Tensor> {
        let got = py.detach(|| {
            let mut sessions = self.sessions.lock();
            if sessions.is_none()
                && let Some((device, setup)) = setup
            {
                *sessions = Some(Sessions::new(device, setup, self.sessions_limit)?);
            }
            match sessions.as_mut() {
                Some(s) => s.decode(frames),
                None => Err(gm_codec::CodecError::Pool(
                    "the video decode threads are gone".into(),
                )),
            }
        });
        crate::logging::flush(py);
        let (mut data, ready, stream) =
            got.map_err(|e| GmError::new_err(format!("{}: {e}", self.path.display())))?;
        data.set_ready_event(ready);
        let owner = Arc::new(Owner::Fenced(Fenced::new(data.clone(), stream)));
        Ok(Tensor::from_device(&data, owner))
    }

    /// Where the request decodes: on the GPU (with what its threads need when they are not
    /// started yet) or on the CPU, where there is no GPU or the caller asked for the CPU.
    fn setup(&self, py: Python<'_>) -> PyResult<Ready> {
        if self.sessions.lock().is_some() {
            return Ok(Ready::Gpu(None));
        }
        let device = if self.host.lock().is_some() {
            None
        } else {
            device::resolve(py, &self.placement)?
        };
        if device.is_none() && self.decoder == DecoderChoice::Gpu {
            return Err(NoGpuError::new_err(format!(
                "{}: decoder=\"gpu\" asks for NVDEC, on a GPU; this process has none (the \
                 index and metadata work without one)",
                self.path.display()
            )));
        }
        let (width, height) = self.output_size();
        let setup = Setup {
            demux: self.demux.clone(),
            output: self.output,
            size: self.size,
            width,
            height,
            shown: self.shown,
            routing: Routing {
                choice: self.decoder,
                // One request's runs are spread over the sessions; each decodes its share
                // with a couple of threads (a request is latency, not throughput).
                cpu_threads: 2,
            },
        };
        Ok(match device {
            Some(device) => Ready::Gpu(Some((device, setup))),
            None => Ready::Cpu(setup),
        })
    }
}

#[pymethods]
impl VideoDecoder {
    /// Indexes the video (no decoding, no GPU). `device` is where frames decode (a GPU);
    /// `output` is "rgb" (`[3, H, W]` uint8), "nv12" (`[H * 3 / 2, W]` uint8, 8-bit 4:2:0
    /// video) or "p016" (`[H * 3 / 2, W]` uint16 in NV12's layout, samples in the high bits,
    /// 4:2:0 video above 8 bits); `size`
    /// (height, width) resizes RGB frames in the same kernel. `sessions` is the most NVDEC
    /// sessions one request decodes on (frames from different GOPs decode in parallel on the
    /// GPU's engines; each session holds its own decoder memory); 7 when not given.
    /// `autorotate` turns RGB frames upright as the track's display matrix says (phone
    /// footage stored landscape comes out portrait, as ffmpeg and players show it); NV12
    /// frames come as stored. `decoder` is "auto" (NVDEC where the GPU's decoder takes the
    /// stream, else FFmpeg's libavcodec on the CPU, frames then uploaded into the same
    /// kernels), "gpu" (NVDEC or a clear refusal) or "cpu".
    #[new]
    #[pyo3(signature = (path, *, device=None, output="rgb", size=None, sessions=None, autorotate=true, decoder="auto"))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        device: Option<&Bound<'_, PyAny>>,
        output: &str,
        size: Option<(u32, u32)>,
        sessions: Option<usize>,
        autorotate: bool,
        decoder: &str,
    ) -> PyResult<VideoDecoder> {
        let decoder: DecoderChoice = decoder
            .parse()
            .map_err(|e: gm_codec::DecoderChoiceError| PyValueError::new_err(e.to_string()))?;
        if sessions == Some(0) {
            return Err(PyValueError::new_err("sessions must be at least 1"));
        }
        let output = match output {
            "rgb" => Output::Rgb,
            "nv12" => Output::Nv12,
            "p016" => Output::P016,
            other => {
                return Err(PyValueError::new_err(format!(
                    "output={other:?}: \"rgb\", \"nv12\" or \"p016\""
                )));
            }
        };
        if output.is_planar() && size.is_some() {
            return Err(PyValueError::new_err(
                "size= resizes RGB frames; NV12 and P016 frames come as decoded",
            ));
        }
        if let Some((h, w)) = size
            && (h == 0 || w == 0)
        {
            return Err(PyValueError::new_err(format!("size ({h}, {w}) is empty")));
        }
        let placement = device::parse(device)?;
        let options = IndexOptions {
            scan: BitstreamScan::Full,
            ..Default::default()
        };
        let demux = py
            .detach(|| IndexingDemuxer::open(&path, options))
            .map_err(|e| {
                crate::errors::sample_error(py, &path.display().to_string(), None, &e.to_string())
            })?;
        crate::logging::flush(py);
        planar_output_fits(&path, output, &demux.index().codec)?;
        let shown = if autorotate {
            gm_loader::kernel_orientation(demux.index().orientation)
        } else {
            Orientation::STORED
        };
        Ok(VideoDecoder {
            path,
            demux: Arc::new(demux),
            placement,
            output,
            size,
            shown,
            sessions_limit: sessions.unwrap_or(DEFAULT_SESSIONS),
            sessions: Mutex::new(None),
            host: Mutex::new(None),
            decoder,
        })
    }

    /// Codec, size, frame rate, duration, frame count and key frames, from the index.
    #[getter]
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let v = self.index();
        let d = PyDict::new(py);
        d.set_item("path", v.path.display().to_string())?;
        d.set_item("codec", v.codec.codec.name())?;
        d.set_item("profile", v.codec.profile_name())?;
        d.set_item("width", v.codec.width)?;
        d.set_item("height", v.codec.height)?;
        // The display matrix: degrees counter-clockwise (ffmpeg's `rotation`) and a mirror;
        // the size RGB frames come out at when autorotated.
        d.set_item("rotation", v.orientation.rotation)?;
        d.set_item("mirror", v.orientation.mirror)?;
        let (dw, dh) = v.orientation.displayed_size(v.codec.width, v.codec.height);
        d.set_item("display_width", dw)?;
        d.set_item("display_height", dh)?;
        d.set_item("bit_depth", v.codec.bit_depth)?;
        d.set_item("num_frames", v.frame_count())?;
        d.set_item("average_fps", self.average_fps())?;
        d.set_item("constant_fps", v.constant_fps())?;
        d.set_item("duration_seconds", self.duration())?;
        d.set_item("begin_stream_seconds", self.begin())?;
        d.set_item("key_frames", self.key_frames())?;
        d.set_item("timescale", v.timescale)?;
        d.set_item("decoder", self.decoder.as_str())?;
        Ok(d)
    }

    /// Frame indices of the key frames (where random access starts decoding).
    fn key_frames(&self) -> Vec<usize> {
        let v = self.index();
        (0..v.frame_count())
            .filter(|&i| v.frame(i).is_ok_and(|s| s.keyframe))
            .collect()
    }

    fn __len__(&self) -> usize {
        self.index().frame_count()
    }

    /// `decoder[i]`: frame `i` (`[3, H, W]`); `decoder[a:b:c]`: those frames (`[N, 3, H, W]`).
    fn __getitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Py<Tensor>> {
        if let Ok(slice) = key.cast::<PySlice>() {
            let ind = slice.indices(self.index().frame_count() as isize)?;
            let frames: Vec<usize> = (0..ind.slicelength)
                .map(|k| (ind.start + k as isize * ind.step) as usize)
                .collect();
            return Ok(self.decode(py, &frames)?.data);
        }
        let i: isize = key
            .extract()
            .map_err(|_| PyTypeError::new_err("frames are indexed by an int or a slice"))?;
        let i = index_of(self.index(), i)?;
        let batch = self.decode(py, &[i])?;
        let t = batch.data.get();
        Py::new(py, t.first())
    }

    /// The frames at these indices (any order, repeats allowed), with their timing.
    fn get_frames_at(&self, py: Python<'_>, indices: Vec<isize>) -> PyResult<FrameBatch> {
        let frames = indices
            .iter()
            .map(|&i| index_of(self.index(), i))
            .collect::<PyResult<Vec<_>>>()?;
        self.decode(py, &frames)
    }

    /// The frames shown at these times, in seconds (the frame whose display interval holds
    /// each time).
    fn get_frames_played_at(&self, py: Python<'_>, seconds: Vec<f64>) -> PyResult<FrameBatch> {
        let frames = seconds
            .iter()
            .map(|&t| self.frame_played_at(t))
            .collect::<PyResult<Vec<_>>>()?;
        self.decode(py, &frames)
    }

    /// Frames `start`, `start + step`, ... below `stop`.
    #[pyo3(signature = (start, stop, step=1))]
    fn get_frames_in_range(
        &self,
        py: Python<'_>,
        start: isize,
        stop: isize,
        step: usize,
    ) -> PyResult<FrameBatch> {
        if step == 0 {
            return Err(PyValueError::new_err("step must be at least 1"));
        }
        let n = self.index().frame_count() as isize;
        let frames: Vec<usize> = (start.max(0)..stop.min(n))
            .step_by(step)
            .map(|i| i as usize)
            .collect();
        self.decode(py, &frames)
    }

    /// The frame shown at `seconds`.
    fn frame_played_at(&self, seconds: f64) -> PyResult<usize> {
        let v = self.index();
        let ts = f64::from(v.timescale);
        let n = v.frame_count();
        // Presentation times rise with the frame index: binary search on them.
        let pts = |i: usize| {
            v.frame(i)
                .map(|s| s.pts as f64 / ts)
                .unwrap_or(f64::INFINITY)
        };
        let (begin, end) = (self.begin(), self.begin() + self.duration());
        if !(seconds >= begin && seconds < end) {
            return Err(PyIndexError::new_err(format!(
                "{}: no frame is shown at {seconds} s (the video runs from {begin} s to {end} s)",
                v.path.display()
            )));
        }
        let (mut lo, mut hi) = (0usize, n);
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            if pts(mid) <= seconds {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Ok(lo)
    }

    fn __repr__(&self) -> String {
        format!("gm.VideoDecoder({})", self.index())
    }
}

impl VideoDecoder {
    fn begin(&self) -> f64 {
        self.timing(0).map_or(0.0, |(p, _)| self.seconds(p))
    }

    fn duration(&self) -> f64 {
        let n = self.index().frame_count();
        match (self.timing(0), n.checked_sub(1).map(|l| self.timing(l))) {
            (Ok((first, _)), Some(Ok((last, d)))) => self.seconds(last + i64::from(d) - first),
            _ => 0.0,
        }
    }

    fn average_fps(&self) -> Option<f64> {
        let d = self.duration();
        (d > 0.0).then(|| self.index().frame_count() as f64 / d)
    }
}

/// Refuses a planar output the stream has no form in: NV12 is 8-bit 4:2:0, P016 4:2:0 above
/// 8 bits; others come as RGB.
fn planar_output_fits(path: &std::path::Path, output: Output, c: &CodecInfo) -> PyResult<()> {
    let (name, fits) = match output {
        Output::Rgb => return Ok(()),
        Output::Nv12 => ("nv12", c.chroma_format == 1 && c.bit_depth == 8),
        Output::P016 => ("p016", c.chroma_format == 1 && c.bit_depth > 8),
    };
    if fits {
        return Ok(());
    }
    let other = if c.chroma_format == 1 && c.bit_depth > 8 {
        "output=\"p016\" or \"rgb\""
    } else if c.chroma_format == 1 {
        "output=\"nv12\" or \"rgb\""
    } else {
        "output=\"rgb\""
    };
    Err(PyValueError::new_err(format!(
        "{}: output={name:?} does not fit this {}-bit {} stream: ask for {other}",
        path.display(),
        c.bit_depth,
        match c.chroma_format {
            0 => "monochrome",
            1 => "4:2:0",
            2 => "4:2:2",
            _ => "4:4:4",
        }
    )))
}
