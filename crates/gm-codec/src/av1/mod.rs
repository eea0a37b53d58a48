//! AV1 on the CPU with nothing installed: rav1d, the Rust port of dav1d (the decoder FFmpeg
//! and torchcodec use for AV1), built into gm behind the `bundled-av1` feature. It is called
//! through its dav1d API, the one FFmpeg's libdav1d wrapper calls, with the wrapper's settings
//! (all layers off, film grain applied, the same frame-size limit), so that its frames equal
//! ffmpeg's. [`CpuDecoder`](crate::avcodec::CpuDecoder) hands it AV1 where FFmpeg or its
//! libdav1d is missing, or where asked ([`Av1Backend`](crate::avcodec::Av1Backend)).

mod decoder;

pub(crate) use decoder::Rav1d;
