//! Frame-exact indexing of MP4/MOV video without decoding, on the CPU.
//!
//! [`VideoIndex::open`] reads a file's metadata boxes (positioned reads; `mdat` is never read
//! through) and builds, for the chosen video track, every coded [`Sample`] in decode order and
//! every frame in presentation order, with exact timestamps, byte ranges, the container's sync
//! flags, GOPs, and the sample decoding must start from to reproduce each frame exactly,
//! including leading pictures of open GOPs, which need the previous GOP. Decoders take their
//! packets through [`PacketSource`], which [`IndexingDemuxer`] implements. Optionally it reads slice headers to check the sync
//! flags against the bitstream and to learn picture types.
//!
//! [`VideoIndex::plan`] turns wanted frames into a [`DecodePlan`]: runs of packets, each from
//! a valid start. [`IndexingDemuxer`] reads those packets as Annex-B for a decoder (the packet
//! seam between containers and `gm-codec`'s NVDEC sessions); [`GopCache`] keeps demuxed
//! packets of recent GOPs.
//!
//! Supported: MP4/MOV with H.264 (`avc1`, `avc3`) or HEVC (`hvc1`, `hev1`) video, progressive or
//! fragmented (`moof`/`traf`/`trun`), with edit lists. Anything else is an error naming the
//! file and the reason; no input makes it panic or allocate by a declared size.
//!
//! ```no_run
//! use gm_demux::{IndexOptions, VideoIndex};
//!
//! # fn main() -> gm_demux::Result<()> {
//! let index = VideoIndex::open("video.mp4".as_ref(), IndexOptions::default())?;
//! println!("{index}"); // codec, size, frame rate, GOPs
//! let plan = index.plan(&[0, 250, 251])?;
//! println!("{} packets to decode", plan.packet_count());
//! # Ok(())
//! # }
//! ```

mod annexb;
mod av1;
mod bits;
pub mod boxes;
mod cache;
mod chroma_location;
pub mod codec;
mod container;
mod demuxer;
mod error;
mod fragment;
mod index;
mod mkv;
mod mp4;
pub mod nal;
mod options;
mod orientation;
mod packet;
mod persist;
mod picture;
mod plan;
mod planner;
mod sample;
mod scan;
pub mod source;
mod tables;
mod vp9;

pub use annexb::{append_annexb, append_parameter_sets};
pub use cache::{CacheStats, GopCache, GopKey};
pub use chroma_location::ChromaLocation;
pub use codec::{Codec, CodecInfo};
pub use container::Container;
pub use demuxer::IndexingDemuxer;
pub use error::{DemuxError, ParseError, Result};
pub use index::VideoIndex;
pub use options::{BitstreamScan, IndexOptions, TrackSelect};
pub use orientation::DisplayOrientation;
pub use packet::{Packet, PacketSource};
pub use persist::INDEX_FORMAT_VERSION;
pub use picture::{Leading, Picture, RandomAccess, SliceType};
pub use plan::{DecodePlan, DecodeRun, Keep};
pub use sample::{FrameIndex, Gop, Rational, Sample, SyncMismatch};
pub use source::{ByteSource, FileSource, MemSource, SourceVersion};
pub use tables::MAX_SAMPLES;
pub use vp9::key_frame_colour as vp9_key_frame_colour;
