//! Device memory a framework owns (a candle or burn allocation), as the destination of gm's
//! copies: gm writes into it and never frees it.

use gm_cuda::{DeviceMemory, DevicePtr};

/// A framework's allocation: its address and size.
pub(crate) struct Foreign {
    pub(crate) ptr: DevicePtr,
    pub(crate) len: usize,
}

impl DeviceMemory for Foreign {
    fn device_ptr(&self) -> DevicePtr {
        self.ptr
    }
    fn byte_len(&self) -> usize {
        self.len
    }
}
