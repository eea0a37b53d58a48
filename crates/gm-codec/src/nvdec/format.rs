//! Decoder formats: what a sequence header asks of the decoder, what a live decoder was made
//! for, and the nvcuvid parameters between them.

use super::sys;

/// Output surfaces per decoder: how many frames can be mapped at once.
pub(super) const OUTPUT_SURFACES: u32 = 4;

/// What a live decoder was created for and is configured for now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct DecoderFormat {
    pub(super) codec: u32,
    pub(super) chroma: u32,
    pub(super) depth_minus8: u32,
    pub(super) max_width: u32,
    pub(super) max_height: u32,
    pub(super) max_surfaces: u32,
    pub(super) coded_width: u32,
    pub(super) coded_height: u32,
    pub(super) surfaces: u32,
    pub(super) display: [i32; 4],
    pub(super) target_width: u32,
    pub(super) target_height: u32,
}

/// What decoders can take each other's sequences (reconfigured if need be): codec, chroma
/// format and bit depth minus 8, as nvcuvid codes them.
pub(super) type DecoderKey = (u32, u32, u32);

/// The largest sequence a decoder is created for: coded size and decode surfaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Capacity {
    pub(super) width: u32,
    pub(super) height: u32,
    pub(super) surfaces: u32,
}

impl Capacity {
    /// The smallest capacity that holds both `self` and `other`.
    pub(super) fn union(self, other: Capacity) -> Capacity {
        Capacity {
            width: self.width.max(other.width),
            height: self.height.max(other.height),
            surfaces: self.surfaces.max(other.surfaces),
        }
    }
}

impl DecoderFormat {
    /// A decoder created for `capacity` and configured for the sequence `want`.
    pub(super) fn created(want: &SequenceFormat, capacity: Capacity) -> DecoderFormat {
        DecoderFormat {
            codec: want.codec,
            chroma: want.chroma,
            depth_minus8: want.depth_minus8,
            max_width: capacity.width,
            max_height: capacity.height,
            max_surfaces: capacity.surfaces,
            coded_width: want.coded_width,
            coded_height: want.coded_height,
            surfaces: capacity.surfaces,
            display: want.display,
            target_width: want.target_width,
            target_height: want.target_height,
        }
    }

    /// This decoder, reconfigured for the sequence `want` (its key and capacity unchanged).
    pub(super) fn reconfigured(&self, want: &SequenceFormat) -> DecoderFormat {
        DecoderFormat {
            coded_width: want.coded_width,
            coded_height: want.coded_height,
            surfaces: want.surfaces,
            display: want.display,
            target_width: want.target_width,
            target_height: want.target_height,
            ..*self
        }
    }

    /// The decoder's key.
    pub(super) fn key(&self) -> DecoderKey {
        (self.codec, self.chroma, self.depth_minus8)
    }

    /// What the decoder was created for.
    pub(super) fn capacity(&self) -> Capacity {
        Capacity {
            width: self.max_width,
            height: self.max_height,
            surfaces: self.max_surfaces,
        }
    }

    /// Whether a decoder created as `self` can take the sequence `want`, reconfigured if need
    /// be: same codec and format, no larger than it was created for.
    pub(super) fn fits(&self, want: &SequenceFormat) -> bool {
        self.key() == want.key()
            && want.coded_width <= self.max_width
            && want.coded_height <= self.max_height
            && want.surfaces <= self.max_surfaces
    }

    /// Whether the decoder is already configured for `want`: same size and display area, and
    /// at least the decode surfaces it needs.
    pub(super) fn same_size(&self, want: &SequenceFormat) -> bool {
        self.coded_width == want.coded_width
            && self.coded_height == want.coded_height
            && self.display == want.display
            && want.surfaces <= self.surfaces
    }
}

/// What a sequence header asks of the decoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct SequenceFormat {
    pub(super) codec: u32,
    pub(super) chroma: u32,
    pub(super) depth_minus8: u32,
    pub(super) coded_width: u32,
    pub(super) coded_height: u32,
    /// Display area: left, top, right, bottom.
    pub(super) display: [i32; 4],
    pub(super) target_width: u32,
    pub(super) target_height: u32,
    pub(super) surfaces: u32,
    pub(super) progressive: bool,
}

