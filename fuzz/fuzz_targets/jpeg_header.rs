//! Fuzzes the JPEG header parser and the decoder choice on arbitrary bytes.
#![no_main]

use gm_codec::jpeg::{DEFAULT_MAX_PIXELS, parse, route};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(info) = parse(data) {
        let _ = info.subsampling();
        let _ = route(&info, true, true, DEFAULT_MAX_PIXELS);
    }
});
