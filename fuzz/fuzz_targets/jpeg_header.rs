//! Fuzzes the JPEG header parser, the decoder choice, the truncation check and the CPU
//! fallback decoder on arbitrary bytes, and the sniffing of the other formats.
#![no_main]

use gm_codec::jpeg::{DEFAULT_MAX_PIXELS, decode_rgb, parse, route, sniff};
use libfuzzer_sys::fuzz_target;
use std::sync::Once;

static QUIET_HOOK: Once = Once::new();

fuzz_target!(|data: &[u8]| {
    // libfuzzer-sys aborts inside its panic hook, before `decode_rgb` can catch zune-jpeg's
    // panics; a printing hook lets that catch work, and a panic that escapes the target still
    // aborts through libfuzzer-sys's own catch_unwind.
    QUIET_HOOK.call_once(|| std::panic::set_hook(Box::new(|info| eprintln!("{info}"))));
    if let Ok(info) = parse(data) {
        let _ = info.subsampling();
        let _ = route(&info, true, true, DEFAULT_MAX_PIXELS);
        let _ = info.has_end_marker(data);
        let _ = info.oriented_size(true);
        // Bounded so that a header claiming a huge image does not exhaust the fuzzer's memory.
        if u64::from(info.width) * u64::from(info.height) <= 1 << 20 {
            let _ = decode_rgb(data, &info, true);
        }
    }
    // Format sniffing only: decoding the other formats is left out until the `image` crate's
    // allocations are bounded (the fuzzer found a 256 MB allocation past our limits).
    let _ = sniff(data);
});