impl SequenceFormat {
    pub(super) fn of(fmt: &sys::CUVIDEOFORMAT) -> SequenceFormat {
        let d = fmt.display_area;
        SequenceFormat {
            codec: fmt.codec,
            chroma: fmt.chroma_format,
            depth_minus8: u32::from(fmt.bit_depth_luma_minus8),
            coded_width: fmt.coded_width,
            coded_height: fmt.coded_height,
            display: [d.left, d.top, d.right, d.bottom],
            target_width: (d.right - d.left).max(0) as u32,
            target_height: (d.bottom - d.top).max(0) as u32,
            surfaces: u32::from(fmt.min_num_decode_surfaces).max(1),
            progressive: fmt.progressive_sequence != 0,
        }
    }

    /// The key of the decoders that can take this sequence.
    pub(super) fn key(&self) -> DecoderKey {
        (self.codec, self.chroma, self.depth_minus8)
    }

    /// The capacity a decoder needs for exactly this sequence.
    pub(super) fn capacity(&self) -> Capacity {
        Capacity {
            width: self.coded_width,
            height: self.coded_height,
            surfaces: self.surfaces,
        }
    }

    /// GPU memory of a decoder of capacity `cap` for this sequence (estimate): its decode
    /// surfaces and output surfaces, 4:2:0, one or two bytes a sample.
    pub(super) fn decoder_bytes(&self, cap: Capacity) -> usize {
        let bytes_per_sample = if self.depth_minus8 > 0 { 2 } else { 1 };
        ((cap.surfaces as usize * cap.width as usize * cap.height as usize)
            + OUTPUT_SURFACES as usize * self.target_width as usize * self.target_height as usize)
            * 3
            / 2
            * bytes_per_sample
    }

    /// nvcuvid's creation parameters for this sequence in a decoder of capacity `cap` (at
    /// least the sequence's own), locking with `lock`.
    pub(super) fn create_info(
        &self,
        cap: Capacity,
        lock: sys::CUvideoctxlock,
    ) -> sys::CUVIDDECODECREATEINFO {
        let mut ci = sys::CUVIDDECODECREATEINFO {
            ulWidth: self.coded_width.into(),
            ulHeight: self.coded_height.into(),
            ulNumDecodeSurfaces: cap.surfaces.into(),
            CodecType: self.codec,
            ChromaFormat: self.chroma,
            ulCreationFlags: sys::cudaVideoCreateFlags_enum_cudaVideoCreate_PreferCUVID.into(),
            bitDepthMinus8: self.depth_minus8.into(),
            ulMaxWidth: cap.width.into(),
            ulMaxHeight: cap.height.into(),
            OutputFormat: if self.depth_minus8 > 0 {
                sys::cudaVideoSurfaceFormat_enum_cudaVideoSurfaceFormat_P016
            } else {
                sys::cudaVideoSurfaceFormat_enum_cudaVideoSurfaceFormat_NV12
            },
            DeinterlaceMode: if self.progressive {
                sys::cudaVideoDeinterlaceMode_enum_cudaVideoDeinterlaceMode_Weave
            } else {
                sys::cudaVideoDeinterlaceMode_enum_cudaVideoDeinterlaceMode_Adaptive
            },
            ulTargetWidth: self.target_width.into(),
            ulTargetHeight: self.target_height.into(),
            ulNumOutputSurfaces: OUTPUT_SURFACES.into(),
            vidLock: lock,
            ..Default::default()
        };
        let d = self.display;
        ci.display_area.left = d[0] as i16;
        ci.display_area.top = d[1] as i16;
        ci.display_area.right = d[2] as i16;
        ci.display_area.bottom = d[3] as i16;
        ci
    }
}

/// nvcuvid's chroma format code as a name.
pub(super) fn chroma_name(c: u32) -> &'static str {
    match c {
        0 => "monochrome",
        1 => "4:2:0",
        2 => "4:2:2",
        3 => "4:4:4",
        _ => "unknown",
    }
}
