//! Fuzzes the JPEG header parser, the decoder choice, the truncation and damage checks and the
//! CPU decoders (zune-jpeg and libjpeg-turbo) on arbitrary bytes, and the sniffing and CPU
//! decoding of the other formats (PNG, BMP, WebP, TIFF through the `image` crate, with our
//! allocation bounds).
#![no_main]

use gm_codec::jpeg::{
    DEFAULT_MAX_PIXELS, SourceFormat, decode_other_rgb, decode_rgb, parse, route, scan_damaged,
    sniff,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // No panic, not even one `decode_rgb`'s last-guard catch_unwind would turn into an error:
    // libfuzzer-sys's panic hook aborts at the panic itself, so any panic is a crash here.
    if let Ok(info) = parse(data) {
        let _ = info.subsampling();
        let _ = route(&info, true, true, DEFAULT_MAX_PIXELS);
        let _ = info.has_end_marker(data);
        let _ = scan_damaged(data, &info);
        let _ = info.oriented_size(true);
        // Bounded so that a header claiming a huge image does not exhaust the fuzzer's memory.
        if u64::from(info.width) * u64::from(info.height) <= 1 << 20 {
            let _ = decode_rgb(data, &info, true);
        }
    }
    // The other formats, with a 1-megapixel limit as above: their allocations are bounded by
    // the declared size (the fuzzer once found a 256 MB one under the default limit).
    if let Some(f) = sniff(data)
        && f != SourceFormat::Jpeg
    {
        let _ = decode_other_rgb(data, f, 1 << 20);
    }
});
