//! JPEG: header parsing and the choice of decoder. The nvJPEG decoders arrive with the rest of
//! issue 5.

pub mod cpu;
pub mod header;
pub mod route;

pub use cpu::{RgbImage, decode_rgb, orient};
pub use header::{Coding, Component, HeaderError, JpegInfo, Subsampling, parse};
pub use route::{Backend, DEFAULT_MAX_PIXELS, RouteError, route};
