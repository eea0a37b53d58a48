//! Fuzzes label-map PNGs (semantic segmentation): any bytes either decode to one class index
//! per pixel or are refused with a reason.
#![no_main]

use std::path::Path;

use gm_loader::segmentation::label_map;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = label_map(data, Path::new("fuzz.png")) {
        assert_eq!(m.data.len(), m.width as usize * m.height as usize);
    }
});
