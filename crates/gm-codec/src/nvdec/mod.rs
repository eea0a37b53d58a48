//! NVDEC video decoding through nvcuvid (loaded at run time): sessions that execute gm-demux
//! plans and hand mapped frames to a consumer, and a pool of them on worker threads.

mod api;
mod budget;
mod choice;
mod cpu_route;
mod decoder;
mod format;
mod frame;
mod pool;
mod session;
mod stats;
#[allow(unreachable_pub)]
mod sys;
mod waits;

pub use budget::DecoderBudget;
pub use frame::{ColourInfo, DecodedFrame, FrameStatus, SurfaceFormat};
pub use pool::DecoderPool;
pub use session::DecoderSession;
pub use stats::{SessionStats, SessionTime};
pub use waits::WAIT_VARIABLE;
